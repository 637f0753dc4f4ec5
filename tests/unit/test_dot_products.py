"""utils.experiments.dot_products: the seeded samples lesson 02 measures, checked against independent computations."""

import math

import pytest
import torch

from utils.experiments.dot_products import (
    pe_variance_share,
    random_pairs,
    random_scores,
    soft_argmax_gradient,
    spread,
    word_recovery,
)
from utils.positional import sinusoidal_encoding


def test_spread():
    assert spread([3, 1, 2]) == (1.0, 2.0, 3.0)
    assert spread([0.5, 0.25, 1.0, 2.0]) == (0.25, 0.75, 2.0)
    assert spread(torch.tensor([4.0])) == (4.0, 4.0, 4.0)
    with pytest.raises(ValueError, match="values must be a non-empty"):
        spread([])


@pytest.mark.parametrize("n, d", [(1, 1), (7, 3), (100, 64)])
def test_random_pairs(n, d):
    a, b = random_pairs(n, d, seed=3)
    assert a.shape == b.shape == (n, d) and a.dtype == b.dtype == torch.float64
    gen = torch.Generator().manual_seed(3)
    assert torch.equal(a, torch.randn(n, d, generator=gen, dtype=torch.float64))
    assert torch.equal(b, torch.randn(n, d, generator=gen, dtype=torch.float64))
    a2, _ = random_pairs(n, d, seed=4)
    assert not torch.equal(a, a2)


def test_random_pairs_are_standard_normal():
    a, b = random_pairs(20000, 8, seed=0)
    for x in (a, b):
        assert abs(x.mean().item()) < 0.01 and abs(x.var().item() - 1) < 0.02
    assert abs(torch.corrcoef(torch.stack([a[:, 0], b[:, 0]]))[0, 1].item()) < 0.03


@pytest.mark.parametrize("n_queries, n_keys, d_k", [(1, 1, 1), (3, 5, 4), (20, 10, 64)])
def test_random_scores_are_dot_products(n_queries, n_keys, d_k):
    scores = random_scores(n_queries, n_keys, d_k, seed=5)
    assert scores.shape == (n_queries, n_keys) and scores.dtype == torch.float64
    gen = torch.Generator().manual_seed(5)
    q = torch.randn(n_queries, d_k, generator=gen, dtype=torch.float64)
    k = torch.randn(n_queries, n_keys, d_k, generator=gen, dtype=torch.float64)
    for i in range(n_queries):
        for j in range(n_keys):
            assert math.isclose(
                scores[i, j].item(),
                sum(q[i, c].item() * k[i, j, c].item() for c in range(d_k)),
                rel_tol=1e-12,
                abs_tol=1e-12,
            )
    assert torch.equal(scores, random_scores(n_queries, n_keys, d_k, seed=5))


def analytic_soft_argmax_gradient(x, temperature):
    """d/dx_j sum_i i p_i = p_j (j - sum_i i p_i) / T, with p = softmax(x / T)."""
    p = torch.softmax(x / temperature, dim=-1)
    index = torch.arange(len(x), dtype=x.dtype)
    return p * (index - (index * p).sum()) / temperature


@pytest.mark.parametrize(
    "x, temperature",
    [
        ([1.0, 3.0, 2.5, 0.0, 2.0], 1.0),
        ([1.0, 3.0, 2.5, 0.0, 2.0], 0.3),
        ([0.0, 0.0], 2.0),
        ([5.0], 1.0),
        ([-1.0, 4.0, 4.0, 2.0], 0.5),
    ],
)
def test_soft_argmax_gradient_matches_the_formula(x, temperature):
    x = torch.tensor(x, dtype=torch.float64)
    got = soft_argmax_gradient(x, temperature)
    assert got.shape == x.shape and got.dtype == torch.float64
    torch.testing.assert_close(got, analytic_soft_argmax_gradient(x, temperature), rtol=1e-10, atol=1e-14)
    assert x.grad is None and not x.requires_grad  # the input is left alone


def test_soft_argmax_gradient_vanishes_as_temperature_falls():
    x = torch.tensor([1.0, 3.0, 2.5, 0.0, 2.0], dtype=torch.float64)
    norms = [soft_argmax_gradient(x, t).norm().item() for t in [0.1, 0.03, 0.01]]
    assert norms[0] > norms[1] > norms[2] > 0
    assert soft_argmax_gradient(x.float(), 0.003).norm().item() == 0.0  # float32 underflows


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(x=[1.0, 2.0], temperature=1.0), TypeError, "x must be a torch.Tensor"),
        (dict(x=torch.tensor([1, 2]), temperature=1.0), ValueError, "x must be a floating-point"),
        (dict(x=torch.tensor(1.0), temperature=1.0), ValueError, "x must have at least 1 dimensions"),
        (dict(x=torch.ones(2, 3), temperature=1.0), ValueError, r"x must have shape \(n,\), got \(2, 3\)"),
        (dict(x=torch.ones(3), temperature=0.0), ValueError, "temperature must be a finite number > 0, got 0.0"),
        (dict(x=torch.ones(3), temperature="1"), TypeError, "temperature must be a positive number"),
    ],
)
def test_soft_argmax_gradient_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        soft_argmax_gradient(**kwargs)


def independent_word_recovery(d, seed, vocab_size, max_len, n_tokens):
    gen = torch.Generator().manual_seed(seed)
    emb = torch.randn(vocab_size, d, generator=gen, dtype=torch.float64)
    pe = sinusoidal_encoding(max_len, d, dtype=torch.float64)
    words = torch.randint(0, vocab_size, (n_tokens,), generator=gen)
    pos = torch.randint(0, max_len, (n_tokens,), generator=gen)
    hits_added = hits_concat = 0
    for w, t in zip(words.tolist(), pos.tolist()):
        x = emb[w] + pe[t]
        hits_added += int(max(range(vocab_size), key=lambda v: float(x @ emb[v])) == w)
        x_cat, e_cat = torch.cat([emb[w], pe[t]]), torch.cat([emb, torch.zeros_like(emb)], dim=1)
        hits_concat += int(int((e_cat @ x_cat).argmax()) == w)
    return hits_added / n_tokens, hits_concat / n_tokens


@pytest.mark.parametrize("d, seed", [(2, 0), (4, 1), (8, 2), (64, 3)])
def test_word_recovery_matches_a_loop_and_concatenation(d, seed):
    got = word_recovery(d, seed, vocab_size=50, max_len=16, n_tokens=60)
    assert got == pytest.approx(independent_word_recovery(d, seed, 50, 16, 60), abs=1e-12)


def test_word_recovery_is_perfect_in_high_dimension_and_poor_in_low():
    assert word_recovery(256, 0, vocab_size=200, n_tokens=300) == (1.0, 1.0)
    added, bare = word_recovery(4, 0, vocab_size=200, n_tokens=300)
    assert added < bare < 0.5


@pytest.mark.parametrize("max_len, d_model, base", [(2, 2, 10000.0), (10, 8, 100.0), (100, 64, 10000.0)])
def test_pe_variance_share(max_len, d_model, base):
    share = pe_variance_share(max_len, d_model, base)
    pe = sinusoidal_encoding(max_len, d_model, base, dtype=torch.float64)
    var = [((pe[:, c] - pe[:, c].mean()) ** 2).mean().item() for c in range(d_model)]
    expected = [sum(var[: c + 1]) / sum(var) for c in range(d_model)]
    torch.testing.assert_close(share, torch.tensor(expected, dtype=torch.float64), rtol=0, atol=1e-12)
    assert share[-1].item() == pytest.approx(1.0) and torch.all(share[1:] >= share[:-1])


def test_pe_variance_share_spreads_out_with_length():
    short, long = pe_variance_share(100, 512), pe_variance_share(10000, 512)
    assert short[255] > 0.98 and long[255] < 0.6


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: random_pairs(0, 4, 0), ValueError, "n must be a positive int, got 0"),
        (lambda: random_pairs(4, 2.0, 0), TypeError, "d must be an int, got float"),
        (lambda: random_pairs(4, 4, -1), ValueError, r"seed must be an int in \[0, 2\*\*63"),
        (lambda: random_pairs(4, 4, "0"), TypeError, "seed must be an int, got str"),
        (lambda: random_scores(3, 0, 4, 0), ValueError, "n_keys must be a positive int"),
        (lambda: random_scores(3, 2, None, 0), TypeError, "d_k must be an int, got NoneType"),
        (lambda: random_scores(0, 2, 4, 0), ValueError, "n_queries must be a positive int"),
        (lambda: word_recovery(5, 0), ValueError, "d must be even"),
        (lambda: word_recovery(4, 0, vocab_size=0), ValueError, "vocab_size must be a positive int"),
        (lambda: word_recovery(4, 0, max_len=1.5), TypeError, "max_len must be an int"),
        (lambda: word_recovery(4, 0, n_tokens=-3), ValueError, "n_tokens must be a positive int"),
        (lambda: word_recovery(4, True), TypeError, "seed must be an int, got bool"),
        (
            lambda: pe_variance_share(1, 8),
            ValueError,
            r"max_len must be an int >= 2 \(one position has no variance\), got 1",
        ),
        (lambda: pe_variance_share(10, 7), ValueError, "d_model must be even"),
        (lambda: pe_variance_share(10, 8, base=0), ValueError, "base must be a finite number >= 1"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
