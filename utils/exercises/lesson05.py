"""Exercises of lesson 05 (multi-head attention): split heads, the whole forward pass, the parameter count."""

import math

import torch

from utils.exercises import compare_arrays, exercise
from utils.multihead import MultiHeadAttention, split_heads as _split_heads


def _split_heads_solution(x, num_heads):
    batch, T, d_model = x.shape
    return x.view(batch, T, num_heads, d_model // num_heads).transpose(1, 2)


def _split_heads_no_transpose(x, num_heads):
    batch, T, d_model = x.shape
    return x.reshape(batch, num_heads, T, d_model // num_heads)


def _split_heads_interleaved(x, num_heads):
    batch, T, d_model = x.shape
    return x.view(batch, T, d_model // num_heads, num_heads).permute(0, 3, 1, 2)


@exercise(
    hint="""
    View the last axis as (num_heads, d_k): x.view(batch, T, num_heads, d_k), giving
    (batch, T, num_heads, d_k); then swap the T and head axes with .transpose(1, 2).
    Reshaping straight to (batch, num_heads, T, d_k) cuts the memory in the wrong places.
    """,
    reference=_split_heads_solution,
    wrong=[_split_heads_no_transpose, _split_heads_interleaved],
)
def split_heads(answer):
    for batch, T, d_model, h in [(2, 5, 12, 3), (1, 3, 8, 4), (3, 4, 6, 1)]:
        x = torch.arange(batch * T * d_model, dtype=torch.float32).reshape(batch, T, d_model)
        got = answer(x.clone(), h)
        if not isinstance(got, torch.Tensor):
            return f"return a torch.Tensor, got {type(got).__name__}"
        expected = _split_heads(x, h)
        if tuple(got.shape) != tuple(expected.shape):
            return (f"for x of shape {tuple(x.shape)} and num_heads={h}, expected shape "
                    f"{tuple(expected.shape)} (batch, num_heads, T, d_k), got {tuple(got.shape)}")
        if not torch.equal(got, expected):
            idx = tuple(int(i) for i in (got != expected).nonzero()[0])
            return (f"x {tuple(x.shape)}, num_heads={h}: element [batch, head, t, j] = {list(idx)} should "
                    f"be x[{idx[0]}, {idx[2]}, {idx[1] * (d_model // h) + idx[3]}] = {expected[idx]:.0f}, "
                    f"got {got[idx]:.0f} (head i holds columns i*d_k ... (i+1)*d_k - 1 of token t)")
    return None


def _multi_head_solution(x, W_q, W_k, W_v, W_o, num_heads):
    batch, T, d_model = x.shape
    d_k = d_model // num_heads

    def split(t):
        return t.view(batch, T, num_heads, d_k).transpose(1, 2)  # (batch, h, T, d_k)

    q, k, v = split(x @ W_q), split(x @ W_k), split(x @ W_v)
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_k), dim=-1)  # (batch, h, T, T)
    heads = weights @ v  # (batch, h, T, d_k)
    return heads.transpose(1, 2).reshape(batch, T, d_model) @ W_o  # (batch, T, d_model)


def _multi_head_wrong_scale(x, W_q, W_k, W_v, W_o, num_heads):
    batch, T, d_model = x.shape
    d_k = d_model // num_heads
    q, k, v = (_split_heads(x @ W, num_heads) for W in (W_q, W_k, W_v))
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_model), dim=-1)  # sqrt(d_model): wrong
    return (weights @ v).transpose(1, 2).reshape(batch, T, d_model) @ W_o


def _multi_head_no_w_o(x, W_q, W_k, W_v, W_o, num_heads):
    batch, T, d_model = x.shape
    d_k = d_model // num_heads
    q, k, v = (_split_heads(x @ W, num_heads) for W in (W_q, W_k, W_v))
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d_k), dim=-1)
    return (weights @ v).transpose(1, 2).reshape(batch, T, d_model)


@exercise(
    hint="""
    Project (x @ W_q etc.), split each into heads (batch, h, T, d_k), compute
    softmax(q k^T / sqrt(d_k)) per head (d_k = d_model / num_heads, not d_model), multiply by v,
    merge the heads back to (batch, T, d_model) and finish with @ W_o.
    """,
    reference=_multi_head_solution,
    wrong=[_multi_head_wrong_scale, _multi_head_no_w_o],
)
def multi_head(answer):
    g = torch.Generator().manual_seed(5)
    for batch, T, d_model, h in [(2, 4, 8, 2), (1, 6, 12, 4), (2, 3, 6, 1)]:
        x = torch.randn(batch, T, d_model, generator=g, dtype=torch.float64)
        Ws = [torch.randn(d_model, d_model, generator=g, dtype=torch.float64) / math.sqrt(d_model)
              for _ in range(4)]
        mha = MultiHeadAttention(d_model, h).double()
        with torch.no_grad():
            for lin, W in zip((mha.W_q, mha.W_k, mha.W_v, mha.W_o), Ws):
                lin.weight.copy_(W.T)
                lin.bias.zero_()
            expected = mha(x, x, x)[0]
        got = answer(x.clone(), *[W.clone() for W in Ws], h)
        if not isinstance(got, torch.Tensor):
            return f"return a torch.Tensor, got {type(got).__name__}"
        message = compare_arrays(got.detach().reshape(-1, d_model), expected.reshape(-1, d_model),
                                 f"output (batch*T, d_model) for batch={batch}, T={T}, d_model={d_model}, "
                                 f"num_heads={h}", atol=1e-6)
        if message:
            return message
    return None


def _param_count_solution(d_model, num_heads, bias):
    return 4 * d_model * d_model + (4 * d_model if bias else 0)


def _param_count_per_head(d_model, num_heads, bias):
    return num_heads * 4 * d_model * d_model + (4 * d_model if bias else 0)


def _param_count_forgets_bias_flag(d_model, num_heads, bias):
    return 4 * d_model * d_model + 4 * d_model


@exercise(
    hint="""
    W_q, W_k, W_v and W_o are each d_model x d_model whatever num_heads is (the heads share them
    out in column blocks); with bias=True each also has a bias vector of d_model numbers.
    """,
    reference=_param_count_solution,
    wrong=[_param_count_per_head, _param_count_forgets_bias_flag],
)
def param_count(answer):
    for d_model, h, bias in [(8, 1, True), (8, 2, True), (12, 3, False), (64, 8, True), (64, 4, False)]:
        expected = sum(p.numel() for p in MultiHeadAttention(d_model, h, bias=bias).parameters())
        got = answer(d_model, h, bias)
        if got != expected:
            return f"d_model={d_model}, num_heads={h}, bias={bias}: expected {expected}, got {got}"
    return None
