"""The numbers behind the attention-map explorer: seeded toy embeddings and their self-attention weights."""

import math
import zlib

import torch

from utils import validation
from utils.attention import scaled_dot_product_attention
from utils.masks import causal_mask, combine_masks
from utils.positional import sinusoidal_encoding

MASK_KINDS = ("none", "causal", "padding", "causal+padding")  # what the explorer's mask control offers
PAD = "<pad>"


def as_tokens(tokens):
    """A sentence as a list of token strings: a str is split on whitespace."""
    if isinstance(tokens, str):
        tokens = tokens.split()
    validation.non_empty("tokens", tokens, (list, tuple), "str or list of str")
    for i, t in enumerate(tokens):
        validation.instance(f"tokens[{i}]", t, str)
    return list(tokens)


def token_embeddings(tokens, d_model=16, seed=0):
    """(T, d_model) float64: each distinct word gets the same N(0, 1) vector wherever it occurs."""
    tokens = as_tokens(tokens)
    d_model = validation.positive_int("d_model", d_model)
    seed = validation.seed("seed", seed)
    rows = []
    for tok in tokens:  # seeded by the word itself (crc32 is stable across runs, unlike hash())
        g = torch.Generator().manual_seed(zlib.crc32(f"{seed}:{tok}".encode()))
        rows.append(torch.randn(d_model, generator=g, dtype=torch.float64))  # (d_model,)
    return torch.stack(rows)  # (T, d_model)


def explorer_mask(tokens, mask_kind="none", pad=PAD):
    """(T, T) bool mask for the explorer of kind `mask_kind`: none, causal, padding (keys equal to `pad`), or both."""
    tokens = as_tokens(tokens)
    validation.choice("mask_kind", mask_kind, MASK_KINDS)
    T = len(tokens)
    real = torch.tensor([t != pad for t in tokens])  # (T,)
    causal = causal_mask(T) if "causal" in mask_kind else None  # (T, T)
    padding = real.expand(T, T) if "padding" in mask_kind else None  # (T, T): the same keys for every query
    return combine_masks(torch.ones(T, T, dtype=torch.bool), causal, padding)  # (T, T)


def attention_map(tokens, scale=True, temperature=1.0, positional=False, mask_kind="none", d_model=16, seed=0, pad=PAD):
    """Self-attention weights (T, T) of the seeded embeddings: softmax(x x^T * s / temperature).

    s = 1/sqrt(d_model) when `scale`, else 1; `positional` adds the sinusoidal PE to x first.
    Returns (weights, mask), both (T, T); the mask (bool, True = may attend) is of kind `mask_kind`, and a
    masked cell has weight 0.
    """
    validation.boolean("scale", scale)
    validation.boolean("positional", positional)
    temperature = validation.positive_float("temperature", temperature)
    x = token_embeddings(tokens, d_model, seed)  # (T, d_model)
    if positional:
        x = x + sinusoidal_encoding(len(x), d_model, dtype=torch.float64)  # (T, d_model)
    m = explorer_mask(tokens, mask_kind, pad)  # (T, T)
    # scaled_dot_product_attention divides by sqrt(d_k); rescale q so the scores are what we want.
    factor = (1.0 if scale else math.sqrt(d_model)) / temperature
    _, weights = scaled_dot_product_attention(x * factor, x, x, m)  # (T, T)
    return weights, m
