#!/usr/bin/env python3
"""Tensor parallelism on 1 and 2 GPUs, graft beside PyTorch, in one run: the
benchmark MLP at batch 1024 and a GPT-2-small block at batch 64, sequence 512,
both bf16. graft shards with its shard pass (`bench/gpu_run --gpus N`: one
thread per GPU, NCCL inside each rank's CUDA graph); PyTorch with
torch.distributed.tensor.parallel (one process per GPU, NCCL), the same
column/row split: MLP layers 0 and 1 as a pair, layer 2 whole; the block's
q/k/v and MLP up-projection by columns, its two output projections by rows.
graft also splits the batch instead (--shard-by batch: every weight on both
GPUs, each its half of the rows, each keeping its rows of the output), and so
does PyTorch (each process the whole model on its half of the rows).
Both are timed the same way: each rank's input already on its GPU, a loop of
runs between two timer reads, the median of five rounds. Prints one table:
microseconds per run, and the throughput of 2 GPUs over 1.

  python3 bench/multi_gpu_vs_torch.py [BUILD_DIR]

The block is read from .benchmodels/gpt2_block_b64s512.gpb
(bench/models/export_gpt2_block.py OUT.onnx 64 512, then graft convert).
"""
import json, math, os, subprocess, sys
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.multiprocessing as mp

build = next((a for a in sys.argv[1:2] if not a.startswith("--")), "build-gpu")
block_file = ".benchmodels/gpt2_block_b64s512.gpb"


def bench(fn, n_warmup=10, n=50):
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


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        L, R = nn.Linear, nn.ReLU
        self.layers = nn.Sequential(L(1024, 4096), R(), L(4096, 4096), R(), L(4096, 1024))

    def forward(self, x):
        return self.layers(x)


class Block(nn.Module):
    """GPT-2 block with separate q, k, v (so a column split keeps whole heads)
    and heads counted from the local width, as tensor-parallel code has it."""

    def __init__(s, d=768, h=12):
        super().__init__()
        s.dh = d // h
        s.ln1, s.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        s.q, s.k, s.v, s.proj = (nn.Linear(d, d) for _ in range(4))
        s.fc, s.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(s, x):
        B, T, _ = x.shape
        y = s.ln1(x)
        q, k, v = [z(y).view(B, T, -1, s.dh).transpose(1, 2) for z in (s.q, s.k, s.v)]
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + s.proj(a.transpose(1, 2).reshape(B, T, -1))
        return x + s.out(F.gelu(s.fc(s.ln2(x))))


def torch_rank(rank, world, workload, port, result, by_batch=False):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.cuda.set_device(rank)
    torch.distributed.init_process_group("nccl", rank=rank, world_size=world)
    torch.manual_seed(0)
    if workload == "mlp":
        model, x = MLP(), torch.randn(1024, 1024)
        plan = {"layers.0": ColwiseParallel(), "layers.2": RowwiseParallel()}
    else:
        model, x = Block(), torch.randn(64, 512, 768)
        plan = {n: ColwiseParallel() for n in ("q", "k", "v", "fc")}
        plan.update(proj=RowwiseParallel(), out=RowwiseParallel())
    model = model.to("cuda", torch.bfloat16).eval()
    x = x.to("cuda", torch.bfloat16)
    if by_batch:
        x = x.chunk(world)[rank].contiguous()
    elif world > 1:
        mesh = init_device_mesh("cuda", (world,))
        model = parallelize_module(model, mesh, plan)
    with torch.no_grad():
        us = bench(lambda: model(x))
    if rank == 0:
        result.put(us)
    torch.distributed.destroy_process_group()


def torch_time(workload, world, port, by_batch=False):
    ctx = mp.get_context("spawn")
    result = ctx.Queue()
    procs = [ctx.Process(target=torch_rank, args=(r, world, workload, port, result, by_batch))
             for r in range(world)]
    for p in procs:
        p.start()
    us = result.get(timeout=600)
    for p in procs:
        p.join()
    return us


def graft_time(workload, gpus, shard_by="tensor"):
    cmd = [f"{build}/bench/gpu_run", workload, "--precision", "bf16", "--runs", "50",
           "--gpus", str(gpus), "--shard-by", shard_by]
    if workload == "mlp":
        cmd += ["--batch", "1024"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(" ".join(cmd), "failed:", r.stderr.strip(), flush=True)
        return float("nan")
    # The last line is the JSON (NCCL_DEBUG may print before it).
    return json.loads(r.stdout.strip().splitlines()[-1])["median_us"]


if __name__ == "__main__":
    gpus = torch.cuda.device_count()
    print(f"{gpus} x {torch.cuda.get_device_name(0)}, torch {torch.__version__}", flush=True)
    rows = []
    port = 29511
    for name, workload in [("MLP b1024 bf16", "mlp"), ("GPT-2 block b64 s512 bf16", block_file)]:
        if workload != "mlp" and not os.path.exists(workload):
            print(f"{workload} missing: skipped", flush=True)
            continue
        row = {"name": name}
        for world in (1, 2):
            if world > gpus:
                continue
            row[f"graft{world}"] = graft_time(workload, world)
            if world > 1:
                row[f"graft{world}batch"] = graft_time(workload, world, "batch")
            port += 1
            kind = "mlp" if workload == "mlp" else "block"
            row[f"torch{world}"] = torch_time(kind, world, port)
            if world > 1:
                port += 1
                row[f"torch{world}batch"] = torch_time(kind, world, port, by_batch=True)
            print(row, flush=True)
        rows.append(row)
    print()
    print("| workload | graft 1 GPU us | graft 2 GPUs tensor us | graft 2/1 tensor "
          "| graft 2 GPUs batch us | graft 2/1 batch "
          "| torch TP 1 GPU us | torch TP 2 GPUs us | torch 2/1 "
          "| torch TP 2 GPUs / graft tensor 2 GPUs | torch 2 GPUs batch us | torch 2/1 batch "
          "| torch batch / graft batch, 2 GPUs |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    nan = float("nan")
    for r in rows:
        g1, g2, gb = r.get("graft1", nan), r.get("graft2", nan), r.get("graft2batch", nan)
        t1, t2, tb = r.get("torch1", nan), r.get("torch2", nan), r.get("torch2batch", nan)
        print(f"| {r['name']} | {g1:.1f} | {g2:.1f} | {g1 / g2:.2f}x | {gb:.1f} | {g1 / gb:.2f}x "
              f"| {t1:.1f} | {t2:.1f} | {t1 / t2:.2f}x | {t2 / g2:.2f}x "
              f"| {tb:.1f} | {t1 / tb:.2f}x | {tb / gb:.2f}x |")
