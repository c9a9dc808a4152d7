#!/usr/bin/env python3
"""Exports a zoo of models the way a PyTorch user does today, for checking
the ONNX importer and the backends on graphs that are not graft's own.

Each model goes to OUT/<name>/ as model.onnx (plus any external-data file
the exporter writes), input_<i>.npy, output_<i>.npy (PyTorch's outputs) and
ops.txt (the op types of the main graph). Every model is exported twice
where that adds a kind of graph: with torch.onnx.export's default (the
torch.export-based exporter from PyTorch 2.9 on, opset 20) into <name>/ and
with dynamo=False (TorchScript, opset 17) into <name>_ts/. Weights are
random (fixed seeds); sizes are small so the whole zoo is a few MB.

Needs torch, onnx and onnxscript (and torchvision/timm where present:
models that need a missing package are skipped with a message).

    python3 tests/onnx_models/export_zoo.py OUT
"""

import os
import sys
import traceback

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class UNetish(nn.Module):
    """Encoder/decoder: GroupNorm, InstanceNorm, strided conv, ConvTranspose,
    nearest and bilinear upsampling, PixelShuffle, concat skips."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.g1 = nn.GroupNorm(4, 16)
        self.down = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.n2 = nn.InstanceNorm2d(32, affine=True)
        self.up = nn.ConvTranspose2d(32, 16, 4, stride=2, padding=1)
        self.up2 = nn.ConvTranspose2d(32, 8, 3, stride=2, padding=1,
                                      output_padding=1, groups=2)
        self.ps = nn.Conv2d(8, 12, 3, padding=1)
        self.out = nn.Conv2d(3 + 3, 2, 1)

    def forward(self, x):
        a = F.silu(self.g1(self.c1(x)))                     # 16 x H
        b = F.leaky_relu(self.n2(self.down(a)), 0.1)        # 32 x H/2
        u = torch.cat([self.up(b), a], 1)                   # 32 x H
        v = self.up2(F.max_pool2d(u, 2))                    # 8 x H
        w = F.pixel_shuffle(self.ps(v), 2)                  # 3 x 2H
        n = F.interpolate(x, scale_factor=2, mode="nearest")
        y = self.out(torch.cat([w, n], 1))                  # 2 x 2H
        z = F.interpolate(y, size=(21, 27), mode="bilinear",
                          align_corners=False)
        t = F.interpolate(y, scale_factor=0.5, mode="bilinear",
                          align_corners=True)
        return z, t


class Misc(nn.Module):
    """Rounding, tiling, norms and other ops models use now and then."""

    def forward(self, x, idx):
        a = torch.round(x * 3) + torch.floor(x) - torch.ceil(x * 0.7)
        b = x.repeat(2, 1, 3)
        c = F.normalize(x, dim=-1)
        d = torch.logsumexp(x, dim=1)
        e = torch.argmin(x, dim=-1)
        f = F.mish(x) + F.hardswish(x) + F.softplus(x)
        g = torch.einsum("bij,bkj->bik", x, x)
        h = F.one_hot(idx, 7).float()
        i = x.norm(p=1, dim=2)
        return a, b, c, d, e, f, g, h, i


class Lstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(12, 16, num_layers=1, batch_first=True)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y[:, -1])


class TinyGpt2(nn.Module):
    def __init__(self):
        super().__init__()
        import transformers
        cfg = transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4,
                                      n_positions=32, vocab_size=101)
        self.m = transformers.GPT2LMHeadModel(cfg).eval()

    def forward(self, ids):
        return self.m(input_ids=ids, use_cache=False).logits


class TinyBert(nn.Module):
    def __init__(self):
        super().__init__()
        import transformers
        cfg = transformers.BertConfig(hidden_size=64, num_hidden_layers=2,
                                      num_attention_heads=4,
                                      intermediate_size=128, vocab_size=101,
                                      max_position_embeddings=32)
        self.m = transformers.BertModel(cfg).eval()

    def forward(self, ids, mask):
        return self.m(input_ids=ids, attention_mask=mask).last_hidden_state


class TinyLlama(nn.Module):
    def __init__(self):
        super().__init__()
        import transformers
        cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128,
                                       num_hidden_layers=2, num_attention_heads=4,
                                       num_key_value_heads=2, vocab_size=101,
                                       max_position_embeddings=64)
        self.m = transformers.LlamaForCausalLM(cfg).eval()

    def forward(self, ids):
        return self.m(input_ids=ids, use_cache=False).logits


class TinyT5(nn.Module):
    def __init__(self):
        super().__init__()
        import transformers
        cfg = transformers.T5Config(d_model=64, d_kv=16, d_ff=128, num_layers=2,
                                    num_decoder_layers=2, num_heads=4, vocab_size=101)
        self.m = transformers.T5EncoderModel(cfg).eval()

    def forward(self, ids):
        return self.m(input_ids=ids).last_hidden_state


class TinyDistilBert(nn.Module):
    def __init__(self):
        super().__init__()
        import transformers
        cfg = transformers.DistilBertConfig(dim=64, hidden_dim=128, n_layers=2,
                                            n_heads=4, vocab_size=101,
                                            max_position_embeddings=32)
        self.m = transformers.DistilBertModel(cfg).eval()

    def forward(self, ids, mask):
        return self.m(input_ids=ids, attention_mask=mask).last_hidden_state


class TinyWav2Vec2(nn.Module):
    def __init__(self):
        super().__init__()
        import transformers
        cfg = transformers.Wav2Vec2Config(hidden_size=64, num_hidden_layers=2,
                                          num_attention_heads=4, intermediate_size=128,
                                          conv_dim=(32, 32), conv_stride=(5, 2),
                                          conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                                          num_conv_pos_embedding_groups=4)
        self.m = transformers.Wav2Vec2Model(cfg).eval()

    def forward(self, audio):
        return self.m(audio).last_hidden_state


class TorchEncoder(nn.Module):
    """nn.TransformerEncoder (PyTorch's own multi-head attention)."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True,
                                           norm_first=True, activation="gelu")
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x):
        return self.enc(x)


class Sdpa(nn.Module):
    """F.scaled_dot_product_attention, causal and with a float mask."""

    def forward(self, q, k, v, mask):
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        b = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return a, b


class DynamicMlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class TinyClipText(nn.Module):
    def __init__(self):
        super().__init__()
        import transformers
        cfg = transformers.CLIPTextConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                          num_attention_heads=4, vocab_size=101,
                                          max_position_embeddings=32)
        self.m = transformers.CLIPTextModel(cfg).eval()

    def forward(self, ids):
        out = self.m(input_ids=ids)
        return out.last_hidden_state, out.pooler_output


class TinyViT(nn.Module):
    def __init__(self):
        super().__init__()
        import transformers
        cfg = transformers.ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=128, image_size=32, patch_size=8)
        self.m = transformers.ViTModel(cfg).eval()

    def forward(self, x):
        return self.m(pixel_values=x).last_hidden_state


class TinyWhisperEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        import transformers
        cfg = transformers.WhisperConfig(d_model=64, encoder_layers=2, encoder_attention_heads=4,
                                         decoder_layers=1, decoder_attention_heads=4,
                                         encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=16,
                                         max_source_positions=50, vocab_size=101)
        self.m = transformers.WhisperModel(cfg).eval().encoder

    def forward(self, x):
        return self.m(x).last_hidden_state


class TinyMistral(nn.Module):
    def __init__(self):
        super().__init__()
        import transformers
        cfg = transformers.MistralConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2,
                                         vocab_size=101, max_position_embeddings=64,
                                         sliding_window=8)
        self.m = transformers.MistralForCausalLM(cfg).eval()

    def forward(self, ids):
        return self.m(input_ids=ids, use_cache=False).logits


class HfTiny(nn.Module):
    """A Hugging Face model from a config at tiny sizes; ids in, the last
    hidden state (or logits) out."""

    def __init__(self, config_name, model_name, **config):
        super().__init__()
        import transformers
        cfg = getattr(transformers, config_name)(**config)
        self.m = getattr(transformers, model_name)(cfg).eval()

    def forward(self, x):
        out = self.m(x)
        return out.logits if hasattr(out, "logits") and out.logits is not None else out.last_hidden_state


TEXT = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
            vocab_size=101, max_position_embeddings=64)


def hf(config_name, model_name, **config):
    return lambda: HfTiny(config_name, model_name, **config)


def small_swin():
    from torchvision.models.swin_transformer import SwinTransformer
    return SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2], num_heads=[2, 4],
                           window_size=[4, 4], num_classes=10)


def small_convnext():
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    return ConvNeXt([CNBlockConfig(32, 64, 2), CNBlockConfig(64, None, 2)], num_classes=10)


def tv(name, **kw):
    def make():
        import torchvision
        module = torchvision.models
        for part in name.split("."):
            module = getattr(module, part)
        return module(weights=None, **kw)
    return make


def timm_vit():
    from timm.models.vision_transformer import VisionTransformer
    return VisionTransformer(img_size=32, patch_size=8, embed_dim=96,
                             depth=2, num_heads=3, num_classes=10)


def randomize_norms(model, seed):
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm2d, nn.BatchNorm1d)):
            n = m.num_features
            with torch.no_grad():
                m.running_mean.copy_(torch.rand(n, generator=g) - 0.5)
                m.running_var.copy_(torch.rand(n, generator=g) + 0.5)
        if isinstance(m, (nn.BatchNorm2d, nn.GroupNorm, nn.LayerNorm,
                          nn.InstanceNorm2d)) and getattr(m, "weight", None) is not None:
            with torch.no_grad():
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.rand(m.bias.shape, generator=g) - 0.5)


def img(n=1, c=3, h=32, w=32):
    return lambda: (torch.randn(n, c, h, w),)


MODELS = [
    ("unetish", UNetish, img(1, 3, 16, 16)),
    ("misc", Misc, lambda: (torch.randn(2, 5, 6), torch.tensor([[0, 3, 6], [2, 1, 5]]))),
    ("lstm", Lstm, lambda: (torch.randn(2, 7, 12),)),
    ("mobilenet_v3_small", tv("mobilenet_v3_small"), img(1, 3, 64, 64)),
    ("squeezenet1_1", tv("squeezenet1_1"), img(1, 3, 64, 64)),
    ("shufflenet_v2_x0_5", tv("shufflenet_v2_x0_5"), img(1, 3, 64, 64)),
    ("mnasnet0_5", tv("mnasnet0_5"), img(1, 3, 64, 64)),
    ("vit_tiny", timm_vit, img(2, 3, 32, 32)),
    ("gpt2_tiny", TinyGpt2, lambda: (torch.randint(0, 101, (2, 16)),)),
    ("bert_tiny", TinyBert, lambda: (torch.randint(0, 101, (2, 16)),
                                     torch.tensor([[1] * 16, [1] * 10 + [0] * 6]))),
    ("llama_tiny", TinyLlama, lambda: (torch.randint(0, 101, (2, 16)),)),
    ("t5_encoder_tiny", TinyT5, lambda: (torch.randint(0, 101, (2, 16)),)),
    ("distilbert_tiny", TinyDistilBert, lambda: (torch.randint(0, 101, (2, 16)),
                                                 torch.tensor([[1] * 16, [1] * 9 + [0] * 7]))),
    ("wav2vec2_tiny", TinyWav2Vec2, lambda: (torch.randn(2, 800),)),
    ("torch_encoder", TorchEncoder, lambda: (torch.randn(2, 10, 64),)),
    ("sdpa", Sdpa, lambda: (torch.randn(2, 4, 8, 16), torch.randn(2, 4, 8, 16),
                            torch.randn(2, 4, 8, 16), torch.randn(8, 8))),
    ("efficientnet_b0", tv("efficientnet_b0"), img(1, 3, 64, 64)),
    ("regnet_y_400mf", tv("regnet_y_400mf"), img(1, 3, 64, 64)),
    ("convnext_tiny", tv("convnext_tiny"), img(1, 3, 64, 64)),
    ("densenet121", tv("densenet121"), img(1, 3, 64, 64)),
    ("googlenet", tv("googlenet", aux_logits=False, init_weights=True), img(1, 3, 64, 64)),
    ("swin_t", tv("swin_t"), img(1, 3, 64, 64)),
    ("resnet50", tv("resnet50"), img(2, 3, 64, 64)),
    ("lraspp_mobilenet_v3", tv("segmentation.lraspp_mobilenet_v3_large", weights_backbone=None),
     img(1, 3, 64, 64)),
    ("deeplabv3_mobilenet", tv("segmentation.deeplabv3_mobilenet_v3_large", weights_backbone=None,
                               aux_loss=False), img(1, 3, 64, 64)),
]

MODELS += [
    ("clip_text_tiny", TinyClipText, lambda: (torch.randint(0, 100, (2, 12)),)),
    ("vit_hf_tiny", TinyViT, img(2, 3, 32, 32)),
    ("whisper_encoder_tiny", TinyWhisperEncoder, lambda: (torch.randn(1, 16, 100),)),
    ("mistral_tiny", TinyMistral, lambda: (torch.randint(0, 101, (2, 16)),)),
    ("swin_small", small_swin, img(1, 3, 32, 32)),
    ("convnext_small", small_convnext, img(1, 3, 32, 32)),
]

ids = lambda: (torch.randint(3, 100, (2, 16)),)
MODELS += [
    ("roberta_tiny", hf("RobertaConfig", "RobertaModel", **TEXT), ids),
    ("albert_tiny", hf("AlbertConfig", "AlbertModel", embedding_size=32, **TEXT), ids),
    ("deberta_v2_tiny", hf("DebertaV2Config", "DebertaV2Model", **TEXT), ids),
    ("qwen2_tiny", hf("Qwen2Config", "Qwen2ForCausalLM", num_key_value_heads=2, **TEXT), ids),
    ("gemma_tiny", hf("GemmaConfig", "GemmaForCausalLM", num_key_value_heads=2, head_dim=16, **TEXT), ids),
    ("phi_tiny", hf("PhiConfig", "PhiForCausalLM", **TEXT), ids),
    ("gpt_neox_tiny", hf("GPTNeoXConfig", "GPTNeoXForCausalLM", **TEXT), ids),
    ("bart_tiny", hf("BartConfig", "BartModel", d_model=64, encoder_layers=1, decoder_layers=1,
                     encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                     decoder_ffn_dim=128, vocab_size=101, max_position_embeddings=64), ids),
    ("segformer_tiny", hf("SegformerConfig", "SegformerForSemanticSegmentation", num_encoder_blocks=2,
                          depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[16, 32], patch_sizes=[7, 3],
                          strides=[4, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2],
                          decoder_hidden_size=32, num_labels=3), img(1, 3, 32, 32)),
    ("mobilevit_tiny", hf("MobileViTConfig", "MobileViTModel", image_size=32, hidden_sizes=[24, 32, 40],
                          neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64]), img(1, 3, 32, 32)),
    ("beit_tiny", hf("BeitConfig", "BeitModel", image_size=32, patch_size=8, use_relative_position_bias=True,
                     hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128),
     img(1, 3, 32, 32)),
]

# Exported with a dynamic batch (dim 0 of the first input), run at batch 3.
DYNAMIC = {"mlp_dynamic", "resnet18_dynamic"}
MODELS += [
    ("mlp_dynamic", DynamicMlp, lambda: (torch.randn(3, 16),)),
    ("resnet18_dynamic", tv("resnet18"), img(3, 3, 32, 32)),
]


def export_one(name, make, make_inputs, out, dynamo):
    torch.manual_seed(7)
    model = make().eval()
    randomize_norms(model, 70)
    inputs = make_inputs()
    with torch.no_grad():
        outputs = model(*inputs)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    elif isinstance(outputs, dict):
        outputs = tuple(outputs.values())
    d = os.path.join(out, name if dynamo else name + "_ts")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    kw = {"dynamo": dynamo}
    if not dynamo:
        kw["opset_version"] = 17
    if name in DYNAMIC:
        if dynamo:
            kw["dynamic_shapes"] = ({0: torch.export.Dim("batch", min=1, max=64)},)
        else:
            kw["dynamic_axes"] = {"in0": {0: "batch"}, "out0": {0: "batch"}}
    torch.onnx.export(model, inputs, path,
                      input_names=["in%d" % i for i in range(len(inputs))],
                      output_names=["out%d" % i for i in range(len(outputs))],
                      **kw)
    for i, t in enumerate(inputs):
        np.save(os.path.join(d, "input_%d.npy" % i), t.numpy())
    for i, t in enumerate(outputs):
        np.save(os.path.join(d, "output_%d.npy" % i), t.detach().numpy())
    import onnx
    m = onnx.load(path)
    ops = sorted({n.op_type for n in m.graph.node})
    funcs = [f.name for f in m.functions]
    with open(os.path.join(d, "ops.txt"), "w") as f:
        f.write("opset %s\n" % [(o.domain, o.version) for o in m.opset_import])
        f.write("ops %s\n" % " ".join(ops))
        f.write("functions %s\n" % " ".join(funcs))
    print("%-24s ok  %s" % (os.path.basename(d), " ".join(ops)))


def main():
    out = sys.argv[1]
    only = set(sys.argv[2:])
    torch.set_num_threads(8)
    for name, make, make_inputs in MODELS:
        if only and name not in only:
            continue
        # torchvision's models by the TorchScript exporter are the
        # ResNet-18 export's kind already: only the default exporter.
        for dynamo in (True,) if make.__name__ == "make" else (True, False):
            try:
                export_one(name, make, make_inputs, out, dynamo)
            except Exception as e:  # Report and go on with the next.
                print("%-24s FAILED %s: %s" % (name + ("" if dynamo else "_ts"),
                                              type(e).__name__, str(e)[:300]))
                traceback.print_exc(limit=2, file=sys.stdout)


if __name__ == "__main__":
    main()
