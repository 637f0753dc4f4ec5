"""Exercises of lesson 03 (self-attention): one query's weights, bare self-attention, permutation matrices."""

import math

import torch

from utils.exercises import compare_arrays, exercise


def _cases(seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=gen, dtype=torch.float64) for shape in ((4, 8), (6, 3), (1, 5))]


def _attention_weights(q, K):
    return torch.softmax(K @ q / math.sqrt(q.shape[-1]), dim=-1)  # (n,)


@exercise(
    hint="""
    One score per key: q·k_i divided by sqrt(d_k), with d_k = q.shape[-1]; K @ q gives all n dot products.
    Then torch.softmax(scores, dim=-1) turns the n scores into weights that sum to 1.
    """,
    reference=_attention_weights,
    wrong=[lambda q, K: torch.softmax(K @ q, dim=-1),  # forgot 1/sqrt(d_k)
           lambda q, K: torch.softmax(K @ q / q.shape[-1], dim=-1),  # divided by d_k
           lambda q, K: K @ q / math.sqrt(q.shape[-1])],  # no softmax
)
def attention_weights(answer):
    """answer(q (d_k,), K (n, d_k)) -> weights (n,) = softmax(q K^T / sqrt(d_k))."""
    gen = torch.Generator().manual_seed(1)
    for n, d_k in ((4, 8), (7, 3), (1, 16)):
        q = torch.randn(d_k, generator=gen, dtype=torch.float64)  # (d_k,)
        K = torch.randn(n, d_k, generator=gen, dtype=torch.float64)  # (n, d_k)
        got = answer(q, K)
        problem = compare_arrays(got, _attention_weights(q, K), f"weights for n={n}, d_k={d_k}")
        if problem:
            return problem
    return None


def _self_attention(X):
    A = torch.softmax(X @ X.T / math.sqrt(X.shape[-1]), dim=-1)  # (seq, seq)
    return A @ X  # (seq, d_model)


@exercise(
    hint="""
    Q = K = V = X. Scores X @ X.T have shape (seq, seq); divide by sqrt(d_model) = sqrt(X.shape[-1]).
    Softmax each ROW (dim=-1: one query's weights over all keys), then multiply by X.
    """,
    reference=_self_attention,
    wrong=[lambda X: torch.softmax(X @ X.T, dim=-1) @ X,  # unscaled (the reading notes' version)
           lambda X: torch.softmax(X @ X.T / math.sqrt(X.shape[-1]), dim=0) @ X,  # softmax over queries
           lambda X: X],
)
def self_attention(answer):
    """answer(X (seq, d_model)) -> softmax(X X^T / sqrt(d_model)) X, shape (seq, d_model)."""
    for X in _cases():
        problem = compare_arrays(answer(X.clone()), _self_attention(X), f"output for X of shape {tuple(X.shape)}")
        if problem:
            return problem
    return None


def _permutation_matrix(perm):
    return torch.eye(len(perm), dtype=torch.float64)[list(perm)]  # (n, n) row i is e_{perm[i]}


@exercise(
    hint="""
    Row i of P @ X is (row i of P) @ X. For it to be X[perm[i]], row i of P must be the one-hot vector
    with a 1 in column perm[i]: take the rows of the identity matrix in the order perm.
    """,
    reference=_permutation_matrix,
    wrong=[lambda perm: torch.eye(len(perm), dtype=torch.float64)[list(perm)].T,  # the inverse permutation
           lambda perm: torch.eye(len(perm), dtype=torch.float64)],
)
def permutation_matrix(answer):
    """answer(perm) -> P with P @ X == X[perm]."""
    gen = torch.Generator().manual_seed(2)
    for perm in ([1, 2, 0], [0, 1, 2, 3], [3, 0, 4, 1, 2], [1, 0]):
        X = torch.randn(len(perm), 3, generator=gen, dtype=torch.float64)  # (n, 3)
        P = torch.as_tensor(answer(list(perm)), dtype=torch.float64)
        if P.shape != (len(perm), len(perm)):
            return f"for perm={perm}: P has shape {tuple(P.shape)}, expected {(len(perm), len(perm))}"
        problem = compare_arrays(P @ X, X[perm], f"P @ X for perm={perm}")
        if problem:
            return problem
    return None
