"""utils.positional, lesson 08 additions: learned absolute PE, rotary position embedding (RoPE), 2-D PE."""

import math

import pytest
import torch

from utils.positional import (
    LearnedPositionalEncoding,
    angular_frequencies,
    apply_rotary,
    rotary_angles,
    sinusoidal_encoding,
    sinusoidal_encoding_2d,
)


def rotation_matrix(k, d_model, base=10000.0):
    """Lesson 02's M_k, built by hand: block-diagonal 2x2 blocks with PE_{t+k} = M_k PE_t."""
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i, w in enumerate(angular_frequencies(d_model, base).tolist()):
        c, s = math.cos(w * k), math.sin(w * k)
        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor([[c, s], [-s, c]], dtype=torch.float64)
    return M


# --- rotary ---------------------------------------------------------------------------------------


def test_rotation_matrix_is_lesson_02s_identity():
    pe = sinusoidal_encoding(40, 16, dtype=torch.float64)  # (40, 16)
    for k in (0, 1, 5, 13):
        assert torch.allclose(pe[: 40 - k] @ rotation_matrix(k, 16).T, pe[k:], atol=1e-12)


@pytest.mark.parametrize("d_model, base", [(2, 10000.0), (8, 10000.0), (16, 100.0), (64, 10000.0)])
def test_apply_rotary_equals_block_diagonal_rotation(d_model, base):
    x = torch.randn(3, 12, d_model, dtype=torch.float64, generator=torch.Generator().manual_seed(d_model))
    positions = torch.tensor([0, 1, 2, 3, 7, 11, 50, 99, 100, 511, 1000, 4095])
    got = apply_rotary(x, positions, base)  # (3, 12, d_model)
    for t, pos in enumerate(positions.tolist()):
        expected = x[:, t] @ rotation_matrix(pos, d_model, base).T  # (3, d_model)
        assert torch.allclose(got[:, t], expected, atol=1e-10), f"row {t} (position {pos})"


def test_apply_rotary_turns_pe_t_into_pe_t_plus_k():
    pe = sinusoidal_encoding(300, 32, dtype=torch.float64)  # (300, 32)
    assert torch.allclose(apply_rotary(pe[:100], torch.full((100,), 200)), pe[200:], atol=1e-10)
    # PE_t is PE_0 turned by t
    assert torch.allclose(apply_rotary(pe[:1].expand(300, 32)), pe, atol=1e-10)


def test_default_positions_are_0_to_T_minus_1():
    x = torch.randn(2, 4, 9, 8)
    assert torch.equal(apply_rotary(x), apply_rotary(x, torch.arange(9)))
    assert torch.equal(apply_rotary(x, list(range(9))), apply_rotary(x, torch.arange(9)))


def test_rope_dot_product_depends_only_on_the_offset():
    """(R_m q) . (R_n k) is the same for every m with the same n - m, for random q and k."""
    g = torch.Generator().manual_seed(0)
    d_model = 64
    q, k = (
        torch.randn(d_model, dtype=torch.float64, generator=g),
        torch.randn(d_model, dtype=torch.float64, generator=g),
    )
    starts = torch.tensor([0, 1, 2, 17, 100, 1000, 5000, 12345], dtype=torch.float64)  # absolute m
    for offset in (-50, -3, -1, 0, 1, 2, 9, 64, 700):
        qm = apply_rotary(q.expand(len(starts), d_model), starts)  # (M, d_model)
        kn = apply_rotary(k.expand(len(starts), d_model), starts + offset)  # (M, d_model)
        dots = (qm * kn).sum(-1)  # (M,)
        expected = q @ (rotation_matrix(offset, d_model) @ k)  # q . M_{n-m} k, the same for every m
        assert torch.allclose(dots, expected.expand_as(dots), atol=1e-9), f"offset {offset}: {dots}"
    # and it does depend on the offset
    d1 = (apply_rotary(q[None], [0.0]) * apply_rotary(k[None], [1.0])).sum()
    d5 = (apply_rotary(q[None], [0.0]) * apply_rotary(k[None], [5.0])).sum()
    assert not torch.isclose(d1, d5)


def test_rope_score_matrix_is_toeplitz():
    """One q and one k at every position: scores[m, n] depends on n - m only."""
    g = torch.Generator().manual_seed(1)
    T, d = 30, 16
    q = apply_rotary(torch.randn(1, d, generator=g).expand(T, d))  # (T, d)
    k = apply_rotary(torch.randn(1, d, generator=g).expand(T, d))  # (T, d)
    scores = q @ k.T  # (T, T)
    for off in range(-T + 1, T):
        diag = torch.diagonal(scores, off)
        assert torch.allclose(diag, diag[0].expand_as(diag), atol=1e-4)


def test_rotary_preserves_norms_and_dtype():
    for dtype in (torch.float32, torch.float64):
        x = torch.randn(5, 20, 32, dtype=dtype)
        y = apply_rotary(x, torch.arange(20) * 37)
        assert y.dtype == dtype and y.shape == x.shape
        assert torch.allclose(y.norm(dim=-1), x.norm(dim=-1), rtol=1e-5)
        # and each pair keeps its own length
        assert torch.allclose(y.view(5, 20, 16, 2).norm(dim=-1), x.view(5, 20, 16, 2).norm(dim=-1), rtol=1e-5)


def test_rotary_angles():
    theta = rotary_angles(torch.arange(4), 8)  # (4, 4)
    assert theta.shape == (4, 4) and theta.dtype == torch.float64
    assert torch.allclose(theta, torch.arange(4.0, dtype=torch.float64)[:, None] * angular_frequencies(8))
    assert torch.allclose(rotary_angles([2.5], 4, base=100.0), torch.tensor([[2.5, 0.25]], dtype=torch.float64))


def test_rotary_gradients_flow():
    x = torch.randn(2, 6, 8, requires_grad=True)
    apply_rotary(x).pow(2).sum().backward()
    assert torch.allclose(x.grad, 2 * x.detach(), atol=1e-5)  # a rotation: |Rx|^2 = |x|^2


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: apply_rotary([[1.0, 2.0]]), TypeError, "x must be a torch.Tensor"),
        (lambda: apply_rotary(torch.ones(4)), ValueError, "x must have at least 2 dimensions"),
        (lambda: apply_rotary(torch.ones(3, 4, dtype=torch.long)), ValueError, "x must be a floating-point"),
        (
            lambda: apply_rotary(torch.ones(3, 5)),
            ValueError,
            "x.shape\\[-1\\] must be divisible by 2 \\(pairs are rotated\\), got x.shape\\[-1\\]=5",
        ),
        (
            lambda: apply_rotary(torch.ones(3, 4), torch.arange(4)),
            ValueError,
            "positions must have shape \\(seq=3,\\), got \\(4,\\)",
        ),
        (
            lambda: apply_rotary(torch.ones(3, 4), torch.zeros(3, 1)),
            ValueError,
            "positions must have shape \\(T,\\), got \\(3, 1\\)",
        ),
        (lambda: apply_rotary(torch.ones(3, 4), "012"), TypeError, "positions must be a torch.Tensor, got str"),
        (lambda: apply_rotary(torch.ones(3, 4), torch.ones(3, dtype=torch.bool)), ValueError, "integer or real.*bool"),
        (lambda: apply_rotary(torch.ones(2, 4), [0.0, float("nan")]), ValueError, "positions must be finite"),
        (lambda: apply_rotary(torch.ones(2, 4), base=0), ValueError, "base must be a finite number >= 1 .*, got 0"),
        (lambda: rotary_angles(torch.arange(3), 7), ValueError, "d_model must be even.*7"),
        (lambda: rotary_angles(torch.arange(3), 0), ValueError, "d_model must be a positive int, got 0"),
        (lambda: rotary_angles(torch.arange(3), 4, base=-1.0), ValueError, "base must be a finite number >= 1"),
    ],
)
def test_rotary_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --- learned absolute PE -------------------------------------------------------------------------


def test_learned_pe_adds_one_trained_vector_per_position():
    torch.manual_seed(0)
    pe = LearnedPositionalEncoding(10, 8)
    assert isinstance(pe.embedding, torch.nn.Embedding) and pe.embedding.weight.shape == (10, 8)
    assert pe.embedding.weight.requires_grad  # trained, unlike the sinusoidal buffer
    x = torch.randn(3, 7, 8)
    assert torch.equal(pe(x), x + pe.embedding.weight[:7])
    assert torch.equal(pe(torch.zeros(10, 8)), pe.embedding.weight.detach())  # exactly max_len is fine
    # gradients reach the table, only for the rows used
    pe(torch.zeros(1, 4, 8)).sum().backward()
    grad_rows = pe.embedding.weight.grad.abs().sum(-1)
    assert (grad_rows[:4] > 0).all() and (grad_rows[4:] == 0).all()


def test_learned_pe_has_no_vector_past_max_len():
    pe = LearnedPositionalEncoding(10, 8)
    with pytest.raises(ValueError, match="length 11 exceeds .*max_len=10.*positions 0..9 only.*positions 10..10"):
        pe(torch.zeros(2, 11, 8))
    # clamp=True reuses row max_len - 1 for every later position, and says so in its name
    y = pe(torch.zeros(1, 15, 8), clamp=True)
    w = pe.embedding.weight.detach()
    assert torch.equal(y[0, :10], w) and torch.equal(y[0, 10:], w[9].expand(5, 8))


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: LearnedPositionalEncoding(0, 8), ValueError, "max_len must be a positive int, got 0"),
        (lambda: LearnedPositionalEncoding(10, 2.5), TypeError, "d_model must be an int, got float"),
        (
            lambda: LearnedPositionalEncoding(10, 8)(torch.zeros(2, 3, 6)),
            ValueError,
            "x must have shape \\(\\.\\.\\., seq, d_model=8\\), got \\(2, 3, 6\\)",
        ),
        (lambda: LearnedPositionalEncoding(10, 8)(torch.zeros(8)), ValueError, "x must have at least 2 dimensions"),
        (lambda: LearnedPositionalEncoding(10, 8)(torch.zeros(2, 8, dtype=torch.long)), ValueError, "floating-point"),
        (lambda: LearnedPositionalEncoding(10, 8)(None), TypeError, "x must be a torch.Tensor, got NoneType"),
    ],
)
def test_learned_pe_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --- 2-D sinusoidal PE ---------------------------------------------------------------------------


def test_2d_encoding_is_row_pe_then_column_pe():
    H, W, d = 3, 5, 16
    pe2 = sinusoidal_encoding_2d(H, W, d, dtype=torch.float64)  # (H*W, d)
    pe1 = sinusoidal_encoding(max(H, W), d // 2, dtype=torch.float64)  # (max, d/2)
    for r in range(H):
        for c in range(W):
            assert torch.equal(pe2[r * W + c], torch.cat([pe1[r], pe1[c]]))
    assert sinusoidal_encoding_2d(H, W, d).dtype == torch.float32


def test_2d_dot_product_depends_only_on_the_2d_offset():
    H = W = 8
    pe = sinusoidal_encoding_2d(H, W, 32, dtype=torch.float64).view(H, W, 32)
    for dr, dc in ((0, 1), (1, 0), (2, 3), (3, -2)):
        dots = [pe[r, c] @ pe[r + dr, c + dc] for r in range(H - 3) for c in range(2, W - 3)]
        assert torch.allclose(torch.stack(dots), dots[0].expand(len(dots)), atol=1e-10)


@pytest.mark.parametrize(
    "args, exc, match",
    [
        ((0, 4, 8), ValueError, "height must be a positive int, got 0"),
        ((4, -1, 8), ValueError, "width must be a positive int, got -1"),
        (
            (4, 4, 6),
            ValueError,
            "d_model must be divisible by 4 \\(sin/cos pairs for rows and columns\\), got d_model=6",
        ),
        ((4, 4, 8.0), TypeError, "d_model must be an int, got float"),
    ],
)
def test_2d_bad_input(args, exc, match):
    with pytest.raises(exc, match=match):
        sinusoidal_encoding_2d(*args)


@pytest.mark.parametrize("dropout, error", [(1.0, ValueError), ("0.1", TypeError)])
def test_learned_pe_bad_dropout(dropout, error):
    with pytest.raises(error, match=r"dropout must be a probability in \[0, 1\)"):
        LearnedPositionalEncoding(10, 8, dropout=dropout)
