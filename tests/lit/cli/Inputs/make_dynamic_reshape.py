#!/usr/bin/python3
"""Writes dynamic_reshape.onnx: x [batch, seq, 8] reshaped to [batch, seq, 2, 4]
with the sizes taken from Shape(x), as exporters write it with dynamic axes,
then transposed to [batch, 2, seq, 4]. Needs the onnx package (python3-onnx).
usage: make_dynamic_reshape.py OUT.onnx"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

const = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.int64), name)
nodes = [
    helper.make_node("Shape", ["x"], ["shape"]),
    helper.make_node("Gather", ["shape", "zero"], ["b"], axis=0),
    helper.make_node("Gather", ["shape", "one"], ["t"], axis=0),
    helper.make_node("Unsqueeze", ["b", "axes"], ["b1"]),
    helper.make_node("Unsqueeze", ["t", "axes"], ["t1"]),
    helper.make_node("Concat", ["b1", "t1", "heads"], ["target"], axis=0),
    helper.make_node("Reshape", ["x", "target"], ["split"]),
    helper.make_node("Transpose", ["split"], ["y"], perm=[0, 2, 1, 3]),
]
graph = helper.make_graph(
    nodes, "dynamic_reshape",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2, "seq", 4])],
    [const("zero", 0), const("one", 1), const("axes", [0]), const("heads", [2, 4])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="graft-test")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
