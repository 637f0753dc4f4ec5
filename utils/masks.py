"""Boolean attention masks. Convention everywhere: True = this query may attend to this key."""

import numbers

import torch

from utils import validation


def causal_mask(n, device=None):
    """(n, n) bool, True on and below the diagonal: position i sees j <= i (itself included)."""
    n = validation.positive_int("n", n)
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()  # (n, n)


def padding_mask(tokens, pad_id):
    """(..., 1, T) bool, True on real tokens: broadcasts over the queries of (..., T_q, T_k)."""
    validation.tensor("tokens", tokens, min_dim=1)
    if tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
        raise ValueError(
            f"tokens must be an integer tensor of token ids, got dtype {tokens.dtype} "
            f"with shape {tuple(tokens.shape)}"
        )
    if isinstance(pad_id, bool) or not isinstance(pad_id, numbers.Integral):
        raise TypeError(f"pad_id must be an int token id, got {type(pad_id).__name__} {pad_id!r}")
    return (tokens != pad_id).unsqueeze(-2)  # (..., 1, T)


def combine_masks(*masks):
    """Positions allowed by every mask (logical AND, with broadcasting); None entries are skipped."""
    masks = [m for m in masks if m is not None]
    if not masks:
        return None
    for i, m in enumerate(masks):
        validation.tensor(f"masks[{i}]", m)
        if m.dtype != torch.bool:
            raise ValueError(f"masks[{i}] must be a bool tensor (True = may attend), got {m.dtype}")
    try:
        shape = torch.broadcast_shapes(*(m.shape for m in masks))
    except RuntimeError:
        shapes = ", ".join(str(tuple(m.shape)) for m in masks)
        raise ValueError(f"masks must broadcast to one shape, got shapes {shapes}") from None
    out = torch.ones(shape, dtype=torch.bool, device=masks[0].device)
    for m in masks:
        out = out & m
    return out
