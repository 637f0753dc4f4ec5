"""Lesson 08's length-extrapolation experiment: a delayed-copy task, a small encoder whose positional
encoding is one of PE_KINDS, a training loop of a fixed number of steps, and accuracy per test length."""

import math

import torch
import torch.nn.functional as F
from torch import nn

from utils import validation
from utils.attention import scaled_dot_product_attention
from utils.blocks import Encoder
from utils.masks import padding_mask
from utils.multihead import MultiHeadAttention, merge_heads, split_heads
from utils.positional import LearnedPositionalEncoding, PositionalEncoding, apply_rotary

PE_KINDS = ("sinusoidal", "learned", "none", "rope")
PAD = 0  # token id 0 pads; symbols are 1 .. vocab_size - 1
IGNORE = -100  # target id that the loss and the accuracy skip (padding and the first `shift` positions)


def delayed_copy_batch(batch_size, lengths, vocab_size, shift, generator):
    """Random symbols and their targets y_t = x_{t - shift}: (tokens, targets), both (batch, max(lengths)).

    `lengths` is one int (every row that long) or a (batch,) int tensor; rows are padded with PAD.
    """
    batch_size = validation.positive_int("batch_size", batch_size)
    vocab_size = validation.positive_int("vocab_size", vocab_size)
    shift = validation.positive_int("shift", shift)
    if vocab_size < 3:
        raise ValueError(f"vocab_size must be >= 3 (PAD and at least two symbols), got {vocab_size}")
    if isinstance(lengths, int):
        lengths = torch.full((batch_size,), validation.positive_int("lengths", lengths))
    validation.tensor("lengths", lengths, min_dim=1)
    if lengths.shape != (batch_size,) or lengths.is_floating_point() or lengths.min() <= shift:
        raise ValueError(f"lengths must be {batch_size} ints > shift={shift}, got {lengths.tolist()}")
    T = int(lengths.max())
    tokens = torch.randint(1, vocab_size, (batch_size, T), generator=generator)  # (batch, T)
    real = torch.arange(T)[None, :] < lengths[:, None]  # (batch, T) True on real tokens
    tokens = tokens.masked_fill(~real, PAD)  # (batch, T)
    targets = torch.full_like(tokens, IGNORE)  # (batch, T)
    targets[:, shift:] = tokens[:, :-shift]  # y_t = x_{t - shift}
    targets = targets.masked_fill(~real, IGNORE)  # no target on padding
    return tokens, targets


class RotarySelfAttention(MultiHeadAttention):
    """Multi-head self-attention whose per-head q and k are rotated by their positions (RoPE)."""

    def forward(self, query, key, value, mask=None):
        """Same interface as MultiHeadAttention; positions are 0 .. T-1 for both q and k."""
        for name, x in (("query", query), ("key", key), ("value", value)):
            self._check_input(name, x)
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (batch, 1, T_q or 1, T_k): the same mask for every head
        q = apply_rotary(split_heads(self.W_q(query), self.num_heads))  # (batch, h, T_q, d_k)
        k = apply_rotary(split_heads(self.W_k(key), self.num_heads))  # (batch, h, T_k, d_k)
        v = split_heads(self.W_v(value), self.num_heads)  # (batch, h, T_k, d_k): values are not rotated
        p = self.dropout if self.training else 0.0
        heads, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p=p)  # (batch, h, T_q, d_k)
        return self.W_o(merge_heads(heads)), weights  # (batch, T_q, d_model), (batch, h, T_q, T_k)


class LengthModel(nn.Module):
    """Embedding -> positional encoding `pe` -> pre-norm Encoder (lesson 06) -> a linear read-out per position.

    pe: "sinusoidal" (added table), "learned" (added nn.Embedding of train_len rows), "none", or
    "rope" (nothing added; q and k rotated inside every attention layer).
    """

    def __init__(self, vocab_size, pe, train_len, d_model=64, num_heads=4, d_ff=128, num_layers=2,
                 table_len=1024):
        super().__init__()
        if pe not in PE_KINDS:
            raise ValueError(f"pe must be one of {PE_KINDS}, got {pe!r}")
        self.pe_kind, self.train_len = pe, validation.positive_int("train_len", train_len)
        self.embed = nn.Embedding(vocab_size, d_model)  # entries ~ N(0, 1), the size of PE's entries
        if pe == "sinusoidal":
            self.pe = PositionalEncoding(d_model, max_len=table_len)  # defined at every position
        elif pe == "learned":
            self.pe = LearnedPositionalEncoding(train_len, d_model)  # a vector for 0 .. train_len-1 only
        else:
            self.pe = None
        self.encoder = Encoder(d_model, num_heads, d_ff, num_layers, norm_first=True)
        if pe == "rope":
            for layer in self.encoder.layers:
                layer.self_attn = RotarySelfAttention(d_model, num_heads)
        self.readout = nn.Linear(d_model, vocab_size)

    def forward(self, tokens, clamp=False):
        """Logits (batch, T, vocab_size); clamp=True lets learned PE reuse its last vector past train_len."""
        x = self.embed(tokens)  # (batch, T, d_model)
        if self.pe_kind == "learned":
            x = self.pe(x, clamp=clamp)  # (batch, T, d_model)
        elif self.pe is not None:
            x = self.pe(x)  # (batch, T, d_model)
        h = self.encoder(x, padding_mask(tokens, PAD))  # (batch, T, d_model)
        return self.readout(h)  # (batch, T, vocab_size)

    def attention_maps(self):
        """The last forward's self-attention weights, one (batch, h, T, T) tensor per layer."""
        return [layer.self_attn_weights for layer in self.encoder.layers]


def train(pe, steps, train_len=16, vocab_size=16, shift=2, batch_size=64, lr=3e-3, seed=0, **model_kw):
    """Train a LengthModel for exactly `steps` Adam steps on lengths shift+1 .. train_len; return (model, losses)."""
    steps = validation.positive_int("steps", steps)
    torch.manual_seed(seed)
    model = LengthModel(vocab_size, pe, train_len, **model_kw)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed + 1)
    losses = []
    model.train()
    for _ in range(steps):
        lengths = torch.randint(shift + 1, train_len + 1, (batch_size,), generator=gen)  # (batch,)
        tokens, targets = delayed_copy_batch(batch_size, lengths, vocab_size, shift, gen)  # (batch, T)
        logits = model(tokens)  # (batch, T, vocab_size)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model.eval(), losses


@torch.no_grad()
def evaluate(model, lengths, vocab_size=16, shift=2, batch_size=128, seed=1234, clamp=False):
    """{length: token accuracy on a fixed random batch}; NaN where the model has no encoding for a position."""
    out = {}
    for n in lengths:
        gen = torch.Generator().manual_seed(seed + n)
        tokens, targets = delayed_copy_batch(batch_size, n, vocab_size, shift, gen)  # (batch, n)
        if model.pe_kind == "learned" and n > model.train_len and not clamp:
            out[n] = math.nan  # no vector for positions >= train_len: the model cannot run at this length
            continue
        pred = model(tokens, clamp=clamp).argmax(-1)  # (batch, n)
        keep = targets != IGNORE  # (batch, n)
        out[n] = (pred[keep] == targets[keep]).float().mean().item()
    return out


@torch.no_grad()
def accuracy_by_position(model, length, vocab_size=16, shift=2, batch_size=256, seed=4321, clamp=False):
    """(length,) accuracy at each position t of sequences `length` long (NaN for t < shift)."""
    gen = torch.Generator().manual_seed(seed)
    tokens, targets = delayed_copy_batch(batch_size, length, vocab_size, shift, gen)  # (batch, length)
    pred = model(tokens, clamp=clamp).argmax(-1)  # (batch, length)
    acc = (pred == targets).float().mean(0)  # (length,)
    acc[:shift] = math.nan
    return acc


@torch.no_grad()
def attention_on_source(model, length, vocab_size=16, shift=2, batch_size=64, seed=99, clamp=False):
    """(layers, heads, length): mean weight that query t puts on key t - shift, the token it must copy."""
    gen = torch.Generator().manual_seed(seed)
    tokens, _ = delayed_copy_batch(batch_size, length, vocab_size, shift, gen)  # (batch, length)
    model(tokens, clamp=clamp)
    maps = torch.stack(model.attention_maps(), dim=1)  # (batch, layers, heads, length, length)
    t = torch.arange(shift, length)
    on_source = torch.full(maps.shape[1:4], math.nan)  # (layers, heads, length)
    on_source[..., shift:] = maps[..., t, t - shift].mean(0)  # (layers, heads, length - shift)
    return on_source
