"""Exercises of lesson 04 (masking): the causal mask, the padding mask, a NaN-free masked softmax."""

import torch

from utils.exercises import compare_arrays, exercise


def _causal_mask(n):
    return torch.ones(n, n, dtype=torch.bool).tril()  # (n, n) True where j <= i


def _as_bool(got, what):
    got = torch.as_tensor(got)
    if got.dtype != torch.bool:
        return None, f"{what} has dtype {got.dtype}, expected torch.bool (True = may attend)"
    return got, None


@exercise(
    hint="""
    Query i may attend to key j when j <= i: itself and everything before it. That is the lower
    triangle of an all-True matrix, diagonal included: torch.ones(n, n, dtype=torch.bool).tril().
    (The COMP7607 slides' j < i would drop the diagonal and leave row 0 empty.)
    """,
    reference=_causal_mask,
    wrong=[lambda n: torch.ones(n, n, dtype=torch.bool).tril(-1),  # the COMP7607 slides: j < i
           lambda n: torch.ones(n, n, dtype=torch.bool).triu(),  # the future instead of the past
           lambda n: torch.ones(n, n).tril()],  # float, not bool
)
def causal_mask(answer):
    """answer(n) -> bool (n, n), True where j <= i."""
    for n in (1, 2, 5):
        got, problem = _as_bool(answer(n), f"causal mask for n={n}")
        if problem:
            return problem
        problem = compare_arrays(got.int(), _causal_mask(n).int(), f"causal mask for n={n} (1 = True)")
        if problem:
            return problem
    return None


def _padding_mask(tokens, pad_id):
    return (tokens != pad_id).unsqueeze(-2)  # (batch, 1, T)


@exercise(
    hint="""
    tokens != pad_id is True on real tokens, shape (batch, T). Insert a query axis of size 1 before the
    key axis, .unsqueeze(-2) or [:, None, :], so the mask broadcasts over the rows of (batch, T_q, T_k).
    """,
    reference=_padding_mask,
    wrong=[lambda tokens, pad_id: tokens != pad_id,  # (batch, T): broadcasts the wrong way
           lambda tokens, pad_id: (tokens == pad_id).unsqueeze(-2),  # True on pads
           lambda tokens, pad_id: (tokens != pad_id).unsqueeze(-1)],  # (batch, T, 1): masks queries
)
def padding_mask(answer):
    """answer(tokens (batch, T), pad_id) -> bool (batch, 1, T), True on real tokens."""
    cases = [(torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0]]), 0),
             (torch.tensor([[3, 1, 1], [3, 3, 3], [1, 1, 1]]), 1)]
    for tokens, pad_id in cases:
        got, problem = _as_bool(answer(tokens.clone(), pad_id), f"mask for pad_id={pad_id}")
        if problem:
            return problem
        expected = _padding_mask(tokens, pad_id)
        if got.shape != expected.shape:
            return (f"for tokens of shape {tuple(tokens.shape)} the mask has shape {tuple(got.shape)}, "
                    f"expected {tuple(expected.shape)} (batch, 1, T) so that it broadcasts over queries")
        problem = compare_arrays(got[:, 0].int(), expected[:, 0].int(), f"mask for pad_id={pad_id} (1 = real)")
        if problem:
            return problem
    return None


def _masked_softmax(scores, mask):
    has_key = mask.any(dim=-1, keepdim=True)  # (..., 1)
    weights = torch.softmax(scores.masked_fill(~mask & has_key, float("-inf")), dim=-1)
    return weights.masked_fill(~has_key, 0.0)  # (..., T_k)


@exercise(
    hint="""
    Fill the masked scores with float("-inf") (scores.masked_fill(~mask, ...)) and take torch.softmax on
    dim=-1. A row with no allowed key is all -inf and gives NaN: find those rows with mask.any(-1),
    keep their scores finite before the softmax, and set their weights to 0 afterwards.
    """,
    reference=_masked_softmax,
    wrong=[lambda s, m: torch.softmax(s.masked_fill(~m, float("-inf")), dim=-1),  # NaN on an empty row
           lambda s, m: torch.softmax(s, dim=-1) * m,  # zeroed but not renormalised
           lambda s, m: torch.softmax(s.masked_fill(~m, 0.0), dim=-1)],  # 0 is not -inf
)
def masked_softmax(answer):
    """answer(scores (..., T_k), mask (..., T_k)) -> weights, 0 where masked, rows of an empty mask all 0."""
    gen = torch.Generator().manual_seed(4)
    scores = torch.randn(2, 3, 5, generator=gen, dtype=torch.float64)  # (batch, T_q, T_k)
    mask = torch.rand(2, 3, 5, generator=gen) > 0.4  # (batch, T_q, T_k)
    mask[0, 0] = True  # nothing masked
    mask[1, 2] = False  # nothing allowed
    got = torch.as_tensor(answer(scores.clone(), mask.clone()), dtype=torch.float64)
    if got.shape != scores.shape:
        return f"weights have shape {tuple(got.shape)}, expected {tuple(scores.shape)}"
    if torch.isnan(got).any():
        idx = tuple(int(i) for i in torch.isnan(got).nonzero()[0])
        return f"NaN at index {idx}: a row whose keys are all masked must give zeros, not 0/0"
    return compare_arrays(got, _masked_softmax(scores, mask), "weights")
