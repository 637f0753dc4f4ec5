"""Lesson 08 exercises: rotate vectors by their positions (RoPE), cut an image into patches (ViT, MAE)."""

import torch

from utils.exercises import compare_arrays, exercise
from utils.positional import angular_frequencies, apply_rotary


# --- 1. RoPE by hand ------------------------------------------------------------------------------

def _rope_reference(x, positions):
    """Turn pair (x[t, 2i], x[t, 2i+1]) by angle positions[t] * w_i, as lesson 02's M_k does to PE_t."""
    w = angular_frequencies(x.shape[-1])  # (d/2,)
    theta = positions.double()[:, None] * w  # (T, d/2)
    cos, sin = theta.cos(), theta.sin()
    out = x.clone()
    out[:, 0::2] = x[:, 0::2] * cos + x[:, 1::2] * sin
    out[:, 1::2] = x[:, 1::2] * cos - x[:, 0::2] * sin
    return out


def _rope_turned_the_other_way(x, positions):
    return _rope_reference(x, -positions)


def _rope_halves_not_pairs(x, positions):
    """The 'rotate half' layout: pairs (i, i + d/2) instead of (2i, 2i+1)."""
    d = x.shape[-1]
    theta = positions.double()[:, None] * angular_frequencies(d)  # (T, d/2)
    a, b = x[:, : d // 2], x[:, d // 2:]
    return torch.cat([a * theta.cos() + b * theta.sin(), b * theta.cos() - a * theta.sin()], dim=-1)


def _rope_one_frequency(x, positions):
    """Every pair turned by the position itself, forgetting w_i."""
    theta = positions.double()[:, None].expand(-1, x.shape[-1] // 2)  # (T, d/2)
    out = x.clone()
    out[:, 0::2] = x[:, 0::2] * theta.cos() + x[:, 1::2] * theta.sin()
    out[:, 1::2] = x[:, 1::2] * theta.cos() - x[:, 0::2] * theta.sin()
    return out


@exercise(
    hint="""
    For each row t and each pair i: theta = positions[t] * w_i with w_i = angular_frequencies(d)[i].
    new x[t, 2i]   = x[t, 2i] * cos(theta) + x[t, 2i+1] * sin(theta)
    new x[t, 2i+1] = x[t, 2i+1] * cos(theta) - x[t, 2i] * sin(theta)
    (the same 2x2 block as lesson 02's M_k, so rotating PE_0 by t gives PE_t).
    Slices x[:, 0::2] and x[:, 1::2] do all pairs at once.
    """,
    reference=_rope_reference,
    wrong=[_rope_turned_the_other_way, _rope_halves_not_pairs, _rope_one_frequency],
)
def rope_rotate(fn):
    """fn(x (T, d) float64, positions (T,) long) -> x with row t's pairs turned by positions[t] * w_i."""
    g = torch.Generator().manual_seed(8)
    for d in (2, 8, 16):
        x = torch.randn(6, d, dtype=torch.float64, generator=g)  # (T, d)
        positions = torch.tensor([0, 1, 2, 5, 40, 1000])  # (T,)
        got = fn(x.clone(), positions.clone())
        problem = compare_arrays(got, apply_rotary(x, positions), f"rotated x (d={d})", atol=1e-6)
        if problem:
            return problem
    return None


# --- 2. Cut an image into patches ------------------------------------------------------------------

def _patchify_reference(image, patch):
    """(H, W) -> (H/p * W/p, p*p): patches in reading order, each flattened row by row."""
    H, W = image.shape
    grid = image.reshape(H // patch, patch, W // patch, patch)  # (rows, p, cols, p)
    return grid.permute(0, 2, 1, 3).reshape(-1, patch * patch)  # (rows * cols, p * p)


def _patchify_plain_reshape(image, patch):
    return image.reshape(-1, patch * patch)  # strips of one image row, not square patches


def _patchify_column_order(image, patch):
    H, W = image.shape
    grid = image.reshape(H // patch, patch, W // patch, patch)
    return grid.permute(2, 0, 1, 3).reshape(-1, patch * patch)  # patches column by column


def _patchify_transposed_patches(image, patch):
    H, W = image.shape
    grid = image.reshape(H // patch, patch, W // patch, patch)
    return grid.permute(0, 2, 3, 1).reshape(-1, patch * patch)  # each patch flattened column by column


@exercise(
    hint="""
    reshape (H, W) into (H/p, p, W/p, p): axis 0 picks the patch row, axis 1 the pixel row inside it,
    axis 2 the patch column, axis 3 the pixel column. Bring the two patch axes to the front with
    permute(0, 2, 1, 3), then reshape to (H/p * W/p, p * p).
    """,
    reference=_patchify_reference,
    wrong=[_patchify_plain_reshape, _patchify_column_order, _patchify_transposed_patches],
)
def patchify(fn):
    """fn(image (H, W), patch) -> (H/patch * W/patch, patch**2), patches in reading order, rows flattened."""
    for H, W, p in ((4, 4, 2), (6, 9, 3), (8, 4, 4)):
        image = torch.arange(H * W, dtype=torch.float64).reshape(H, W)  # pixel value = its index
        got = fn(image.clone(), p)
        problem = compare_arrays(got, _patchify_reference(image, p), f"patches of a {H}x{W} image, p={p}")
        if problem:
            return problem + " (each pixel's value is its row-major index in the image)"
    return None
