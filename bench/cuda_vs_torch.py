#!/usr/bin/env python3
"""graft's CUDA backend beside PyTorch (eager and every torch.compile mode), in
one run on one GPU, on the benchmark MLP (batch 32; fp32, tf32, bf16), a
GPT-2-small block (batch 8, sequence 256, bf16; PyTorch with scaled-dot-product
attention and with the explicit attention an ONNX export has, graft on that
export), a one-node graph and ResNet-18 (batch 1 and 32, f32 and bf16, batch
norms folded as an eval-mode export has them); graft's bf16 rows also with bf16 inputs and outputs
(gpu_run --io-dtype bf16), as PyTorch's bf16 models take and return. Both are timed the same way: inputs already on the device, a
loop of runs between two timer reads, the median of five rounds. Prints one
table of per-run microseconds and ratios (PyTorch's best mode / graft), then
the MLP quantized to int8 (gpu_run --precision int8) beside graft's bf16.

  python3 bench/cuda_vs_torch.py [BUILD_DIR] [--modes eager,default,...]
      [--workloads mlp,block,attention,one-node,resnet] [--resnet-autotune]

BUILD_DIR holds bench/gpu_run (default build-gpu). The block is read from
.benchmodels/gpt2_block.gpb (bench/models/export_gpt2_block.py, then graft
convert) when it is there. Also measures the HBM
floor of the MLP's weights: their bytes over a large device-to-device copy's
bandwidth (bytes read plus written).
"""
import json, subprocess, sys, time
import torch

build = next((a for a in sys.argv[1:2] if not a.startswith("--")), "build-gpu")
modes = ["eager", "default", "reduce-overhead", "max-autotune"]
workloads = ["mlp", "block", "attention", "one-node", "resnet"]
for i, a in enumerate(sys.argv):
    if a == "--modes":
        modes = sys.argv[i + 1].split(",")
    if a == "--workloads":
        workloads = sys.argv[i + 1].split(",")
dev = "cuda"
torch.manual_seed(0)


def bench(fn, n_warmup=20, n=200):
    for _ in range(n_warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(5):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(n):
            fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) / n * 1000)
    ts.sort()
    return ts[2]


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        L, R = torch.nn.Linear, torch.nn.ReLU
        self.layers = torch.nn.Sequential(L(1024, 4096), R(), L(4096, 4096), R(), L(4096, 1024))

    def forward(self, x):
        return self.layers(x)


def torch_times(make, x):
    out = {}
    with torch.no_grad():
        for mode in modes:
            torch._dynamo.reset()
            m = make() if mode == "eager" else torch.compile(make(), mode=mode)
            m(x)
            torch.cuda.synchronize()
            out[mode] = bench(lambda: m(x))
    return out


def graft_time(workload, precision, gemm, io=None, autotune=False, extra=()):
    cmd = [f"{build}/bench/gpu_run", workload, "--precision", precision, "--gemm", gemm, *extra]
    if io:
        cmd += ["--io-dtype", io]
    if autotune:
        # cuBLASLt's candidates timed at compile time, as max-autotune times
        # its own.
        cmd += ["--autotune", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stderr, file=sys.stderr)
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def hbm_bandwidth():
    a = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    b = torch.empty_like(a)
    t = bench(lambda: b.copy_(a), 3, 20)
    return 2 * a.numel() / (t * 1e-6)


rows = []
bw = hbm_bandwidth()
print(f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
      f"device-to-device copy {bw / 1e12:.2f} TB/s", flush=True)
params = 1024 * 4096 + 4096 * 4096 + 4096 * 1024 + 4096 + 4096 + 1024
for precision, torch_dtype, matmul in [("f32", torch.float32, "highest"),
                                       ("tf32", torch.float32, "high"),
                                       ("bf16", torch.bfloat16, "highest")]:
    if "mlp" not in workloads:
        break
    torch.set_float32_matmul_precision(matmul)
    x = torch.randn(32, 1024, device=dev, dtype=torch_dtype)
    t = torch_times(lambda: MLP().to(dev, torch_dtype).eval(), x)
    floor = params * (2 if torch_dtype == torch.bfloat16 else 4) / bw * 1e6
    for gemm in ["auto", "graft", "cublaslt"]:
        g = graft_time("mlp", precision, gemm)
        rows.append((f"MLP b32 {precision}", t, g, gemm, floor))
        print(rows[-1], flush=True)
    if precision == "bf16":
        # Taking and returning bf16, as PyTorch's bf16 model does.
        g = graft_time("mlp", precision, "auto", "bf16")
        rows.append((f"MLP b32 {precision}", t, g, "auto, bf16 I/O", floor))
        print(rows[-1], flush=True)
# The benchmark MLP quantized to int8 (gpu_run --precision int8: graft
# quantize's flow, then quantize-lower) beside graft's own bf16 run.
int8_rows = []
if "mlp" in workloads:
    g8 = graft_time("mlp", "int8", "auto")
    bf16 = next((g for n, _, g, gemm, _ in rows if n == "MLP b32 bf16" and gemm == "auto"), None)
    int8_rows.append((g8, bf16, params / bw * 1e6))
    print(int8_rows[-1], flush=True)

import math, os
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(s, d=768, h=12, sdpa=True):
        super().__init__()
        s.h, s.sdpa = h, sdpa
        s.ln1, s.qkv, s.proj = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
        s.ln2, s.fc, s.out = nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(s, x):
        B, T, C = x.shape
        q, k, v = s.qkv(s.ln1(x)).split(C, dim=2)
        q, k, v = [z.view(B, T, s.h, C // s.h).transpose(1, 2) for z in (q, k, v)]
        if s.sdpa:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            w = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // s.h))
            mask = torch.ones(T, T, device=x.device, dtype=torch.bool).tril().logical_not()
            a = w.masked_fill(mask, float("-inf")).softmax(-1) @ v
        x = x + s.proj(a.transpose(1, 2).reshape(B, T, C))
        return x + s.out(F.gelu(s.fc(s.ln2(x))))


block_file = ".benchmodels/gpt2_block.gpb"
if os.path.exists(block_file) and "block" in workloads:
    torch.set_float32_matmul_precision("highest")
    x = torch.randn(8, 256, 768, device=dev, dtype=torch.bfloat16)
    t = {}
    for sdpa in [True, False]:
        for mode, us in torch_times(lambda: Block(sdpa=sdpa).to(dev, torch.bfloat16).eval(),
                                    x).items():
            t[f"{mode}{'' if sdpa else ' explicit'}"] = us
    for gemm, io, tuned in [("auto", None, False), ("auto, bf16 I/O", "bf16", False),
                            ("auto, bf16 I/O, autotune", "bf16", True)]:
        g = graft_time(block_file, "bf16", "auto", io, tuned)
        rows.append(("GPT-2 block b8 s256 bf16", t, g, gemm, 0))
        print(rows[-1], flush=True)

if "attention" in workloads:
    # Causal attention alone over q, k and v split from one product (the
    # GPT-2 block's shapes): PyTorch's scaled_dot_product_attention (flash)
    # beside graft's written-out attention, which it runs as one kernel.
    class Sdpa(nn.Module):
        def forward(s, x):
            B, T, C3 = x.shape
            q, k, v = [z.view(B, T, 12, C3 // 36).transpose(1, 2) for z in x.split(C3 // 3, dim=2)]
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    x = torch.randn(8, 256, 3 * 768, device=dev, dtype=torch.bfloat16)
    t = torch_times(lambda: Sdpa(), x)
    g = graft_time("attention", "bf16", "auto", "bf16")
    rows.append(("attention b8 s256 12x64 bf16 causal", t, g, "auto, bf16 I/O", 0))
    print(rows[-1], flush=True)

if "resnet" in workloads:
    # ResNet-18 as an eval-mode export has it (batch norms folded into the
    # convolutions' biases), the same layers as gpu_run's resnet18, at batch 1
    # and 32, f32 (no tf32) and bf16. max-autotune is left out unless asked
    # for by --modes with --resnet-autotune: it tunes every convolution for
    # minutes.
    class Basic(nn.Module):
        def __init__(s, cin, cout, stride):
            super().__init__()
            s.c1 = nn.Conv2d(cin, cout, 3, stride, 1)
            s.c2 = nn.Conv2d(cout, cout, 3, 1, 1)
            s.down = nn.Conv2d(cin, cout, 1, stride, 0) if stride != 1 or cin != cout else None

        def forward(s, x):
            y = s.c2(F.relu(s.c1(x)))
            return F.relu(y + (s.down(x) if s.down is not None else x))

    class ResNet18(nn.Module):
        def __init__(s):
            super().__init__()
            s.stem = nn.Conv2d(3, 64, 7, 2, 3)
            blocks, cin = [], 64
            for w in [64, 128, 256, 512]:
                for b in range(2):
                    blocks.append(Basic(cin, w, 2 if b == 0 and w != 64 else 1))
                    cin = w
            s.blocks = nn.Sequential(*blocks)
            s.fc = nn.Linear(512, 1000)

        def forward(s, x):
            h = F.max_pool2d(F.relu(s.stem(x)), 3, 2, 1)
            h = F.adaptive_avg_pool2d(s.blocks(h), 1).flatten(1)
            return s.fc(h)

    saved_modes = modes
    if "--resnet-autotune" not in sys.argv:
        modes = [m for m in modes if m != "max-autotune"]
    for batch in [1, 32]:
        for precision, torch_dtype in [("f32", torch.float32), ("bf16", torch.bfloat16)]:
            torch.set_float32_matmul_precision("highest")
            torch.backends.cudnn.allow_tf32 = False
            x = torch.randn(batch, 3, 224, 224, device=dev, dtype=torch_dtype)
            t = torch_times(lambda: ResNet18().to(dev, torch_dtype).eval(), x)
            io = "bf16" if precision == "bf16" else None
            g = graft_time("resnet18", precision, "auto", io,
                           extra=("--batch", str(batch), "--runs", "20"))
            rows.append((f"ResNet-18 b{batch} {precision}", t, g,
                         "auto, bf16 I/O" if io else "auto", 0))
            print(rows[-1], flush=True)
    torch.backends.cudnn.allow_tf32 = True
    modes = saved_modes

if "one-node" in workloads:
    torch.set_float32_matmul_precision("highest")
    x = torch.randn(1024, device=dev)
    t = torch_times(lambda: torch.nn.ReLU(), x)
    g = graft_time("one-node", "f32", "auto")
    rows.append(("one node (relu, 1024)", t, g, "auto", 0))

print()
# "graft us" is timed as PyTorch is (a stream of runs, one wait at the
# end); "graft latency us" waits for each run before the next starts.
print("| workload | graft gemm | torch eager us | torch best mode | torch best us | graft us "
      "| graft latency us | graft host I/O us | best torch / graft | HBM floor us |")
print("|---|---|---|---|---|---|---|---|---|---|")
for name, t, g, gemm, floor in rows:
    best_mode = min(t, key=t.get)
    best = t[best_mode]
    gus = g["median_us"] if g else float("nan")
    lat = g.get("latency_us", float("nan")) if g else float("nan")
    hio = g["host_io_us"] if g else float("nan")
    print(f"| {name} | {gemm} | {t['eager']:.1f} | {best_mode} | {best:.1f} | {gus:.1f} "
          f"| {lat:.1f} | {hio:.1f} | {best / gus:.2f}x | {floor:.1f} |")

if int8_rows:
    print()
    print("| workload | graft int8 us | graft bf16 us | bf16 / int8 | MACs in int8 | int8 HBM floor us |")
    print("|---|---|---|---|---|---|")
    for g8, bf16, floor in int8_rows:
        i8 = g8["median_us"] if g8 else float("nan")
        b16 = bf16["median_us"] if bf16 else float("nan")
        share = g8.get("int8_macs_share", float("nan")) if g8 else float("nan")
        print(f"| MLP b32 | {i8:.1f} | {b16:.1f} | {b16 / i8:.2f}x | {share * 100:.0f}% | {floor:.1f} |")
