"""Boolean attention masks. Convention everywhere: True = this query may attend to this key."""

import torch

from utils import validation


def causal_mask(n, device=None):
    """(n, n) bool, True on and below the diagonal: position i sees j <= i (itself included)."""
    n = validation.positive_int("n", n)
    validation.allocation(f"n={n}", n * n, "an (n, n) bool mask")
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()  # (n, n)


def padding_mask(tokens, pad_id):
    """(..., 1, T) bool, True on real tokens: broadcasts over the queries of (..., T_q, T_k)."""
    validation.token_ids("tokens", tokens)
    validation.token_id("pad_id", pad_id)
    return (tokens != pad_id).unsqueeze(-2)  # (..., 1, T)


def combine_masks(*masks):
    """Positions allowed by every mask (logical AND, with broadcasting); None entries are skipped."""
    masks = [m for m in masks if m is not None]
    if not masks:
        return None
    for i, m in enumerate(masks):
        validation.bool_mask(f"masks[{i}]", m)
    try:
        shape = torch.broadcast_shapes(*(m.shape for m in masks))
    except RuntimeError:
        shapes = ", ".join(str(tuple(m.shape)) for m in masks)
        raise ValueError(f"masks must broadcast to one shape, got shapes {shapes}") from None
    out = torch.ones(shape, dtype=torch.bool, device=masks[0].device)
    for m in masks:
        out = out & m
    return out
