"""relative_rotation(k, d_model): the M_k with PE_{t+k} = PE_t @ M_k (rows), checked against the PE table."""

import math

import pytest
import torch

from utils.positional import angular_frequencies, relative_rotation, sinusoidal_encoding

SIZES = [(2, 1.0), (4, 10000.0), (16, 10000.0), (64, 100.0), (128, 10000.0)]


@pytest.mark.parametrize("d_model, base", SIZES)
@pytest.mark.parametrize("k", [0, 1, 3, 17, -1, -5])
def test_maps_every_row_to_the_row_k_later(d_model, base, k):
    # Convention: rows, as the table stores them: PE[t] @ M_k = PE[t+k]; for columns, M_k.T @ PE_t.
    max_len = 40
    pe = sinusoidal_encoding(max_len, d_model, base, dtype=torch.float64)  # (max_len, d_model)
    m = relative_rotation(k, d_model, base, dtype=torch.float64)  # (d_model, d_model)
    src = pe[max(0, -k) : max_len - max(0, k)]  # rows t whose t + k is in the table
    dst = pe[max(0, k) : max_len - max(0, -k)]  # rows t + k
    torch.testing.assert_close(src @ m, dst, atol=1e-12, rtol=0)
    torch.testing.assert_close((m.T @ src.T).T, dst, atol=1e-12, rtol=0)
    if k != 0:
        assert not torch.allclose(src @ m.T, dst, atol=1e-6)  # the transpose moves the other way


def test_maps_a_position_beyond_the_table_and_fractional_offsets():
    w = angular_frequencies(8)  # (4,)

    def pe_at(t):
        return torch.stack([torch.sin(w * t), torch.cos(w * t)], dim=1).reshape(-1)  # (8,)

    m = relative_rotation(2.5, 8, dtype=torch.float64)  # (8, 8)
    torch.testing.assert_close(pe_at(1000.0) @ m, pe_at(1002.5), atol=1e-9, rtol=0)


def test_block_diagonal_with_rotation_blocks():
    d_model, k = 6, 4
    m = relative_rotation(k, d_model, dtype=torch.float64)  # (6, 6)
    w = angular_frequencies(d_model)  # (3,)
    for i in range(d_model // 2):
        c, s = math.cos(w[i].item() * k), math.sin(w[i].item() * k)
        block = m[2 * i : 2 * i + 2, 2 * i : 2 * i + 2]  # (2, 2)
        torch.testing.assert_close(block, torch.tensor([[c, -s], [s, c]], dtype=torch.float64))
    off = m.clone()
    for i in range(d_model // 2):
        off[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = 0
    assert torch.count_nonzero(off) == 0


@pytest.mark.parametrize("d_model, base", SIZES)
def test_orthogonal_with_inverse_equal_to_negative_offset(d_model, base):
    m = relative_rotation(7, d_model, base, dtype=torch.float64)  # (d_model, d_model)
    eye = torch.eye(d_model, dtype=torch.float64)
    torch.testing.assert_close(m @ m.T, eye, atol=1e-12, rtol=0)
    torch.testing.assert_close(m.T @ m, eye, atol=1e-12, rtol=0)
    torch.testing.assert_close(relative_rotation(-7, d_model, base, dtype=torch.float64), m.T)
    assert torch.linalg.det(m).item() == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("a, b", [(1, 2), (5, -3), (-4, -6), (0, 9), (100, 23)])
def test_composition(a, b):
    def m(k):
        return relative_rotation(k, 32, dtype=torch.float64)  # (32, 32)

    torch.testing.assert_close(m(a) @ m(b), m(a + b), atol=1e-12, rtol=0)
    torch.testing.assert_close(m(a) @ m(b), m(b) @ m(a), atol=1e-12, rtol=0)  # rotations commute here


def test_zero_offset_is_identity_and_default_dtype_matches_the_table():
    assert torch.equal(relative_rotation(0, 10, dtype=torch.float64), torch.eye(10, dtype=torch.float64))
    m = relative_rotation(3, 10)
    assert m.dtype == sinusoidal_encoding(5, 10).dtype == torch.float32 and m.shape == (10, 10)
    assert relative_rotation(3, 10, dtype=torch.float16).dtype == torch.float16


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (dict(k="1", d_model=8), TypeError, r"k must be a real number.*str '1'"),
        (dict(k=None, d_model=8), TypeError, r"k must be a real number.*NoneType"),
        (dict(k=True, d_model=8), TypeError, r"k must be a real number.*bool True"),
        (dict(k=torch.tensor(1), d_model=8), TypeError, r"k must be a real number.*Tensor"),
        (dict(k=float("nan"), d_model=8), ValueError, r"k must be a finite number, got nan"),
        (dict(k=float("inf"), d_model=8), ValueError, r"k must be a finite number, got inf"),
        (dict(k=1, d_model=7), ValueError, r"d_model must be even.*got 7"),
        (dict(k=1, d_model=0), ValueError, r"d_model must be a positive int, got 0"),
        (dict(k=1, d_model=-4), ValueError, r"d_model must be a positive int, got -4"),
        (dict(k=1, d_model=8.0), TypeError, r"d_model must be an int, got float 8.0"),
        (dict(k=1, d_model=8, base=0), ValueError, r"base must be a finite number >= 1 .*, got 0"),
        (dict(k=1, d_model=8, base=-2.0), ValueError, r"base must be a finite number >= 1 .*, got -2.0"),
        (dict(k=1, d_model=8, base="10000"), TypeError, r"base must be a finite number >= 1, got str"),
        (dict(k=1, d_model=8, dtype=torch.int64), TypeError, r"dtype must be a floating torch.dtype.*int64"),
        (dict(k=1, d_model=8, dtype="float64"), TypeError, r"dtype must be a floating torch.dtype.*'float64'"),
    ],
)
def test_bad_input(kwargs, err, match):
    with pytest.raises(err, match=match):
        relative_rotation(**kwargs)
