#!/usr/bin/env python3
"""PyTorch's causal scaled_dot_product_attention on the shapes of attention.cu
(q, k and v as views of one [8, 256, 2304] bf16 product), replayed from a CUDA
graph of 50 calls so that no launch from Python is timed: the mean per call.

  python3 attention_torch.py"""
import torch
import torch.nn.functional as F

x = torch.randn(8, 256, 2304, device="cuda", dtype=torch.bfloat16)


def call():
    q, k, v = [z.view(8, 256, 12, 64).transpose(1, 2) for z in x.split(768, dim=2)]
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(5):
        call()
torch.cuda.current_stream().wait_stream(s)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    for _ in range(50):
        call()
for _ in range(3):
    graph.replay()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
for _ in range(20):
    graph.replay()
end.record()
end.synchronize()
print(f"torch sdpa b8 h12 s256 d64 bf16 causal: {start.elapsed_time(end) * 1000 / 1000:.2f} us")
