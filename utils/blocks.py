"""Transformer encoder and decoder blocks: attention and feed-forward sublayers, residuals, LayerNorm."""

import copy

import torch.nn.functional as F
from torch import nn

from utils import validation
from utils.multihead import MultiHeadAttention


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, the same weights at every position."""

    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        d_model = validation.positive_int("d_model", d_model)
        d_ff = validation.positive_int("d_ff", d_ff)
        dropout = validation.probability("dropout", dropout)
        validation.allocation(f"d_model={d_model}, d_ff={d_ff}", 2 * d_model * (d_ff + 1) * 4, "two float32 layers")
        self.d_model = d_model
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        validation.tensor("x", x, min_dim=1, floating=True)
        validation.shape("x", x, ("...", ("d_model", self.d_model)))
        validation.dtype_of("x", x, self.linear1.weight.dtype, "this module's weights")
        return self.linear2(self.dropout(F.relu(self.linear1(x))))  # (..., d_model)


def _sublayer(x, f, norm, dropout, norm_first):
    """Residual around f: post-norm LN(x + f(x)) as in the paper, or pre-norm x + f(LN(x))."""
    if norm_first:
        return x + dropout(f(norm(x)))
    return norm(x + dropout(f(x)))


def _check_torch_layer(layer, kind, norm_first):
    """Raise unless a torch layer has the structure ours copies: batch_first, ReLU, matching norm_first."""
    if not isinstance(layer, kind):
        raise TypeError(f"layer must be a torch.nn.{kind.__name__}, got {type(layer).__name__}")
    if not layer.self_attn.batch_first:
        raise ValueError("layer must be built with batch_first=True, got batch_first=False")
    if layer.activation is not F.relu and not isinstance(layer.activation, nn.ReLU):
        raise ValueError(f"layer must use the ReLU activation, got {layer.activation}")
    if norm_first is not None and layer.norm_first != norm_first:
        raise ValueError(f"norm_first={norm_first} given but layer has norm_first={layer.norm_first}")


def _sized_like(cls, layer, kind, norm_first):
    """Our layer `cls` with the sizes of the torch layer (checked first) and a copy of its self-attention."""
    _check_torch_layer(layer, kind, norm_first)
    ours = cls(
        layer.self_attn.embed_dim,
        layer.self_attn.num_heads,
        layer.linear1.out_features,
        layer.dropout.p,
        layer.norm_first,
        layer.norm1.eps,
    )
    ours.self_attn = MultiHeadAttention.from_torch(layer.self_attn)
    return ours


def _copy_common(ours, layer):
    """Copy the feed-forward and LayerNorm weights that encoder and decoder layers share."""
    ours = ours.to(layer.linear1.weight.dtype)  # first, so float64 weights are not rounded to float32
    ours.ff.linear1.load_state_dict(layer.linear1.state_dict())
    ours.ff.linear2.load_state_dict(layer.linear2.state_dict())
    for name in ("norm1", "norm2", "norm3"):
        if hasattr(ours, name):
            getattr(ours, name).load_state_dict(getattr(layer, name).state_dict())
    return ours.train(layer.training)


def _layer_args(norm_first, eps):
    """Check the arguments every layer takes besides the sizes (checked by its sublayers)."""
    return validation.boolean("norm_first", norm_first), validation.positive_float("eps", eps)


def _check_x(name, x, layer):
    """Check a layer's input x or memory: (batch, seq, d_model) in the dtype of its weights."""
    return validation.features(
        name, x, layer.self_attn.d_model, layer.self_attn.W_q.weight.dtype, "this layer's weights"
    )


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each wrapped in a residual connection and LayerNorm."""

    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False, eps=1e-5):
        super().__init__()
        norm_first, eps = _layer_args(norm_first, eps)
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model, eps=eps)
        self.norm2 = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)
        self.self_attn_weights = None  # (batch, h, T, T) of the last forward with need_weights, for plots

    def _self_attention(self, x, mask, need_weights):
        out, self.self_attn_weights = self.self_attn(x, x, x, mask, need_weights=need_weights)
        return out

    def forward(self, x, mask=None, need_weights=True):
        """x (batch, T, d_model); mask broadcastable to (batch, T, T) or (batch, h, T, T).

        need_weights=False calls torch's scaled_dot_product_attention, which picks a backend: a fused kernel when
        one supports the inputs (it keeps no weights, even for backward), else a plain math fallback (which keeps
        them for backward). Either way: the same output up to float rounding (~1e-6), and no weights stored (None).
        """
        _check_x("x", x, self)
        x = _sublayer(
            x, lambda y: self._self_attention(y, mask, need_weights), self.norm1, self.dropout, self.norm_first
        )
        return _sublayer(x, self.ff, self.norm2, self.dropout, self.norm_first)  # (batch, T, d_model)

    @classmethod
    def from_torch(cls, layer, norm_first=None):
        """A copy of a torch.nn.TransformerEncoderLayer (batch_first, ReLU) with the same weights."""
        return _copy_common(_sized_like(cls, layer, nn.TransformerEncoderLayer, norm_first), layer)


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder's memory, then feed-forward."""

    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False, eps=1e-5):
        super().__init__()
        norm_first, eps = _layer_args(norm_first, eps)
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model, eps=eps)
        self.norm2 = nn.LayerNorm(d_model, eps=eps)
        self.norm3 = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)
        self.self_attn_weights = None  # (batch, h, T_tgt, T_tgt) of the last forward with need_weights
        self.cross_attn_weights = None  # (batch, h, T_tgt, T_src) of the last forward with need_weights

    def _self_attention(self, x, mask, need_weights):
        out, self.self_attn_weights = self.self_attn(x, x, x, mask, need_weights=need_weights)
        return out

    def _cross_attention(self, x, memory, mask, need_weights):
        # Q from the decoder, K and V from the encoder (the reading notes).
        out, self.cross_attn_weights = self.cross_attn(x, memory, memory, mask, need_weights=need_weights)
        return out

    def forward(self, x, memory, tgt_mask=None, memory_mask=None, need_weights=True):
        """x (batch, T_tgt, d_model), memory (batch, T_src, d_model); masks True = may attend.

        need_weights=False calls torch's scaled_dot_product_attention, which picks a backend: a fused kernel when
        one supports the inputs (it keeps no weights, even for backward), else a plain math fallback (which keeps
        them for backward). Either way: the same output up to float rounding (~1e-6), and no weights stored (None).
        """
        _check_x("x", x, self)
        _check_x("memory", memory, self)
        validation.shape("memory", memory, (("batch of x", x.shape[0]), "T_src", ("d_model", x.shape[2])))
        x = _sublayer(
            x, lambda y: self._self_attention(y, tgt_mask, need_weights), self.norm1, self.dropout, self.norm_first
        )
        x = _sublayer(
            x,
            lambda y: self._cross_attention(y, memory, memory_mask, need_weights),
            self.norm2,
            self.dropout,
            self.norm_first,
        )
        return _sublayer(x, self.ff, self.norm3, self.dropout, self.norm_first)  # (batch, T_tgt, d_model)

    @classmethod
    def from_torch(cls, layer, norm_first=None):
        """A copy of a torch.nn.TransformerDecoderLayer (batch_first, ReLU) with the same weights."""
        ours = _sized_like(cls, layer, nn.TransformerDecoderLayer, norm_first)
        ours.cross_attn = MultiHeadAttention.from_torch(layer.multihead_attn)
        return _copy_common(ours, layer)


class Encoder(nn.Module):
    """A stack of num_layers encoder layers; pre-norm stacks end with a final LayerNorm."""

    def __init__(self, d_model, num_heads, d_ff, num_layers, dropout=0.0, norm_first=False):
        super().__init__()
        num_layers = validation.positive_int("num_layers", num_layers)
        layer = EncoderLayer(d_model, num_heads, d_ff, dropout, norm_first)
        self.layers = nn.ModuleList(copy.deepcopy(layer) for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x, mask=None, need_weights=True):
        for layer in self.layers:
            x = layer(x, mask, need_weights)  # (batch, T_src, d_model)
        return self.norm(x)

    @classmethod
    def from_torch(cls, stack):
        """A copy of a torch.nn.TransformerEncoder (its layers and its final norm, if any)."""
        return _stack_from_torch(cls, stack, nn.TransformerEncoder, EncoderLayer)


class Decoder(nn.Module):
    """A stack of num_layers decoder layers; pre-norm stacks end with a final LayerNorm."""

    def __init__(self, d_model, num_heads, d_ff, num_layers, dropout=0.0, norm_first=False):
        super().__init__()
        num_layers = validation.positive_int("num_layers", num_layers)
        layer = DecoderLayer(d_model, num_heads, d_ff, dropout, norm_first)
        self.layers = nn.ModuleList(copy.deepcopy(layer) for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x, memory, tgt_mask=None, memory_mask=None, need_weights=True):
        for layer in self.layers:
            x = layer(x, memory, tgt_mask, memory_mask, need_weights)  # (batch, T_tgt, d_model)
        return self.norm(x)

    @classmethod
    def from_torch(cls, stack):
        """A copy of a torch.nn.TransformerDecoder (its layers and its final norm, if any)."""
        return _stack_from_torch(cls, stack, nn.TransformerDecoder, DecoderLayer)


def _stack_from_torch(cls, stack, kind, layer_cls):
    """Copy a torch Transformer{Encoder,Decoder}: each layer with from_torch, then the final norm."""
    if not isinstance(stack, kind):
        raise TypeError(f"stack must be a torch.nn.{kind.__name__}, got {type(stack).__name__}")
    first = stack.layers[0]
    attn = first.self_attn
    ours = cls(
        attn.embed_dim, attn.num_heads, first.linear1.out_features, len(stack.layers), first.dropout.p, first.norm_first
    )
    ours.layers = nn.ModuleList(layer_cls.from_torch(layer) for layer in stack.layers)
    if stack.norm is None:
        ours.norm = nn.Identity()
    elif isinstance(stack.norm, nn.LayerNorm):
        ours.norm = nn.LayerNorm(attn.embed_dim, eps=stack.norm.eps, dtype=stack.norm.weight.dtype)
        ours.norm.load_state_dict(stack.norm.state_dict())
    else:
        raise ValueError(f"stack.norm must be None or a torch.nn.LayerNorm, got {type(stack.norm).__name__}")
    return ours.to(first.linear1.weight.dtype).train(stack.training)
