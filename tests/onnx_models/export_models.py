#!/usr/bin/python3
"""Exports the ONNX models that tests/onnx/onnx_models_test.cc imports.

Each model is exported with torch.onnx.export from fixed seeds, together with
small random inputs and the outputs PyTorch computes for them, into its own
directory:

    <dir>/model.onnx            the model
    <dir>/input_<name>.npy      one per graph input, in graph order
    <dir>/output_<name>.npy     one per graph output, in graph order

and manifest.txt lists the models, one per line:

    model <dir> inputs <name,...> outputs <name,...>
    unsupported <dir> op <op type> node <node name>

An "unsupported" model holds an op graft does not import; the test expects
the import error to name the op type and the node.

Needs PyTorch and torchvision, which graft itself does not need (so
scripts/install-deps.sh does not install them). On Debian 12:

    apt-get install python3-torch python3-torchvision   # torch 1.13, numpy

Run with Debian's python (another python on PATH, e.g. pyenv's, lacks
those packages):

    /usr/bin/python3 tests/onnx_models/export_models.py            # committed models
    /usr/bin/python3 tests/onnx_models/export_models.py --resnet18 DIR

The first form rewrites the committed models in this directory (a few
hundred KB in all). The second writes only torchvision's ResNet-18 (random
weights, about 45 MB) to DIR/resnet18 with DIR/manifest.txt; the test runs it
when GRAFT_RESNET18_DIR=DIR is set. The output is deterministic for one
PyTorch version; another version may export a different but equivalent
graph.
"""

import argparse
import collections
import math
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


# --- The models -------------------------------------------------------------


class Mlp(nn.Module):
    """Linear + ReLU + Linear: Gemm (transB=1), Relu, Gemm."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class Cnn(nn.Module):
    """Conv2d, BatchNorm2d, ReLU, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d,
    Flatten, Linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool1 = nn.MaxPool2d(3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16, eps=1e-3)
        # Padding not counted in the average: AveragePool's pads with
        # count_include_pad=0.
        self.pool2 = nn.AvgPool2d(3, stride=2, padding=1,
                                  count_include_pad=False)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool1(F.relu(self.bn1(self.conv1(x))))
        x = self.pool2(F.relu(self.bn2(self.conv2(x))))
        x = torch.flatten(self.gap(x), 1)
        return self.fc(x)


class NewGelu(nn.Module):
    """GPT-2's GELU (the tanh approximation), written out as GPT-2 does."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(
            math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class CausalSelfAttention(nn.Module):
    """GPT-2's attention: one projection to q, k, v, split into heads with
    view/transpose, a causal mask from a registered lower-triangular buffer,
    softmax, and the heads merged back with transpose/view."""

    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.n_head = n_head
        self.n_embd = n_embd
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.register_buffer(
            "bias",
            torch.tril(torch.ones(block_size, block_size)).view(
                1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Gpt2Block(nn.Module):
    """x + attn(ln_1(x)), then + mlp(ln_2(.)), as in GPT-2."""

    def __init__(self, n_embd=64, n_head=4, block_size=16):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = NewGelu()
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(self.gelu(self.c_fc(self.ln_2(x))))


class Cumsum(nn.Module):
    """ReLU then CumSum along the second dim."""

    def forward(self, x):
        return torch.cumsum(F.relu(x), dim=1)


class Unet(nn.Module):
    """An encoder/decoder: GroupNorm (exported as InstanceNormalization
    between reshapes), InstanceNorm2d, ConvTranspose2d (stride 2; grouped
    with output_padding), PixelShuffle (DepthToSpace), nearest, bilinear
    (align_corners off and on) and bicubic Resize."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.g1 = nn.GroupNorm(2, 8)
        self.down = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.n2 = nn.InstanceNorm2d(16, affine=True)
        self.up = nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1)
        self.up2 = nn.ConvTranspose2d(16, 4, 3, stride=2, padding=1,
                                      output_padding=1, groups=2)
        self.ps = nn.Conv2d(4, 12, 3, padding=1)
        self.out = nn.Conv2d(6, 2, 1)

    def forward(self, x):
        a = F.relu(self.g1(self.c1(x)))
        b = F.relu(self.n2(self.down(a)))
        u = torch.cat([self.up(b), a], 1)
        v = self.up2(F.max_pool2d(u, 2))
        w = F.pixel_shuffle(self.ps(v), 2)
        n = F.interpolate(x, scale_factor=2, mode="nearest")
        y = self.out(torch.cat([w, n], 1))
        z = F.interpolate(y, size=(11, 13), mode="bilinear",
                          align_corners=False)
        t = F.interpolate(y, size=(12, 7), mode="bilinear",
                          align_corners=True)
        c = F.interpolate(x, scale_factor=2, mode="bicubic",
                          align_corners=False)
        return z, t, c


class Recurrent(nn.Module):
    """A two-layer bidirectional LSTM, a GRU (linear_before_reset=1), an
    RNN, and a ConvTranspose1d."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 8, num_layers=2, bidirectional=True,
                            batch_first=True)
        self.gru = nn.GRU(16, 5, batch_first=True)
        self.rnn = nn.RNN(5, 4)
        self.up = nn.ConvTranspose1d(4, 3, 3, stride=2)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        g, gh = self.gru(y)
        r, _ = self.rnn(g.transpose(0, 1))
        return self.up(r.permute(1, 2, 0)), h, c, gh


class Misc(nn.Module):
    """Round, Floor, Ceil, Tile, ReduceL2 (F.normalize), ReduceLogSumExp,
    ArgMin, Einsum, OneHot and ReduceL1."""

    def forward(self, x, idx):
        a = torch.round(x * 3) + torch.floor(x) - torch.ceil(x * 0.7)
        b = x.repeat(2, 1, 3)
        c = F.normalize(x, dim=-1)
        d = torch.logsumexp(x, dim=1)
        e = torch.argmin(x, dim=-1)
        g = torch.einsum("bij,bkj->bik", x, x)
        h = F.one_hot(idx, 7).float()
        i = x.norm(p=1, dim=2)
        return a, b, c, d, e, g, h, i


class Legacy(nn.Module):
    """What models of older opsets write differently: Pad (reflect and
    constant), Clip, Slice, Split, Squeeze/Unsqueeze, ReduceSum and TopK
    with attributes where later opsets take inputs; nearest upsampling
    (Upsample before opset 10, Resize-11 after); Softmax over dim 1 of a
    3-D tensor and LogSoftmax; Dropout (eval)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.drop = nn.Dropout(0.3)

    def forward(self, x):
        a = F.pad(x, (1, 2, 0, 1), mode="reflect")
        c = self.conv(F.pad(a, (1, 0, 0, 1), value=0.5))
        v, i = torch.topk(c.flatten(1), 3)  # Before values repeat (no ties).
        a = torch.clamp(c, -0.8, 0.9)
        up = F.interpolate(a, scale_factor=2, mode="nearest")
        s = up[:, 1:3, 2:-1, 1:-2]
        p, q = torch.split(s, [1, 1], dim=1)
        r = (p - 2 * q).squeeze(1).unsqueeze(-1)
        t = r.sum(dim=2)
        sm = torch.softmax(t * 3, dim=1)
        ls = torch.log_softmax(self.drop(t.flatten(1)), dim=-1)
        return v, i, sm, ls


class Loops(nn.Module):
    """ONNX Loops as PyTorch exports them: EmbeddingBag (a Loop over the
    bags; sum with fixed offsets and per-sample weights, mean and max over
    a 2-D input), and a scripted loop over a static length with a
    loop-carried value and a list it appends to (sequence ops). Also the
    inverse trigonometric functions (atan, asin, acos)."""

    def __init__(self):
        super().__init__()
        self.bag_sum = nn.EmbeddingBag(10, 4, mode="sum")
        self.bag_mean = nn.EmbeddingBag(10, 4, mode="mean")
        self.bag_max = nn.EmbeddingBag(10, 4, mode="max")
        # Offsets that are a model input make each bag's slice a run-time
        # one, which graft refuses; fixed ones fold.
        self.register_buffer("offsets", torch.tensor([0, 2, 2]))

    def forward(self, x, idx, weights):
        a = self.bag_sum(idx, self.offsets, per_sample_weights=weights)
        b = self.bag_mean(idx.view(3, 2)) + self.bag_max(idx.view(2, 3)).sum()
        total, steps = scanned_decay(x)
        t = torch.atan(x) + torch.asin(x.clamp(-0.9, 0.9)) * torch.acos(x.clamp(-0.9, 0.9))
        return a, b, total, steps, t


@torch.jit.script
def scanned_decay(x):
    """A loop over x's rows: a running sum decayed by half each row (a
    loop-carried value) and every row's running sum (a scan output)."""
    acc = torch.zeros_like(x[0])
    steps = []
    for i in range(x.size(0)):
        acc = acc * 0.5 + torch.tanh(x[i])
        steps.append(acc)
    return acc, torch.stack(steps)


class NonZero(nn.Module):
    """ReLU then NonZero: a result whose shape depends on the values,
    outside what graft imports."""

    def forward(self, x):
        return torch.nonzero(F.relu(x))


# --- Making the weights non-trivial ----------------------------------------


def randomize_batch_norms(model, generator):
    """Gives every BatchNorm2d running statistics and an affine transform
    far from the identity, so that a wrong eps, a swapped mean/var or a
    missing scale shows in the outputs."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            with torch.no_grad():
                m.running_mean.copy_(torch.rand(n, generator=generator) - 0.5)
                m.running_var.copy_(torch.rand(n, generator=generator) + 0.5)
                m.weight.copy_(torch.rand(n, generator=generator) + 0.5)
                m.bias.copy_(torch.rand(n, generator=generator) - 0.5)


def randomize_affine_norms(model, generator):
    """GroupNorm's and InstanceNorm's default weight 1 and bias 0 would hide
    a swapped or missing scale/bias."""
    for m in model.modules():
        if isinstance(m, (nn.GroupNorm, nn.InstanceNorm2d)) and m.affine:
            with torch.no_grad():
                m.weight.copy_(torch.rand(m.weight.shape, generator=generator) + 0.5)
                m.bias.copy_(torch.rand(m.bias.shape, generator=generator) - 0.5)


def randomize_layer_norms(model, generator):
    """LayerNorm's default weight 1 and bias 0 would hide a swapped or
    missing scale/bias."""
    for m in model.modules():
        if isinstance(m, nn.LayerNorm):
            n = m.normalized_shape[0]
            with torch.no_grad():
                m.weight.copy_(torch.rand(n, generator=generator) + 0.5)
                m.bias.copy_(torch.rand(n, generator=generator) - 0.5)


# --- Reading back what was exported (no onnx package needed) ----------------


def _varint(data, pos):
    value, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def _fields(data):
    """Yields (field number, wire type, value) of one protobuf message;
    length-delimited values are bytes."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 2:
            length, pos = _varint(data, pos)
            value, pos = data[pos:pos + length], pos + length
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ValueError("unexpected protobuf wire type %d" % wire)
        yield number, wire, value


def onnx_nodes(path):
    """(op_type, name) of every node of the main graph of an ONNX file:
    ModelProto.graph (7) -> GraphProto.node (1) -> NodeProto.name (3),
    op_type (4)."""
    with open(path, "rb") as f:
        model = f.read()
    nodes = []
    for number, _, graph in _fields(model):
        if number != 7:
            continue
        for gnumber, _, node in _fields(graph):
            if gnumber != 1:
                continue
            name = op_type = ""
            for nnumber, _, value in _fields(node):
                if nnumber == 3:
                    name = value.decode()
                elif nnumber == 4:
                    op_type = value.decode()
            nodes.append((op_type, name))
    return nodes


# --- Exporting --------------------------------------------------------------


def export(model, inputs, input_names, output_names, out_dir, opset,
           fold_constants=True, **export_args):
    """Exports `model` to out_dir/model.onnx with static shapes (no
    dynamic_axes) and saves the inputs and PyTorch's outputs beside it.
    `fold_constants` is torch.onnx.export's do_constant_folding."""
    os.makedirs(out_dir, exist_ok=True)
    model.eval()
    with torch.no_grad():
        outputs = model(*inputs)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    path = os.path.join(out_dir, "model.onnx")
    torch.onnx.export(model, tuple(inputs), path, opset_version=opset,
                      input_names=input_names, output_names=output_names,
                      do_constant_folding=fold_constants, **export_args)
    for name, tensor in zip(input_names, inputs):
        np.save(os.path.join(out_dir, "input_%s.npy" % name), tensor.numpy())
    for name, tensor in zip(output_names, outputs):
        np.save(os.path.join(out_dir, "output_%s.npy" % name),
                tensor.numpy())
    ops = collections.Counter(op for op, _ in onnx_nodes(path))
    size = sum(os.path.getsize(os.path.join(out_dir, f))
               for f in os.listdir(out_dir))
    print("%s: opset %d, %d bytes, ops %s" % (
        os.path.basename(out_dir), opset, size,
        ", ".join("%s x%d" % (op, n) for op, n in sorted(ops.items()))))
    return path


def model_line(directory, input_names, output_names):
    return "model %s inputs %s outputs %s" % (
        directory, ",".join(input_names), ",".join(output_names))


def write_manifest(out_dir, lines):
    with open(os.path.join(out_dir, "manifest.txt"), "w") as f:
        f.write("# Written by tests/onnx_models/export_models.py (torch %s); "
                "do not edit.\n" % torch.__version__)
        for line in lines:
            f.write(line + "\n")


def export_committed(out_dir):
    lines = []

    torch.manual_seed(1)
    export(Mlp(), [torch.randn(4, 16)], ["x"], ["y"],
           os.path.join(out_dir, "mlp"), opset=13)
    lines.append(model_line("mlp", ["x"], ["y"]))

    torch.manual_seed(2)
    cnn = Cnn()
    randomize_batch_norms(cnn, torch.Generator().manual_seed(20))
    # PRESERVE keeps BatchNormalization as its own node (the model is in
    # eval mode, so it is exported for inference); the default, EVAL, folds
    # it into the Conv before it, which the ResNet-18 export shows.
    export(cnn, [torch.randn(2, 3, 16, 16)], ["x"], ["y"],
           os.path.join(out_dir, "cnn"), opset=13,
           training=torch.onnx.TrainingMode.PRESERVE)
    lines.append(model_line("cnn", ["x"], ["y"]))

    # The same block at two opsets: 13 decomposes LayerNorm into
    # ReduceMean/Sub/Pow/Sqrt/Div, 17 exports one LayerNormalization. No
    # dynamic_axes: input shapes are static, so every shape computation can
    # be folded. At opset 13 PyTorch's own constant folding is off, so the
    # model keeps what the tracer emits and the importer must fold it: the
    # target shapes of view() as Unsqueeze/Concat of Constants feeding
    # Reshape, the causal mask as Slice/Equal/Cast of the mask buffer, and
    # each Linear's weight through a Transpose. At opset 17 PyTorch folds
    # them, as an export with the default options does.
    for opset in (13, 17):
        torch.manual_seed(3)
        block = Gpt2Block(n_embd=64, n_head=4, block_size=16)
        randomize_layer_norms(block, torch.Generator().manual_seed(30))
        name = "gpt2_block_opset%d" % opset
        export(block, [torch.randn(2, 16, 64)], ["x"], ["y"],
               os.path.join(out_dir, name), opset=opset,
               fold_constants=opset != 13)
        lines.append(model_line(name, ["x"], ["y"]))

    torch.manual_seed(4)
    export(Cumsum(), [torch.randn(2, 5)], ["x"], ["y"],
           os.path.join(out_dir, "cumsum"), opset=13)
    lines.append(model_line("cumsum", ["x"], ["y"]))

    torch.manual_seed(7)
    unet = Unet()
    randomize_affine_norms(unet, torch.Generator().manual_seed(70))
    outs = ["z", "t", "c"]
    export(unet, [torch.randn(2, 3, 8, 8)], ["x"], outs,
           os.path.join(out_dir, "unet"), opset=17)
    lines.append(model_line("unet", ["x"], outs))

    torch.manual_seed(8)
    outs = ["y", "h", "c", "gh"]
    export(Recurrent(), [torch.randn(2, 7, 6)], ["x"], outs,
           os.path.join(out_dir, "recurrent"), opset=17)
    lines.append(model_line("recurrent", ["x"], outs))

    torch.manual_seed(9)
    outs = ["a", "b", "c", "d", "e", "g", "h", "i"]
    export(Misc(), [torch.randn(2, 5, 6), torch.randint(0, 7, (2, 3))],
           ["x", "idx"], outs, os.path.join(out_dir, "misc"), opset=17)
    lines.append(model_line("misc", ["x", "idx"], outs))

    # One model at three opsets: 9 (Upsample, Slice/Pad/Clip/TopK with
    # attributes), 10 (Resize-10, their inputs) and 11 (Resize-11); the
    # three keep Split, Squeeze/Unsqueeze and ReduceSum's attributes and
    # Softmax's flattening before opset 13.
    outs = ["v", "i", "sm", "ls"]
    for opset in (9, 10, 11):
        torch.manual_seed(10)
        name = "legacy_opset%d" % opset
        export(Legacy(), [torch.randn(2, 3, 8, 8)], ["x"], outs,
               os.path.join(out_dir, name), opset=opset)
        lines.append(model_line(name, ["x"], outs))

    torch.manual_seed(11)
    outs = ["a", "b", "total", "steps", "t"]
    inputs = [torch.randn(5, 3), torch.tensor([1, 4, 4, 9, 0, 2]), torch.rand(6)]
    export(Loops(), inputs, ["x", "idx", "weights"], outs,
           os.path.join(out_dir, "loops"), opset=17)
    lines.append(model_line("loops", ["x", "idx", "weights"], outs))

    torch.manual_seed(6)
    path = export(NonZero(), [torch.randn(2, 5)], ["x"], ["y"],
                  os.path.join(out_dir, "unsupported_nonzero"), opset=13)
    nodes = [n for op, n in onnx_nodes(path) if op == "NonZero"]
    if len(nodes) != 1 or not nodes[0]:
        sys.exit("expected one named NonZero node in %s, found %r"
                 % (path, nodes))
    lines.append("unsupported unsupported_nonzero op NonZero node %s"
                 % nodes[0])

    write_manifest(out_dir, lines)


def export_resnet18(out_dir):
    import torchvision

    torch.manual_seed(5)
    model = torchvision.models.resnet18(weights=None)
    randomize_batch_norms(model, torch.Generator().manual_seed(50))
    # The default TrainingMode.EVAL: PyTorch folds each BatchNorm into its
    # Conv, as a user's export would.
    export(model, [torch.randn(1, 3, 64, 64)], ["x"], ["y"],
           os.path.join(out_dir, "resnet18"), opset=13)
    write_manifest(out_dir, [model_line("resnet18", ["x"], ["y"])])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--resnet18", metavar="OUTDIR",
        help="write only torchvision's ResNet-18 (about 45 MB, not "
             "committed) to OUTDIR/resnet18 and OUTDIR/manifest.txt")
    parser.add_argument(
        "--out-dir", default=HERE,
        help="where the committed models go (default: this script's "
             "directory)")
    args = parser.parse_args()
    # k.size(-1) becomes a constant in the trace, as intended (static
    # shapes); constant folding with TrainingMode.PRESERVE is safe here
    # because every model is in eval mode.
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    warnings.filterwarnings("ignore", message=".*constant folding be turned off")
    torch.set_num_threads(1)  # Reproducible reductions.
    if args.resnet18:
        export_resnet18(args.resnet18)
    else:
        export_committed(args.out_dir)


if __name__ == "__main__":
    main()
