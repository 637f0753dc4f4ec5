"""Exercises of lesson 06 (transformer blocks): LayerNorm by hand, an encoder layer, cross-attention."""

import torch
from torch import nn

from utils.blocks import DecoderLayer, EncoderLayer
from utils.exercises import compare_arrays, exercise
from utils.masks import padding_mask


def _layer_norm_solution(x, g, b, eps):
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)  # biased: divide by H
    return g * (x - mu) / torch.sqrt(var + eps) + b


def _layer_norm_unbiased(x, g, b, eps):
    mu = x.mean(dim=-1, keepdim=True)
    return g * (x - mu) / torch.sqrt(x.var(dim=-1, keepdim=True) + eps) + b  # H - 1: wrong


def _layer_norm_over_batch(x, g, b, eps):
    mu = x.mean(dim=0, keepdim=True)  # batch norm's axis: wrong
    var = ((x - mu) ** 2).mean(dim=0, keepdim=True)
    return g * (x - mu) / torch.sqrt(var + eps) + b


def _layer_norm_eps_outside(x, g, b, eps):
    mu = x.mean(dim=-1, keepdim=True)
    sigma = ((x - mu) ** 2).mean(dim=-1, keepdim=True).sqrt()
    return g * (x - mu) / (sigma + eps) + b  # eps added to sigma, not to the variance: wrong


@exercise(
    hint="""
    Over the last axis (dim=-1, keepdim=True): mu = mean, var = mean of (x - mu)**2 (divide by H,
    not H - 1, so not torch.var's default), then g * (x - mu) / sqrt(var + eps) + b.
    """,
    reference=_layer_norm_solution,
    wrong=[_layer_norm_unbiased, _layer_norm_over_batch, _layer_norm_eps_outside],
)
def layer_norm(answer):
    g_ = torch.Generator().manual_seed(6)
    for shape, eps in [((3, 4), 1e-5), ((2, 5, 6), 1e-5), ((4, 3), 0.5)]:
        H = shape[-1]
        x = 2.0 * torch.randn(*shape, generator=g_, dtype=torch.float64) + 1.0
        ln = nn.LayerNorm(H, eps=eps, dtype=torch.float64)
        with torch.no_grad():
            ln.weight.copy_(torch.rand(H, generator=g_, dtype=torch.float64) + 0.5)
            ln.bias.copy_(torch.randn(H, generator=g_, dtype=torch.float64))
            expected = ln(x)
        got = answer(x.clone(), ln.weight.detach().clone(), ln.bias.detach().clone(), eps)
        if not isinstance(got, torch.Tensor):
            return f"return a torch.Tensor, got {type(got).__name__}"
        message = compare_arrays(got.detach().reshape(-1, H), expected.reshape(-1, H),
                                 f"x of shape {shape}, eps={eps}: output (rows = tokens)", atol=1e-6)
        if message:
            return message
    return None


def _encoder_layer_solution(layer, x, mask):
    def attend(y):
        return layer.self_attn(y, y, y, mask)[0]

    if layer.norm_first:
        x = x + attend(layer.norm1(x))
        return x + layer.ff(layer.norm2(x))
    x = layer.norm1(x + attend(x))
    return layer.norm2(x + layer.ff(x))


def _encoder_layer_always_post_norm(layer, x, mask):
    x = layer.norm1(x + layer.self_attn(x, x, x, mask)[0])
    return layer.norm2(x + layer.ff(x))


def _encoder_layer_no_residual(layer, x, mask):
    if layer.norm_first:
        y = layer.norm1(x)
        x = layer.self_attn(y, y, y, mask)[0]
        return layer.ff(layer.norm2(x))
    x = layer.norm1(layer.self_attn(x, x, x, mask)[0])
    return layer.norm2(layer.ff(x))


@exercise(
    hint="""
    Two sublayers, each wrapped the same way. Post-norm (layer.norm_first False):
    x = norm1(x + self_attn(x, x, x, mask)[0]); x = norm2(x + ff(x)).
    Pre-norm: normalise the sublayer's input instead and add its output to x unnormalised:
    x = x + self_attn(n, n, n, mask)[0] with n = norm1(x); then x = x + ff(norm2(x)).
    """,
    reference=_encoder_layer_solution,
    wrong=[_encoder_layer_always_post_norm, _encoder_layer_no_residual],
)
def encoder_layer(answer):
    tokens = torch.tensor([[3, 1, 4, 1, 5], [9, 2, 6, 0, 0]])
    mask = padding_mask(tokens, 0)  # (2, 1, 5)
    for norm_first in (False, True):
        torch.manual_seed(11)
        layer = EncoderLayer(8, 2, 16, norm_first=norm_first).double().eval()
        x = torch.randn(2, 5, 8, dtype=torch.float64)
        with torch.no_grad():
            expected = layer(x, mask)
            got = answer(layer, x.clone(), mask)
        if not isinstance(got, torch.Tensor):
            return f"return a torch.Tensor, got {type(got).__name__}"
        message = compare_arrays(got.reshape(-1, 8), expected.reshape(-1, 8),
                                 f"norm_first={norm_first}: output (batch*T, d_model)", atol=1e-6)
        if message:
            return message
    return None


def _cross_attention_solution(layer, y, memory, memory_mask):
    return layer.cross_attn(y, memory, memory, memory_mask)[0]


def _cross_attention_swapped(layer, y, memory, memory_mask):
    return layer.cross_attn(memory, y, y)[0]


def _cross_attention_self(layer, y, memory, memory_mask):
    return layer.cross_attn(y, y, y)[0]


def _cross_attention_unmasked(layer, y, memory, memory_mask):
    return layer.cross_attn(y, memory, memory)[0]


@exercise(
    hint="""
    Queries come from the decoder (y), keys and values from the encoder's output (memory):
    layer.cross_attn(query, key, value, mask) returns (output, weights); keep the output.
    Pass memory_mask so the source padding is ignored.
    """,
    reference=_cross_attention_solution,
    wrong=[_cross_attention_swapped, _cross_attention_self, _cross_attention_unmasked],
)
def cross_attention(answer):
    torch.manual_seed(12)
    layer = DecoderLayer(8, 2, 16).double().eval()
    y = torch.randn(2, 3, 8, dtype=torch.float64)  # (batch, T_tgt, d_model)
    memory = torch.randn(2, 5, 8, dtype=torch.float64)  # (batch, T_src, d_model)
    memory_mask = padding_mask(torch.tensor([[1, 2, 3, 4, 5], [6, 7, 0, 0, 0]]), 0)
    with torch.no_grad():
        expected = layer.cross_attn(y, memory, memory, memory_mask)[0]
        got = answer(layer, y.clone(), memory.clone(), memory_mask)
    if not isinstance(got, torch.Tensor):
        return f"return a torch.Tensor, got {type(got).__name__}"
    if tuple(got.shape) != tuple(expected.shape):
        return (f"expected shape {tuple(expected.shape)} (batch, T_tgt, d_model): one output per target "
                f"position, got {tuple(got.shape)} — are the queries coming from y?")
    return compare_arrays(got.reshape(-1, 8), expected.reshape(-1, 8), "output (batch*T_tgt, d_model)", atol=1e-6)
