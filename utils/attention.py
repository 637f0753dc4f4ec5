"""Scaled dot-product attention, softmax(Q K^T / sqrt(d_k)) V, returning its weights too."""

import math
import numbers

import torch
import torch.nn.functional as F

from utils import validation


def _check_mask(mask, scores_shape, q, k):
    """Raise unless `mask` is bool and broadcastable to the scores' shape (..., T_q, T_k)."""
    validation.tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise ValueError(
            f"mask must be a bool tensor (True = may attend), got dtype {mask.dtype} with shape "
            f"{tuple(mask.shape)}; convert with mask.bool() or build it with utils.masks"
        )
    try:
        ok = torch.broadcast_shapes(mask.shape, scores_shape) == scores_shape
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} must broadcast to the scores' shape "
            f"{tuple(scores_shape)} (..., T_q, T_k) for q {tuple(q.shape)} and k {tuple(k.shape)}"
        )


def scaled_dot_product_attention(q, k, v, mask=None, dropout_p=0.0):
    """Return (output (..., T_q, d_v), weights (..., T_q, T_k)); a row with no allowed key gives zeros."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        validation.tensor(name, t, min_dim=2, floating=True)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must share their last dimension d_k, got q {tuple(q.shape)} and k {tuple(k.shape)}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of positions T_k (dim -2), "
            f"got k {tuple(k.shape)} and v {tuple(v.shape)}"
        )
    try:
        batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"the leading (batch) dimensions of q, k and v must broadcast, got q {tuple(q.shape)}, "
            f"k {tuple(k.shape)} and v {tuple(v.shape)}"
        ) from None
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"q, k and v must share a dtype, got {q.dtype}, {k.dtype} and {v.dtype}")
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, numbers.Real) or not 0 <= dropout_p < 1:
        raise ValueError(f"dropout_p must be a number in [0, 1), got {dropout_p!r}")
    scores_shape = torch.Size((*batch, q.shape[-2], k.shape[-2]))
    d_k = q.shape[-1]
    if mask is not None:
        _check_mask(mask, scores_shape, q, k)
        mask = mask.to(q.device)
    scores = (q / math.sqrt(d_k)) @ k.transpose(-2, -1)  # (..., T_q, T_k) scaling q is cheaper than scores
    empty_rows = None
    if mask is not None:
        # A query with no allowed key attends to nothing: its row of weights is zero. Its scores are
        # left finite (softmax of an all -inf row is 0/0 = NaN, in the forward and the backward pass).
        has_key = mask.any(dim=-1, keepdim=True)  # (..., T_q, 1)
        if not has_key.all():
            empty_rows, mask = ~has_key, mask | ~has_key
        scores = scores.masked_fill(~mask, float("-inf"))  # removed keys: exp(-inf) = 0
    weights = torch.softmax(scores, dim=-1)  # (..., T_q, T_k)
    if empty_rows is not None:
        weights = weights.masked_fill(empty_rows, 0.0)  # (..., T_q, T_k)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ v, weights  # (..., T_q, d_v), (..., T_q, T_k)
