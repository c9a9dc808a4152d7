#!/usr/bin/python3
"""Exports PyTorch models of many kinds to ONNX with PyTorch 1.13's TorchScript
exporter (opset 17): torchvision's classifiers, segmenters, a detector, three video
models, RAFT optical flow, Swin and ViT, a transformer encoder with a padding mask, LSTM and GRU, a 3-D UNet, and
small models of less common ops. Each goes to DIR/NAME as check_zoo.py reads it
(model.onnx, input_<i>.npy, output_<i>.npy with PyTorch's outputs). Random weights
(ViT's zero-initialized head drawn again); Debian's python3-torch,
python3-torchvision and python3-numpy are enough.

  /usr/bin/python3 tests/onnx_models/export_torchvision.py DIR [--opset N] [MODEL ...]
  python3 tests/onnx_models/check_zoo.py DIR

--opset N exports at opset N instead (7 to 17: older exports, whose operators
take some lists as attributes and Softmax flattens its tail, docs/onnx.md).

docs/onnx.md has the last results."""
import os, sys
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torchvision
import torchvision.models as tvm
import torchvision.models.segmentation as seg

torch.manual_seed(0)
args = sys.argv[1:]
opset = 17
if "--opset" in args:
    i = args.index("--opset")
    opset = int(args[i + 1])
    del args[i:i + 2]
out, only = args[0], args[1:]


class Encoder(nn.Module):  # Embeddings, a padding mask, GELU, two layers.
    def __init__(s):
        super().__init__()
        s.emb = nn.Embedding(1000, 128)
        s.pos = nn.Parameter(torch.randn(1, 64, 128) * 0.02)
        layer = nn.TransformerEncoderLayer(128, 4, 256, batch_first=True, activation="gelu")
        s.layers = nn.TransformerEncoder(layer, 2)
        s.head = nn.Linear(128, 10)

    def forward(s, ids, mask):
        x = s.emb(ids) + s.pos[:, : ids.shape[1]]
        return s.head(s.layers(x, src_key_padding_mask=mask == 0)[:, 0])


class Recurrent(nn.Module):
    def __init__(s, cell):
        super().__init__()
        s.rnn = cell(32, 64, num_layers=2, batch_first=True, bidirectional=True)
        s.fc = nn.Linear(128, 5)

    def forward(s, x):
        return s.fc(s.rnn(x)[0][:, -1])


class UNetish(nn.Module):  # Transposed and grouped convolutions, upsampling.
    def __init__(s):
        super().__init__()
        s.d1 = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        s.d2 = nn.Sequential(nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU())
        s.up = nn.ConvTranspose2d(32, 16, 2, stride=2)
        s.mid = nn.Conv2d(48, 16, 3, padding=1, groups=2)
        s.out = nn.Conv2d(16, 2, 1)

    def forward(s, x):
        a = s.d1(x)
        b = s.d2(a)
        v = F.interpolate(b, scale_factor=2, mode="nearest")
        y = s.mid(torch.cat([s.up(b), F.avg_pool2d(v, 1)], 1)) + a
        return torch.sigmoid(s.out(F.leaky_relu(y, 0.1)))


class UNet3d(nn.Module):  # A 3-D UNet's blocks: 3-D convolutions, pooling, upsampling.
    def __init__(s):
        super().__init__()
        s.d1 = nn.Sequential(nn.Conv3d(1, 8, 3, padding=1), nn.BatchNorm3d(8), nn.ReLU())
        s.d2 = nn.Sequential(nn.MaxPool3d(2), nn.Conv3d(8, 16, 3, padding=1), nn.ReLU())
        s.up = nn.ConvTranspose3d(16, 8, 2, stride=2)
        s.out = nn.Conv3d(16, 2, 1)

    def forward(s, x):
        a = s.d1(x)
        return s.out(torch.cat([s.up(s.d2(a)), F.avg_pool3d(a, 3, 1, 1)], 1))


class Conv1dNet(nn.Module):
    def __init__(s):
        super().__init__()
        s.c1 = nn.Conv1d(8, 16, 5, padding=2)
        s.c2 = nn.Conv1d(16, 16, 3, padding=2, dilation=2, groups=4)
        s.ln = nn.LayerNorm(16)

    def forward(s, x):
        y = F.silu(s.c2(F.hardswish(s.c1(x))))
        y = s.ln(y.transpose(1, 2)).transpose(1, 2)
        return torch.softmax(y.mean(-1), -1), F.adaptive_max_pool1d(y, 5)


class Misc(nn.Module):  # Norms, pixel shuffle, resizing, einsum, gather, topk.
    def __init__(s):
        super().__init__()
        s.gn, s.inorm = nn.GroupNorm(4, 16), nn.InstanceNorm2d(16, affine=True)
        s.c = nn.Conv2d(4, 16, 3, padding=1, padding_mode="reflect")
        s.ps, s.w = nn.PixelShuffle(2), nn.Parameter(torch.randn(4, 8))

    def forward(s, x, idx):
        y = s.c(x)
        z = s.ps(s.gn(y) + s.inorm(y))
        z = F.interpolate(z, size=(11, 13), mode="bilinear", align_corners=True)
        # Padded along the width only: the cumulative sum then leaves no two
        # elements equal, and topk's order of equal ones is the exporter's
        # choice (ONNX puts the lower index first, PyTorch may not).
        e = torch.einsum("nchw,cd->ndhw", F.pad(z, (1, 2, 0, 0), mode="replicate"), s.w)
        c = torch.cumsum(e, dim=-1)
        g = torch.gather(c, 1, idx.expand(-1, -1, c.shape[2], c.shape[3]))
        v, i = torch.topk(g.flatten(1), 5, dim=1)
        m = torch.where(g > 0, g, g * 0.1).amax(dim=(2, 3))
        return v, i, m.unsqueeze(1).repeat(1, 2, 1), (c.abs() > 1).float().mean(dim=(1, 2, 3))


class Raft(nn.Module):  # Optical flow: GridSample of correlation pyramids; two updates.
    def __init__(s):
        super().__init__()
        s.m = torchvision.models.optical_flow.raft_small(weights=None)

    def forward(s, a, b):
        return s.m(a, b, num_flow_updates=2)[-1]


def vit():
    m = tvm.vit_b_16()
    nn.init.normal_(m.heads.head.weight, std=0.02)
    return m


def img(n=1, s=224):
    return (torch.randn(n, 3, s, s),)


padding = torch.cat([torch.ones(2, 40, dtype=torch.long), torch.zeros(2, 24, dtype=torch.long)], 1)
models = {  # name: (model, inputs, dynamic axes)
    "resnet50": (tvm.resnet50, img, None),
    "resnet18_dynamic_batch": (tvm.resnet18, lambda: img(3, 96), {"in0": {0: "n"}, "out0": {0: "n"}}),
    "mobilenet_v2": (tvm.mobilenet_v2, img, None),
    "mobilenet_v3_small": (tvm.mobilenet_v3_small, img, None),
    "efficientnet_b0": (tvm.efficientnet_b0, img, None),
    "squeezenet1_0": (tvm.squeezenet1_0, img, None),
    "shufflenet_v2_x1_0": (tvm.shufflenet_v2_x1_0, img, None),
    "densenet121": (tvm.densenet121, img, None),
    "googlenet": (lambda: tvm.googlenet(aux_logits=False, init_weights=True), img, None),
    "mnasnet0_5": (tvm.mnasnet0_5, img, None),
    "regnet_y_400mf": (tvm.regnet_y_400mf, img, None),
    "convnext_tiny": (tvm.convnext_tiny, img, None),
    "swin_t": (tvm.swin_t, img, None),
    "vit_b_16": (vit, img, None),
    "deeplabv3_mobilenet_v3_large": (
        lambda: seg.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, aux_loss=False),
        lambda: img(1, 160), None),
    "lraspp_mobilenet_v3_large": (
        lambda: seg.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None),
        lambda: img(1, 160), None),
    "efficientnet_v2_s": (tvm.efficientnet_v2_s, img, None),
    "resnext50_32x4d": (tvm.resnext50_32x4d, img, None),
    "mobilenet_v3_large": (tvm.mobilenet_v3_large, img, None),
    "vgg11_bn": (tvm.vgg11_bn, img, None),
    "inception_v3": (lambda: tvm.inception_v3(aux_logits=False, init_weights=True), lambda: img(1, 299), None),
    "fcn_resnet50": (lambda: seg.fcn_resnet50(weights=None, weights_backbone=None, aux_loss=False),
                     lambda: img(1, 128), None),
    "raft_small": (Raft, lambda: (torch.randn(1, 3, 128, 128), torch.randn(1, 3, 128, 128)), None),
    "fasterrcnn_mobilenet_v3_large_320_fpn": (
        lambda: torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
            weights=None, weights_backbone=None),
        lambda: ([torch.rand(3, 240, 320)],), None),
    "r3d_18": (torchvision.models.video.r3d_18, lambda: (torch.randn(1, 3, 8, 56, 56),), None),
    "r2plus1d_18": (torchvision.models.video.r2plus1d_18, lambda: (torch.randn(1, 3, 8, 56, 56),),
                    None),
    "s3d": (torchvision.models.video.s3d, lambda: (torch.randn(1, 3, 16, 224, 224),), None),
    "transformer_encoder": (Encoder, lambda: (torch.randint(0, 1000, (2, 64)), padding), None),
    "lstm": (lambda: Recurrent(nn.LSTM), lambda: (torch.randn(2, 20, 32),), None),
    "gru": (lambda: Recurrent(nn.GRU), lambda: (torch.randn(2, 20, 32),), None),
    "unet_like": (UNetish, lambda: img(1, 64), None),
    "unet3d": (UNet3d, lambda: (torch.randn(2, 1, 8, 16, 16),), {"in0": {0: "n"}, "out0": {0: "n"}}),
    "conv1d": (Conv1dNet, lambda: (torch.randn(2, 8, 50),), None),
    "misc_ops": (Misc, lambda: (torch.randn(2, 4, 6, 7), torch.tensor([[[[1]], [[3]]], [[[0]], [[2]]]])), None),
}


def export(name, make, inputs, dynamic, d):
    m = make().eval()
    x = inputs()
    with torch.no_grad():
        y = m(*x)
    if isinstance(y, dict):
        y = tuple(y.values())
    if isinstance(y, list):  # Detection: one dict a picture.
        y = tuple(v for r in y for v in r.values())
    ys = y if isinstance(y, tuple) else (y,)
    names = [f"in{i}" for i in range(len(x))]
    onames = [f"out{i}" for i in range(len(ys))]
    torch.onnx.export(m, tuple(x), os.path.join(d, "model.onnx"), input_names=names,
                      output_names=onames, opset_version=opset, dynamic_axes=dynamic)
    for i, t in enumerate(x):
        np.save(os.path.join(d, "input_%d.npy" % i), (t[0] if isinstance(t, list) else t).numpy())
    for i, t in enumerate(ys):
        np.save(os.path.join(d, "output_%d.npy" % i), t.numpy())


for name, (make, inputs, dynamic) in models.items():
    if only and name not in only:
        continue
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    try:
        export(name, make, inputs, dynamic, d)
        print("ok", name, flush=True)
    except Exception as e:  # PyTorch's exporter refused it.
        print("export failed:", name, type(e).__name__, str(e)[:200], flush=True)
