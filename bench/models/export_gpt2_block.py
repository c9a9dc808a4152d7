#!/usr/bin/python3
"""Exports the GPT-2-small block of DESIGN.md section 12 (d=768, 12 heads, GELU MLP
of 3072, causal attention written out as matmul, scale, mask, softmax, matmul, as
an ONNX export of GPT-2 has it) to ONNX, random weights, with a fixed input shape.

  /usr/bin/python3 bench/models/export_gpt2_block.py OUT.onnx [BATCH SEQ]

Defaults: batch 8, sequence 256 (the GPU benchmark's shape). Debian's python3-torch
is enough. `graft convert OUT.onnx OUT.gpb` then makes a file a GPU machine without
ONNX import can load."""
import math, sys
import torch, torch.nn as nn, torch.nn.functional as F

out = sys.argv[1]
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 8
seq = int(sys.argv[3]) if len(sys.argv) > 3 else 256
torch.manual_seed(0)


class Attn(nn.Module):
    def __init__(s, d=768, h=12, t=1024):
        super().__init__()
        s.h = h
        s.qkv = nn.Linear(d, 3 * d)
        s.proj = nn.Linear(d, d)
        s.register_buffer("mask", torch.tril(torch.ones(t, t)).view(1, 1, t, t))

    def forward(s, x):
        B, T, C = x.shape
        q, k, v = s.qkv(x).split(C, dim=2)
        q, k, v = [z.view(B, T, s.h, C // s.h).transpose(1, 2) for z in (q, k, v)]
        a = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        a = a.masked_fill(s.mask[:, :, :T, :T] == 0, float("-inf")).softmax(-1)
        return s.proj((a @ v).transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(s, d=768):
        super().__init__()
        s.ln1 = nn.LayerNorm(d)
        s.attn = Attn(d)
        s.ln2 = nn.LayerNorm(d)
        s.fc = nn.Linear(d, 4 * d)
        s.out = nn.Linear(4 * d, d)

    def forward(s, x):
        x = x + s.attn(s.ln1(x))
        return x + s.out(F.gelu(s.fc(s.ln2(x))))


m = Block().eval()
x = torch.randn(batch, seq, 768)
with torch.no_grad():
    torch.onnx.export(m, (x,), out, input_names=["input"], output_names=["output"],
                      opset_version=17)
print("wrote", out)
