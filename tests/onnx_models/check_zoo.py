#!/usr/bin/env python3
"""Runs every model that export_zoo.py wrote through `graft run` on the
given backends and compares each output with PyTorch's, printing one line
per model and backend: the import or run error, or the largest error of
each output relative to that output's largest magnitude.

    python3 tests/onnx_models/check_zoo.py ZOO_DIR [--graft PATH] [BACKEND[:PRECISION]...]

Needs NumPy. Backends default to interp and orc; cuda:bf16 runs the CUDA
backend with --precision bf16.
"""

import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np


def check(graft, model_dir, spec, timeout):
    """`spec` is a backend, or BACKEND:PRECISION (cuda:bf16)."""
    backend, _, precision = spec.partition(":")
    flags = ["--precision", precision] if precision else []
    ins = sorted(glob.glob(os.path.join(model_dir, "input_*.npy")))
    outs = sorted(glob.glob(os.path.join(model_dir, "output_*.npy")))
    with tempfile.TemporaryDirectory() as od:
        cmd = [graft, "run", os.path.join(model_dir, "model.onnx"),
               "--backend", backend, "--output-dir", od] + list(flags)
        for i, f in enumerate(ins):
            cmd += ["--input", "in%d=%s" % (i, f)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            return "TIMEOUT after %d s" % timeout
        if r.returncode != 0:
            lines = r.stderr.strip().splitlines() or ["exit %d" % r.returncode]
            return "FAIL " + lines[-1][:400]
        errs = []
        for i, f in enumerate(outs):
            want = np.load(f).astype(np.float64)
            path = os.path.join(od, "out%d.npy" % i)
            if not os.path.exists(path):
                path = os.path.join(od, "output.npy")
            got = np.load(path).astype(np.float64)
            if got.shape != want.shape:
                errs.append("shape %s, want %s" % (got.shape, want.shape))
                continue
            scale = max(1e-6, float(np.abs(want).max(initial=0)))
            errs.append("%.1e" % (float(np.abs(want - got).max(initial=0)) / scale))
        return "ok   " + (" ".join(errs) if errs else "(no output_*.npy to compare with)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("zoo")
    parser.add_argument("backends", nargs="*", default=["interp", "orc"])
    parser.add_argument("--graft", default="build/cli/graft")
    parser.add_argument("--timeout", type=int, default=300)
    args = parser.parse_args()
    for d in sorted(glob.glob(os.path.join(args.zoo, "*", ""))):
        if not os.path.exists(os.path.join(d, "model.onnx")):
            continue
        name = os.path.basename(d.rstrip("/"))
        for b in args.backends:
            print("%-26s %-6s %s" % (name, b, check(args.graft, d, b, args.timeout)),
                  flush=True)


if __name__ == "__main__":
    sys.exit(main())
