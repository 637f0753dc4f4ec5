"""Exercises of lesson 03 (self-attention): predict what the slide deck's matrix breaks, one query's
weights, inputs whose diagonal is not the row maximum, a permutation-invariant classifier head; then a
prediction per numbered section (a doubled query, a cold look-up, a CAT's weight on itself, a reversed
sentence, random projections' diagonal); last the zero-temperature limit when several keys tie."""

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
# Practice: a classifier head that does not care about word order.


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
    kind="practice",
    wrong=[
        mistake("read the class from position 0 instead of pooling", _first_position, says="position 0"),
        mistake("average the positions instead of summing them", _mean_pool, says="average the positions"),
        mistake("take the softmax over the queries (dim=0)", _softmax_over_queries, says="over the queries (dim=0)"),
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
            "pool the embeddings X instead of the attention outputs (X.sum(0) @ W_c). If you did pool the "
            "attention outputs, look at the softmax: over the queries (dim=0) each column of weights sums to 1, "
            "so the sum over positions gives back the summed embeddings": X.sum(0) @ W_c,
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


COLD = 0.961  # cat's weight at temperature 0.1 in section 2 (the lesson asserts it)
COLD_MISSES = [
    (
        "expect the hard look-up already",
        1.0,
        (0.985, 1.1),
        "at tau = 0.1 the other keys still share about 4% of the weight; it takes a lower temperature to reach 1",
    ),
    (
        "keep the weight of tau = 1",
        0.35,
        (0.3, 0.45),
        "dividing the scores by 0.1 raises every unnormalised weight to the power 10: cat's lead grows",
    ),
    (
        "expect a gentle sharpening",
        0.6,
        (0.45, 0.85),
        "the power 10 shrinks each rival by its ratio to cat to the tenth: a ratio of 0.69 becomes about 0.025",
    ),
    ("expect an even split", 0.25, (0.0, 0.3), "a lower temperature sharpens the weights, it does not flatten them"),
]


@exercise(
    hint="softmax(s / tau) is proportional to exp(s)^(1/tau): at tau = 0.1, raise each weight of tau = 1 to the "
    "power 10 and normalise. How small does (rival / cat)^10 get?",
    reference=COLD,
    kind="prediction",
    explain="""
    softmax(s / 0.1) is proportional to w^10 with w the weights at tau = 1. Each rival's ratio to cat (at most
    0.692) shrinks to at most 0.03 at the tenth power, so cat gets 1 / (1 + 0.04), about 0.96: nearly the
    hard look-up, not yet exactly it.
    """,
    wrong=band_mistakes(COLD_MISSES),
)
def predict_cold_lookup(answer):
    """The weight on cat at temperature 0.1 in section 2."""
    return prediction_in_band(answer, COLD, (0.93, 0.985), COLD_MISSES, "cat's weight")


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
# Transfer: the zero-temperature limit when several keys match equally well.


def _scores(q, K):
    return torch.as_tensor(K, dtype=torch.float64) @ torch.as_tensor(q, dtype=torch.float64)  # (n,)


def _cold_limit(q, K, V):
    scores = _scores(q, K)  # (n,)
    best = scores >= scores.max() - 1e-9 * (1 + scores.abs().max())  # (n,) the keys that tie for the best
    return torch.as_tensor(V, dtype=torch.float64)[best].mean(dim=0)  # (d_v,) an even split over them


def _first_best(q, K, V):
    return torch.as_tensor(V, dtype=torch.float64)[int(_scores(q, K).argmax())]


def _sum_of_best(q, K, V):
    scores = _scores(q, K)  # (n,)
    return torch.as_tensor(V, dtype=torch.float64)[scores == scores.max()].sum(dim=0)


def _copies_only(q, K, V):  # ties only keys equal to the arg max, missing tied keys that differ orthogonally to q
    K = torch.as_tensor(K, dtype=torch.float64)  # (n, d_k)
    tied = (K == K[int(_scores(q, K).argmax())]).all(dim=-1)  # (n,)
    return torch.as_tensor(V, dtype=torch.float64)[tied].mean(dim=0)


def _warm(q, K, V):  # tau = 1: the plain softmax mix
    return torch.softmax(_scores(q, K), dim=-1) @ torch.as_tensor(V, dtype=torch.float64)


def _hot(q, K, V):  # tau -> infinity: every value equally
    return torch.as_tensor(V, dtype=torch.float64).mean(dim=0)


COLD_LIMIT_MISTAKES = [
    mistake("return the value of the first best key (the arg max)", _first_best, says="arg max"),
    mistake("add up the values of the tied keys", _sum_of_best, says="add up"),
    mistake("average only the exact copies of the best key", _copies_only, says="copies"),
    mistake("stay at temperature 1", _warm, says="temperature 1"),
    mistake("average all the values", _hot, says="temperature grows"),
]


def _copies(ties):
    """How many of `ties` tied best keys in `_cold_cases` are copies of one key: two with 3 or more ties."""
    return 2 if ties >= 3 else 1


def _cold_cases(gen):
    """(q, K, V, ties): dyadic entries (K on a grid of eighths, the best key moved by q over a power of 2),
    so every score is exact and ties are exact. The `ties` best keys score at least 1 above every other key;
    with 3 or more ties the first two (by index) are copies of one key, and every other tied key is that key
    moved by a multiple of u, a vector orthogonal to q: a different key with the same score."""
    cases = []
    for n, d_k, d_v, ties in [(5, 3, 2, 3), (6, 5, 3, 4), (5, 4, 1, 1), (7, 8, 4, 2)]:
        q = torch.randint(-2, 3, (d_k,), generator=gen).double()  # (d_k,)
        q[0] = 2.0  # never the zero vector: |q|^2 >= 4
        u = torch.zeros(d_k, dtype=torch.float64)  # (d_k,) u . q = -q_1 q_0 + q_0 q_1 = 0, and u != 0
        u[0], u[1] = -q[1], q[0]
        K = torch.randint(-8, 9, (n, d_k), generator=gen).double() / 8  # (n, d_k)
        top = int((K @ q).argmax())
        step = 2.0 ** math.floor(math.log2(float(q @ q)))  # |q|^2 / step is in [1, 2)
        slots = torch.randperm(n, generator=gen)[:ties].sort().values  # where the best keys go
        copies = _copies(ties)  # the first slots hold one key, repeated
        best = K[top] + q / step  # scores |q|^2 / step above the old best
        K[slots] = best + torch.clamp(torch.arange(ties) - copies + 1, min=0)[:, None].double() * u / 8
        V = torch.randint(-4, 5, (n, d_v), generator=gen).double()  # (n, d_v) each key its own value
        V[slots] = torch.randint(1, 5, (ties, d_v), generator=gen).double() + 10 * torch.arange(ties)[:, None]
        cases.append((q, K, V, ties))
    return cases


@exercise(
    hint="""
    Write the weights as exp((s_j - s_max)/τ) / Σ_l exp((s_l - s_max)/τ). As τ → 0 a key below the best
    gets exp(-gap/τ) → 0, and every key tied with the best keeps exp(0) = 1. So with m tied keys each
    gets weight 1/m.
    """,
    reference=_cold_limit,
    kind="transfer",
    wrong=COLD_LIMIT_MISTAKES,
)
def cold_limit(answer):
    """answer(q (d_k,), K (n, d_k), V (n, d_v)) -> the limit of softmax(q Kᵀ / τ) V as τ -> 0, (d_v,);
    checked with tied best keys, each with its own value: copies of one key, and keys that differ from it
    only orthogonally to q."""
    gen = torch.Generator().manual_seed(fresh_seed())  # inputs drawn anew on every check
    for q, K, V, ties in _cold_cases(gen):
        n = K.shape[0]
        copies = _copies(ties)
        where = f"for {n} keys, {ties} of them tied for the best score"
        if ties > copies:
            where += f" ({copies} copies of one key, {ties - copies} differing from it only orthogonally to q)"
        got = torch.as_tensor(answer(q.clone(), K.clone(), V.clone())).to(torch.float64)
        if got.shape != (V.shape[1],):
            return f"{where}: your answer has shape {tuple(got.shape)}, expected {(V.shape[1],)}"
        wrong = {
            f"{COLD_LIMIT_MISTAKES[0].name}: tied keys split the weight evenly": _first_best(q, K, V),
            f"{COLD_LIMIT_MISTAKES[1].name}: each gets weight 1/{ties}, so the limit is their average": _sum_of_best(
                q, K, V
            ),
            f"{COLD_LIMIT_MISTAKES[2].name}: a key that differs from the best only orthogonally to q has the same "
            "score, so it ties too": _copies_only(q, K, V),
            f"{COLD_LIMIT_MISTAKES[3].name}: as τ -> 0 a key below the best loses all its weight": _warm(q, K, V),
            "average all the values: that is where the temperature grows, not where it falls to 0": _hot(q, K, V),
        }
        problem = compare_with_mistakes(got, _cold_limit(q, K, V), f"{where}, your answer", wrong)
        if problem:
            return problem
    return None
