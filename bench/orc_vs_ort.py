#!/usr/bin/env python3
"""graft's orc backend and ONNX Runtime's CPU provider on the same ONNX files,
at one thread and at all cores, in one run; prints one Markdown table of
per-run medians and their ratios, with the machine it ran on.

usage: bench/orc_vs_ort.py --ort-node DIR [--models DIR] [--rounds N] [--build DIR]

  --ort-node DIR  an onnxruntime-node package: `npm install --ignore-scripts
                  onnxruntime-node@1.30.0` in a scratch folder, then
                  DIR = <folder>/node_modules/onnxruntime-node
  --models DIR    more models: every DIR/NAME.onnx with DIR/NAME.input.npy
                  (shared/anchors/export_cpu_models.py writes the benchmark
                  MLP, ResNet-18 and a GPT-2 block that way)
  --rounds N      each side runs N times, alternating; the best median counts

The repository's small test models of one input (tests/onnx_models/*) are always included. The
benchmark MLP (bench_mlp) also runs with bf16 matrix products on CPUs with
AVX512_BF16 (beside ONNX Runtime's f32), and a one-node graph
(bench/models/one_node.graft) shows what one run costs beyond its work.
ONNX Runtime is timed through Node.js, which adds a few microseconds per run:
the small models' ratios flatter graft by that much.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORT_SCRIPT = os.path.join(ROOT, "..", "shared", "anchors", "ort", "ort_cpu.js")


def models(extra_dir):
    found = []
    if extra_dir:
        for onnx in sorted(glob.glob(os.path.join(extra_dir, "*.onnx"))):
            npy = onnx[:-len(".onnx")] + ".input.npy"
            if os.path.exists(npy):
                found.append((os.path.basename(onnx)[:-5], onnx, npy, 20))
    # The importer's negative fixtures (manifest "unsupported" lines) are
    # left out, and so are models of several inputs: the ONNX Runtime
    # anchor script and compiled_run feed one.
    single_input = {}
    with open(os.path.join(ROOT, "tests", "onnx_models", "manifest.txt")) as f:
        for line in f:
            words = line.split()
            if len(words) == 6 and words[0] == "model":
                single_input[words[1]] = words[3] if "," not in words[3] else None
    for folder in sorted(glob.glob(os.path.join(ROOT, "tests", "onnx_models", "*"))):
        name = single_input.get(os.path.basename(folder))
        if name is None:
            continue
        onnx, npy = os.path.join(folder, "model.onnx"), os.path.join(folder, "input_%s.npy" % name)
        if os.path.exists(onnx) and os.path.exists(npy):
            found.append((os.path.basename(folder), onnx, npy, 2000))
    return found


def run_json(command, env=None):
    out = subprocess.run(command, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return None, (out.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(out.stdout.strip().splitlines()[-1]), None


def best_run(command, rounds):
    best, errors = None, []
    for _ in range(rounds):
        result, error = run_json(command)
        if error:
            errors.append(error)
        elif best is None or result["median_ms"] < best["median_ms"]:
            best = result
    return best, errors


def machine():
    model, flags = "unknown CPU", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and model == "unknown CPU":
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    wanted = ["avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16",
              "avx512_fp16", "amx_tile"]
    return model, [f for f in wanted if f in flags], os.cpu_count()


class WarmDiskCache:
    """What a new process pays to get a runnable executable of the benchmark
    MLP from a warm disk cache: `graft run --stats` of its .gpb (the model's
    own format, whose weights are mapped, not parsed) in fresh processes,
    the "compile time" line. The entry is made when the script starts, so
    that it is old enough (a minute) for the file-hash memo to vouch for it
    by the end, as it would be for any entry made in an earlier session."""

    def __init__(self, build, models_dir):
        onnx = os.path.join(models_dir or "", "bench_mlp.onnx")
        self.graft = os.path.join(build, "cli", "graft")
        if not models_dir or not os.path.exists(onnx):
            self.gpb = None
            return
        self.dir = tempfile.mkdtemp(prefix="graft-warm-cache-")
        self.gpb = os.path.join(self.dir, "bench_mlp.gpb")
        self.env = dict(os.environ, GRAFT_CACHE_DIR=os.path.join(self.dir, "cache"))
        subprocess.run([self.graft, "convert", onnx, "-o", self.gpb], check=True,
                       capture_output=True)
        self.made = time.time()
        self.compile_ms()  # Cold: makes the entry.

    def __bool__(self):
        return self.gpb is not None

    def compile_ms(self):
        out = subprocess.run([self.graft, "run", self.gpb, "--random-inputs", "--backend",
                              "orc", "--threads", "1", "--stats"], capture_output=True,
                             text=True, env=self.env, check=True).stdout
        for line in out.splitlines():
            if "compile time" in line:
                return float(line.split("compile time")[1].split()[0])
        return float("nan")

    def report(self):
        while time.time() - self.made < 65:
            time.sleep(1)
        times = sorted(self.compile_ms() for _ in range(7))
        print(f"bench_mlp, new process with a warm disk cache (graft run --stats, .gpb, "
              f"entry {time.time() - self.made:.0f} s old): compile time median "
              f"{times[len(times) // 2]:.2f} ms, range {times[0]:.2f} to {times[-1]:.2f} ms "
              f"over {len(times)} processes")
        shutil.rmtree(self.dir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ort-node", required=True)
    parser.add_argument("--models")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = parser.parse_args()
    runner = os.path.join(args.build, "bench", "compiled_run")
    env = dict(os.environ, ORT_NODE=args.ort_node)
    cpu, flags, cores = machine()
    print(f"machine: {cpu}, {cores} cores, flags {' '.join(flags)}")
    print()
    print("| model | threads | ONNX Runtime ms | graft orc ms | ORT / orc | ORT session ms | orc compile ms |")
    print("|---|---|---|---|---|---|---|")
    thread_counts = [1] if cores == 1 else [1, cores]
    warm = WarmDiskCache(args.build, args.models)
    caches = []
    for name, onnx, npy, runs in models(args.models):
        for threads in thread_counts:
            ort_best, orc_best, errors = None, None, []
            for _ in range(args.rounds):
                ort, error = run_json(["node", ORT_SCRIPT, onnx, npy, str(threads), str(runs)], env)
                if error:
                    errors.append("ORT: " + error)
                elif ort_best is None or ort["median_ms"] < ort_best["median_ms"]:
                    ort_best = ort
                orc, error = run_json([runner, onnx, npy, "--backend", "orc",
                                       "--threads", str(threads), "--runs", str(runs)])
                if error:
                    errors.append("orc: " + error)
                elif orc_best is None or orc["median_ms"] < orc_best["median_ms"]:
                    orc_best = orc
            if ort_best is None or orc_best is None:
                print(f"| {name} | {threads} | {'; '.join(sorted(set(errors)))} |||||")
                continue
            ratio = ort_best["median_ms"] / orc_best["median_ms"]
            print(f"| {name} | {threads} | {ort_best['median_ms']:.4f} | "
                  f"{orc_best['median_ms']:.4f} | {ratio:.2f}x | "
                  f"{ort_best['create_ms']:.1f} | {orc_best['create_ms']:.1f} |")
            sys.stdout.flush()
            if name == "bench_mlp" and "avx512_bf16" in flags:
                bf16, _ = best_run([runner, onnx, npy, "--backend", "orc", "--threads",
                                    str(threads), "--runs", str(runs),
                                    "--matmul-precision", "bf16"], args.rounds)
                if bf16:
                    print(f"| {name}, orc bf16 | {threads} | {ort_best['median_ms']:.4f} | "
                          f"{bf16['median_ms']:.4f} | "
                          f"{ort_best['median_ms'] / bf16['median_ms']:.2f}x | "
                          f"{ort_best['create_ms']:.1f} | {bf16['create_ms']:.1f} |")
            if name == "bench_mlp":
                caches.append((threads, orc_best))
    print()
    for threads, orc in caches:
        print(f"bench_mlp compile cache, {threads} thread(s): in-process hit "
              f"{orc['memory_hit_us']:.1f} us, a fresh entry loaded by the process that "
              f"wrote it {orc['disk_load_ms']:.2f} ms")
    if warm:
        warm.report()
    one_node = os.path.join(ROOT, "bench", "models", "one_node.graft")
    result, errors = best_run([runner, one_node, "random", "--backend", "orc",
                               "--threads", "1", "--runs", "100000"], args.rounds)
    if result:
        print(f"one-node graph (relu of f32[16]) on orc: median "
              f"{result['median_ms'] * 1000:.2f} us per run, fastest "
              f"{result['min_ms'] * 1000:.2f} us")
    else:
        print("one-node graph: " + "; ".join(errors))


if __name__ == "__main__":
    main()
