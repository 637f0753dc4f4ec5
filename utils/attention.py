"""Scaled dot-product attention, softmax(Q K^T / sqrt(d_k)) V, returning its weights too.

`scaled_dot_product_attention` checks its arguments and calls `attend`, the one function in `utils` that
computes attention (multi-head attention and every model built on it call `attend` directly).
"""

import math

import torch
import torch.nn.functional as F

from utils import validation


def attend(q, k, v, mask=None, dropout_p=0.0, need_weights=True):
    """softmax(q k^T / sqrt(d_k)) v without argument checks: (output (..., T_q, d_v), weights (..., T_q, T_k)).

    mask: bool, True = may attend, broadcastable to the scores (..., T_q, T_k) and on q's device. A query
    row with no allowed key gets zero weights and a zero output (and no NaN in the backward pass).
    need_weights=False calls torch's scaled_dot_product_attention instead and returns (output, None); it picks a
    backend: a fused kernel when one supports the inputs (no weights kept, even for backward), else a plain math
    fallback (which keeps them for backward).
    """
    empty = None
    if mask is not None:
        has_key = mask.any(dim=-1, keepdim=True)  # (..., T_q, 1), mask-sized: cheap
        if not has_key.all():
            # An all -inf row would give softmax 0/0 = NaN, forward and backward: let empty rows see every
            # key (finite scores) and zero their weights afterwards.
            empty, mask = ~has_key, mask | ~has_key
    if not need_weights:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)  # (..., T_q, d_v)
        return (out if empty is None else out.masked_fill(empty, 0.0)), None
    scores = (q / math.sqrt(q.shape[-1])) @ k.transpose(-2, -1)  # (..., T_q, T_k): scaling q is cheaper
    if mask is not None:
        # Add 0 or -inf: removed keys get exp(-inf) = 0. In place when the shapes allow (the bias is
        # mask-sized, often (batch, 1, 1, T_k)); adding a constant costs nothing in the backward pass.
        bias = torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device).masked_fill_(~mask, float("-inf"))
        if torch.broadcast_shapes(scores.shape, bias.shape) == scores.shape:
            scores.add_(bias)
        else:
            scores = scores + bias  # the mask has batch dimensions that q and k lack
    weights = torch.softmax(scores, dim=-1)  # (..., T_q, T_k)
    if empty is not None:
        weights = weights.masked_fill(empty, 0.0)  # queries with nothing to attend to: zero weights
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ v, weights  # (..., T_q, d_v), (..., T_q, T_k)


def scaled_dot_product_attention(q, k, v, mask=None, dropout_p=0.0):
    """Return (output (..., T_q, d_v), weights (..., T_q, T_k)); a row with no allowed key gives zeros."""
    batch = validation.attention_inputs(q, k, v)
    dropout_p = validation.probability("dropout_p", dropout_p)
    if mask is not None:
        scores_shape = torch.Size((*batch, q.shape[-2], k.shape[-2]))
        validation.mask("mask", mask, scores_shape, f"for q {tuple(q.shape)} and k {tuple(k.shape)}")
        mask = mask.to(q.device)
    return attend(q, k, v, mask, dropout_p)
