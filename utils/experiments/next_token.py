"""Why a decoder's input is the target shifted right: a one-layer causal attention model that can copy."""

import math

import torch
import torch.nn.functional as F
from torch import nn

from utils import validation
from utils.attention import scaled_dot_product_attention
from utils.masks import causal_mask
from utils.positional import sinusoidal_encoding


def shift_right(targets, bos_id):
    """Decoder input (..., T) = <bos>, y_1 .. y_{T-1} for targets (..., T) = y_1 .. y_T: position i holds y_{i-1}."""
    validation.int_tensor("targets", targets)
    validation.integer("bos_id", bos_id)  # any int: a lesson marks <bos> with -1 to tell it from every target
    bos = torch.full_like(targets[..., :1], bos_id)  # (..., 1)
    return torch.cat([bos, targets[..., :-1]], dim=-1)  # (..., T)


class CausalAttentionLM(nn.Module):
    """Embedding + PE, one causally masked attention layer (no residual), a linear read-out to the vocabulary.

    strict=True masks the diagonal too (j < i, the COMP7607 slides' rule): position 0 then attends to nothing."""

    def __init__(self, vocab_size, d_model=32, max_len=16, strict=False):
        super().__init__()
        self.strict = validation.boolean("strict", strict)
        self.vocab_size = validation.positive_int("vocab_size", vocab_size)
        d_model, max_len = validation.positive_int("d_model", d_model), validation.positive_int("max_len", max_len)
        self.embedding = nn.Embedding(self.vocab_size + 1, d_model)  # the last id is <bos>
        self.W_q, self.W_k, self.W_v = (nn.Linear(d_model, d_model, bias=False) for _ in range(3))
        self.W_out = nn.Linear(d_model, self.vocab_size)
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model), persistent=False)

    @property
    def bos_id(self):
        return self.vocab_size

    def forward(self, tokens):
        """tokens (batch, T) -> logits (batch, T, vocab_size); position i attends to j <= i (j < i if strict)."""
        validation.token_ids("tokens", tokens, self.vocab_size + 1, min_dim=2)  # the last id is <bos>
        validation.max_positions("tokens", tokens, self.pe.shape[0])
        T = tokens.shape[-1]
        x = self.embedding(tokens) + self.pe[:T]  # (batch, T, d_model)
        mask = causal_mask(T, device=tokens.device)[None]  # (1, T, T): one mask for the batch, whatever its size
        if self.strict:
            mask = mask & ~torch.eye(T, dtype=torch.bool, device=tokens.device)  # (1, T, T) j < i
        h, _ = scaled_dot_product_attention(self.W_q(x), self.W_k(x), self.W_v(x), mask)
        return self.W_out(h)  # (batch, T, vocab_size)


def fit_next_token(
    shift,
    seed,
    vocab_size=8,
    seq_len=6,
    d_model=32,
    steps=300,
    batch_size=64,
    lr=0.01,
    eval_size=1000,
    strict=False,
    per_position=False,
):
    """Train on uniformly random tokens; return held-out (accuracy, cross-entropy) of predicting y_i at position i.

    With shift=True the input is shift_right(y) (position i sees y_{<i}); with shift=False it is y itself.
    strict=True uses the mask j < i instead of j <= i (see CausalAttentionLM). per_position=True appends
    the held-out accuracy at each position, a list of seq_len numbers. The loss covers every position.
    """
    validation.boolean("shift", shift)
    validation.boolean("strict", strict)
    validation.boolean("per_position", per_position)
    validation.seed("seed", seed)
    for name, value in (
        ("vocab_size", vocab_size),
        ("seq_len", seq_len),
        ("d_model", d_model),
        ("steps", steps),
        ("batch_size", batch_size),
        ("eval_size", eval_size),
    ):
        validation.positive_int(name, value)
    lr = validation.positive_float("lr", lr)
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = CausalAttentionLM(vocab_size, d_model, max_len=seq_len, strict=strict)
    opt = torch.optim.Adam(model.parameters(), lr=lr)

    def logits_of(y):  # y (batch, seq_len) -> (batch, seq_len, vocab_size)
        return model(shift_right(y, model.bos_id) if shift else y)

    for _ in range(steps):
        y = torch.randint(0, vocab_size, (batch_size, seq_len), generator=gen)  # (batch, seq_len)
        loss = F.cross_entropy(logits_of(y).reshape(-1, vocab_size), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    y = torch.randint(0, vocab_size, (eval_size, seq_len), generator=gen)  # (eval_size, seq_len) unseen
    with torch.no_grad():
        logits = logits_of(y)  # (eval_size, seq_len, vocab_size)
    accuracy = (logits.argmax(-1) == y).double().mean().item()
    cross_entropy = F.cross_entropy(logits.reshape(-1, vocab_size), y.reshape(-1)).item()
    if per_position:
        return accuracy, cross_entropy, (logits.argmax(-1) == y).double().mean(0).tolist()
    return accuracy, cross_entropy


def chance(vocab_size):
    """Accuracy and cross-entropy of the best guess about a uniformly random token: 1/V and ln V."""
    vocab_size = validation.positive_int("vocab_size", vocab_size)
    return 1 / vocab_size, math.log(vocab_size)
