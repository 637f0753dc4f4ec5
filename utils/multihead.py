"""Multi-head attention: project, split into heads, attend in each, concatenate, project with W_o."""

import torch
from torch import nn

from utils import validation
from utils.attention import scaled_dot_product_attention


def split_heads(x, num_heads):
    """(batch, T, d_model) -> (batch, num_heads, T, d_k) with d_k = d_model / num_heads."""
    batch, T, d_model = x.shape
    return x.view(batch, T, num_heads, d_model // num_heads).transpose(1, 2)


def merge_heads(x):
    """(batch, num_heads, T, d_k) -> (batch, T, num_heads * d_k): the Concat of the paper."""
    batch, num_heads, T, d_k = x.shape
    return x.transpose(1, 2).reshape(batch, T, num_heads * d_k)


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W_o, head_i = Attention(Q W_q_i, K W_k_i, V W_v_i)."""

    def __init__(self, d_model, num_heads, dropout=0.0, bias=True):
        super().__init__()
        d_model = validation.positive_int("d_model", d_model)
        num_heads = validation.positive_int("num_heads", num_heads)
        if d_model % num_heads:
            raise ValueError(
                f"d_model must be divisible by num_heads (d_k = d_model / num_heads), "
                f"got d_model={d_model} and num_heads={num_heads}"
            )
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.dropout = dropout
        self.W_q = nn.Linear(d_model, d_model, bias=bias)  # all heads' W_q_i side by side
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _check_input(self, name, x):
        validation.tensor(name, x, floating=True)
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(
                f"{name} must have shape (batch, seq, d_model={self.d_model}), got {tuple(x.shape)}"
            )

    def forward(self, query, key, value, mask=None):
        """Return (output (batch, T_q, d_model), per-head weights (batch, num_heads, T_q, T_k))."""
        for name, x in (("query", query), ("key", key), ("value", value)):
            self._check_input(name, x)
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (batch, 1, T_q or 1, T_k): the same mask for every head
        q = split_heads(self.W_q(query), self.num_heads)  # (batch, h, T_q, d_k)
        k = split_heads(self.W_k(key), self.num_heads)  # (batch, h, T_k, d_k)
        v = split_heads(self.W_v(value), self.num_heads)  # (batch, h, T_k, d_k)
        p = self.dropout if self.training else 0.0
        heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p=p)  # (batch, h, T_q, d_k)
        return self.W_o(merge_heads(heads)), weights  # (batch, T_q, d_model), (batch, h, T_q, T_k)

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
