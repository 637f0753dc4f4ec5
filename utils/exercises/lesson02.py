"""Exercises of lesson 02 (dot-product identities): the offset dot product, M_k, a stable softmax."""

import math

import numpy as np
import torch

from utils.exercises import compare_arrays, exercise
from utils.positional import angular_frequencies, relative_rotation, sinusoidal_encoding

CASES = [(0, 16, 10000.0), (1, 16, 10000.0), (5, 16, 10000.0), (-5, 16, 10000.0), (12, 64, 10000.0),
         (-40, 128, 10000.0), (3, 2, 10000.0), (7, 8, 100.0)]


def _offset_dot_solution(k, d_model, base=10000.0):
    w = base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (d_model/2,)
    return torch.cos(w * k).sum().item()


def _offset_dot_sin(k, d_model, base=10000.0):  # sin instead of cos: odd in k, 0 at k = 0
    w = base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    return torch.sin(w * k).sum().item()


def _offset_dot_every_column(k, d_model, base=10000.0):  # one frequency per column, not per pair
    w = base ** (-torch.arange(0, d_model, dtype=torch.float64) / d_model)
    return torch.cos(w * k).sum().item()


@exercise(
    hint="""
    Expand sin(a)sin(b) + cos(a)cos(b) = cos(a - b) for each of the d_model/2 pairs, with
    a = w_i t and b = w_i (t + k). One frequency per PAIR: w_i = base ** (-2i / d_model), i < d_model/2.
    """,
    reference=_offset_dot_solution,
    wrong=[_offset_dot_sin, _offset_dot_every_column],
)
def offset_dot(answer):
    """answer(k, d_model, base) must return the number PE_t . PE_{t+k} (the same for every t)."""
    for k, d_model, base in CASES:
        pe = sinusoidal_encoding(abs(k) + 3, d_model, base, dtype=torch.float64)  # (|k|+3, d_model)
        t = 2 if k >= 0 else abs(k) + 2  # a row whose row t + k exists
        expected = float(pe[t] @ pe[t + k])
        got = float(answer(k, d_model, base))
        if not math.isclose(got, expected, abs_tol=1e-4):
            return (f"offset_dot(k={k}, d_model={d_model}, base={base:g}): expected {expected:.4f} "
                    f"(= PE_{t} . PE_{t + k} from the table), got {got:.4f}")
    return None


def _rotation_solution(k, d_model, base=10000.0):
    w = base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (d_model/2,)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)  # (d_model, d_model)
    for i in range(d_model // 2):
        c, s = math.cos(w[i] * k), math.sin(w[i] * k)
        m[2 * i, 2 * i], m[2 * i + 1, 2 * i] = c, s  # column 2i: sin(a + b) = sin a cos b + cos a sin b
        m[2 * i, 2 * i + 1], m[2 * i + 1, 2 * i + 1] = -s, c  # column 2i+1: cos(a + b) = -sin a sin b + cos a cos b
    return m


def _rotation_backwards(k, d_model, base=10000.0):  # the transpose: rotates by -w_i k
    return _rotation_solution(k, d_model, base).T


def _rotation_angle_k(k, d_model, base=10000.0):  # every pair rotated by k, forgetting w_i
    return _rotation_solution(k, d_model, base=1.0)


@exercise(
    hint="""
    Work one pair (sin(w t), cos(w t)) at a time: by the angle-addition formulas the pair at t + k is
    (sin(wt)cos(wk) + cos(wt)sin(wk), cos(wt)cos(wk) - sin(wt)sin(wk)), the row pair at t times a 2x2
    matrix: its first column holds (cos(wk), sin(wk)), its second (-sin(wk), cos(wk)).
    Place block i at rows and columns 2i, 2i+1 of a zero (d_model, d_model) matrix.
    """,
    reference=_rotation_solution,
    wrong=[_rotation_backwards, _rotation_angle_k],
)
def rotation(answer):
    """answer(k, d_model, base) must return M_k (d_model, d_model) with PE_t @ M_k = PE_{t+k} (rows)."""
    for k, d_model, base in [(1, 4, 10000.0), (3, 16, 10000.0), (-2, 16, 10000.0), (10, 64, 100.0)]:
        m = torch.as_tensor(answer(k, d_model, base), dtype=torch.float64)  # (d_model, d_model)
        if tuple(m.shape) != (d_model, d_model):
            return f"rotation(k={k}, d_model={d_model}) has shape {tuple(m.shape)}, expected {(d_model, d_model)}"
        pe = sinusoidal_encoding(20 + abs(k), d_model, base, dtype=torch.float64)  # (20+|k|, d_model)
        src = pe[max(0, -k): len(pe) - max(0, k)]  # rows t
        dst = pe[max(0, k): len(pe) - max(0, -k)]  # rows t + k
        miss = compare_arrays(src @ m, dst, what=f"PE_t @ M_k (k={k}, d_model={d_model}; row r is "
                                                f"t = r + {max(0, -k)}) compared with PE_(t+k)")
        if miss:
            return miss
        miss = compare_arrays(m, relative_rotation(k, d_model, base, dtype=torch.float64),
                              what=f"M_k for k={k}, d_model={d_model}")
        if miss:
            return miss
    return None


def _softmax_solution(x, temperature=1.0):
    z = x / temperature  # (..., n)
    z = z - z.max(dim=-1, keepdim=True).values  # softmax(z - c) = softmax(z): exp never overflows
    e = torch.exp(z)  # (..., n)
    return e / e.sum(dim=-1, keepdim=True)


def _softmax_naive(x, temperature=1.0):  # exp(1000) overflows to inf, inf / inf = nan
    e = torch.exp(x / temperature)
    return e / e.sum(dim=-1, keepdim=True)


def _softmax_times_temperature(x, temperature=1.0):  # multiplies where it should divide
    z = x * temperature
    e = torch.exp(z - z.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


def _softmax_wrong_axis(x, temperature=1.0):  # normalises columns instead of the last axis
    z = x / temperature
    e = torch.exp(z - z.max(dim=0, keepdim=True).values)
    return e / e.sum(dim=0, keepdim=True)


@exercise(
    hint="""
    softmax(x / T): divide by the temperature T, subtract the row maximum (allowed, because
    softmax(z + c) = softmax(z)), exponentiate, divide by the sum over the LAST axis (dim=-1).
    """,
    reference=_softmax_solution,
    wrong=[_softmax_naive, _softmax_times_temperature, _softmax_wrong_axis],
)
def stable_softmax(answer):
    """answer(x, temperature) must equal torch.softmax(x / temperature, dim=-1), also for huge x."""
    gen = torch.Generator().manual_seed(2)
    cases = [
        ("x = [1, 2, 3] at temperature 1", torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64), 1.0),
        ("x = [1, 2, 3] at temperature 0.5", torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64), 0.5),
        ("x = [1, 2, 3] at temperature 10", torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64), 10.0),
        ("x = [1000, 1001, 1002] at temperature 1", torch.tensor([1000.0, 1001.0, 1002.0], dtype=torch.float64), 1.0),
        ("a (3, 5) batch of rows at temperature 2", torch.randn(3, 5, generator=gen, dtype=torch.float64) * 4, 2.0),
        ("x = [-1000, 0, 5] at temperature 0.01", torch.tensor([-1000.0, 0.0, 5.0], dtype=torch.float64), 0.01),
    ]
    for name, x, temperature in cases:
        got = answer(x.clone(), temperature)
        got = np.asarray(got.detach() if isinstance(got, torch.Tensor) else got, dtype=float)
        if np.isnan(got).any():
            return f"{name}: your softmax returned nan (did exp overflow? subtract the maximum first)"
        miss = compare_arrays(got, torch.softmax(x / temperature, dim=-1), what=f"softmax of {name}",
                              atol=1e-6)
        if miss:
            return miss
    return None
