#!/usr/bin/env python3
"""Writes kernels.inc (or the file after --out): graft's kernel preamble and the
device source of its own products and attention (backends/cuda/kernel_preamble.h,
skinny_gemm_source.h, implicit_conv_source.h, attention_source.h), as NVRTC gets
them, for the programs here (skinny_gemm_alone.cu, skinny_chain.cu, skinny_bulk.cu,
implicit_conv.cu, attention.cu). Run from this directory."""
import re, sys

def raw(path, name):
    text = open(path).read()
    return re.search(name + r'\[\] = R"CUDA\((.*?)\)CUDA"', text, re.S).group(1)

src = raw("../../backends/cuda/kernel_preamble.h", "kKernelPreamble")
src += raw("../../backends/cuda/skinny_gemm_source.h", "kSkinnyGemmSource")
src += raw("../../backends/cuda/implicit_conv_source.h", "kImplicitConvSource")
src += raw("../../backends/cuda/attention_source.h", "kAttentionSource")
out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else "kernels.inc"
open(out, "w").write(src)
