"""Exercises of lesson 04 (masking): a prediction per section (a removed key, changed pads, the slides'
mask in backprop, what a changed token reaches, the slides' mask without the shift, -1e9 in float16),
a NaN-free masked softmax, and three masks the lesson did not build (sliding window, prefix LM, packed
sentences). Masks are bool, True = may attend."""

import random

import torch

from utils.course.exercises import (
    compare_arrays,
    exercise,
    fresh_seed,
    mistake,
    prediction_close_to,
    prediction_number,
)


def _whole_number(answer, what, right, says, otherwise):
    """None if `answer` is the whole number `right`; else why not (`says` maps known wrong answers to why)."""
    got = prediction_number(answer)
    if got != int(got):
        return f"write {what} as a whole number; got {answer!r}"
    got = int(got)
    if got == right:
        return None
    return f"not {got}: " + says.get(got, otherwise)


def _one_of(answer, options, right, says):
    """None if the word `answer` is `right`; else why not. `options` are the words a learner may write."""
    if not isinstance(answer, str) or answer.strip().lower() not in options:
        return f"write one of {', '.join(repr(o) for o in options)}; got {answer!r}"
    got = answer.strip().lower()
    return None if got == right else f"not {got!r}: " + says[got]


# ---------------------------------------------------------------------------------------------------
# Prediction (section 1): four equal scores, one removed with -inf.


@exercise(
    hint="""
    Four equal scores share the weight equally. A score of -inf gives e^(-inf) = 0: that key is gone,
    and the softmax renormalises over the keys that are left.
    """,
    reference=1 / 3,
    kind="prediction",
    explain="""
    With key 2 at -inf, e^(-inf) = 0 and the softmax renormalises over the three keys left, which still
    have equal scores: each gets 1/3. A score of 0 would have kept key 2 (e^0 = 1) and left 1/4 each.
    """,
    wrong=[
        mistake("forget that the rest renormalise", 0.25, says="renormalise"),
        mistake("think -inf removes everything", 0.0, says="still in the row"),
        mistake("count two keys left", 0.5, says="three keys are left"),
    ],
)
def predict_weight_after_removal(answer):
    """answer: the weight of key 0 when four keys all score 0 and key 2's score is set to -inf."""
    says = {
        0.25: "that is the weight before key 2 is removed (or with a score of 0: e^0 = 1); the rest renormalise",
        0.0: "key 0 keeps its score of 0; it is still in the row, only key 2 is gone",
        0.5: "three keys are left (0, 1 and 3), not two",
    }
    return prediction_close_to(
        answer, 1 / 3, 0.01, says, "after removing key 2, how many keys with equal scores share the weight?"
    )


# ---------------------------------------------------------------------------------------------------
# Prediction (section 2): with the padding mask, which outputs change when the pads change?


@exercise(
    hint="""
    The padding mask removes pads as keys: no query attends to them. Which positions are queries whose
    own vectors change when the pads change? Count them in the printed batch.
    """,
    reference=7,
    kind="prediction",
    explain="""
    The mask removes the pads as keys, so the 11 real outputs cannot change. But the 7 pad positions are
    queries too: a new pad vector is a new query, which weighs the real keys differently, so their 7
    outputs change (they are meaningless, and a loss ignores them).
    """,
    wrong=[
        mistake("think the mask hides the pads completely", 0, says="queries too"),
        mistake("count the real positions", 11, says="cannot change"),
        mistake("forget the mask", 18, says="without the mask"),
    ],
)
def predict_outputs_changed_by_pads(answer):
    """answer: how many of the 18 outputs (3 sentences x 6 positions) change when every pad vector changes."""
    says = {
        0: "the mask hides the pads as keys, but every pad position is one of the queries too, with its own vector",
        11: "those are the real positions, the 11 outputs that cannot change: no query attends to a pad",
        18: "18 is what happens without the mask; with it, the 11 real outputs cannot see the pads",
    }
    return _whole_number(answer, "the number of outputs", 7, says, "count the pad positions: the queries that are pads")


# ---------------------------------------------------------------------------------------------------
# Prediction (section 3): how much of W_v's gradient does the slides' NaN row spoil?


@exercise(
    hint="""
    Row 0 of the slides' weights is NaN. The loss leaves out position 0's output, so its gradient is 0.
    But the gradient of W_v is a sum over every weight times a gradient: what is 0 times NaN?
    """,
    reference=64,
    kind="prediction",
    explain="""
    All 64. Backprop computes the gradient of the values as weights^T @ (gradient of the output); row 0
    of the weights is NaN and its output gradient is 0, and 0 · NaN = NaN, so every value row's gradient
    is NaN, and with it every entry of W_v's gradient.
    """,
    wrong=[
        mistake("think leaving position 0 out of the loss protects the gradient", 0, says="0 · nan"),
        mistake("count one row or column of W_v", 8, says="every value row"),
        mistake("count one entry", 1, says="every entry"),
    ],
)
def predict_nan_gradient_entries(answer):
    """answer: how many of the 64 entries of W_v's gradient are NaN, with a loss over positions 1-3 only."""
    says = {
        0: "position 0 is left out of the loss, so its gradient is 0, but 0 · NaN = NaN in backprop",
        8: "row 0's NaN weights meet every value row in backprop, so every value row's gradient is NaN",
        1: "the NaN spreads to every entry of the gradient, not one",
    }
    return _whole_number(
        answer, "the number of entries", 64, says, "W_v is 8 × 8; how many of its entries does row 0 reach?"
    )


def _mask_problem(got, expected, what, why):
    """None if `got` is the bool mask `expected`; else what is wrong, `why(i, j, value)` saying why
    the first wrong entry (query i, key j) must not be `value`."""
    got = torch.as_tensor(got)
    if got.dtype != torch.bool:
        return f"{what} has dtype {got.dtype}, expected torch.bool (True = may attend)"
    if got.shape != expected.shape:
        return f"{what} has shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    wrong = (got != expected).nonzero()
    if len(wrong) == 0:
        return None
    i, j = (int(v) for v in wrong[0])
    value = bool(got[i, j])
    return f"{what}: query {i}, key {j} is {value}, expected {not value}: " + why(i, j, value)


# ---------------------------------------------------------------------------------------------------
# Prediction: how many outputs change when one token changes?

_CHANGED_AT, _T = 2, 6
_SAYS = {
    0: (
        "the mask hides a token from the positions before it, not from itself: output 2 reads its own "
        "token, and outputs 3, 4 and 5 read it too"
    ),
    1: "not only output 2: the later positions 3, 4 and 5 attend to position 2 too, so their outputs change",
    2: "outputs 0 and 1 are the ones that cannot change: they come before position 2 and the mask hides it",
    3: (
        "positions 3, 4 and 5 change, and so does position 2 itself: the causal mask keeps the diagonal, "
        "so output 2 reads token 2"
    ),
    6: "6 is what happens without the mask; with it, outputs 0 and 1 cannot see position 2",
}


@exercise(
    hint="""
    Output t of a causally masked layer reads the tokens 0, 1, ..., t. Which outputs have token 2
    among the tokens they read? Through a stack of layers the same holds: position t only ever
    mixes positions <= t.
    """,
    reference=4,
    kind="prediction",
    explain="""
    With the causal mask, output t depends on tokens 0 to t only. Changing token 2 changes the outputs
    that can read it, 2, 3, 4 and 5 (four of six), and leaves outputs 0 and 1 as they were.
    """,
    wrong=[
        mistake("think the mask hides the change from everyone", 0, says="reads its own token"),
        mistake("count only the changed position itself", 1, says="later positions"),
        mistake("think the change reaches the past", 2, says="cannot change"),
        mistake("forget that position 2 sees itself", 3, says="keeps the diagonal"),
        mistake("forget the mask", 6, says="without the mask"),
    ],
)
def predict_changed_outputs(answer):
    """answer: how many of 6 outputs change, under the causal mask, when token 2 changes."""
    got = answer
    if isinstance(got, bool) or not isinstance(got, (int, float)) or got != int(got):
        return f"write the number of outputs that change, a whole number from 0 to {_T}; got {got!r}"
    got = int(got)
    if got == 4:
        return None
    if got in _SAYS:
        return f"not {got}: " + _SAYS[got]
    return (
        f"not {got}: there are {_T} outputs; count those whose row of the causal mask lets them see key {_CHANGED_AT}"
    )


# ---------------------------------------------------------------------------------------------------
# Prediction (section 5): the slides' mask j < i without the shift.

_LEAK_OPTIONS = ("chance", "between", "copies")


@exercise(
    hint="""
    With j < i, position i cannot read token y_i as a key or a value. But its query is built from x_i,
    and without the shift x_i is y_i itself. Can the query pick out something among the earlier tokens
    that says which token it is?
    """,
    reference="between",
    kind="prediction",
    explain="""
    Between chance and copying. The mask hides y_i as a key and a value, but not as the query: without the
    shift, position i's query is built from y_i, and it chooses which earlier tokens to weigh. So the output
    carries information about y_i, and the model beats chance, though it cannot simply copy it.
    """,
    wrong=[
        mistake("think hiding the diagonal removes every path to y_i", "chance", says="query"),
        mistake("think the model still copies its answer", "copies", says="cannot read y_i"),
        mistake("write a number", 0.125, says="write one of"),
    ],
)
def predict_strict_mask_unshifted(answer):
    """answer: "chance", "between" or "copies": the held-out accuracy of the j < i mask on an unshifted input."""
    says = {
        "chance": (
            "the mask hides y_i as a key and a value, but position i's query is built from y_i itself, and the "
            "query chooses how to weigh the earlier tokens: the output carries information about y_i"
        ),
        "copies": (
            "to copy, position i would need to read y_i as a value, and j < i hides it; only its query "
            "knows y_i, so it cannot read y_i directly, it can only weigh the earlier tokens"
        ),
    }
    return _one_of(answer, _LEAK_OPTIONS, "between", says)


# ---------------------------------------------------------------------------------------------------
# Prediction (section 6): a fully masked row, masked with -1e9 in float16.

_FP16_OPTIONS = ("uniform", "nan", "zeros")


@exercise(
    hint="""
    float16's largest finite number is 65504. What does -1e9 become when it is stored in float16?
    And what does a softmax do with a row that holds that value everywhere?
    """,
    reference="nan",
    kind="prediction",
    explain="""
    NaN. float16 cannot hold -1e9: the conversion gives -inf (its largest finite magnitude is 65504). The
    float16 mask is then a mask of -inf, and a row of -inf gives 0/0 = NaN, as in section 3. In float32 the
    same -1e9 stays finite, and the row is uniform (1/6 on each key).
    """,
    wrong=[
        mistake("think -1e9 stays finite in float16", "uniform", says="65504"),
        mistake("expect the zeros of utils", "zeros", says="plain softmax"),
        mistake("write a number", 1 / 6, says="write one of"),
    ],
)
def predict_float16_masked_row(answer):
    """answer: "uniform", "nan" or "zeros": a float16 softmax row whose every score has a -1e9 mask added."""
    says = {
        "uniform": (
            "that is float32's answer; float16's largest finite number is 65504, so -1e9 becomes -inf "
            "and the row is the 0/0 of an all -inf row"
        ),
        "zeros": (
            "zeros come from a softmax that treats an empty row specially (utils does); "
            "a plain softmax of a row of -inf is 0/0"
        ),
    }
    return _one_of(answer, _FP16_OPTIONS, "nan", says)


# ---------------------------------------------------------------------------------------------------
# Practice: a masked softmax without NaN.


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
    wrong=[
        mistake(
            "fill with -inf and stop there",
            lambda s, m: torch.softmax(s.masked_fill(~m, float("-inf")), dim=-1),
            says="all masked",
        ),
        mistake(
            "zero the masked weights after the softmax", lambda s, m: torch.softmax(s, dim=-1) * m, says="renormalise"
        ),
        mistake(
            "fill the masked scores with 0", lambda s, m: torch.softmax(s.masked_fill(~m, 0.0), dim=-1), says="e^0 = 1"
        ),
        mistake(
            "fill the masked scores with -1e9 instead of -inf",
            lambda s, m: torch.softmax(s.masked_fill(~m, -1e9), dim=-1),
            says="equally likely",
        ),
        mistake(
            "add -1e9 to the masked scores instead of filling them",
            lambda s, m: torch.softmax(s + (~m).to(s.dtype) * -1e9, dim=-1),
            says="softmax of the unmasked scores",
        ),
    ],
)
def masked_softmax(answer):
    """answer(scores (..., T_k), mask (..., T_k)) -> weights, 0 where masked, rows of an empty mask all 0."""
    gen = torch.Generator().manual_seed(fresh_seed())  # the scores: drawn anew on every check
    scores = torch.randn(2, 3, 5, generator=gen, dtype=torch.float64)  # (batch, T_q, T_k)
    mask = torch.rand(2, 3, 5, generator=torch.Generator().manual_seed(4)) > 0.4  # (batch, T_q, T_k) fixed
    mask[0, 0] = True  # nothing masked
    mask[1, 2] = False  # nothing allowed
    got = torch.as_tensor(answer(scores.clone(), mask.clone())).to(torch.float64)
    if got.shape != scores.shape:
        return f"weights have shape {tuple(got.shape)}, expected {tuple(scores.shape)}"
    if torch.isnan(got).any():
        idx = tuple(int(i) for i in torch.isnan(got).nonzero()[0])
        return (
            f"NaN at index {idx}: that row's keys are all masked, and softmax of all -inf is 0/0; "
            "a row whose keys are all masked must give zeros"
        )
    leak = got.masked_select(~mask)
    if (leak != 0).any():
        idx = tuple(int(i) for i in ((got != 0) & ~mask).nonzero()[0])
        if not mask[idx[:-1]].any():
            r = idx[:-1]
            row = [round(float(v), 4) for v in got[r]]
            if torch.allclose(got[r], torch.full_like(got[r], 1 / got.shape[-1])):
                why = (
                    "every score there became the same fill (such as -1e9), so every key is equally likely (1/T_k each)"
                )
            elif torch.allclose(got[r], torch.softmax(scores[r], dim=-1)):
                why = "these are the softmax of the unmasked scores: -1e9 added to every score is a shift it ignores"
            else:
                why = "a large finite fill does not empty the row"
            return (
                f"row {r} has no allowed key, yet its weights are {row}: {why}; set the weights of a row whose "
                "keys are all masked to 0"
            )
        return (
            f"a masked key gets weight {got[idx]:.4f} at index {idx}: a score of 0 does not remove a key "
            "(e^0 = 1); fill masked scores with -inf"
        )
    sums = got.sum(-1)  # (batch, T_q)
    has_key = mask.any(-1)  # (batch, T_q)
    bad = (has_key & ((sums - 1).abs() > 1e-6)).nonzero()
    if len(bad):
        b, i = (int(v) for v in bad[0])
        return (
            f"row {(b, i)} sums to {sums[b, i]:.4f}, not 1: after removing the masked keys the others "
            "must renormalise (take the softmax after masking the scores, not before)"
        )
    return compare_arrays(got, _masked_softmax(scores, mask), "weights")


# ---------------------------------------------------------------------------------------------------
# Transfer: a sliding-window causal mask.


def _sliding_window(n, w):
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]  # (n, 1), (1, n)
    return (j <= i) & (i - j < w)  # (n, n) itself and the w - 1 tokens before it


def _window_w_plus_1(n, w):
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    return (j <= i) & (i - j <= w)


def _window_both_sides(n, w):
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    return (i - j).abs() < w


def _window_without_self(n, w):
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    return (j < i) & (i - j <= w)


@exercise(
    hint="""
    Take the index grids i = torch.arange(n)[:, None] (queries) and j = torch.arange(n)[None, :] (keys).
    Query i may attend to key j when j <= i (causal) and i - j < w (at most w - 1 steps back); the AND
    of the two bool tensors is the mask. Check one row by hand: with w = 3, query 5 sees keys 3, 4, 5.
    """,
    reference=_sliding_window,
    kind="transfer",
    wrong=[
        mistake("let the window reach w tokens back (w + 1 keys)", _window_w_plus_1, says="tokens before it"),
        mistake("forget that the window is causal (|i - j| < w)", _window_both_sides, says="future"),
        mistake("leave the query itself out of its window", _window_without_self, says="sees itself"),
        mistake("return a float mask", lambda n, w: _sliding_window(n, w).float(), says="torch.bool"),
    ],
)
def sliding_window_mask(answer):
    """answer(n, w) -> bool (n, n): query i may attend to itself and the w - 1 tokens before it."""
    rng = random.Random(fresh_seed())  # two cases drawn anew on every check, after the fixed ones
    for n, w in [(6, 3), (5, 1), (4, 4), (3, 5), *((rng.randint(1, 12), rng.randint(1, 14)) for _ in range(2))]:

        def why(i, j, value):
            if value and j > i:
                return f"key {j} comes after query {i}: a sliding window is still causal, it never sees the future"
            if value:
                return (
                    f"key {j} is {i - j} steps back, but a window of width {w} holds only the query itself "
                    f"and the {w - 1} tokens before it"
                )
            if i == j:
                return "every query sees itself: the window holds the query itself and the tokens before it"
            return f"key {j} is {i - j} steps back, inside the window of width {w}"

        problem = _mask_problem(answer(n, w), _sliding_window(n, w), f"the mask for n={n}, w={w}", why)
        if problem:
            return problem
    return None


# ---------------------------------------------------------------------------------------------------
# Transfer: a prefix-LM mask.


def _prefix_lm(n, prefix_len):
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]  # (n, 1), (1, n)
    return (j <= i) | (j < prefix_len)  # (n, n) causal, plus the whole prefix for everyone


def _prefix_sees_everything(n, prefix_len):
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    return (j <= i) | (i < prefix_len)


def _prefix_cut_off(n, prefix_len):
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    return ((i < prefix_len) & (j < prefix_len)) | ((i >= prefix_len) & (j >= prefix_len) & (j <= i))


@exercise(
    hint="""
    With i = torch.arange(n)[:, None] and j = torch.arange(n)[None, :]: query i may attend to key j
    when j <= i (the causal part) OR j < prefix_len (every query sees the whole prefix). That is all:
    a prefix query then sees the prefix but no key after it.
    """,
    reference=_prefix_lm,
    kind="transfer",
    wrong=[
        mistake(
            "use the plain causal mask",
            lambda n, p: torch.ones(n, n, dtype=torch.bool).tril(),
            says="prefix is bidirectional",
        ),
        mistake("let the prefix queries see the whole row", _prefix_sees_everything, says="after the prefix"),
        mistake(
            "make the prefix one token too long (j <= prefix_len)",
            lambda n, p: _prefix_lm(n, p + 1),
            says="one token too long",
        ),
        mistake("cut the later tokens off from the prefix", _prefix_cut_off, says="sees its past"),
    ],
)
def prefix_lm_mask(answer):
    """answer(n, prefix_len) -> bool (n, n): bidirectional over positions < prefix_len, causal after."""
    rng = random.Random(fresh_seed())  # two cases drawn anew on every check, after the fixed ones
    drawn = [(n, rng.randint(0, n)) for n in (rng.randint(1, 12), rng.randint(1, 12))]
    for n, p in [(6, 3), (5, 1), (4, 4), (5, 0), *drawn]:
        got = answer(n, p)
        prefix = f"the prefix (positions 0 to {p - 1})" if p else "the prefix (empty here)"

        def why(i, j, value):
            if value and j >= p:
                return (
                    f"key {j} comes after query {i} and after {prefix}: "
                    "after the prefix the mask is causal, and no query sees the future beyond the prefix"
                )
            if not value and j <= i:
                return f"key {j} is at or before query {i}: every query sees its past and itself"
            return (
                f"key {j} is in {prefix}, which every query sees in full, "
                "even prefix tokens after it: the prefix is bidirectional"
            )

        what = f"the mask for n={n}, prefix_len={p}"
        for off in (1, -1):
            got_t = torch.as_tensor(got)
            if (
                0 <= p + off <= n
                and got_t.dtype == torch.bool
                and torch.equal(got_t, _prefix_lm(n, p + off))
                and not torch.equal(_prefix_lm(n, p + off), _prefix_lm(n, p))
            ):
                return (
                    f"{what}: your prefix is one token too {'long' if off > 0 else 'short'} "
                    f"({p + off} tokens); {prefix} has prefix_len = {p} tokens"
                )
        problem = _mask_problem(got, _prefix_lm(n, p), what, why)
        if problem:
            return problem
    return None


# ---------------------------------------------------------------------------------------------------
# Transfer: sentences packed into one row.


def _packed(lengths):
    sentence = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))  # (T,) sentence index
    position = torch.arange(len(sentence))  # (T,)
    same = sentence[:, None] == sentence[None, :]  # (T, T)
    return same & (position[None, :] <= position[:, None])  # (T, T) block-diagonal causal


def _packed_blocks_only(lengths):
    sentence = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))
    return sentence[:, None] == sentence[None, :]


@exercise(
    hint="""
    Give every position the index of its sentence: torch.repeat_interleave(torch.arange(len(lengths)),
    torch.tensor(lengths)), e.g. [0, 0, 0, 1, 1] for lengths [3, 2]. Query i may attend to key j when
    both are in the same sentence (compare the indices with broadcasting) AND j <= i.
    """,
    reference=_packed,
    kind="transfer",
    wrong=[
        mistake(
            "use one causal mask over the whole row",
            lambda lengths: torch.ones(sum(lengths), sum(lengths), dtype=torch.bool).tril(),
            says="must not see each other",
        ),
        mistake("build the blocks but forget the causal part", _packed_blocks_only, says="causal part"),
        mistake("return a float mask", lambda lengths: _packed(lengths).float(), says="torch.bool"),
    ],
)
def packed_causal_mask(answer):
    """answer(lengths) -> bool (T, T), T = sum(lengths): causal within each sentence, nothing across."""
    rng = random.Random(fresh_seed())  # two cases drawn anew on every check, after the fixed ones
    drawn = [[rng.randint(1, 6) for _ in range(rng.randint(1, 4))] for _ in range(2)]
    for lengths in [[5], [4, 3], [2, 5], [1, 1], [3, 1, 2], [2, 1, 3, 1], *drawn]:  # one to four sentences
        sentence = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths)).tolist()

        def why(i, j, value):
            si, sj = sentence[i], sentence[j]
            if value and si != sj:
                return (
                    f"query {i} is in sentence {si} but key {j} in sentence {sj}: packed sentences must "
                    "not see each other"
                )
            if value:
                return f"key {j} comes after query {i} in the same sentence: the causal part is missing"
            return f"key {j} is at or before query {i} in the same sentence ({si}), so query {i} may attend to it"

        problem = _mask_problem(answer(list(lengths)), _packed(lengths), f"the mask for lengths={lengths}", why)
        if problem:
            return problem
    return None
