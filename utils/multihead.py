"""Multi-head attention: project, split into heads, attend in each, concatenate, project with W_o."""

import torch
import torch.nn.functional as F
from torch import nn

from utils import validation
from utils.attention import attend


def split_heads(x, num_heads):
    """(batch, T, d_model) -> (batch, num_heads, T, d_k) with d_k = d_model / num_heads."""
    validation.tensor("x", x)
    validation.shape("x", x, ("batch", "T", "d_model"))
    num_heads = validation.positive_int("num_heads", num_heads)
    validation.divisible("x.shape[-1] (d_model)", x.shape[-1], num_heads, "num_heads")
    batch, T, d_model = x.shape
    return x.view(batch, T, num_heads, d_model // num_heads).transpose(1, 2)


def merge_heads(x):
    """(batch, num_heads, T, d_k) -> (batch, T, num_heads * d_k): the Concat of the paper."""
    validation.tensor("x", x)
    validation.shape("x", x, ("batch", "num_heads", "T", "d_k"))
    batch, num_heads, T, d_k = x.shape
    return x.transpose(1, 2).reshape(batch, T, num_heads * d_k)


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W_o, head_i = Attention(Q W_q_i, K W_k_i, V W_v_i)."""

    def __init__(self, d_model, num_heads, dropout=0.0, bias=True):
        super().__init__()
        d_model = validation.positive_int("d_model", d_model)
        num_heads = validation.positive_int("num_heads", num_heads)
        validation.divisible("d_model", d_model, num_heads, "num_heads", "d_k = d_model / num_heads")
        validation.boolean("bias", bias)
        validation.allocation(f"d_model={d_model}", 4 * d_model * (d_model + 1) * 4, "four float32 projections")
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.dropout = validation.probability("dropout", dropout)
        self.W_q = nn.Linear(d_model, d_model, bias=bias)  # all heads' W_q_i side by side
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _check_inputs(self, query, key, value):
        for name, x in (("query", query), ("key", key), ("value", value)):
            validation.features(name, x, self.d_model, self.W_q.weight.dtype)
        if key.shape != value.shape:
            raise ValueError(
                f"key and value must have the same shape (batch, T_k, d_model), "
                f"got key {tuple(key.shape)} and value {tuple(value.shape)}"
            )
        if query.shape[0] != key.shape[0]:
            raise ValueError(
                f"query and key must have the same batch size, got query {tuple(query.shape)} "
                f"and key {tuple(key.shape)}"
            )

    def _project(self, query, key, value):
        """Q W_q, K W_k, V W_v split into heads; one fused matrix product when the inputs are shared."""
        h, d = self.num_heads, self.d_model
        lins = (self.W_q, self.W_k, self.W_v)
        if query is key and key is value:  # self-attention: one (d_model, 3 d_model) product
            groups = [(query, lins)]
        elif key is value:  # cross-attention: Q on its own, K and V from the same memory
            groups = [(query, lins[:1]), (key, lins[1:])]
        else:
            groups = [(x, (lin,)) for x, lin in zip((query, key, value), lins)]
        heads = []
        for x, group in groups:
            if len(group) == 1:
                y = group[0](x)  # (batch, T, d_model)
            else:
                weight = torch.cat([lin.weight for lin in group])  # (n * d_model, d_model)
                bias = None if group[0].bias is None else torch.cat([lin.bias for lin in group])
                y = F.linear(x, weight, bias)  # (batch, T, n * d_model)
            batch, T = x.shape[:2]
            y = y.view(batch, T, len(group), h, d // h).permute(2, 0, 3, 1, 4)  # (n, batch, h, T, d_k)
            heads.extend(y.unbind(0))
        return heads  # q (batch, h, T_q, d_k), k and v (batch, h, T_k, d_k)

    def _head_mask(self, mask, query, key):
        """Check `mask` against the scores (batch, num_heads, T_q, T_k); a 3-D mask gets a head axis."""
        if mask is None:
            return None
        validation.tensor("mask", mask)
        if mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (batch, 1, T_q or 1, T_k): the same mask for every head
        batch, h, t_q, t_k = scores_shape = (query.shape[0], self.num_heads, query.shape[1], key.shape[1])
        forms = (
            f"{(1, t_q, t_k)} or {(t_q, t_k)} shared by the batch, {(batch, 1, t_k)} per sentence's keys (as "
            f"utils.masks.padding_mask builds it), {(batch, t_q, t_k)} per sentence, or 4-D with a head axis "
            f"(batch, 1 or {h}, 1 or {t_q}, {t_k})"
        )
        context = f"for query {tuple(query.shape)} and key {tuple(key.shape)}"
        validation.mask("mask", mask, scores_shape, context, forms)
        return mask.to(query.device)

    def _attention(self, q, k, v, mask, need_weights):
        """Attention in every head at once with utils.attention.attend: (heads (batch, T_q, d_model), weights)."""
        p = self.dropout if self.training else 0.0
        heads, weights = attend(q, k, v, mask, p, need_weights)  # (batch, h, T_q, d_k), (batch, h, T_q, T_k)
        return merge_heads(heads), weights

    def forward(self, query, key, value, mask=None, need_weights=True):
        """Return (output (batch, T_q, d_model), per-head weights (batch, num_heads, T_q, T_k)).

        need_weights=False computes the same output with torch's scaled_dot_product_attention and returns (output,
        None); that picks a fused kernel when one supports the inputs (no weights kept, even for backward), else a
        plain math fallback (which keeps them for backward).
        """
        self._check_inputs(query, key, value)
        validation.boolean("need_weights", need_weights)
        mask = self._head_mask(mask, query, key)
        q, k, v = self._project(query, key, value)  # (batch, h, T, d_k) each
        heads, weights = self._attention(q, k, v, mask, need_weights)  # (batch, T_q, d_model)
        return self.W_o(heads), weights  # (batch, T_q, d_model), (batch, h, T_q, T_k) or None

    @classmethod
    def from_torch(cls, m):
        """A copy of a torch.nn.MultiheadAttention(batch_first=True) with the same weights."""
        if not isinstance(m, nn.MultiheadAttention):
            raise TypeError(f"m must be a torch.nn.MultiheadAttention, got {type(m).__name__}")
        if not m.batch_first:
            raise ValueError("m must be built with batch_first=True, got batch_first=False")
        if not m._qkv_same_embed_dim or m.bias_k is not None or m.add_zero_attn:
            raise ValueError("m must use kdim = vdim = embed_dim, no add_bias_kv, no add_zero_attn")
        ours = cls(m.embed_dim, m.num_heads, dropout=m.dropout, bias=m.in_proj_bias is not None)
        ours = ours.to(m.in_proj_weight.dtype)
        with torch.no_grad():
            for i, lin in enumerate((ours.W_q, ours.W_k, ours.W_v)):
                rows = slice(i * m.embed_dim, (i + 1) * m.embed_dim)
                lin.weight.copy_(m.in_proj_weight[rows])
                if lin.bias is not None:
                    lin.bias.copy_(m.in_proj_bias[rows])
            ours.W_o.weight.copy_(m.out_proj.weight)
            if ours.W_o.bias is not None:
                ours.W_o.bias.copy_(m.out_proj.bias)
        return ours.train(m.training)
