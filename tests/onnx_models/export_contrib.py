#!/usr/bin/env python3
"""Writes the test models of ONNX Runtime's fused operators (com.microsoft)
and of local functions into tests/onnx_models/contrib and
tests/onnx_models/functions: each directory holds model.onnx and
input_NAME.npy; ort_reference.js then writes ONNX Runtime's outputs
(output_NAME.npy), which the tests compare graft's with.

    /usr/bin/python3 tests/onnx_models/export_contrib.py
    ORT_NODE=/path/to/node_modules/onnxruntime-node \\
        node tests/onnx_models/ort_reference.js tests/onnx_models/contrib/* tests/onnx_models/functions/*

Needs the onnx Python package (Debian's python3-onnx) and, for the
functions made by PyTorch, torch (python3-torch)."""

import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"
rng = np.random.default_rng(7)


def f32(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def value(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def save(root, name, nodes, inputs, outputs, initializers, opset=17, functions=(), ms=True):
    """inputs: {name: array}; outputs: [(name, dtype, shape or None)]."""
    graph = helper.make_graph(
        nodes, name,
        [value(k, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[v.dtype], list(v.shape)) for k, v in inputs.items()],
        [value(n, t, s) for n, t, s in outputs],
        [const(k, v) for k, v in initializers.items()])
    opsets = [helper.make_opsetid("", opset)]
    if ms:
        opsets.append(helper.make_opsetid(MS, 1))
    for f in functions:
        if f.domain not in [o.domain for o in opsets]:
            opsets.append(helper.make_opsetid(f.domain, 1))
    model = helper.make_model(graph, opset_imports=opsets, functions=list(functions))
    model.ir_version = 8
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, v in inputs.items():
        np.save(os.path.join(d, f"input_{k}.npy"), v)
    return name, list(inputs), [n for n, _, _ in outputs]


def ms_node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, domain=MS, **attrs)


F = TensorProto.FLOAT


def activations(root):
    x = f32(2, 3, 8)
    nodes = [
        ms_node("Gelu", ["x"], ["gelu"]),
        ms_node("BiasGelu", ["x", "b"], ["bias_gelu"]),
        ms_node("FastGelu", ["x", "b"], ["fast_gelu_bias"]),
        ms_node("FastGelu", ["x"], ["fast_gelu"]),
        ms_node("QuickGelu", ["x"], ["quick_gelu"], alpha=1.5),
        ms_node("QuickGelu", ["x"], ["quick_gelu_default"]),
    ]
    outs = ["gelu", "bias_gelu", "fast_gelu_bias", "fast_gelu", "quick_gelu", "quick_gelu_default"]
    return save(root, "activations", nodes, {"x": x}, [(o, F, None) for o in outs],
                {"b": f32(8)})


def layer_norms(root):
    x = f32(2, 5, 16)
    init = {"skip": f32(2, 5, 16), "gamma": f32(16) + 1, "beta": f32(16), "bias": f32(16)}
    nodes = [
        ms_node("SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"], ["sln", "", "", "sln_sum"],
                epsilon=1e-5),
        ms_node("SkipLayerNormalization", ["x", "skip", "gamma"], ["sln_plain"]),
        ms_node("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma", "bias"], ["ssln", "", "", "ssln_sum"],
                epsilon=1e-6),
        helper.make_node("SimplifiedLayerNormalization", ["x", "gamma"], ["rms"], axis=-1, epsilon=1e-6),
        # ONNX Runtime's own LayerNormalization in the default domain, in a
        # model of opset 13 (ONNX's came with 17).
        helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["ln13"], axis=-1, epsilon=1e-5),
    ]
    outs = ["sln", "sln_sum", "sln_plain", "ssln", "ssln_sum", "rms", "ln13"]
    return save(root, "layer_norms", nodes, {"x": x}, [(o, F, None) for o in outs], init, opset=13)


def fused(root):
    x = f32(2, 3, 6, 6)
    init = {
        "w": f32(4, 3, 3, 3, scale=0.3), "wb": f32(4), "z": f32(2, 4, 6, 6),
        "a": f32(5, 7), "bt": f32(3, 7), "c": f32(3),
        "m": f32(2, 4, 6), "n": f32(2, 5, 6), "m2": f32(2, 5, 3),
    }
    nodes = [
        ms_node("FusedConv", ["x", "w", "wb", "z"], ["conv_relu"], activation="Relu", pads=[1, 1, 1, 1]),
        ms_node("FusedConv", ["x", "w", "wb"], ["conv_leaky"], activation="LeakyRelu",
                activation_params=[0.2], strides=[2, 2]),
        ms_node("FusedConv", ["x", "w"], ["conv_clip"], activation="Clip", activation_params=[-0.5, 0.5]),
        ms_node("FusedConv", ["x", "w", "wb"], ["conv_hsig"], activation="HardSigmoid",
                activation_params=[0.3, 0.4]),
        ms_node("FusedGemm", ["a", "bt", "c"], ["gemm_leaky"], transB=1, alpha=0.5, beta=2.0,
                activation="LeakyRelu", activation_alpha=0.1),
        ms_node("FusedGemm", ["a", "bt"], ["gemm_tanh"], transB=1, activation="Tanh"),
        ms_node("FusedMatMul", ["m", "n"], ["fmm"], transB=1, alpha=0.125),
        ms_node("FusedMatMul", ["n", "m2"], ["fmm_ta"], transA=1),
    ]
    # x also feeds a product so that the model has one real input.
    outs = ["conv_relu", "conv_leaky", "conv_clip", "conv_hsig", "gemm_leaky", "gemm_tanh", "fmm", "fmm_ta"]
    return save(root, "fused", nodes, {"x": x}, [(o, F, None) for o in outs], init)


def attention(root):
    b, s, hidden, heads = 2, 5, 16, 4
    x = f32(b, s, hidden)
    raw = np.ones((b, s), np.int32)
    raw[1, 3:] = 0
    init = {
        "w": f32(hidden, 3 * hidden, scale=0.3), "wb": f32(3 * hidden),
        "raw_mask": raw, "lengths": np.array([5, 2], np.int32),
        "mask3": (rng.random((b, s, s)) > 0.3).astype(np.int32),
        "attn_bias": f32(1, heads, s, s),
        "w_unequal": f32(hidden, 2 * hidden + 8, scale=0.3), "wb_unequal": f32(2 * hidden + 8),
        "kv": f32(b, 7, hidden), "v_other": f32(b, 7, 8), "mha_bias": f32(2 * hidden + 8),
        "kv_mask": np.array([[1, 1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0, 0]], np.int32),
    }
    nodes = [
        ms_node("Attention", ["x", "w", "wb", "raw_mask"], ["bert"], num_heads=heads),
        ms_node("Attention", ["x", "w", "wb"], ["gpt"], num_heads=heads, unidirectional=1),
        ms_node("Attention", ["x", "w", "wb", "lengths"], ["by_length"], num_heads=heads, scale=0.3),
        ms_node("Attention", ["x", "w", "wb", "mask3", "", "attn_bias"], ["mask3_bias"], num_heads=heads,
                mask_filter_value=-1000.0),
        ms_node("Attention", ["x", "w_unequal", "wb_unequal"], ["unequal"], num_heads=2,
                qkv_hidden_sizes=[hidden, hidden, 8]),
        ms_node("MultiHeadAttention", ["x", "kv", "v_other", "mha_bias", "kv_mask"], ["cross"], num_heads=2),
        ms_node("MultiHeadAttention", ["x", "x", "x"], ["self_causal"], num_heads=heads, unidirectional=1),
    ]
    outs = ["bert", "gpt", "by_length", "mask3_bias", "unequal", "cross", "self_causal"]
    return save(root, "attention", nodes, {"x": x}, [(o, F, None) for o in outs], init)


def embed_layer_norm(root):
    b, s, hidden, vocab = 2, 6, 8, 11
    ids = rng.integers(0, vocab, (b, s)).astype(np.int32)
    mask = np.ones((b, s), np.int32)
    mask[0, 4:] = 0
    init = {
        "segments": rng.integers(0, 2, (b, s)).astype(np.int32),
        "word": f32(vocab, hidden), "position": f32(16, hidden), "segment": f32(2, hidden),
        "gamma": f32(hidden) + 1, "beta": f32(hidden), "mask": mask,
        "position_ids": np.array([[3, 2, 1, 0, 5, 4]], np.int64).astype(np.int32),
    }
    nodes = [
        ms_node("EmbedLayerNormalization",
                ["ids", "segments", "word", "position", "segment", "gamma", "beta", "mask"],
                ["embedded", "mask_index", "embedding_sum"], epsilon=1e-5),
        ms_node("EmbedLayerNormalization", ["ids", "", "word", "position", "", "gamma", "beta"],
                ["plain", "no_mask_index"]),
        ms_node("EmbedLayerNormalization",
                ["ids", "segments", "word", "position", "segment", "gamma", "beta", "", "position_ids"],
                ["by_position_ids", "unused_mask_index"]),
    ]
    return save(root, "embed_layer_norm", nodes, {"ids": ids},
                [("embedded", F, None), ("mask_index", TensorProto.INT32, None), ("embedding_sum", F, None),
                 ("plain", F, None), ("by_position_ids", F, None)],
                init)


def rotary(root):
    """ONNX Runtime's RotaryEmbedding: an offset or [B, S] positions, 3-D
    input with and without num_heads, 4-D, interleaved, partial."""
    x = f32(2, 5, 24)  # [B, S, heads * 8]
    cache = rng.random((16, 4)).astype(np.float32) * 3
    init = {
        "cos": np.cos(cache), "sin": np.sin(cache),
        "offset": np.array([3], np.int64),
        "positions": rng.integers(0, 16, (2, 5)).astype(np.int64),
        "x4": f32(2, 3, 5, 8),
        "cos_small": np.cos(cache[:, :2]), "sin_small": np.sin(cache[:, :2]),
    }
    nodes = [
        ms_node("RotaryEmbedding", ["x", "offset", "cos", "sin"], ["by_offset"]),
        ms_node("RotaryEmbedding", ["x", "positions", "cos", "sin"], ["by_positions_interleaved"], interleaved=1,
                num_heads=3),
        ms_node("RotaryEmbedding", ["x4", "positions", "cos", "sin"], ["four_d"]),
        ms_node("RotaryEmbedding", ["x", "offset", "cos_small", "sin_small"], ["partial"], num_heads=3,
                rotary_embedding_dim=4),
    ]
    outs = ["by_offset", "by_positions_interleaved", "four_d", "partial"]
    return save(root, "rotary", nodes, {"x": x}, [(o, F, None) for o in outs], init)


def nbits_weights(n, k, block, bits):
    """Random integers, scales and zero points of MatMulNBits's layout."""
    blocks = -(-k // block)
    top = (1 << bits) - 1
    q = rng.integers(0, top + 1, (n, blocks, block)).astype(np.uint8)
    if k % block:
        q[:, -1, k % block:] = 0  # The last block's padding.
    if bits == 4:
        packed = (q[:, :, 0::2] | (q[:, :, 1::2] << 4)).astype(np.uint8)
    else:
        packed = q
    scales = (rng.random((n, blocks)) * 0.1 + 0.01).astype(np.float32)
    zp = rng.integers(0, top + 1, (n, blocks)).astype(np.uint8)
    if bits == 4:
        zp_padded = np.zeros((n, blocks + blocks % 2), np.uint8)
        zp_padded[:, :blocks] = zp
        zp_packed = (zp_padded[:, 0::2] | (zp_padded[:, 1::2] << 4)).astype(np.uint8)
    else:
        zp_packed = zp
    return packed, scales, zp_packed


def matmul_nbits(root):
    x = f32(2, 3, 64)
    init = {}
    nodes = []
    outs = []
    for name, n, k, block, bits, zp, bias in [
            ("q4", 24, 64, 16, 4, False, False),
            ("q4_zero_points", 24, 64, 32, 4, True, True),
            ("q4_padded", 20, 40, 16, 4, True, False),
            ("q8", 12, 64, 16, 8, True, False),
            ("q8_default", 12, 64, 32, 8, False, True)]:
        packed, scales, zp_packed = nbits_weights(n, k, block, bits)
        init[name + "_b"] = packed
        init[name + "_scales"] = scales
        inputs = ["x" if k == 64 else "x40", name + "_b", name + "_scales"]
        if zp:
            init[name + "_zp"] = zp_packed
            inputs.append(name + "_zp")
        if bias:
            init[name + "_bias"] = f32(n)
            inputs += [""] * (5 - len(inputs)) + [name + "_bias"]
        nodes.append(ms_node("MatMulNBits", inputs, [name], K=k, N=n, bits=bits, block_size=block,
                             accuracy_level=0))
        outs.append(name)
    init["starts"] = np.array([0], np.int64)
    init["ends"] = np.array([40], np.int64)
    init["axes"] = np.array([2], np.int64)
    nodes.insert(0, helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["x40"]))
    return save(root, "matmul_nbits", nodes, {"x": x}, [(o, F, None) for o in outs], init)


def opset23_attention(root):
    b = 2
    q = f32(b, 4, 5, 8)
    mask = rng.random((b, 1, 5, 7)) > 0.3
    mask[:, :, :, 0] = True  # No row wholly masked.
    init = {
        "k": f32(b, 2, 7, 8), "v": f32(b, 2, 7, 6), "mask": mask,
        "float_mask": f32(1, 4, 5, 7),
        "k_same": f32(b, 4, 3, 8), "v_same": f32(b, 4, 3, 8),
        "past_k": f32(b, 4, 4, 8), "past_v": f32(b, 4, 4, 8),
        "q3": f32(b, 5, 32), "k3": f32(b, 6, 16), "v3": f32(b, 6, 16),
    }
    nodes = [
        helper.make_node("Attention", ["q", "k", "v", "mask"], ["gqa_bool_mask"]),
        helper.make_node("Attention", ["q", "k", "v", "float_mask"], ["float_mask_softcap"], softcap=2.0, scale=0.5),
        helper.make_node("Slice", ["q", "s0", "s3", "s2"], ["q_short"]),
        helper.make_node("Attention", ["q_short", "k_same", "v_same", "", "past_k", "past_v"],
                         ["causal_past", "present_k", "present_v"], is_causal=1),
        helper.make_node("Attention", ["q", "k", "v"], ["causal_gqa"], is_causal=1),
        helper.make_node("Attention", ["q3", "k3", "v3"], ["three_d"], q_num_heads=4, kv_num_heads=2),
    ]
    init.update({"s0": np.array([0], np.int64), "s3": np.array([3], np.int64), "s2": np.array([2], np.int64)})
    outs = ["gqa_bool_mask", "float_mask_softcap", "causal_past", "present_k", "present_v", "causal_gqa",
            "three_d"]
    return save(root, "attention", nodes, {"q": q}, [(o, F, None) for o in outs], init, opset=23, ms=False)


def opset23_norms_and_rotary(root):
    x = f32(2, 3, 4, 8)  # [B, heads, S, D]
    positions = np.array([[0, 3, 1, 2], [5, 4, 0, 1]], np.int64)
    cache = rng.random((6, 4)).astype(np.float32) * 3
    init = {
        "scale": f32(8) + 1, "scale2": f32(4, 8) + 1,
        "cos": np.cos(cache), "sin": np.sin(cache), "positions": positions,
        "x3": f32(2, 4, 24),
        "cos3": np.cos(rng.random((2, 4, 2)).astype(np.float32)),
        "sin3": np.sin(rng.random((2, 4, 2)).astype(np.float32)),
    }
    nodes = [
        helper.make_node("RMSNormalization", ["x", "scale"], ["rms_last"], epsilon=1e-6),
        helper.make_node("RMSNormalization", ["x", "scale2"], ["rms_two_dims"], axis=2),
        helper.make_node("RotaryEmbedding", ["x", "cos", "sin", "positions"], ["rotary"]),
        helper.make_node("RotaryEmbedding", ["x3", "cos3", "sin3"], ["rotary_partial_interleaved"],
                         num_heads=3, rotary_embedding_dim=4, interleaved=1),
    ]
    outs = ["rms_last", "rms_two_dims", "rotary", "rotary_partial_interleaved"]
    return save(root, "norms_and_rotary", nodes, {"x": x}, [(o, F, None) for o in outs], init, opset=23, ms=False)


def resize_antialias(root):
    """Resize with antialias=1 (opset 18) shrinking, and enlarging one dim
    while shrinking the other."""
    x = f32(1, 2, 13, 17)
    nodes, outs, init = [], [], {}
    for name, mode, coord, size, a, exclude in [
            ("linear_half_pixel", "linear", "half_pixel", [1, 2, 5, 7], -0.75, 0),
            ("linear_pytorch", "linear", "pytorch_half_pixel", [1, 2, 4, 9], -0.75, 0),
            ("cubic_half_pixel", "cubic", "half_pixel", [1, 2, 6, 5], -0.75, 0),
            ("cubic_pillow", "cubic", "pytorch_half_pixel", [1, 2, 3, 8], -0.5, 1),
            ("linear_align_corners", "linear", "align_corners", [1, 2, 5, 6], -0.75, 0),
            ("linear_exclude_outside", "linear", "half_pixel", [1, 2, 4, 5], -0.75, 1),
            ("linear_up_and_down", "linear", "half_pixel", [1, 2, 20, 6], -0.75, 0)]:
        init[name + "_sizes"] = np.array(size, np.int64)
        nodes.append(helper.make_node("Resize", ["x", "", "", name + "_sizes"], [name], mode=mode,
                                      coordinate_transformation_mode=coord, antialias=1, cubic_coeff_a=a,
                                      exclude_outside=exclude))
        outs.append(name)
    return save(root, "resize_antialias", nodes, {"x": x}, [(o, F, None) for o in outs], init, opset=18,
                ms=False)


def opset24(root):
    x = f32(2, 6)
    nodes = [helper.make_node("Swish", ["x"], ["swish"], alpha=0.7),
             helper.make_node("Cast", ["x"], ["cast"], to=TensorProto.INT32, round_mode="up")]
    return save(root, "opset24", nodes, {"x": x}, [("swish", F, None), ("cast", TensorProto.INT32, None)], {},
                opset=24, ms=False)


def defined_by_others(root):
    """Operators ONNX defines by others, which graft imports as those:
    Shrink, ThresholdedRelu, Hardmax, LpNormalization,
    MeanVarianceNormalization, GlobalLpPool and EyeLike."""
    x = f32(2, 3, 4, 5)
    nodes = [helper.make_node("Shrink", ["x"], ["shrink"], lambd=0.7, bias=0.2),
             helper.make_node("ThresholdedRelu", ["x"], ["thresholded"], alpha=0.3),
             helper.make_node("Hardmax", ["x"], ["hardmax"], axis=2),
             helper.make_node("LpNormalization", ["x"], ["l2"], axis=1, p=2),
             helper.make_node("LpNormalization", ["x"], ["l1"], axis=-1, p=1),
             helper.make_node("MeanVarianceNormalization", ["x"], ["mvn"]),
             helper.make_node("GlobalLpPool", ["x"], ["lp_pool"], p=3),
             helper.make_node("Flatten", ["x"], ["flat"], axis=3),
             helper.make_node("EyeLike", ["flat"], ["eye"], k=-2)]
    outs = ["shrink", "thresholded", "hardmax", "l2", "l1", "mvn", "lp_pool", "eye"]
    return save(root, "defined_by_others", nodes, {"x": x}, [(o, F, None) for o in outs], {}, ms=False)


def local_functions(root):
    # Act(x; alpha) = LeakyRelu(x, alpha) * 2, in domain "custom".
    act = helper.make_function(
        "custom", "Act", ["x"], ["y"],
        [helper.make_node("LeakyRelu", ["x"], ["t"]),
         helper.make_node("Add", ["t", "t"], ["y"])],
        [helper.make_opsetid("", 17)], ["alpha"])
    act.node[0].attribute.append(_attr_ref("alpha", "alpha"))
    # Block(x, w; alpha) = Act(MatMul(x, w); alpha) + x, and a second output.
    block = helper.make_function(
        "custom", "Block", ["x", "w"], ["y", "h"],
        [helper.make_node("MatMul", ["x", "w"], ["h"]),
         helper.make_node("Act", ["h"], ["a"], domain="custom"),
         helper.make_node("Add", ["a", "x"], ["y"])],
        [helper.make_opsetid("", 17), helper.make_opsetid("custom", 1)], ["alpha"])
    block.node[1].attribute.append(_attr_ref("alpha", "alpha"))
    x = f32(3, 8)
    nodes = [
        helper.make_node("Block", ["x", "w1"], ["y1", "h1"], domain="custom", alpha=0.1, name="first"),
        helper.make_node("Block", ["y1", "w2"], ["y2", "h2"], domain="custom", alpha=0.3, name="second"),
        # A call whose attribute the caller omits: LeakyRelu's own default.
        helper.make_node("Act", ["y2"], ["y3"], domain="custom", name="third"),
    ]
    return save(root, "nested", nodes, {"x": x}, [("y3", F, None), ("h1", F, None)],
                {"w1": f32(8, 8, scale=0.3), "w2": f32(8, 8, scale=0.3)}, functions=[act, block], ms=False)


def _attr_ref(name, ref):
    a = onnx.AttributeProto()
    a.name = name
    a.ref_attr_name = ref
    a.type = onnx.AttributeProto.FLOAT
    return a


def torch_functions(root):
    """A model PyTorch exports with export_modules_as_functions: each
    module class one local function."""
    import torch

    class Mlp(torch.nn.Module):
        def __init__(self, d):
            super().__init__()
            self.up = torch.nn.Linear(d, 2 * d)
            self.down = torch.nn.Linear(2 * d, d)

        def forward(self, x):
            return self.down(torch.nn.functional.gelu(self.up(x)))

    class Block(torch.nn.Module):
        def __init__(self, d):
            super().__init__()
            self.norm = torch.nn.LayerNorm(d)
            self.mlp = Mlp(d)

        def forward(self, x):
            return x + self.mlp(self.norm(x))

    torch.manual_seed(0)
    model = torch.nn.Sequential(Block(16), Block(16)).eval()
    x = torch.randn(2, 4, 16)
    d = os.path.join(root, "torch_modules")
    os.makedirs(d, exist_ok=True)
    torch.onnx.export(model, (x,), os.path.join(d, "model.onnx"), input_names=["x"], output_names=["y"],
                      opset_version=15, export_modules_as_functions={Block, Mlp})
    np.save(os.path.join(d, "input_x.npy"), x.numpy())
    return "torch_modules", ["x"], ["y"]


def write_manifest(root, entries, header):
    with open(os.path.join(root, "manifest.txt"), "w") as f:
        f.write(header)
        for name, _, _ in entries:
            graph = onnx.load(os.path.join(root, name, "model.onnx")).graph
            ops = sorted({(n.domain + "." if n.domain else "") + n.op_type for n in graph.node})
            inits = {i.name for i in graph.initializer}
            ins = [i.name for i in graph.input if i.name not in inits]
            outs = [o.name for o in graph.output]
            f.write(f"# {name}: ops {' '.join(ops)}\n")
            f.write(f"model {name} inputs {','.join(ins)} outputs {','.join(outs)}\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", default=os.path.dirname(os.path.abspath(__file__)))
    args = p.parse_args()
    contrib = os.path.join(args.root, "contrib")
    write_manifest(contrib, [activations(contrib), layer_norms(contrib), fused(contrib), attention(contrib),
                             embed_layer_norm(contrib), matmul_nbits(contrib), rotary(contrib)],
                   "# Written by tests/onnx_models/export_contrib.py (onnx.helper); outputs are ONNX Runtime's\n"
                   "# (ort_reference.js: CPU provider, optimizations off). Do not edit.\n")
    newer = os.path.join(args.root, "newer_opsets")
    newer_models = [resize_antialias(newer), opset23_attention(newer), opset23_norms_and_rotary(newer),
                    opset24(newer)]
    functions = os.path.join(args.root, "functions")
    write_manifest(functions, [local_functions(functions), torch_functions(functions)],
                   "# Written by tests/onnx_models/export_contrib.py; outputs are ONNX Runtime's\n"
                   "# (ort_reference.js). Do not edit.\n")
    # Last: the models above keep the random inputs they had before it.
    newer_models.append(defined_by_others(newer))
    write_manifest(newer, newer_models,
                   "# Written by tests/onnx_models/export_contrib.py (onnx.helper): Resize's antialias (opset 18),\n"
                   "# operators of opsets 23 and 24, and operators ONNX defines by others;\n"
                   "# outputs are ONNX Runtime's (ort_reference.js). Do not edit.\n")


if __name__ == "__main__":
    main()
