// The benchmark MLP's int8 layers as the skinny kernel's constants: u8
// input (after a ReLU, zero point 0), u8 result.
#ifndef GRAFT_BENCH_CUDA_KERNELS_INT8_LAYER_H_
#define GRAFT_BENCH_CUDA_KERNELS_INT8_LAYER_H_

struct int8_layer {
  static constexpr bool unsigned_x = true;
  static constexpr int zero_point = 0;
  static constexpr double input_scale = 0.01;
  static constexpr bool quantized_output = true;
  static constexpr double output_scale = 0.05, output_reciprocal = 1 / 0.05;
  static constexpr int output_zero_point = 0, qmin = 0, qmax = 255;
};

#endif  // GRAFT_BENCH_CUDA_KERNELS_INT8_LAYER_H_
