"""utils.experiments.attention_patterns: the properties of attention matrices, projected attention, the adjective-noun task."""

import math

import pytest
import torch

from utils.attention import scaled_dot_product_attention
from utils.experiments.attention_map import token_embeddings
from utils.experiments.attention_patterns import (
    ADJECTIVES,
    FILLERS,
    NOUNS,
    PROPERTIES,
    VOCAB,
    adjective_noun_batch,
    adjective_noun_loss,
    attention_properties,
    projected_weights,
    random_projections,
    sentence_map,
    train_adjective_noun,
    weight_on,
)

SENTENCE = "YOUR CAT IS A LOVELY CAT"


@pytest.mark.parametrize("d_model, d_k, T", [(512, 64, 6), (16, 4, 3), (8, 8, 1), (32, 5, 9)])
def test_projected_weights_equal_scaled_dot_product_attention(d_model, d_k, T):
    W_q, W_k = random_projections(d_model, d_k, seed=d_k)
    X = torch.randn(2, T, d_model, generator=torch.Generator().manual_seed(T), dtype=torch.float64)
    _, expected = scaled_dot_product_attention(X @ W_q.double(), X @ W_k.double(), X)
    torch.testing.assert_close(projected_weights(X, W_q, W_k), expected)
    assert W_q.shape == W_k.shape == (d_model, d_k) and not torch.equal(W_q, W_k)


def test_random_projections_are_seeded_and_unit_variance():
    a, b = random_projections(512, 64, seed=3), random_projections(512, 64, seed=3)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(a[0], random_projections(512, 64, seed=4)[0])
    X = torch.randn(2000, 512, generator=torch.Generator().manual_seed(0))
    assert 0.9 < (X @ a[0]).std().item() < 1.1  # X W keeps unit-variance entries


def test_sentence_map_has_every_property_and_identical_cats():
    for seed in range(5):
        A = sentence_map(SENTENCE, *random_projections(seed=seed))
        assert A.shape == (6, 6) and A.dtype == torch.float64
        assert all(attention_properties(A, SENTENCE).values())
        X = token_embeddings(SENTENCE, 512)
        torch.testing.assert_close(A, projected_weights(X, *random_projections(seed=seed)))


def test_attention_properties_detect_each_broken_property():
    tokens = ["a", "b", "a"]
    good = torch.tensor([[0.4, 0.2, 0.4], [0.25, 0.5, 0.25], [0.4, 0.2, 0.4]])
    assert list(attention_properties(good, tokens)) == list(PROPERTIES)
    assert all(attention_properties(good, tokens).values())
    negative = torch.tensor([[0.6, -0.2, 0.6], [0.25, 0.5, 0.25], [0.6, -0.2, 0.6]])
    bad_sum = good * 1.1
    bad_rows = torch.tensor([[0.4, 0.2, 0.4], [0.25, 0.5, 0.25], [0.3, 0.4, 0.3]])
    bad_cols = torch.tensor([[0.5, 0.2, 0.3], [0.25, 0.5, 0.25], [0.5, 0.2, 0.3]])
    for A, broken in ((negative, 0), (bad_sum, 1), (bad_rows, 2), (bad_cols, 3)):
        result = list(attention_properties(A, tokens).values())
        assert result[broken] is False, (A, broken)
    assert all(attention_properties(bad_sum, tokens, atol=0.11).values())  # within a wide tolerance
    assert attention_properties(torch.eye(2), ["x", "y"])[PROPERTIES[2]]  # no repeated token: holds


def test_batch_has_one_noun_and_adjectives():
    ids, is_adj, noun = adjective_noun_batch(200, torch.Generator().manual_seed(0))
    assert ids.shape == is_adj.shape == (200, 6) and noun.shape == (200,)
    for row, adj, n in zip(ids.tolist(), is_adj.tolist(), noun.tolist()):
        words = [VOCAB[i] for i in row]
        nouns = [w for w in words if w in NOUNS]
        assert set(nouns) == {NOUNS[n]} and 1 <= len(nouns) <= 2
        assert [w in ADJECTIVES for w in words] == adj and 1 <= sum(adj) <= 2
        assert all(w in FILLERS for w in words if w not in NOUNS and w not in ADJECTIVES)
    assert (ids[:, 0] < len(NOUNS)).any() and (ids[:, 5] < len(NOUNS)).any()  # nouns at both ends


def test_loss_equals_a_per_sentence_computation():
    ids, is_adj, noun = adjective_noun_batch(5, torch.Generator().manual_seed(1))
    E = token_embeddings(list(VOCAB), 64)
    W_q, W_k = (W.double() for W in random_projections(64, 8, seed=0))
    terms = []
    for row, adj, n in zip(ids, is_adj, noun):
        X = E[row]  # (seq, 64)
        A = torch.softmax((X @ W_q) @ (X @ W_k).T / math.sqrt(8), dim=-1)
        for i in torch.nonzero(adj).flatten():
            logits = (A[i] @ X) @ E[: len(NOUNS)].T / math.sqrt(64)
            terms.append(-torch.log_softmax(logits, dim=-1)[n])
    torch.testing.assert_close(adjective_noun_loss(ids, is_adj, noun, W_q, W_k, E), torch.stack(terms).mean())


def test_training_makes_lovely_look_at_cat():
    W_q, W_k, losses = train_adjective_noun(seed=0, d_model=64, d_k=16, steps=60)
    assert len(losses) == 60 and losses[-1] < 0.5 * losses[0]
    A = sentence_map(SENTENCE, W_q, W_k, d_model=64)
    assert weight_on(A, SENTENCE, "LOVELY", "CAT")[0] > 0.9
    assert abs(A[4, 1] - A[4, 5]) < 1e-6  # no PE: both CATs get the same weight
    before = sentence_map(SENTENCE, *random_projections(64, 16, seed=0), d_model=64)
    assert weight_on(before, SENTENCE, "LOVELY", "CAT")[0] < 0.9


def test_training_is_reproducible_and_restores_threads():
    threads = torch.get_num_threads()
    a = train_adjective_noun(seed=1, d_model=16, d_k=4, steps=3)
    b = train_adjective_noun(seed=1, d_model=16, d_k=4, steps=3)
    assert torch.equal(a[0], b[0]) and a[2] == b[2]
    assert torch.get_num_threads() == threads


def test_weight_on_sums_the_keys_of_every_occurrence():
    A = torch.arange(36.0).reshape(6, 6)
    assert weight_on(A, SENTENCE, "LOVELY", "CAT") == [25.0 + 29.0]
    assert weight_on(A, SENTENCE, "CAT", ["YOUR", "IS"]) == [6.0 + 8.0, 30.0 + 32.0]


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: random_projections(0, 4), ValueError, "d_model"),
        (lambda: random_projections(8, 2.5), TypeError, "d_k"),
        (lambda: random_projections(8, 4, seed=-1), ValueError, "seed"),
        (lambda: projected_weights([[1.0]], torch.ones(1, 1), torch.ones(1, 1)), TypeError, "X"),
        (lambda: projected_weights(torch.ones(3, 4), torch.ones(5, 2), torch.ones(4, 2)), ValueError, "W_q"),
        (
            lambda: projected_weights(torch.ones(3, 4), torch.ones(4, 2), torch.ones(4, 3)),
            ValueError,
            r"W_k must have shape \(d_model=4, d_k of W_q=2\), got \(4, 3\)",
        ),
        (
            lambda: projected_weights(torch.ones(3, 4), torch.ones(4, 2), torch.ones(4, 2, dtype=torch.long)),
            ValueError,
            "W_k",
        ),
        (lambda: sentence_map(3, *random_projections(8, 2), d_model=8), TypeError, "tokens"),
        (lambda: adjective_noun_batch(0, torch.Generator()), ValueError, "batch_size"),
        (lambda: adjective_noun_batch(4, 0), TypeError, "generator"),
        (lambda: adjective_noun_batch(4, torch.Generator(), seq=3), ValueError, "seq"),
        (lambda: train_adjective_noun(steps=0), ValueError, "steps"),
        (lambda: train_adjective_noun(lr=-1.0), ValueError, "lr"),
        (lambda: attention_properties(torch.ones(2, 2), ["a", "b", "c"]), ValueError, "A must have shape"),
        (lambda: attention_properties(torch.ones(2, 2) / 2, ["a", "b"], atol=0), ValueError, "atol"),
        (lambda: attention_properties("A", ["a"]), TypeError, "A must be"),
        (lambda: weight_on(torch.ones(6, 6), SENTENCE, "DOG", "CAT"), ValueError, "query"),
        (lambda: weight_on(torch.ones(5, 5), SENTENCE, "CAT", "CAT"), ValueError, "A must have shape"),
    ],
)
def test_bad_input_names_the_argument(call, error, words):
    with pytest.raises(error, match=words):
        call()
