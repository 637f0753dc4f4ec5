"""Lesson 01 exercises: one PE value, the whole PE table without loops, the range of wavelengths."""

import math

import numpy as np

from utils.exercises import compare_arrays, exercise
from utils.positional import sinusoidal_encoding

# --- reference solutions (printed by `.solution()`) ---


def pe_value_solution(pos, dim, d_model):
    i = dim // 2  # columns 2i and 2i+1 share the frequency w_i = 1 / 10000^(2i/d_model)
    angle = pos / 10000 ** (2 * i / d_model)
    return math.sin(angle) if dim % 2 == 0 else math.cos(angle)


def pe_table_solution(max_len, d_model):
    pos = np.arange(max_len)[:, None]  # (max_len, 1)
    two_i = np.arange(0, d_model, 2)[None, :]  # (1, d_model/2)
    angles = pos / 10000 ** (two_i / d_model)  # (max_len, d_model/2)
    table = np.empty((max_len, d_model))  # (max_len, d_model)
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return table


def wavelength_range_solution(d_model, base=10000.0):
    # Pair i has angular frequency w_i = base^(-2i/d_model), so wavelength 2*pi / w_i.
    # i runs from 0 to d_model/2 - 1, so the largest exponent is (d_model - 2) / d_model.
    shortest = 2 * math.pi
    longest = 2 * math.pi * base ** ((d_model - 2) / d_model)
    return shortest, longest


# --- known wrong answers (each one must be caught by its checker) ---


def _value_sin_cos_swapped(pos, dim, d_model):
    angle = pos / 10000 ** (2 * (dim // 2) / d_model)
    return math.cos(angle) if dim % 2 == 0 else math.sin(angle)


def _value_exponent_uses_dim(pos, dim, d_model):
    angle = pos / 10000 ** (dim / d_model)  # odd columns get the next pair's frequency
    return math.sin(angle) if dim % 2 == 0 else math.cos(angle)


def _value_i_is_dim(pos, dim, d_model):
    angle = pos / 10000 ** (2 * dim / d_model)  # i = dim instead of dim // 2
    return math.sin(angle) if dim % 2 == 0 else math.cos(angle)


def _table_halves(max_len, d_model):
    t = pe_table_solution(max_len, d_model)
    return np.concatenate([t[:, 0::2], t[:, 1::2]], axis=1)  # every sin, then every cos


def _table_from_one(max_len, d_model):
    return pe_table_solution(max_len + 1, d_model)[1:]  # positions 1..max_len


def _table_float_exponent_without_two(max_len, d_model):
    pos = np.arange(max_len)[:, None]
    i = np.arange(d_model // 2)[None, :]
    angles = pos / 10000 ** (i / d_model)  # forgot the 2 in 2i/d_model
    table = np.empty((max_len, d_model))
    table[:, 0::2], table[:, 1::2] = np.sin(angles), np.cos(angles)
    return table


def _range_paper_rounded(d_model, base=10000.0):
    return 2 * math.pi, 2 * math.pi * base  # the paper's "from 2pi to 10000 * 2pi" is a limit


def _range_without_two_pi(d_model, base=10000.0):
    return 1.0, base ** ((d_model - 2) / d_model)  # periods in radians per position, not positions


# --- the checkers ---

VALUE_CASES = [(0, 0, 512), (0, 1, 512), (1, 0, 512), (1, 1, 512), (1, 2, 512), (1, 3, 512),
               (3, 5, 8), (50, 7, 16), (100, 127, 128), (1, 511, 512)]


@exercise(
    hint="""
    Column `dim` belongs to the pair i = dim // 2, whose angle is pos / 10000 ** (2 * i / d_model).
    Even columns take the sine of that angle, odd columns the cosine.
    """,
    reference=pe_value_solution,
    wrong=[_value_sin_cos_swapped, _value_exponent_uses_dim, _value_i_is_dim],
)
def pe_value(answer):
    """Check `answer(pos, dim, d_model)` -> PE(pos, dim) for 10000 as the base."""
    for pos, dim, d_model in VALUE_CASES:
        expected = pe_value_solution(pos, dim, d_model)
        got = float(answer(pos, dim, d_model))
        if not math.isclose(got, expected, abs_tol=1e-6):
            advice = ""
            if math.isclose(got, _value_sin_cos_swapped(pos, dim, d_model), abs_tol=1e-6):
                advice = " (sin and cos look swapped: even columns are sin, odd columns cos)"
            return (f"pe_value(pos={pos}, dim={dim}, d_model={d_model}): "
                    f"expected {expected:.4f}, got {got:.4f}{advice}")
    return None


TABLE_CASES = [(1, 2), (7, 4), (50, 16), (128, 64)]


@exercise(
    hint="""
    Build a column of positions (max_len, 1) and a row of exponents 2i/d_model (1, d_model/2);
    broadcasting gives every angle at once. Then write the sines into columns 0, 2, 4, ...
    (`table[:, 0::2]`) and the cosines into columns 1, 3, 5, ... (`table[:, 1::2]`).
    """,
    reference=pe_table_solution,
    wrong=[_table_halves, _table_from_one, _table_float_exponent_without_two],
)
def pe_table(answer):
    """Check `answer(max_len, d_model)` -> the (max_len, d_model) PE table, as NumPy or torch."""
    for max_len, d_model in TABLE_CASES:
        expected = sinusoidal_encoding(max_len, d_model).double().numpy()  # (max_len, d_model)
        got = np.asarray(answer(max_len, d_model), dtype=float)
        problem = compare_arrays(got, expected, what=f"pe_table({max_len}, {d_model})", atol=1e-5)
        if problem:
            if got.shape == expected.shape and np.allclose(got, _table_halves(max_len, d_model), atol=1e-5):
                problem += ("; you put every sin first, then every cos (a layout some libraries use); "
                            "the paper interleaves them: column 2i is sin, column 2i+1 is cos")
            return problem
    return None


RANGE_CASES = [(512, 10000.0), (128, 10000.0), (16, 100.0), (2, 10000.0)]


@exercise(
    hint="""
    A wave sin(w * pos) repeats every 2 * pi / w positions. Pair i has w_i = base ** (-2i / d_model),
    and i runs from 0 to d_model/2 - 1: which i gives the shortest wavelength, which the longest?
    """,
    reference=wavelength_range_solution,
    wrong=[_range_paper_rounded, _range_without_two_pi],
)
def wavelength_range(answer):
    """Check `answer(d_model, base)` -> (shortest, longest) wavelength, measured in positions."""
    for d_model, base in RANGE_CASES:
        expected = wavelength_range_solution(d_model, base)
        got = tuple(float(x) for x in answer(d_model, base))
        if len(got) != 2:
            return f"wavelength_range({d_model}, {base:g}) must return (shortest, longest), got {got}"
        for name, g, e in zip(("shortest", "longest"), got, expected):
            if not math.isclose(g, e, rel_tol=1e-6):
                advice = ""
                if name == "longest" and math.isclose(g, 2 * math.pi * base, rel_tol=1e-6):
                    advice = (" (2*pi*base is a limit no column reaches: the last pair is "
                              "i = d_model/2 - 1, so its exponent is (d_model - 2)/d_model)")
                return (f"wavelength_range({d_model}, {base:g}): {name} wavelength expected "
                        f"{e:.4f}, got {g:.4f}{advice}")
    return None
