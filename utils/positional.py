"""Sinusoidal positional encoding (Vaswani et al. 2017, section 3.5)."""

import torch
from torch import nn

from utils import validation


def angular_frequencies(d_model, base=10000.0):
    """w_i = 1 / base^(2i/d_model) for i = 0 .. d_model/2 - 1, as float64."""
    d_model = validation.even_positive_int("d_model", d_model)
    base = validation.pe_base("base", base)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d_model/2,)
    return base ** (-two_i / d_model)  # (d_model/2,)


def sinusoidal_encoding(max_len, d_model, base=10000.0, dtype=torch.float32):
    """PE table (max_len, d_model): column 2i is sin(pos * w_i), column 2i+1 is cos(pos * w_i)."""
    max_len = validation.positive_int("max_len", max_len)
    validation.floating_dtype("dtype", dtype)
    w = angular_frequencies(d_model, base)  # (d_model/2,)
    validation.allocation(f"max_len={max_len}, d_model={d_model}", max_len * len(w) * 2 * 8, "a float64 table")
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
    angles = pos * w  # (max_len, d_model/2)
    pe = torch.empty(max_len, len(w) * 2, dtype=torch.float64)  # (max_len, d_model)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    # Computed in float64, then cast. For positions below 10,000 every float32 entry is within about 3e-8
    # (half a float32 step at 1) of the exact value, and almost every one is the nearest float32; a few
    # entries very close to 0 are not, as there a float32 step is smaller than the float64 error in pos * w_i.
    return pe.to(dtype)


class PositionalEncoding(nn.Module):
    """Adds a precomputed sinusoidal table to embeddings (batch, seq, d_model), then dropout."""

    def __init__(self, d_model, max_len=512, base=10000.0, dropout=0.0):
        super().__init__()
        dropout = validation.probability("dropout", dropout)
        table = sinusoidal_encoding(max_len, d_model, base)  # (max_len, d_model); validates the sizes
        self.d_model, self.max_len, self.base = int(d_model), int(max_len), float(base)
        # Computed once and reused for every sentence (the YOUR CAT slide deck): a buffer, not a parameter.
        self.register_buffer("pe", table, persistent=False)
        self.dropout = nn.Dropout(dropout)

    def extra_repr(self):
        return f"d_model={self.d_model}, max_len={self.max_len}, base={self.base:g}"

    def forward(self, x):
        validation.tensor("x", x, min_dim=2, floating=True)
        validation.shape("x", x, ("...", "seq", ("d_model", self.d_model)))
        validation.max_positions("x", x, self.max_len, dim=-2)
        seq = x.shape[-2]
        return self.dropout(x + self.pe[:seq].to(x.dtype))  # (..., seq, d_model)


# --- lesson 02: dot-product identities ---


def relative_rotation(k, d_model, base=10000.0, dtype=torch.float32):
    """M_k (d_model, d_model), block-diagonal 2x2 rotations by w_i k, with PE_{t+k} = PE_t @ M_k (rows).

    Row vectors, as the table stores them: PE[t + k] = PE[t] @ M_k. Block i acts on columns
    (2i, 2i+1) = (sin, cos): [[cos(w_i k), -sin(w_i k)], [sin(w_i k), cos(w_i k)]].
    """
    k = validation.real("k", k)  # an offset in positions
    validation.floating_dtype("dtype", dtype)
    w = angular_frequencies(d_model, base)  # (d_model/2,)
    validation.allocation(f"d_model={d_model}", (len(w) * 2) ** 2 * 8, "a float64 (d_model, d_model) matrix")
    cos, sin = torch.cos(w * float(k)), torch.sin(w * float(k))  # (d_model/2,) each
    m = torch.zeros(len(w) * 2, len(w) * 2, dtype=torch.float64)  # (d_model, d_model)
    idx = torch.arange(0, len(w) * 2, 2)  # (d_model/2,) the sin column of each pair
    m[idx, idx], m[idx + 1, idx] = cos, sin  # new sin = sin cos(wk) + cos sin(wk)  (column idx)
    m[idx, idx + 1], m[idx + 1, idx + 1] = -sin, cos  # new cos = -sin sin(wk) + cos cos(wk)  (column idx+1)
    return m.to(dtype)  # (d_model, d_model)


# --- lesson 08: learned absolute positions, rotary position embedding (RoPE), 2-D encodings ---


class LearnedPositionalEncoding(nn.Module):
    """Adds a trained vector per position (an nn.Embedding of max_len rows); it has none past max_len."""

    def __init__(self, max_len, d_model, dropout=0.0):
        super().__init__()
        self.max_len = validation.positive_int("max_len", max_len)
        self.d_model = validation.positive_int("d_model", d_model)
        dropout = validation.probability("dropout", dropout)
        validation.allocation(f"max_len={max_len}, d_model={d_model}", max_len * d_model * 4, "a float32 table")
        self.embedding = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.embedding.weight, std=0.02)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, clamp=False):
        """x (..., seq, d_model) + the vector of each position; clamp=True reuses row max_len-1 past it."""
        validation.tensor("x", x, min_dim=2, floating=True)
        validation.shape("x", x, ("...", "seq", ("d_model", self.d_model)))
        validation.boolean("clamp", clamp)
        seq = x.shape[-2]
        if seq > self.max_len and not clamp:
            raise ValueError(
                f"sequence length {seq} exceeds this LearnedPositionalEncoding's max_len={self.max_len}: "
                f"it learned vectors for positions 0..{self.max_len - 1} only and has none for "
                f"positions {self.max_len}..{seq - 1} (pass clamp=True to reuse the last one)"
            )
        positions = torch.arange(seq, device=x.device).clamp(max=self.max_len - 1)  # (seq,)
        return self.dropout(x + self.embedding(positions).to(x.dtype))  # (..., seq, d_model)


def _positions(name, positions, length=None):
    """Return `positions` as a 1-D float64 tensor (ints, floats or a list), checking its length."""
    if isinstance(positions, (list, tuple, range)):
        positions = torch.tensor(list(positions), dtype=torch.float64)
    validation.tensor(name, positions)
    validation.shape(name, positions, ("T",))  # one position per row
    if positions.dtype == torch.bool or positions.is_complex():
        raise ValueError(f"{name} must hold integer or real positions, got dtype {positions.dtype}")
    if not torch.isfinite(positions).all():
        raise ValueError(f"{name} must be finite, got {positions.tolist()}")
    if length is not None:
        validation.shape(name, positions, (("seq", length),))  # one position per row of x
    return positions.to(torch.float64)


def rotary_angles(positions, d_model, base=10000.0):
    """theta[t, i] = positions[t] * w_i: the angle that pair i of a vector at positions[t] turns by."""
    w = angular_frequencies(d_model, base)  # (d_model/2,)
    return _positions("positions", positions)[:, None] * w  # (T, d_model/2), float64


def apply_rotary(x, positions=None, base=10000.0):
    """RoPE: turn pair (x[..., 2i], x[..., 2i+1]) of row t by positions[t] * w_i, i.e. x_t -> x_t M_{pos_t}.

    M_k is lesson 02's block-diagonal rotation with PE_{t+k} = PE_t M_k (rows), so
    apply_rotary(PE_t, k) = PE_{t+k} and (q M_m) . (k M_n) = q . (k M_{n-m}) depends on n - m only.
    (The RoFormer paper turns each pair the other way; any fixed direction gives the same property.)
    """
    validation.tensor("x", x, min_dim=2, floating=True)
    seq, d_model = x.shape[-2], x.shape[-1]
    validation.divisible("x.shape[-1]", d_model, 2, why="pairs are rotated")
    positions = torch.arange(seq, dtype=torch.float64) if positions is None else _positions("positions", positions, seq)
    theta = rotary_angles(positions, d_model, base)  # (seq, d_model/2)
    cos, sin = theta.cos().to(x), theta.sin().to(x)  # (seq, d_model/2) each
    x_even, x_odd = x[..., 0::2], x[..., 1::2]  # (..., seq, d_model/2) each
    out = torch.empty_like(x)  # (..., seq, d_model)
    out[..., 0::2] = x_even * cos + x_odd * sin  # sin(a+b) = sin a cos b + cos a sin b
    out[..., 1::2] = x_odd * cos - x_even * sin  # cos(a+b) = cos a cos b - sin a sin b
    return out


def sinusoidal_encoding_2d(height, width, d_model, base=10000.0, dtype=torch.float32):
    """2-D PE (height * width, d_model) in row-major order: first half encodes the row, second half the column.

    MAE-style (He et al., 2022); MAE's own code puts the column first and lists sines before cosines,
    which changes no dot product."""
    height = validation.positive_int("height", height)
    width = validation.positive_int("width", width)
    d_model = validation.positive_int("d_model", d_model)
    validation.divisible("d_model", d_model, 4, why="sin/cos pairs for rows and columns")
    validation.allocation(
        f"height={height}, width={width}, d_model={d_model}", height * width * d_model * 8, "a float64 table"
    )
    rows = sinusoidal_encoding(height, d_model // 2, base, torch.float64)  # (height, d_model/2)
    cols = sinusoidal_encoding(width, d_model // 2, base, torch.float64)  # (width, d_model/2)
    grid = torch.cat(
        [rows[:, None, :].expand(height, width, -1), cols[None, :, :].expand(height, width, -1)], dim=-1
    )  # (height, width, d_model)
    return grid.reshape(height * width, d_model).to(dtype)  # (height * width, d_model)
