"""Exercises of lesson 03 (self-attention): predict what the slide deck's matrix breaks, one query's
weights, inputs whose diagonal is not the row maximum, a permutation-invariant classifier head; then a
prediction per numbered section (a doubled query, a cold look-up, a CAT's weight on itself, a reversed
sentence, random projections' diagonal); last a position bias that unbalances a three-word cycle."""

import math

import torch

from utils.course.exercises import (
    band_mistakes,
    compare_arrays,
    compare_with_mistakes,
    exercise,
    fresh_seed,
    mistake,
    prediction_in_band,
)

# ---------------------------------------------------------------------------------------------------
# Prediction: which of the four properties does the YOUR CAT deck's matrix break?

SENTENCE = "YOUR CAT IS A LOVELY CAT".split()
DECK = torch.tensor(
    [  # (seq, seq) the YOUR CAT slide deck's matrix, as printed
        [0.268, 0.119, 0.134, 0.148, 0.179, 0.152],
        [0.124, 0.278, 0.201, 0.128, 0.154, 0.115],
        [0.147, 0.132, 0.262, 0.097, 0.218, 0.145],
        [0.210, 0.128, 0.206, 0.212, 0.119, 0.125],
        [0.146, 0.158, 0.152, 0.143, 0.227, 0.174],
        [0.195, 0.114, 0.203, 0.103, 0.157, 0.229],
    ],
    dtype=torch.float64,
)
_BROKEN = {3, 4}
_HOLDS_WHY = {
    1: f"property 1 holds: no weight is negative (the smallest is {DECK.min():.3f})",
    2: (
        f"property 2 holds: the rows sum to {DECK.sum(-1).min():.3f} to {DECK.sum(-1).max():.3f}, which is 1 "
        "within the deck's rounding (six numbers rounded to three decimals can be off by 0.003)"
    ),
}
_BROKEN_WHY = {
    3: (
        f"property 3 is broken: the two CAT rows differ (the first CAT gives itself {DECK[1, 1]:.3f} and the "
        f"other CAT {DECK[1, 5]:.3f}; the second gives itself {DECK[5, 5]:.3f} and the other {DECK[5, 1]:.3f})"
    ),
    4: (
        f"property 4 is broken: the two CAT columns differ (YOUR gives the first CAT {DECK[0, 1]:.3f} "
        f"and the second {DECK[0, 5]:.3f})"
    ),
}


@exercise(
    hint="""
    Check each property on the printed numbers: any negative entry? Does each row add up to 1 once you
    allow for rounding to three decimals? Compare row 1 with row 5 (the two CATs), then column 1 with
    column 5. Without positional encoding the two CATs are the same vector.
    """,
    reference={3, 4},
    kind="prediction",
    explain="""
    The deck's matrix breaks properties 3 and 4: its two CATs have different rows and different columns.
    Its weights are positive and its rows sum to 1 within rounding, but identical words (the same vector,
    without positional encoding) must get identical rows and columns, so it cannot come from the word
    embeddings alone.
    """,
    wrong=[
        mistake("think it is a valid attention matrix, nothing broken", set(), says="nothing is broken"),
        mistake("see only the rows of the two CATs", {3}, says="columns differ"),
        mistake("see only the columns of the two CATs", {4}, says="rows differ"),
        mistake("count the rows summing to 1.001 as broken", {2, 3, 4}, says="within the deck's rounding"),
    ],
)
def predict_broken_properties(answer):
    """answer: the set of property numbers (1-4) that the deck's matrix breaks."""
    got = answer
    if isinstance(got, int):
        got = {got}
    if isinstance(got, dict) and not got:
        got = set()
    if isinstance(got, (str, bytes)) or not hasattr(got, "__iter__"):
        return f"write the broken properties as a set of numbers, e.g. {{1, 3}}; got {got!r}"
    got = set(got)
    if not got <= {1, 2, 3, 4}:
        return f"the properties are numbered 1 to 4; {sorted(got - {1, 2, 3, 4})} is not one of them"
    if got == _BROKEN:
        return None
    reasons = [_HOLDS_WHY[k] for k in sorted(got - _BROKEN)] + [_BROKEN_WHY[k] for k in sorted(_BROKEN - got)]
    start = "you predicted that nothing is broken, but" if not got else f"you predicted {sorted(got)}, but"
    return f"{start} " + "; ".join(reasons)


# ---------------------------------------------------------------------------------------------------
# Practice: one query's weights.


def _attention_weights(q, K):
    return torch.softmax(K @ q / math.sqrt(q.shape[-1]), dim=-1)  # (n,)


@exercise(
    hint="""
    One score per key: q·k_i divided by sqrt(d_k), with d_k = q.shape[-1]; K @ q gives all n dot products.
    Then torch.softmax(scores, dim=-1) turns the n scores into weights that sum to 1.
    """,
    reference=_attention_weights,
    wrong=[
        mistake("forget the 1/sqrt(d_k)", lambda q, K: torch.softmax(K @ q, dim=-1), says="1/sqrt(d_k)"),
        mistake(
            "divide by d_k instead of sqrt(d_k)",
            lambda q, K: torch.softmax(K @ q / q.shape[-1], dim=-1),
            says="instead of sqrt(d_k)",
        ),
        mistake("leave out the softmax", lambda q, K: K @ q / math.sqrt(q.shape[-1]), says="softmax"),
    ],
)
def attention_weights(answer):
    """answer(q (d_k,), K (n, d_k)) -> weights (n,) = softmax(q K^T / sqrt(d_k))."""
    gen, fresh = torch.Generator().manual_seed(1), torch.Generator().manual_seed(fresh_seed())
    drawn = [tuple(int(v) for v in torch.randint(2, 33, (2,), generator=fresh)) for _ in range(2)]  # n >= 2
    for k, (n, d_k) in enumerate([(4, 8), (7, 3), (1, 16), *drawn]):  # fixed cases, then two drawn anew
        source = gen if k < 3 else fresh
        q = torch.randn(d_k, generator=source, dtype=torch.float64)  # (d_k,)
        K = torch.randn(n, d_k, generator=source, dtype=torch.float64)  # (n, d_k)
        got = answer(q.clone(), K.clone())
        wrong = {
            "forget the 1/sqrt(d_k)": torch.softmax(K @ q, dim=-1),
            "divide by d_k instead of sqrt(d_k)": torch.softmax(K @ q / d_k, dim=-1),
            "leave out the softmax (the weights must be positive and sum to 1)": K @ q / math.sqrt(d_k),
        }
        problem = compare_with_mistakes(got, _attention_weights(q, K), f"your answer for n={n}, d_k={d_k}", wrong)
        if problem:
            return problem
    return None


# ---------------------------------------------------------------------------------------------------
# Transfer: inputs whose diagonal is not the row maximum.


def _diagonal_not_max(seq, d_model):
    lengths = torch.arange(1, seq + 1, dtype=torch.float64)  # (seq,) all different
    X = torch.zeros(seq, d_model, dtype=torch.float64)  # (seq, d_model)
    X[:, 0] = lengths  # every word points the same way, each one longer than the last
    return X


def _random_words(seq, d_model):
    return torch.randn(seq, d_model, generator=torch.Generator().manual_seed(0), dtype=torch.float64)


def _one_longer_word(seq, d_model):
    X = _random_words(seq, d_model)  # (seq, d_model)
    X[1] = X[1] + 1.2 * X[0]  # the lesson's counterexample: one word longer, aligned with word 0
    return X


@exercise(
    hint="""
    The score of row i with column j is x_i·x_j / sqrt(d_model). By Cauchy-Schwarz x_i·x_j <= |x_i| |x_j|,
    so the longest vector always keeps its diagonal: one row is the best you can do. For every other
    row i, put a longer vector pointing the same way as x_i: e.g. all words along one axis, with
    lengths 1, 2, ..., seq.
    """,
    reference=_diagonal_not_max,
    kind="transfer",
    wrong=[
        mistake("use random vectors, as the lesson's embeddings", _random_words, says="reaches past"),
        mistake("give every word the same vector", lambda seq, d: torch.ones(seq, d), says="same vector"),
        mistake("use one-hot vectors", lambda seq, d: torch.eye(seq, d), says="same length"),
        mistake(
            "make one word longer, as in the lesson's counterexample", _one_longer_word, says="only the longest vector"
        ),
    ],
)
def diagonal_not_max(answer):
    """answer(seq, d_model) -> X (seq, d_model) whose self-attention has its diagonal as the row maximum
    in exactly one row (the fewest possible)."""
    rng = torch.Generator().manual_seed(fresh_seed())
    drawn = [(int(torch.randint(2, 10, (), generator=rng)), int(torch.randint(1, 65, (), generator=rng)))]
    for seq, d_model in [(6, 512), (4, 16), (2, 2), (5, 3), *drawn]:  # the last drawn anew on every check
        X = torch.as_tensor(answer(seq, d_model)).to(torch.float64)
        where = f"for seq={seq}, d_model={d_model}"
        if X.shape != (seq, d_model):
            return f"{where}: X has shape {tuple(X.shape)}, expected {(seq, d_model)}"
        if not torch.isfinite(X).all():
            return f"{where}: X has entries that are not finite numbers"
        scores = X @ X.T / math.sqrt(d_model)  # (seq, seq) the softmax keeps their order in each row
        tol = 1e-9 * (1 + scores.abs().max())
        diag_max = [i for i in range(seq) if scores[i, i] >= scores[i].max() - tol]
        if len(diag_max) == 1:
            continue
        lengths = X.norm(dim=-1)  # (seq,)
        if torch.allclose(X, X[:1].expand_as(X)):
            return (
                f"{where}: your rows are all the same vector, so every weight in a row is equal and "
                "the diagonal ties for the maximum in every row"
            )
        if torch.allclose(lengths, lengths[0].expand_as(lengths)):
            return (
                f"{where}: all your vectors have the same length ({lengths[0]:.3g}), so by Cauchy-Schwarz "
                "x_i·x_j <= x_i·x_i and the diagonal is the maximum of every row"
            )
        if len(diag_max) == seq:
            return (
                f"{where}: the diagonal is still the maximum of all {seq} rows: no x_j reaches past x_i along "
                f"its direction (x_i·x_j <= |x_i|^2 everywhere; your lengths run {lengths.min():.3g} to "
                f"{lengths.max():.3g}); let longer vectors point the way of shorter ones"
            )
        return (
            f"{where}: the diagonal is still the maximum in rows {diag_max} ({len(diag_max)} of {seq}); "
            "only the longest vector must keep its diagonal, so give every other row a longer vector "
            "pointing its way"
        )
    return None


# ---------------------------------------------------------------------------------------------------
# Transfer: a classifier head that does not care about word order.


def _self_attention(X):
    A = torch.softmax(X @ X.T / math.sqrt(X.shape[-1]), dim=-1)  # (seq, seq)
    return A @ X  # (seq, d_model)


def _pooled_classifier(X, W_c):
    A = torch.softmax(X @ X.T / math.sqrt(X.shape[-1]), dim=-1)  # (seq, seq)
    return (A @ X).sum(dim=0) @ W_c  # (num_classes,)


def _first_position(X, W_c):
    return _self_attention(X)[0] @ W_c


def _mean_pool(X, W_c):
    return _self_attention(X).mean(dim=0) @ W_c


def _softmax_over_queries(X, W_c):
    A = torch.softmax(X @ X.T / math.sqrt(X.shape[-1]), dim=0)  # (seq, seq) columns sum to 1
    return (A @ X).sum(dim=0) @ W_c


def _unscaled(X, W_c):
    return (torch.softmax(X @ X.T, dim=-1) @ X).sum(dim=0) @ W_c


@exercise(
    hint="""
    Three steps: Y = softmax(X Xᵀ / sqrt(d_model), dim=-1) @ X (one output row per position), then
    sum the rows, Y.sum(dim=0), a (d_model,) vector that no longer knows the order, then @ W_c.
    Reordering X reorders the rows of Y (equivariance), and a sum does not care about order.
    """,
    reference=_pooled_classifier,
    kind="transfer",
    wrong=[
        mistake("read the class from position 0 instead of pooling", _first_position, says="position 0"),
        mistake("average the positions instead of summing them", _mean_pool, says="average the positions"),
        mistake("take the softmax over the queries (dim=0)", _softmax_over_queries, says="summed embeddings"),
        mistake("forget the 1/sqrt(d_model)", _unscaled, says="1/sqrt(d_model)"),
    ],
)
def pooled_classifier(answer):
    """answer(X (seq, d_model), W_c (d_model, num_classes)) -> class scores (num_classes,) of
    sum-pooled self-attention; checked on X and on reorderings of X."""
    gen = torch.Generator().manual_seed(fresh_seed())  # inputs drawn anew on every check
    drawn = tuple(int(v) for v in torch.randint(2, 9, (3,), generator=gen))
    for seq, d_model, classes in ((5, 8, 3), (3, 4, 2), (7, 6, 4), drawn):
        X = torch.randn(seq, d_model, generator=gen, dtype=torch.float64)  # (seq, d_model)
        X[-1] = X[0]  # a repeated word
        W_c = torch.randn(d_model, classes, generator=gen, dtype=torch.float64)  # (d_model, num_classes)
        expected = _pooled_classifier(X, W_c)  # (num_classes,) the same for every order of the words
        where = f"for seq={seq}, d_model={d_model}, {classes} classes"
        got = torch.as_tensor(answer(X.clone(), W_c.clone())).to(torch.float64)
        wrong = {
            "read position 0's output alone (the scores change when the words are reordered; "
            "sum over all positions)": _first_position(X, W_c),
            "average the positions: the lesson's pool is a sum": _mean_pool(X, W_c),
            "take the summed embeddings X @ W_c: with the softmax over the queries (dim=0) each column "
            "of weights sums to 1, so the sum over positions gives back the sum of the x_s": X.sum(0) @ W_c,
            "forget the 1/sqrt(d_model) in the scores": _unscaled(X, W_c),
        }
        problem = compare_with_mistakes(got, expected, f"{where}, your answer", wrong)
        if problem:
            return problem
        for _ in range(3):
            perm = torch.randperm(seq, generator=gen)  # (seq,)
            got_perm = torch.as_tensor(answer(X[perm].clone(), W_c.clone())).to(torch.float64)
            if compare_arrays(got_perm, expected, atol=1e-6):
                return (
                    f"{where}: your scores change when the words are reordered as {perm.tolist()}: "
                    "the head must be permutation invariant"
                )
    return None


# ---------------------------------------------------------------------------------------------------
# Predictions of the numbered sections (after the closing exercises, so their order stays the same).

DOUBLED_MISSES = [
    ("expect no change", 0.6, (0.55, 0.65), "doubling the query doubles every score, which is not a shift"),
    ("expect a one-hot", 1.0, (0.95, 1.0), "twice the scores square the weights, which stay below 1"),
    ("forget to renormalise", 0.36, (0.3, 0.4), "0.6^2 = 0.36 still has to be divided by the sum of the squares"),
]


@exercise(
    hint="The scores are log(weight) + a constant. Double them: what does softmax make of 2 log(w_i) + 2?",
    reference=0.857,
    kind="prediction",
    explain="""
    The weights are softmax(s) = (0.6, 0.1, 0.2, 0.1). Doubling q doubles every score, and
    softmax(2s)_i = w_i^2 / sum_j w_j^2 = 0.36 / 0.42 = 0.857: the favourite gets sharper, like a lower
    temperature (lesson 02).
    """,
    wrong=band_mistakes(DOUBLED_MISSES),
)
def predict_doubled_query(answer):
    """The weight of the first key, k_1, when the query of section 1 is doubled (the weights were 0.6, 0.1, 0.2, 0.1)."""
    return prediction_in_band(answer, 0.857, (0.84, 0.87), DOUBLED_MISSES, "k_1's weight")


COLD_MISSES = [
    ("average the values", 1.5, (1.3, 1.7), "the plain average of the values is the high-temperature limit"),
    ("expect the weights to vanish", 0.0, (-0.1, 0.3), "the weights still sum to 1 at any temperature"),
    ("pick the last entry", 3.0, (2.5, 3.5), "the query is a noisy copy of the key of cat, not of sky"),
]


@exercise(
    hint="As the temperature falls, softmax tends to the one-hot vector of the best-matching key. Which key "
    "does the query match best, and what is its value?",
    reference=1.0,
    kind="prediction",
    explain="""
    At tau = 0.01 the softmax is (almost) one-hot on the key that matches the query best, cat's, so the output
    is cat's value (1, 1): the dictionary's answer.
    """,
    wrong=band_mistakes(COLD_MISSES),
)
def predict_cold_lookup(answer):
    """The first coordinate of the attention output at temperature 0.01 in section 2."""
    return prediction_in_band(answer, 1.0, (0.98, 1.02), COLD_MISSES, "the first coordinate")


CAT_MISSES = [
    ("let the self-score win alone", 1.0, (0.9, 1.0), "the other CAT is the same vector and gets the same score"),
    ("expect uniform weights", 1 / 6, (0.1, 0.25), "the self-scores, about sqrt(512) = 22.6, swamp the others"),
    ("expect no weight on itself", 0.0, (0.0, 0.05), "a word's largest score in this row is with itself"),
]


@exercise(
    hint="A word's score with itself is |x|^2 / sqrt(512), about sqrt(512) = 22.6; with an unrelated word "
    "about N(0, 1). But one word of the sentence is not unrelated to the first CAT.",
    reference=0.5,
    kind="prediction",
    explain="""
    Both CATs are the same vector, so in the first CAT's row they have the same score, about 22.6, far above
    the other words' (about N(0, 1)). Softmax splits the weight equally between them: 0.5 on each.
    """,
    wrong=band_mistakes(CAT_MISSES),
)
def predict_cat_self_weight(answer):
    """The weight the first CAT puts on itself in softmax(X X^T / sqrt(512)), random embeddings, no PE."""
    return prediction_in_band(answer, 0.5, (0.49, 0.51), CAT_MISSES, "its weight on itself")


REVERSED_MISSES = [
    ("take the deck's word, invariant", 0, (0, 0), "the outputs are not invariant: they move with their words"),
    ("think only the CATs move", 2, (1, 2), "every position now holds a different word"),
    ("keep the CATs in place", 4, (3, 5), "the CATs moved too: position 1 now holds LOVELY, position 4 CAT"),
]


@exercise(
    hint="Equivariance: the output of a word goes where the word goes. After reversing, which positions still "
    "hold the same word as before?",
    reference=6,
    kind="prediction",
    explain="""
    Reversed, the sentence is CAT LOVELY A IS CAT YOUR: no position holds the same word as before, and each
    output row follows its word, so all 6 rows change. Not invariant, but equivariant.
    """,
    wrong=band_mistakes(REVERSED_MISSES),
)
def predict_reversed_rows(answer):
    """How many of the 6 output rows change, at their positions, when the sentence is reversed."""
    return prediction_in_band(answer, 6, (6, 6), REVERSED_MISSES, "the number of changed rows")


RANDOM_DIAGONAL = 22  # rows (of 120) whose maximum is on the diagonal, random W_q, W_k (the lesson asserts it)
DIAGONAL_MISSES = [
    ("expect the identity to survive", 120, (90, 120), "with W_q != W_k a word's score with itself is no longer |x|^2"),
    ("expect the diagonal never to win", 0, (0, 5), "the diagonal is one of five distinct keys: it wins by chance"),
    ("guess half the rows", 60, (40, 89), "random projections make every key about as likely to win"),
]


@exercise(
    hint="With random W_q != W_k, a word's score with itself is no more special than with any other word. "
    "The two CATs are one key: how many distinct keys can win a row?",
    reference=RANDOM_DIAGONAL,
    kind="prediction",
    explain="""
    Random projections give every key about the same chance to win a row. There are five distinct keys (the
    two CATs are one), so chance is about 1 row in 5: 24 of 120. The lesson counts 22.
    """,
    wrong=band_mistakes(DIAGONAL_MISSES),
)
def predict_random_diagonal(answer):
    """In how many of 120 rows (20 random draws of W_q, W_k, 6 rows) is the diagonal the row maximum."""
    return prediction_in_band(answer, RANDOM_DIAGONAL, (12, 36), DIAGONAL_MISSES, "the count")


# ---------------------------------------------------------------------------------------------------
# Transfer: a relative position bias that unbalances a three-word cycle.


def _cycle_log_ratios(log_A):
    """Every |log(A_ij A_jk A_ki / (A_ji A_kj A_ik))| over three distinct positions, from log-weights."""
    seq = log_A.shape[0]
    return [
        abs(float(log_A[i, j] + log_A[j, k] + log_A[k, i] - log_A[j, i] - log_A[k, j] - log_A[i, k]))
        for i in range(seq)
        for j in range(seq)
        for k in range(seq)
        if len({i, j, k}) == 3
    ]


def _cycle_breaking_bias(seq):
    d = torch.arange(seq)[:, None] - torch.arange(seq)[None, :]  # (seq, seq) i - j
    return torch.where(d > 0, -0.5 * d.double() ** 2, torch.zeros((), dtype=torch.float64))  # earlier keys only


def _distance_bias(seq):  # -|i - j|: symmetric, so the scores stay symmetric
    d = torch.arange(seq)[:, None] - torch.arange(seq)[None, :]
    return -0.5 * d.abs().double()


def _linear_bias(seq):  # -(i - j): asymmetric, but its odd part is linear in i - j
    d = torch.arange(seq)[:, None] - torch.arange(seq)[None, :]
    return -0.5 * d.double()


def _per_key_bias(seq):  # a bias that grows with the key's position j, the same in every row
    return torch.arange(seq, dtype=torch.float64)[None, :].expand(seq, seq).clone()


CYCLE_MISTAKES = [
    mistake(
        "penalise distance, -|i - j|",
        _distance_bias,
        says="your bias is symmetric (b(d) = b(-d)), so the scores stay symmetric and every cycle balances",
    ),
    mistake(
        "use a linear bias, -(i - j)",
        _linear_bias,
        says="the odd part of your bias is linear in i - j, and a(i-j) + a(j-k) + a(k-i) = 0 for a linear a",
    ),
    mistake(
        "favour later keys",
        _per_key_bias,
        says="your bias depends on more than i - j",
    ),
]


@exercise(
    hint="""
    With S = XXᵀ/√d symmetric and A = softmax(S + B), log A_ij - log A_ji = B_ij - B_ji + (a term for row i)
    - (one for row j), and the row terms cancel around a cycle. So only the odd part a(d) = b(d) - b(-d) of
    your bias matters, and a(i-j) + a(j-k) + a(k-i) must not vanish: try a bias on earlier keys that grows
    faster than linearly with the distance.
    """,
    reference=_cycle_breaking_bias,
    kind="transfer",
    wrong=CYCLE_MISTAKES,
)
def cycle_breaking_bias(answer):
    """answer(seq) -> B (seq, seq) with B[i, j] = b(i - j), such that softmax(XXᵀ/√d + B) has an unbalanced
    three-word cycle for any embeddings X."""
    gen = torch.Generator().manual_seed(fresh_seed())  # embeddings drawn anew on every check
    for seq in [3, 6, int(torch.randint(4, 10, (), generator=gen))]:
        B = torch.as_tensor(answer(seq)).to(torch.float64)
        where = f"for seq = {seq}"
        if B.shape != (seq, seq):
            return f"{where}: your bias has shape {tuple(B.shape)}, expected {(seq, seq)}"
        if not torch.isfinite(B).all():
            return f"{where}: your bias has entries that are not finite numbers; use a large negative number instead"
        if not torch.allclose(B[1:, 1:], B[:-1, :-1], atol=1e-9, rtol=0):
            return f"{where}: {CYCLE_MISTAKES[2].says}: B[i + 1, j + 1] must equal B[i, j]"
        d_model = int(torch.randint(2, 65, (), generator=gen))
        X = torch.randn(seq, d_model, generator=gen, dtype=torch.float64)  # (seq, d_model)
        log_A = torch.log_softmax(X @ X.T / math.sqrt(d_model) + B, dim=-1)  # (seq, seq)
        if max(_cycle_log_ratios(log_A)) > 0.01:
            continue
        if torch.allclose(B, B.T, atol=1e-9):
            return f"{where}: {CYCLE_MISTAKES[0].says}"
        odd = B - B.T  # (seq, seq) a(i - j)
        if torch.allclose(odd, odd[1, 0] * (torch.arange(seq)[:, None] - torch.arange(seq)[None, :]), atol=1e-9):
            return f"{where}: {CYCLE_MISTAKES[1].says}"
        return f"{where}: every three-word cycle still balances; the odd part of your bias must not be linear"
    return None
