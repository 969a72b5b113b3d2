"""Writes the PyTorch reference values for the layers48 tests to one safetensors file.

Run through scripts/torch-fixtures/run.sh, which sets up the pinned venv.
Every tensor is named `<entry>.<part>`; see tests/fixtures/torch/README.md.
Each gradient entry is gradchecked first, so the fixture itself can be trusted.
"""

import json
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)

OUT = {}


def stored(t):
    # Fixture convention (see README): floats f64, bools BOOL, ints i32
    # (the dtypes skiff's safetensors reader takes as they are).
    t = t.detach()
    if t.dtype == torch.bool:
        pass
    elif not t.is_floating_point():
        t = t.to(torch.int32)
    return t.clone().contiguous()  # safetensors refuses views sharing storage


def away(make, avoid, tol=1e-3):
    """Redraws until no element is within tol of a kink, so that finite differences
    (gradcheck) and the Rust side agree on which branch each element takes."""
    while True:
        t = make()
        if all((t - a).abs().min() > tol for a in avoid):
            return t


def grad_entry(name, fn, inputs, consts=None, module=None):
    """y = fn(*inputs.values(), **consts), or module(*inputs.values()) with its own
    parameters. Float inputs and the parameters are differentiated; consts are only stored."""
    consts = consts or {}
    params = dict(module.named_parameters()) if module is not None else {}
    for t in inputs.values():
        t.requires_grad_(True)
    keys = list(inputs)

    def f(*ts):
        ins = dict(zip(keys, ts[: len(keys)]))
        if module is not None:
            ps = dict(zip(params, ts[len(keys):]))
            return torch.func.functional_call(module, ps, tuple(ins.values()))
        return fn(*ins.values(), **consts)

    leaves = tuple(inputs.values()) + tuple(params.values())
    assert torch.autograd.gradcheck(f, leaves), name

    y = f(*leaves)
    gy = torch.randn_like(y)
    grads = torch.autograd.grad(y, leaves, gy)

    parts = {**inputs, **consts, "y": y, "gy": gy}
    for k, g in zip(keys, grads):
        parts["gx" if k == "x" else f"g_{k}"] = g
    for k, p, g in zip(params, params.values(), grads[len(keys):]):
        parts[f"p_{k}"] = p
        parts[f"g_{k}"] = g
    OUT.update({f"{name}.{k}": stored(v) for k, v in parts.items()})


def plain_entry(name, **parts):
    # Non-differentiable outputs (bool/int): no gy and no gradients.
    OUT.update({f"{name}.{k}": stored(v) for k, v in parts.items()})


def uniform(lo, hi, *shape):
    return torch.empty(*shape).uniform_(lo, hi)


# --- activations (redrawn away from their kinks) ---
grad_entry("elu", lambda x: F.elu(x, alpha=0.7),
           {"x": away(lambda: torch.randn(3, 5), [0.0])})
grad_entry("selu", F.selu, {"x": away(lambda: uniform(-4, 4, 4, 6), [0.0])})
grad_entry("mish", F.mish, {"x": uniform(-5, 5, 4, 6)})
grad_entry("hardswish", F.hardswish, {"x": away(lambda: uniform(-5, 5, 4, 6), [-3.0, 3.0])})
grad_entry("hardsigmoid", F.hardsigmoid,
           {"x": away(lambda: uniform(-5, 5, 4, 6), [-3.0, 3.0])})

m = nn.PReLU(num_parameters=3)
with torch.no_grad():
    m.weight.copy_(uniform(0.1, 0.5, 3))
grad_entry("prelu", None, {"x": away(lambda: torch.randn(2, 3, 4), [0.0])}, module=m)
grad_entry("prelu1", None, {"x": away(lambda: torch.randn(2, 3, 4), [0.0])},
           module=nn.PReLU())

# --- shape and layout ---
grad_entry("pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), {"x": torch.randn(2, 8, 2, 3)})
grad_entry("pixel_unshuffle", lambda x: F.pixel_unshuffle(x, 2), {"x": torch.randn(1, 2, 4, 6)})
grad_entry("zeropad2d", nn.ZeroPad2d((1, 2, 0, 3)), {"x": torch.randn(1, 2, 3, 3)})
grad_entry("unflatten", nn.Unflatten(1, (2, 3)), {"x": torch.randn(4, 6, 2)})
grad_entry("tril", lambda x: torch.tril(x, diagonal=-1), {"x": torch.randn(4, 5)})
grad_entry("triu", lambda x: torch.triu(x, diagonal=1), {"x": torch.randn(2, 3, 4)})
grad_entry("flip", lambda x: torch.flip(x, dims=(0, 2)), {"x": torch.randn(2, 3, 4)})
grad_entry("roll", lambda x: torch.roll(x, shifts=(1, -2), dims=(0, 2)),
           {"x": torch.randn(3, 4, 5)})
grad_entry("roll_flat", lambda x: torch.roll(x, shifts=3), {"x": torch.randn(2, 5)})
grad_entry("repeat", lambda x: x.repeat(2, 1, 3), {"x": torch.randn(3, 2)})
grad_entry("tile", lambda x: torch.tile(x, (2,)), {"x": torch.randn(2, 3)})

# --- reductions ---
vn = torch.linalg.vector_norm
grad_entry("norm2", lambda x: vn(x, ord=2), {"x": torch.randn(3, 4)})
grad_entry("norm1_dim1", lambda x: vn(x, ord=1, dim=1), {"x": torch.randn(3, 4)})
grad_entry("norminf_dim0", lambda x: vn(x, ord=math.inf, dim=0), {"x": torch.randn(3, 4)})
grad_entry("norm3_keepdim", lambda x: vn(x, ord=3, dim=(0, 1), keepdim=True),
           {"x": torch.randn(2, 3, 4)})
# Ties on purpose: torch splits the gradient evenly among tied maxima/minima.
grad_entry("amax_ties", lambda x: torch.amax(x, dim=1),
           {"x": torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])})
grad_entry("amin_ties", lambda x: torch.amin(x, dim=1, keepdim=True),
           {"x": torch.tensor([[1.0, 3.0, 1.0], [2.0, 2.0, 5.0]])})

# --- elementwise with tensor operands ---
lo = torch.randn(4) * 0.5 - 0.5
hi = lo + uniform(0.2, 1.5, 4)
x = away(lambda: torch.randn(3, 4), [lo, hi])  # lo/hi drawn first so x can avoid them
grad_entry("clamp_tensor", lambda x, lo, hi: torch.clamp(x, min=lo, max=hi),
           {"x": x, "lo": lo, "hi": hi})

x = torch.randn(3, 4)
mask = torch.rand(4) > 0.5
grad_entry("masked_fill", lambda x, mask: x.masked_fill(mask, -1.5), {"x": x},
           consts={"mask": mask})

# --- non-differentiable outputs ---
idx = torch.tensor([[0, 2], [3, 1], [2, 2]])
plain_entry("one_hot", idx=idx, y=F.one_hot(idx, num_classes=4))
special = torch.tensor([math.nan, math.inf, -math.inf, 0.0, -1.5, 2.0])
for op in (torch.isnan, torch.isinf, torch.isfinite):
    plain_entry(op.__name__, x=special, y=op(special))
x = torch.tensor([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
plain_entry("any_dim1", x=x, y=torch.any(x, dim=1))
x = torch.tensor([[1.0, 0.0, 2.0], [3.0, 4.0, 5.0]])
plain_entry("all_dim0", x=x, y=torch.all(x, dim=0))

# --- normalisations, convolutions and resampling (appended after the entries
# above, so their random draws, and the values already checked in, stay the same) ---
def affine(m):
    with torch.no_grad():
        m.weight.copy_(uniform(0.5, 1.5, *m.weight.shape))
        if getattr(m, "bias", None) is not None:
            m.bias.copy_(uniform(-1, 1, *m.bias.shape))
    return m


grad_entry("group_norm", None, {"x": torch.randn(2, 4, 3)}, module=affine(nn.GroupNorm(2, 4)))
grad_entry("instance_norm2d", None, {"x": torch.randn(2, 3, 2, 3)},
           module=affine(nn.InstanceNorm2d(3, affine=True)))
grad_entry("instance_norm1d", None, {"x": torch.randn(2, 3, 5)}, module=nn.InstanceNorm1d(3))
grad_entry("rms_norm", None, {"x": torch.randn(3, 4)}, module=affine(nn.RMSNorm(4)))
grad_entry("conv1d", None, {"x": torch.randn(2, 4, 7)},
           module=nn.Conv1d(4, 2, 3, stride=2, padding=1, groups=2))
grad_entry("conv_transpose2d", None, {"x": torch.randn(2, 3, 3, 2)},
           module=nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1))
grad_entry("conv_transpose2d_groups", None, {"x": torch.randn(1, 4, 2, 3)},
           module=nn.ConvTranspose2d(4, 2, (2, 3), stride=(1, 2), output_padding=(0, 1), groups=2,
                                     dilation=(2, 1), bias=False))
grad_entry("upsample_nearest", nn.Upsample(size=(5, 6)), {"x": torch.randn(1, 2, 3, 4)})
grad_entry("upsample_nearest_scale", nn.Upsample(scale_factor=1.5), {"x": torch.randn(1, 2, 5)})
grad_entry("upsample_bilinear", nn.Upsample(size=(5, 7), mode="bilinear"),
           {"x": torch.randn(2, 2, 3, 4)})
grad_entry("upsample_bilinear_corners",
           nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True),
           {"x": torch.randn(1, 2, 3, 4)})
grad_entry("upsample_bilinear_scale", nn.Upsample(scale_factor=1.7, mode="bilinear"),
           {"x": torch.randn(1, 1, 3, 4)})
grad_entry("upsample_linear", nn.Upsample(size=3, mode="linear"), {"x": torch.randn(2, 3, 5)})


# --- recurrent layers, attention and transformer layers (appended after the
# entries above, so their random draws stay the same). A layer with several
# outputs stores them flattened and joined as y: out, then h_n (then c_n). ---
def flat(*ts):
    return torch.cat([t.flatten() for t in ts])


class FlatRNN(nn.RNN):
    def forward(self, x, h0=None):
        out, h = super().forward(x, h0)
        return flat(out, h)


class FlatGRU(nn.GRU):
    def forward(self, x, h0=None):
        out, h = super().forward(x, h0)
        return flat(out, h)


class FlatLSTM(nn.LSTM):
    def forward(self, x, h0=None, c0=None):
        out, (h, c) = super().forward(x, None if h0 is None else (h0, c0))
        return flat(out, h, c)


class FlatLSTMCell(nn.LSTMCell):
    def forward(self, x, h0, c0):
        return flat(*super().forward(x, (h0, c0)))


grad_entry("rnn_tanh", None, {"x": torch.randn(2, 5, 3), "h0": torch.randn(4, 2, 4)},
           module=FlatRNN(3, 4, num_layers=2, bidirectional=True, batch_first=True))
grad_entry("rnn_relu", None, {"x": torch.randn(5, 2, 3)},
           module=FlatRNN(3, 4, nonlinearity="relu"))
grad_entry("lstm", None,
           {"x": torch.randn(5, 2, 3), "h0": torch.randn(4, 2, 4), "c0": torch.randn(4, 2, 4)},
           module=FlatLSTM(3, 4, num_layers=2, bidirectional=True))
grad_entry("lstm_unbatched", None, {"x": torch.randn(5, 3)}, module=FlatLSTM(3, 4))
grad_entry("gru", None, {"x": torch.randn(2, 5, 3), "h0": torch.randn(2, 2, 4)},
           module=FlatGRU(3, 4, num_layers=2, batch_first=True))
grad_entry("gru_bidirectional_nobias", None, {"x": torch.randn(4, 2, 3)},
           module=FlatGRU(3, 4, bidirectional=True, bias=False))
grad_entry("rnn_cell", None, {"x": torch.randn(2, 3), "h0": torch.randn(2, 4)},
           module=nn.RNNCell(3, 4))
grad_entry("lstm_cell", None,
           {"x": torch.randn(2, 3), "h0": torch.randn(2, 4), "c0": torch.randn(2, 4)},
           module=FlatLSTMCell(3, 4))
grad_entry("gru_cell", None, {"x": torch.randn(2, 3), "h0": torch.randn(2, 4)},
           module=nn.GRUCell(3, 4))

sdpa = F.scaled_dot_product_attention
qkv = lambda: {"q": torch.randn(2, 3, 4), "k": torch.randn(2, 5, 4), "v": torch.randn(2, 5, 3)}
grad_entry("sdpa", sdpa, qkv())
grad_entry("sdpa_causal", lambda q, k, v: sdpa(q, k, v, is_causal=True), qkv())
grad_entry("sdpa_scale", lambda q, k, v: sdpa(q, k, v, scale=0.3), qkv())
keep = torch.rand(3, 5) > 0.4
keep[0] = True  # no row without a key (PyTorch's NaN/0 there differs between paths)
grad_entry("sdpa_bool_mask", lambda q, k, v, mask: sdpa(q, k, v, attn_mask=mask), qkv(),
           consts={"mask": keep})
grad_entry("sdpa_float_mask", lambda q, k, v, bias: sdpa(q, k, v, attn_mask=bias),
           {**qkv(), "bias": torch.randn(3, 5)})


class Encoder(nn.TransformerEncoderLayer):
    padding = None
    causal = False

    def forward(self, x):
        length = x.shape[1 if self.self_attn.batch_first else 0]
        mask = nn.Transformer.generate_square_subsequent_mask(length) if self.causal else None
        return super().forward(x, src_mask=mask, src_key_padding_mask=self.padding, is_causal=self.causal)


class Decoder(nn.TransformerDecoderLayer):
    def forward(self, x, memory):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[0])
        return super().forward(x, memory, tgt_mask=mask, tgt_is_causal=True)


def randomised(m):
    # PyTorch initialises the norms to 1 and 0 and the attention biases to 0: draw
    # them all, so that a mix-up of two parameters shows.
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    return m


enc = randomised(Encoder(8, 2, dim_feedforward=16, dropout=0.0)).eval()
grad_entry("encoder_post_relu", None, {"x": torch.randn(4, 2, 8)}, module=enc)
enc = randomised(Encoder(8, 2, dim_feedforward=16, dropout=0.0, activation="gelu",
                         batch_first=True, norm_first=True)).eval()
enc.padding = torch.tensor([[False, False, False, True], [False, True, False, False]])
enc.causal = True
grad_entry("encoder_pre_gelu_masked", None, {"x": torch.randn(2, 4, 8)}, module=enc,
           consts={"padding": enc.padding})
dec = randomised(Decoder(8, 2, dim_feedforward=16, dropout=0.0)).eval()
grad_entry("decoder_causal", None, {"x": torch.randn(3, 2, 8), "memory": torch.randn(5, 2, 8)},
           module=dec)
# --- scatter, scatter_reduce, index_put and einsum (issue 48, part 3; appended
# after the entries above, so their random draws and values stay the same) ---
# scatter: no two index entries of a column share a target (PyTorch leaves an
# overwrite with duplicates undefined; skiff's last-wins rule is tested in Rust).
idx = torch.tensor([[0, 1, 2, 0, 1], [2, 0, 1, 2, 0]])
grad_entry("scatter", lambda x, src, idx: x.scatter(0, idx, src),
           {"x": torch.randn(3, 5), "src": torch.randn(2, 5)}, consts={"idx": idx})
# scatter_reduce: duplicates along dim 0, and row 2 of x never aimed at (kept
# as it is, with or without include_self). Values are distinct, so amax and
# amin have no ties under gradcheck's differences.
idx = torch.tensor([[0, 1, 0, 1], [1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 1, 0]])
for reduce in ("sum", "prod", "mean", "amax", "amin"):
    for include_self in (True, False):
        name = f"scatter_reduce_{reduce}_{'self' if include_self else 'noself'}"
        grad_entry(name,
                   lambda x, src, idx, reduce=reduce, include_self=include_self:
                   x.scatter_reduce(0, idx, src, reduce, include_self=include_self),
                   {"x": torch.randn(3, 4), "src": torch.randn(5, 4)}, consts={"idx": idx})
# index_put: accumulate sums the repeated (0, 1); the overwrite has no repeats
# (broadcast indices [[0], [2]] x [1, 2], values broadcast over the index pairs).
i0, i1 = torch.tensor([0, 2, 0, 3]), torch.tensor([1, 1, 1, 0])
grad_entry("index_put_acc", lambda x, v, i0, i1: x.index_put((i0, i1), v, accumulate=True),
           {"x": torch.randn(4, 3, 2), "v": torch.randn(4, 2)}, consts={"i0": i0, "i1": i1})
i0, i1 = torch.tensor([[0], [2]]), torch.tensor([1, 2])
grad_entry("index_put_set", lambda x, v, i0, i1: x.index_put((i0, i1), v, accumulate=False),
           {"x": torch.randn(3, 4, 2), "v": torch.randn(2, 1, 2)}, consts={"i0": i0, "i1": i1})
# einsum: each entry's operands are x, b (and c).
grad_entry("einsum_mm", lambda x, b: torch.einsum("ij,jk->ik", x, b),
           {"x": torch.randn(3, 4), "b": torch.randn(4, 5)})
grad_entry("einsum_bmm", lambda x, b: torch.einsum("bij,bjk->bik", x, b),
           {"x": torch.randn(2, 3, 4), "b": torch.randn(2, 4, 2)})
grad_entry("einsum_attention", lambda x, b: torch.einsum("bhqd,bhkd->bhqk", x, b),
           {"x": torch.randn(2, 2, 3, 4), "b": torch.randn(2, 2, 5, 4)})
grad_entry("einsum_dot", lambda x, b: torch.einsum("i,i->", x, b),
           {"x": torch.randn(5), "b": torch.randn(5)})
grad_entry("einsum_implicit", lambda x, b: torch.einsum("ij,jk", x, b),
           {"x": torch.randn(3, 4), "b": torch.randn(4, 2)})
grad_entry("einsum_diagonal", lambda x: torch.einsum("ii->i", x), {"x": torch.randn(4, 4)})
grad_entry("einsum_trace", lambda x: torch.einsum("ii", x), {"x": torch.randn(3, 3)})
grad_entry("einsum_ellipsis", lambda x, b: torch.einsum("...ij,...jk->...ik", x, b),
           {"x": torch.randn(2, 1, 3, 4), "b": torch.randn(5, 4, 2)})
grad_entry("einsum_sum_one", lambda x, b: torch.einsum("ijk,kl->li", x, b),
           {"x": torch.randn(3, 4, 2), "b": torch.randn(2, 5)})
grad_entry("einsum_three", lambda x, b, c: torch.einsum("ab,bc,cd->ad", x, b, c),
           {"x": torch.randn(2, 3), "b": torch.randn(3, 4), "c": torch.randn(4, 2)})
# ==== issue 48, scans and sorting (cumsum, cumprod, prod, sort, argsort, topk) ====
grad_entry("cumsum", lambda x: torch.cumsum(x, dim=1), {"x": torch.randn(3, 5)})
grad_entry("cumsum_neg_dim", lambda x: torch.cumsum(x, dim=-3), {"x": torch.randn(3, 2, 4)})
# Zeros on purpose: one in the first row, two in the second, none in the third;
# torch's gradient is exact there (no division by the input).
with_zeros = torch.tensor([[0.5, 0.0, 2.0, -1.5, 0.8],
                           [0.0, 1.5, 0.0, 0.7, -1.2],
                           [1.2, -0.8, 0.9, 1.1, 0.6]])
grad_entry("cumprod_zeros", lambda x: torch.cumprod(x, dim=1), {"x": with_zeros.clone()})
grad_entry("cumprod_dim0", lambda x: torch.cumprod(x, dim=0), {"x": torch.randn(4, 3)})
grad_entry("prod_zeros", lambda x: torch.prod(x, dim=1), {"x": with_zeros.clone()})
grad_entry("prod_zeros_keepdim", lambda x: torch.prod(x, dim=0, keepdim=True), {"x": with_zeros.clone()})
grad_entry("prod_all", lambda x: torch.prod(x), {"x": uniform(0.5, 1.5, 2, 3)})
# Ties on purpose, and NaN: the stable order keeps tied elements in index order
# in both directions, and NaN sorts as the largest value.
ties = torch.tensor([[2.0, -1.0, 2.0, 0.5, -1.0, 2.0],
                     [1.0, float("nan"), 1.0, -3.0, float("nan"), 0.0]])
values, indices = torch.sort(ties, dim=1, stable=True)
plain_entry("sort_ties_stable", x=ties, y=values, indices=indices)
values, indices = torch.sort(ties, dim=-1, descending=True, stable=True)
plain_entry("sort_ties_descending", x=ties, y=values, indices=indices)
plain_entry("argsort_ties", x=ties.t(), y=torch.argsort(ties.t(), dim=0, descending=True, stable=True))
grad_entry("sort_descending", lambda x: torch.sort(x, dim=0, descending=True).values,
           {"x": torch.randn(5, 3)})
grad_entry("topk", lambda x: torch.topk(x, 3, dim=1).values, {"x": torch.randn(3, 6)})
grad_entry("topk_smallest", lambda x: torch.topk(x, 2, dim=0, largest=False).values,
           {"x": torch.randn(4, 3)})
# With ties torch.topk's choice among tied positions is its own: only the values are compared.
values, indices = torch.topk(ties[:1], 4, dim=1)
plain_entry("topk_ties", x=ties[:1], y=values, indices=indices)
# ==== end of scans and sorting ====
# index_put with negative indices (counted from the end of their dim, as in
# x[i] = v): (-1, -1) and (3, 2) aim at one element, whose sources add up.
i0, i1 = torch.tensor([-1, 3, 0, -4, 2]), torch.tensor([-1, 2, -3, 0, 1])
grad_entry("index_put_neg", lambda x, v, i0, i1: x.index_put((i0, i1), v, accumulate=True),
           {"x": torch.randn(4, 3, 2), "v": torch.randn(5, 2)}, consts={"i0": i0, "i1": i1})

path = sys.argv[1] if len(sys.argv) > 1 else "layers48.safetensors"
save_file(OUT, path, metadata={
    "torch_version": torch.__version__,
    "note": "written by scripts/torch-fixtures/layers48.py",
})

# safetensors writes __metadata__ in HashMap order, which changes from run to run.
# Sort it in place (same length) so an unchanged fixture regenerates byte-identical.
with open(path, "r+b") as f:
    n = int.from_bytes(f.read(8), "little")
    header = json.loads(f.read(n))
    header["__metadata__"] = dict(sorted(header["__metadata__"].items()))
    text = json.dumps(header, separators=(",", ":")).encode()
    assert len(text) <= n
    f.seek(8)
    f.write(text.ljust(n, b" "))
