#!/usr/bin/env python3
"""Quantizes a few small models with ONNX Runtime's quantize_static (QDQ
format, the default of its quantization tools; with --qoperator, its
QOperator format: QLinearConv, QLinearMatMul and com.microsoft's QGemm,
QLinearAdd, QLinearGlobalAveragePool, ...), for checking that graft
imports and runs what a user of ONNX Runtime's quantization brings.

Each model goes to OUT/<name>/: model.onnx (quantized), input_0.npy,
output_0.npy (ONNX Runtime's output of the quantized model, CPU provider)
and float_output_0.npy (PyTorch's float output), ops.txt.

Needs torch, onnx and onnxruntime (with onnxruntime.quantization).

    python3 tests/onnx_models/export_qdq.py OUT [--qoperator | --dynamic]
"""

import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.c1(x))
        x = F.relu(self.c2(x))
        x = F.relu(self.dw(x)) + x
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 128)
        self.fc3 = nn.Linear(128, 16)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)

    def forward(self, x):
        return self.enc(x)


MODELS = [
    ("cnn", SmallCnn, (2, 3, 16, 16)),
    ("mlp", Mlp, (8, 64)),
    ("encoder", Encoder, (2, 10, 64)),
]


def main():
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat,
                                          QuantType, quantize_dynamic, quantize_static)
    out = sys.argv[1]
    quant_format = QuantFormat.QOperator if "--qoperator" in sys.argv[2:] else QuantFormat.QDQ
    dynamic = "--dynamic" in sys.argv[2:]
    for name, make, shape in MODELS:
        for per_channel in (False, True):
            for act in (QuantType.QUInt8, QuantType.QInt8):
                tag = "%s_%s_%s" % (name, "pc" if per_channel else "pt",
                                    "u8" if act == QuantType.QUInt8 else "s8")
                try:
                    torch.manual_seed(11)
                    model = make().eval()
                    d = os.path.join(out, tag)
                    os.makedirs(d, exist_ok=True)
                    x = torch.randn(*shape)
                    with torch.no_grad():
                        y = model(x)
                    fp = os.path.join(d, "float.onnx")
                    torch.onnx.export(model, (x,), fp, dynamo=False, opset_version=17,
                                      input_names=["in0"], output_names=["out0"])

                    class Reader(CalibrationDataReader):
                        def __init__(self):
                            g = torch.Generator().manual_seed(5)
                            self.data = iter([{"in0": torch.randn(*shape, generator=g).numpy()}
                                              for _ in range(16)])

                        def get_next(self):
                            return next(self.data, None)

                    qp = os.path.join(d, "model.onnx")
                    if dynamic:
                        quantize_dynamic(fp, qp, per_channel=per_channel, weight_type=act)
                    else:
                        quantize_static(fp, qp, Reader(), quant_format=quant_format,
                                        per_channel=per_channel, activation_type=act,
                                        weight_type=QuantType.QInt8)
                    os.remove(fp)
                    sess = ort.InferenceSession(qp, providers=["CPUExecutionProvider"])
                    got = sess.run(None, {"in0": x.numpy()})[0]
                    np.save(os.path.join(d, "input_0.npy"), x.numpy())
                    np.save(os.path.join(d, "output_0.npy"), got)
                    np.save(os.path.join(d, "float_output_0.npy"), y.numpy())
                    m = onnx.load(qp)
                    ops = sorted({(n.domain + "." if n.domain else "") + n.op_type for n in m.graph.node})
                    with open(os.path.join(d, "ops.txt"), "w") as f:
                        f.write("opset %s\nops %s\n" % ([(o.domain, o.version) for o in m.opset_import],
                                                        " ".join(ops)))
                    err = float(np.abs(got - y.numpy()).max() / np.abs(y.numpy()).max())
                    print("%-22s ok  ORT int8 vs float rel err %.3f  %s" % (tag, err, " ".join(ops)))
                except Exception as e:  # Report and go on.
                    print("%-22s FAILED %s: %s" % (tag, type(e).__name__, str(e)[:300]))


if __name__ == "__main__":
    main()
