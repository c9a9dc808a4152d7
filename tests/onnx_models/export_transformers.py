#!/usr/bin/env python3
"""Exports Hugging Face transformers models (built from small configs, random
weights, no download) and torchvision's ResNet-18 to ONNX with a recent
PyTorch, each twice: with the default exporter of PyTorch 2.x (torch.export,
"dynamo") and with the TorchScript one. Batches are padded the way users pad
them (GPT-2 and Llama on the left, as for generation; BERT on the right), so
that masks of torch.finfo(f32).min and rows that mask every key are exercised.
Each model goes to DIR/NAME_dynamo and DIR/NAME_ts as check_zoo.py reads it
(model.onnx with inputs in0.. and outputs out0.., input_<i>.npy,
output_<i>.npy with PyTorch's outputs).

  python3 tests/onnx_models/export_transformers.py DIR [MODEL ...]
  python3 tests/onnx_models/check_zoo.py DIR interp orc     # or cuda

Needs torch (2.x), transformers, onnx and onnxscript; docs/onnx.md has the
last results."""
import inspect
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn

torch.manual_seed(0)
out, only = sys.argv[1], sys.argv[2:]


def ids(batch=2, seq=16, vocab=1000):
    return torch.randint(0, vocab, (batch, seq))


def left_padded(batch=2, seq=16, pad=5):
    mask = torch.ones(batch, seq, dtype=torch.long)
    mask[1, :pad] = 0
    return mask


def right_padded(batch=2, seq=16, pad=6):
    mask = torch.ones(batch, seq, dtype=torch.long)
    mask[1, seq - pad:] = 0
    return mask


class Hidden(nn.Module):
    """The last hidden state of a transformers model, as one tensor; the
    inputs are passed by name (input_ids and attention_mask, or
    pixel_values), since models order their parameters differently."""

    def __init__(self, model, names):
        super().__init__()
        self.model, self.names = model, names
        self.no_cache = "use_cache" in inspect.signature(model.forward).parameters

    def forward(self, x0, x1=None):
        kwargs = dict(zip(self.names, (x0, x1)))
        if self.no_cache:
            kwargs["use_cache"] = False
        return self.model(**kwargs).last_hidden_state


def hf(config_name, model_name, attn, names=("input_ids", "attention_mask"), **config):
    import transformers
    cfg = getattr(transformers, config_name)(attn_implementation=attn, **config)
    return Hidden(getattr(transformers, model_name)(cfg), names)


def gpt2(attn):
    return hf("GPT2Config", "GPT2Model", attn, n_layer=2, n_embd=128, n_head=4,
              n_positions=64, vocab_size=1000)


def llama(attn):
    return hf("LlamaConfig", "LlamaModel", attn, num_hidden_layers=2, hidden_size=128,
              intermediate_size=256, num_attention_heads=4, num_key_value_heads=2,
              max_position_embeddings=64, vocab_size=1000)


def bert(attn):
    return hf("BertConfig", "BertModel", attn, num_hidden_layers=2, hidden_size=128,
              intermediate_size=256, num_attention_heads=4, max_position_embeddings=64,
              vocab_size=1000)


def vit(attn):
    return hf("ViTConfig", "ViTModel", attn, names=("pixel_values",), num_hidden_layers=2,
              hidden_size=128,
              intermediate_size=256, num_attention_heads=4, image_size=64, patch_size=16)


def t5_encoder(attn):
    return hf("T5Config", "T5EncoderModel", attn, num_layers=2, d_model=128, d_ff=256,
              num_heads=4, d_kv=32, vocab_size=1000)


def resnet18(attn):
    import torchvision
    return torchvision.models.resnet18()


models = {  # name: (model of an attention implementation, inputs)
    "gpt2_left_padded": (lambda: gpt2("eager"), lambda: (ids(), left_padded())),
    "gpt2_sdpa_left_padded": (lambda: gpt2("sdpa"), lambda: (ids(), left_padded())),
    "llama_left_padded": (lambda: llama("eager"), lambda: (ids(), left_padded())),
    "llama_sdpa": (lambda: llama("sdpa"), lambda: (ids(), left_padded())),
    "bert_right_padded": (lambda: bert("eager"), lambda: (ids(), right_padded())),
    "bert_sdpa": (lambda: bert("sdpa"), lambda: (ids(), right_padded())),
    "vit": (lambda: vit("eager"), lambda: (torch.randn(2, 3, 64, 64),)),
    "t5_encoder": (lambda: t5_encoder("eager"), lambda: (ids(), right_padded())),
    "resnet18": (lambda: resnet18(None), lambda: (torch.randn(1, 3, 224, 224),)),
}


# Exported at batch 2, sequence 16 with those dims dynamic, then checked
# at batch 3, sequence 11 (ResNet-18: batch 1, then 2): name: (model,
# inputs of a batch and sequence, the inputs' dynamic dims).
dynamic_models = {
    "gpt2_dynamic": (lambda: gpt2("eager"), lambda b, s: (ids(b, s), left_padded(b, s, 4)), (0, 1)),
    "llama_dynamic": (lambda: llama("eager"), lambda b, s: (ids(b, s), left_padded(b, s, 4)), (0, 1)),
    "bert_dynamic": (lambda: bert("eager"), lambda b, s: (ids(b, s), right_padded(b, s, 3)), (0, 1)),
    "resnet18_dynamic_batch": (lambda: resnet18(None), lambda b, s: (torch.randn(b - 1, 3, 64, 64),),
                               (0,)),
}


def rename(path, n_in, n_out):
    """Names the graph's inputs in0.. and outputs out0.., as check_zoo.py
    passes them (the exporters may name them otherwise)."""
    m = onnx.load(path)
    g = m.graph
    names = {}
    for i, v in enumerate(g.input[:n_in]):
        names[v.name] = "in%d" % i
    for i, v in enumerate(g.output[:n_out]):
        names[v.name] = "out%d" % i
    for v in list(g.input) + list(g.output):
        v.name = names.get(v.name, v.name)
    for node in g.node:
        for k, name in enumerate(node.input):
            node.input[k] = names.get(name, name)
        for k, name in enumerate(node.output):
            node.output[k] = names.get(name, name)
    onnx.save(m, path)
    return [v.name for v in g.input]


def export(make, inputs, d, dynamo, dims=None, checked=None):
    """Exports make() at `inputs` (their `dims` dynamic where given) and
    writes the inputs `checked` (default: the same) and PyTorch's outputs
    for them."""
    m = make().eval()
    x = inputs()
    checked = checked or x
    with torch.no_grad():
        y = m(*checked)
    ys = y if isinstance(y, tuple) else (y,)
    path = os.path.join(d, "model.onnx")
    names = ["in%d" % i for i in range(len(x))]
    onames = ["out%d" % i for i in range(len(ys))]
    if dynamo:
        shapes = None
        if dims:
            dim = torch.export.Dim.DYNAMIC
            shapes = tuple({k: dim for k in dims} for _ in x)
        torch.onnx.export(m, tuple(x), path, dynamo=True, external_data=False,
                          dynamic_shapes=shapes)
    else:
        axes = None
        if dims:
            labels = {k: ("batch", "seq")[k] for k in dims}
            axes = {n: labels for n in names + onames}
        torch.onnx.export(m, tuple(x), path, dynamo=False, opset_version=17,
                          input_names=names, output_names=onames, dynamic_axes=axes)
    kept = rename(path, len(x), len(ys))
    if len(kept) != len(x):  # An exporter dropped an input it found unused.
        raise RuntimeError("the export has %d inputs of %d" % (len(kept), len(x)))
    for i, t in enumerate(checked):
        np.save(os.path.join(d, "input_%d.npy" % i), t.numpy())
    for i, t in enumerate(ys):
        np.save(os.path.join(d, "output_%d.npy" % i), t.numpy())


jobs = [(name, make, inputs, None, None) for name, (make, inputs) in models.items()]
jobs += [(name, make, lambda f=inputs: f(2, 16), dims, lambda f=inputs: f(3, 11))
         for name, (make, inputs, dims) in dynamic_models.items()]
for name, make, inputs, dims, checked in jobs:
    if only and name not in only:
        continue
    for dynamo in (True, False):
        full = name + ("_dynamo" if dynamo else "_ts")
        d = os.path.join(out, full)
        os.makedirs(d, exist_ok=True)
        try:
            export(make, inputs, d, dynamo, dims, checked() if checked else None)
            print("ok", full, flush=True)
        except Exception as e:  # The exporter refused it.
            print("export failed:", full, type(e).__name__, str(e)[:300], flush=True)
