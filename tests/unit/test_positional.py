"""utils.positional: the PE table's values, shapes and dtypes, its bad inputs, and PositionalEncoding."""

import math

import numpy as np
import pytest
import torch

import utils.positional as positional
from utils.positional import PositionalEncoding, angular_frequencies, sinusoidal_encoding


def independent_pe(max_len, d_model, base=10000.0):
    """The paper's formula, one entry at a time with the math module."""
    table = np.zeros((max_len, d_model))
    for pos in range(max_len):
        for dim in range(d_model):
            angle = pos / base ** (2 * (dim // 2) / d_model)
            table[pos, dim] = math.sin(angle) if dim % 2 == 0 else math.cos(angle)
    return table


# --- values ---


@pytest.mark.parametrize(
    "max_len, d_model, base",
    [
        (1, 2, 10000.0),
        (5, 4, 10000.0),
        (50, 16, 10000.0),
        (64, 128, 10000.0),
        (20, 8, 100.0),
        (10, 6, 2.5),
        (7, 10, 1.0),
        (3, 512, 10000.0),
    ],
)
def test_matches_the_formula_entry_by_entry(max_len, d_model, base):
    expected = independent_pe(max_len, d_model, base)
    got64 = sinusoidal_encoding(max_len, d_model, base, dtype=torch.float64).numpy()
    got32 = sinusoidal_encoding(max_len, d_model, base).numpy()
    np.testing.assert_allclose(got64, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got32, expected, rtol=0, atol=1e-7)


def test_known_numbers():
    pe = sinusoidal_encoding(2, 512, dtype=torch.float64)
    assert torch.equal(pe[0, 0::2], torch.zeros(256)) and torch.equal(pe[0, 1::2], torch.ones(256))
    assert pe[1, 0].item() == pytest.approx(0.8414709848, abs=1e-10)  # sin(1)
    assert pe[1, 1].item() == pytest.approx(0.5403023059, abs=1e-10)  # cos(1)
    # the YOUR CAT slide deck's PE(1) row, which truncates (not rounds) to four decimals
    seed = [0.8414, 0.5403, 0.8218, 0.5696, 0.0001, 0.9999]
    shown = pe[1, [0, 1, 2, 3, 510, 511]].tolist()
    assert [math.floor(x * 1e4) for x in shown] == [round(s * 1e4) for s in seed]
    # a hand-computed entry: PE(3, 5) at d_model=8 is cos(3 / 10000^(4/8)) = cos(0.03)
    assert sinusoidal_encoding(4, 8, dtype=torch.float64)[3, 5].item() == pytest.approx(math.cos(0.03), abs=1e-15)


def test_angular_frequencies():
    w = angular_frequencies(8)
    assert w.dtype == torch.float64 and w.shape == (4,)
    assert torch.allclose(w, torch.tensor([1.0, 0.1, 0.01, 0.001], dtype=torch.float64), rtol=1e-12)
    assert torch.allclose(angular_frequencies(4, base=100.0), torch.tensor([1.0, 0.1], dtype=torch.float64))


def test_bounded_rows_of_equal_norm_and_unique():
    pe = sinusoidal_encoding(2000, 64, dtype=torch.float64)
    assert pe.abs().max() <= 1
    assert torch.allclose(pe.norm(dim=1), torch.full((2000,), math.sqrt(32.0), dtype=torch.float64))
    distances = torch.cdist(pe, pe) + torch.eye(2000, dtype=torch.float64) * 100
    assert distances.min() > 0.5  # no two of 2000 positions coincide


def test_deterministic():
    assert torch.equal(sinusoidal_encoding(300, 64), sinusoidal_encoding(300, 64))


# --- shapes and dtypes ---


@pytest.mark.parametrize("max_len, d_model", [(1, 2), (1, 512), (7, 4), (100, 128), (513, 6)])
def test_shape(max_len, d_model):
    assert sinusoidal_encoding(max_len, d_model).shape == (max_len, d_model)


def test_dtypes():
    assert sinusoidal_encoding(4, 8).dtype == torch.float32
    assert sinusoidal_encoding(4, 8, dtype=torch.float64).dtype == torch.float64
    assert sinusoidal_encoding(4, 8, dtype=torch.float16).dtype == torch.float16
    # float32 is the float64 table correctly rounded, not computed in float32
    assert torch.equal(sinusoidal_encoding(200, 64), sinusoidal_encoding(200, 64, dtype=torch.float64).float())


def test_numpy_integers_and_int_base_are_accepted():
    assert torch.equal(sinusoidal_encoding(np.int64(5), np.int32(8), base=10000), sinusoidal_encoding(5, 8))


# --- bad inputs ---

BAD_INPUTS = [
    # (kwargs, exception, words the message must contain)
    (dict(d_model=7), ValueError, r"d_model must be even.*got 7"),
    (dict(d_model=1), ValueError, r"d_model must be even.*got 1"),
    (dict(d_model=0), ValueError, r"d_model must be a positive int, got 0"),
    (dict(d_model=-4), ValueError, r"d_model must be a positive int, got -4"),
    (dict(d_model=8.0), TypeError, r"d_model must be an int, got float 8\.0"),
    (dict(d_model="8"), TypeError, r"d_model must be an int, got str '8'"),
    (dict(d_model=True), TypeError, r"d_model must be an int, got bool True"),
    (dict(max_len=0), ValueError, r"max_len must be a positive int, got 0"),
    (dict(max_len=-3), ValueError, r"max_len must be a positive int, got -3"),
    (dict(max_len=2.5), TypeError, r"max_len must be an int, got float 2\.5"),
    (dict(max_len=None), TypeError, r"max_len must be an int, got NoneType None"),
    (dict(max_len=False), TypeError, r"max_len must be an int, got bool False"),
    (dict(base=0), ValueError, r"base must be a finite number >= 1 .*, got 0"),
    (dict(base=-10000.0), ValueError, r"base must be a finite number >= 1 .*, got -10000\.0"),
    (dict(base=float("nan")), ValueError, r"base must be a finite number >= 1 .*, got nan"),
    # inf: w_i = 0 for every pair but the first, a table constant after its first two columns
    (dict(base=float("inf")), ValueError, r"base must be a finite number >= 1 .*, got inf"),
    (dict(base=0.5), ValueError, r"base must be a finite number >= 1 .*, got 0\.5"),  # frequencies above 1
    (dict(base="10000"), TypeError, r"base must be a finite number >= 1, got str '10000'"),
    (dict(base=True), TypeError, r"base must be a finite number >= 1, got bool True"),
    # (10**7, 512): a 41 GB float64 table, refused before torch's allocator is asked
    (dict(max_len=10**7, d_model=512), ValueError, r"max_len=10000000, d_model=512 asks for a float64 table of "),
    (dict(dtype=torch.int64), TypeError, r"dtype must be a floating torch\.dtype.*torch\.int64"),
    (dict(dtype="float32"), TypeError, r"dtype must be a floating torch\.dtype.*'float32'"),
]


@pytest.mark.parametrize("kwargs, error, match", BAD_INPUTS, ids=[str(b[0]) for b in BAD_INPUTS])
def test_bad_input_names_the_argument_and_the_value(kwargs, error, match):
    args = dict(max_len=10, d_model=8) | kwargs
    with pytest.raises(error, match=match):
        sinusoidal_encoding(**args)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [b for b in BAD_INPUTS if "dtype" not in b[0]],
    ids=[str(b[0]) for b in BAD_INPUTS if "dtype" not in b[0]],
)
def test_positional_encoding_module_rejects_the_same_bad_sizes(kwargs, error, match):
    args = dict(max_len=10, d_model=8) | kwargs
    with pytest.raises(error, match=match):
        PositionalEncoding(**args)


@pytest.mark.parametrize(
    "dropout, error",
    [
        (-0.1, ValueError),
        (1.0, ValueError),
        (1.5, ValueError),
        ("0.1", TypeError),
        (True, TypeError),
        (None, TypeError),
    ],
)
def test_bad_dropout(dropout, error):
    with pytest.raises(error, match=r"dropout must be a probability in \[0, 1\), got"):
        PositionalEncoding(8, dropout=dropout)


# --- PositionalEncoding ---


@pytest.mark.parametrize("shape", [(6, 16), (2, 6, 16), (3, 2, 10, 16), (1, 32, 16)])
def test_module_adds_the_table(shape):
    torch.manual_seed(0)
    x = torch.randn(shape)
    layer = PositionalEncoding(d_model=16, max_len=32)
    expected = x + torch.from_numpy(independent_pe(shape[-2], 16)).float()
    assert torch.allclose(layer(x), expected, atol=1e-6)


def test_module_keeps_the_input_dtype():
    layer = PositionalEncoding(d_model=8, max_len=10)
    x = torch.zeros(4, 8, dtype=torch.float64)
    out = layer(x)
    assert out.dtype == torch.float64
    assert torch.allclose(out, torch.from_numpy(independent_pe(4, 8)), atol=1e-7)  # the float32 table, widened


def test_table_is_a_buffer_computed_once(monkeypatch):
    layer = PositionalEncoding(d_model=8, max_len=10, base=100.0)
    assert [name for name, _ in layer.named_parameters()] == []
    assert dict(layer.named_buffers())["pe"].shape == (10, 8)
    assert torch.equal(layer.pe, sinusoidal_encoding(10, 8, base=100.0))
    assert "pe" not in layer.state_dict()  # recomputable, so not saved with the weights

    def must_not_be_called(*args, **kwargs):
        raise AssertionError("forward recomputed the table")

    monkeypatch.setattr(positional, "sinusoidal_encoding", must_not_be_called)
    first, second = layer(torch.zeros(3, 8)), layer(torch.zeros(10, 8))
    assert torch.equal(first, layer.pe[:3]) and torch.equal(second, layer.pe)


def test_table_moves_with_the_module():
    layer = PositionalEncoding(d_model=8, max_len=10).double()
    assert layer.pe.dtype == torch.float64


def test_dropout_applies_in_training_only():
    torch.manual_seed(0)
    layer = PositionalEncoding(d_model=64, max_len=10, dropout=0.5)
    x = torch.randn(2, 10, 64)
    assert torch.equal(layer.eval()(x), x + layer.pe)
    dropped = layer.train()(x)
    assert (dropped == 0).float().mean() > 0.3


def test_repr_shows_the_sizes():
    assert "d_model=8, max_len=10, base=10000" in repr(PositionalEncoding(8, max_len=10))


def test_too_long_sequence_is_a_clear_error():
    layer = PositionalEncoding(d_model=8, max_len=10)
    layer(torch.zeros(10, 8))  # exactly max_len is fine
    with pytest.raises(ValueError, match=r"x has 11 positions, more than max_len=10.*max_len >= 11"):
        layer(torch.zeros(2, 11, 8))


@pytest.mark.parametrize("shape", [(5, 6), (2, 5, 10)])
def test_wrong_width_is_a_clear_error(shape):
    layer = PositionalEncoding(d_model=8, max_len=10)
    with pytest.raises(ValueError, match=rf"x must have shape \(\.\.\., seq, d_model=8\), got \({shape[0]}, "):
        layer(torch.zeros(shape))


@pytest.mark.parametrize(
    "x, error, match",
    [
        (np.zeros((5, 8)), TypeError, r"x must be a torch\.Tensor, got ndarray"),
        ([[0.0] * 8] * 5, TypeError, r"x must be a torch\.Tensor, got list"),
        (torch.zeros(8), ValueError, r"x must have at least 2 dimensions, got shape \(8,\)"),
        (torch.zeros(5, 8, dtype=torch.long), ValueError, r"x must be a floating-point tensor, got dtype torch\.int64"),
    ],
)
def test_bad_input_tensor(x, error, match):
    with pytest.raises(error, match=match):
        PositionalEncoding(d_model=8, max_len=10)(x)


def test_other_tables_refuse_huge_sizes_before_allocating():
    with pytest.raises(ValueError, match=r"^d_model=1000000 asks for a float64 \(d_model, d_model\) matrix of "):
        positional.relative_rotation(1, 10**6)
    with pytest.raises(ValueError, match=r"^max_len=1000000000, d_model=512 asks for a float32 table of "):
        positional.LearnedPositionalEncoding(10**9, 512)
    with pytest.raises(ValueError, match=r"^height=100000, width=100000, d_model=8 asks for a float64 table of "):
        positional.sinusoidal_encoding_2d(10**5, 10**5, 8)


def test_base_one_is_one_wave_repeated():
    # base = 1 (the pe_explorer slider's lowest value) is allowed: every pair gets w_i = 1
    pe = sinusoidal_encoding(6, 8, base=1.0)  # (6, 8)
    assert torch.equal(pe[:, 0::2], pe[:, :1].expand(-1, 4)) and torch.equal(pe[:, 1::2], pe[:, 1:2].expand(-1, 4))
