#!/usr/bin/env python3
"""Saves test models as ONNX Runtime's optimizers write them, with its
outputs, and optionally checks graft on them.

- `ort_extended`: the CPU provider's graph optimizer at the extended level,
  saved with SessionOptions.optimized_model_filepath (FusedConv, FusedGemm,
  FusedMatMul, Gelu, BiasGelu, SkipLayerNormalization, ...).
- `transformers`: onnxruntime.transformers.optimizer.optimize_model with
  opt_level 0 (its own fusions: Attention, SkipLayerNormalization,
  EmbedLayerNormalization, FastGelu, BiasGelu, ...).

    python3 tests/onnx_models/export_ort_optimized.py OUT_DIR [--zoo ZOO_DIR] [--graft PATH --backends BACKEND...]

Needs onnxruntime (with its transformers package) and numpy. Each model
directory gets model.onnx, input_NAME.npy and output_NAME.npy (ONNX
Runtime's outputs for the optimized model)."""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))

# (name, source model directory, transformer model type or None, heads,
# hidden size)
SOURCES = [
    ("cnn", "cnn", None, 0, 0),
    ("mlp", "mlp", None, 0, 0),
    ("gpt2_block", "gpt2_block_opset17", "gpt2", 4, 64),
    ("gpt2_block13", "gpt2_block_opset13", "gpt2", 4, 64),
    ("bert_tiny", "zoo/bert_tiny", "bert", 4, 64),
    ("gpt2_tiny", "zoo/gpt2_tiny", "gpt2", 4, 64),
]


def inputs_of(src_dir, model_path):
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    files = sorted(glob.glob(os.path.join(src_dir, "input_*.npy")))
    names = [i.name for i in sess.get_inputs()]
    feeds = {}
    for name, f in zip(names, files):
        feeds[name] = np.load(f)
    return feeds


def write_dir(d, model_path, feeds):
    os.makedirs(d, exist_ok=True)
    m = onnx.load(model_path)
    onnx.save(m, os.path.join(d, "model.onnx"))
    sess = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"])
    for k, v in feeds.items():
        np.save(os.path.join(d, f"input_{k}.npy"), v)
    outs = sess.run(None, feeds)
    for o, v in zip(sess.get_outputs(), outs):
        np.save(os.path.join(d, f"output_{o.name}.npy"), v)
    ops = sorted({(n.domain + "." if n.domain else "") + n.op_type for n in m.graph.node})
    return ops


# From a directory export_zoo.py wrote (--zoo): Hugging Face's BERT and
# GPT-2 by both of PyTorch's exporters, whose TorchScript exports the
# transformer optimizer fuses furthest (Attention, EmbedLayerNormalization).
ZOO_SOURCES = [
    ("hf_bert_ts", "bert_tiny_ts", "bert", 4, 64),
    ("hf_gpt2_ts", "gpt2_tiny_ts", "gpt2", 4, 64),
    ("hf_bert", "bert_tiny", "bert", 4, 64),
]


def export(out, zoo=None):
    rows = []
    sources = [(n, os.path.join(HERE, s), t, h, d) for n, s, t, h, d in SOURCES]
    if zoo:
        sources += [(n, os.path.join(zoo, s), t, h, d) for n, s, t, h, d in ZOO_SOURCES
                    if os.path.exists(os.path.join(zoo, s, "model.onnx"))]
    for name, src_dir, model_type, heads, hidden in sources:
        feeds = inputs_of(src_dir, os.path.join(src_dir, "model.onnx"))
        with tempfile.TemporaryDirectory() as tmp:
            # One file, its external data inline, so that what the
            # optimizers save refers to no other file.
            src_model = os.path.join(tmp, "source.onnx")
            onnx.save(onnx.load(os.path.join(src_dir, "model.onnx")), src_model)
            saved = os.path.join(tmp, "extended.onnx")
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
            so.optimized_model_filepath = saved
            ort.InferenceSession(src_model, so, providers=["CPUExecutionProvider"])
            ops = write_dir(os.path.join(out, f"{name}_ort_extended"), saved, feeds)
            rows.append((f"{name}_ort_extended", ops))
            if model_type:
                from onnxruntime.transformers import optimizer
                try:
                    opt = optimizer.optimize_model(src_model, model_type=model_type, num_heads=heads, hidden_size=hidden,
                                                   opt_level=0, use_gpu=False)
                    path = os.path.join(tmp, "transformers.onnx")
                    opt.save_model_to_file(path)
                    ops = write_dir(os.path.join(out, f"{name}_transformers"), path, feeds)
                    rows.append((f"{name}_transformers", ops))
                except Exception as e:  # A model the optimizer cannot take.
                    print(f"{name}: transformers optimizer failed: {e}", file=sys.stderr)
    for name, ops in rows:
        print(f"# {name}: ops {' '.join(ops)}")


def sanitize(name):
    s = re.sub(r"[^A-Za-z0-9._]+", "_", name).strip("_")
    return "_" + s if s and s[0].isdigit() else s


def check(out, graft, backends):
    for d in sorted(glob.glob(os.path.join(out, "*", ""))):
        ins = sorted(glob.glob(os.path.join(d, "input_*.npy")))
        outs = sorted(glob.glob(os.path.join(d, "output_*.npy")))
        for b in backends:
            backend, _, precision = b.partition(":")
            with tempfile.TemporaryDirectory() as od:
                cmd = [graft, "run", os.path.join(d, "model.onnx"), "--backend", backend, "--output-dir", od]
                if precision:
                    cmd += ["--precision", precision]
                for f in ins:
                    cmd += ["--input", "%s=%s" % (sanitize(os.path.basename(f)[6:-4]), f)]
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
                if r.returncode != 0:
                    print(f"{os.path.basename(d[:-1])} {b}: FAIL {(r.stderr.strip().splitlines() or ['?'])[-1][:300]}")
                    continue
                errs = []
                for f in outs:
                    want = np.load(f).astype(np.float64)
                    p = os.path.join(od, sanitize(os.path.basename(f)[7:-4]) + ".npy")
                    if not os.path.exists(p):
                        p = os.path.join(od, "output.npy")
                    got = np.load(p).astype(np.float64)
                    scale = max(1e-6, float(np.abs(want).max(initial=0)))
                    errs.append("%.1e" % (float(np.abs(want - got).max(initial=0)) / scale))
                print(f"{os.path.basename(d[:-1])} {b}: ok {' '.join(errs)}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--graft")
    p.add_argument("--backends", nargs="+", default=["interp"])
    p.add_argument("--zoo", help="a directory export_zoo.py wrote, for Hugging Face's models")
    a = p.parse_args()
    export(a.out, a.zoo)
    if a.graft:
        check(a.out, a.graft, a.backends)


if __name__ == "__main__":
    main()
