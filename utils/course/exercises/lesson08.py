"""Exercises of lesson 08: six predictions (what a rotated q.k depends on, what a projected PE score depends on,
sinusoidal PE at three
times the training length, which variant is least accurate at the trained positions of a long sequence, where
RoPE's copy head loses its weight, which encoding never learns an absolute task), an ALiBi distance bias,
sin-cos encodings for a video, RoPE by hand, and RoPE's position interpolation."""

import random

import torch

from utils.course.exercises import compare_with_mistakes, exercise, fresh_seed, mistake
from utils.positional import apply_rotary, sinusoidal_encoding, sinusoidal_encoding_2d


def _compare_cases(answer, wrong, cases, what, atol=1e-6):
    """Run `answer` on each (args, expected, label) case; the first miss, named after a known mistake."""
    for args, expected, label in cases:
        got = answer(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
        if not isinstance(got, torch.Tensor):
            return f"{label}: return a torch.Tensor, got {type(got).__name__}"
        if tuple(got.shape) != tuple(expected.shape):
            return f"{label}: {what} should have shape {tuple(expected.shape)}, got {tuple(got.shape)}"
        width = expected.shape[-1]
        mistakes = {m.name: m.answer(*args).reshape(-1, width) for m in wrong}
        problem = compare_with_mistakes(
            got.detach().reshape(-1, width), expected.reshape(-1, width), f"{label}: {what}", mistakes, atol=atol
        )
        if problem:
            return problem
    return None


# --- Predictions (sections 1-5 and Going further) ------------------------------------------------------


@exercise(
    hint="""
    A sequence of length 48 holds positions 0..47. Which of them did the model see in training, and what
    share of the targets sits there? Being defined at a position is not the same as having been trained on it.
    """,
    reference=0.35,
    kind="prediction",
    wrong=[
        mistake("expect the sinusoids to carry the rule to any length", 1.0, says="defined at every position"),
        mistake("expect most of it to survive", 0.7, says="two thirds"),
        mistake("expect nothing but chance", 1 / 15, says="starts with positions 0..15"),
    ],
    explain="""
    About a third. A length-48 sequence starts with positions 0..15, which the model trained on and copies
    right in most places; at positions 16..47, which it never saw, it does at most about as well as the model without PE. Those are about two thirds of the targets, so the accuracy lands near a third: below 0.5 in every run.
    """,
)
def predict_sinusoidal_at_48(answer):
    """answer: the sinusoidal model's token accuracy (0 to 1) at length 48, after training on lengths <= 16."""
    if isinstance(answer, bool) or not isinstance(answer, (int, float)) or not 0 <= answer <= 1:
        return f"write an accuracy between 0 and 1 (0.5 for half the tokens right), got {answer!r}"
    if answer >= 0.85:
        return (
            "the sinusoidal PE is defined at every position, but the model never trained on positions "
            "16..47: there it does at most about as well as a model without PE"
        )
    if answer > 0.5:
        return (
            "positions 16..47, which the model never saw, hold about two thirds of the targets of a length-48 "
            "sequence, and there it does at most about as well as a model without PE"
        )
    if answer < 0.2:
        return (
            "a length-48 sequence starts with positions 0..15, which the model trained on and still copies "
            "right: about a third of the targets"
        )
    return None


def _as_word(answer, words):
    """The canonical choice for a written answer (case and spaces ignored), or None."""
    if not isinstance(answer, str):
        return None
    return words.get(answer.strip().lower().replace(" ", "").replace("_", ""))


_DEPENDS = {"offset": "offset", "n-m": "offset", "m": "m", "n": "n", "both": "both", "mandn": "both"}


@exercise(
    hint="""
    M_m and M_n are rotations: M_n^T turns by -n, and two rotations of the same pair add their angles. Write
    (q M_m) . (k M_n) as q M_m M_n^T k^T: which single rotation sits between q and k?
    """,
    reference="offset",
    kind="prediction",
    wrong=[
        mistake("expect each absolute angle to stay in the score", "both", says="M_(m-n)"),
        mistake("expect only the query's position to matter", "m", says="key's position"),
        mistake("expect only the key's position to matter", "n", says="query's position"),
    ],
    explain="""
    The offset only. (q M_m) . (k M_n) = q M_m M_n^T k^T, and for rotations M_n^T = M_(-n) and
    M_m M_(-n) = M_(m-n): the two absolute angles cancel except for their difference. The same q and k give
    the same score at positions (0, 8) and (9999, 10007), and a different one at another offset.
    """,
)
def predict_rope_score(answer):
    """answer: 'offset', 'm', 'n' or 'both': what (q M_m) . (k M_n) depends on, q at position m, k at n."""
    choice = _as_word(answer, _DEPENDS)
    if choice is None:
        return f"write 'offset', 'm', 'n' or 'both', got {answer!r}"
    if choice == "both":
        return (
            "each vector is turned by its own position, but the dot product of two rotated vectors only sees "
            "the angle between them: q M_m M_n^T k^T = q M_(m-n) k^T"
        )
    if choice == "m":
        return "the key's position n turns k by M_n: move only the key and the score changes too"
    if choice == "n":
        return "the query's position m turns q by M_m: move only the query and the score changes too"
    return None


@exercise(
    hint="""
    Lesson 02's identity says PE_m . PE_n is a sum of cos(w_i (n - m)). After the projections the score is
    PE_m W_q W_k^T PE_n^T: the matrix W_q W_k^T sits between the two vectors. Does it mix a sin of m with a
    cos of n in a way that leaves only n - m?
    """,
    reference="both",
    kind="prediction",
    wrong=[
        mistake("carry lesson 02's identity through the projections", "offset", says="projections"),
        mistake("expect only the query's position to matter", "m", says="key's position"),
        mistake("expect only the key's position to matter", "n", says="query's position"),
    ],
    explain="""
    Both m and n, separately. Lesson 02's offset-only identity holds for PE_m . PE_n, where each frequency
    pairs its own sin and cos. A general W_q W_k^T mixes the coordinates, so the score keeps terms like
    sin(w_i m) cos(w_j n) that do not combine into a function of n - m: at the same offset, the score
    changes with m. RoPE rotates after the projections, which is why its score depends on n - m only.
    """,
)
def predict_projected_pe(answer):
    """answer: 'offset', 'm', 'n' or 'both': what (PE_m W_q) . (PE_n W_k) depends on, for random W_q, W_k."""
    choice = _as_word(answer, _DEPENDS)
    if choice is None:
        return f"write 'offset', 'm', 'n' or 'both', got {answer!r}"
    if choice == "offset":
        return (
            "lesson 02's identity holds for PE_m . PE_n; the projections put W_q W_k^T between the two "
            "vectors, which mixes the frequencies, so at the same offset the score changes with m"
        )
    if choice == "m":
        return "the key's position n enters through PE_n W_k: move the key and the score changes too"
    if choice == "n":
        return "the query's position m enters through PE_m W_q: move the query and the score changes too"
    return None


_SEEN_VARIANTS = {
    "sinusoidal": "sinusoidal",
    "learned": "learned",
    "learned(clamped)": "learned",
    "rope": "rope",
    "sinusoidal+offsets": "sinusoidal+offsets",
    "offsets": "sinusoidal+offsets",
}


@exercise(
    hint="""
    Every model trained on positions 0..15, but in a length-48 sequence a query there also attends over keys
    at 16..47: PE rows training never showed for the sinusoidal and learned models; for RoPE, which sees only
    offsets, keys up to 37 positions from a query at 10, farther than any training sequence. The offsets
    model saw every position up to 47 in training. Which model's queries at 0..15 lose their answer most often?
    """,
    reference="rope",
    kind="prediction",
    wrong=[
        mistake("expect the sinusoidal model to fail everywhere in a long sequence", "sinusoidal", says="trained on"),
        mistake("expect the learned table to fail everywhere in a long sequence", "learned", says="trained on"),
        mistake("expect the shifted sinusoids to be the weakest there", "sinusoidal+offsets", says="every range"),
    ],
    explain="""
    RoPE, in every stored seed (section 3 checks it). What section 4 measures: at positions 2..15, from
    length 16 to 48, RoPE's copy head loses weight on key t - 2, and the lost weight goes to keys 16 or more
    positions away, offsets training never showed. The sinusoidal+offsets copy head loses a similar share
    there (the bars for length 48, positions 2..15 stand level; in some stored seeds it loses more), also to
    far keys, yet that model stays accurate at 0..15. So the weight the copy head loses does not by itself
    explain RoPE's errors, and this lesson does not settle why RoPE, not the offsets model, is the least
    accurate there. The sinusoidal and learned models stay right at 0..15, although their queries there also
    attend over the new keys at 16..47; they fail at 16..47 themselves.
    """,
)
def predict_least_accurate_seen(answer):
    """answer: the variant least accurate at positions 0..15 of length-48 sequences: 'sinusoidal', 'learned',
    'rope' or 'sinusoidal+offsets'."""
    choice = _as_word(answer, _SEEN_VARIANTS)
    if choice is None:
        return f"write 'sinusoidal', 'learned', 'rope' or 'sinusoidal+offsets', got {answer!r}"
    if choice in ("sinusoidal", "learned"):
        return (
            f"the {choice} model is right at positions 0..15, the positions it trained on, although its queries "
            "there also attend over the new keys at 16..47; it fails at 16..47 themselves. Which model loses "
            "accuracy even at 0..15?"
        )
    if choice == "sinusoidal+offsets":
        return "sinusoidal+offsets saw every position up to 47 in training and holds in every range of positions"
    return None


_WHERE = {
    "far": "far",
    "faroffsets": "far",
    "near": "near",
    "nearoffsets": "near",
    "diagonal": "diagonal",
    "self": "diagonal",
    "evenly": "evenly",
    "uniform": "evenly",
}


@exercise(
    hint="""
    RoPE's score depends on the offset n - m only. Training sequences were at most 16 long: which offsets
    did training ever show the copy head, and which does a length-48 sequence add?
    """,
    reference="far",
    kind="prediction",
    wrong=[
        mistake("expect the weight to fall back on the query's own token", "diagonal", says="offset 0"),
        mistake("expect it to smear over nearby offsets", "near", says="trained"),
        mistake("expect it to spread evenly over the keys", "evenly", says="share"),
    ],
    explain="""
    To the far offsets. Training sequences had offsets |n - m| <= 15 only, so the scores of offsets 16..47
    were never trained, and some of them happen to be high. In every run, what the copy head no longer puts
    on key t - 2 at length 48 is, to within 0.05, the weight it puts on offsets >= 16: the diagonal and the
    other near offsets together gain almost nothing.
    """,
)
def predict_rope_lost_weight(answer):
    """answer: 'far', 'near', 'diagonal' or 'evenly': where RoPE's copy head's lost weight goes at length 48."""
    choice = _as_word(answer, _WHERE)
    if choice is None:
        return f"write 'far', 'near', 'diagonal' or 'evenly', got {answer!r}"
    if choice == "diagonal":
        return (
            "offset 0 was trained like every offset up to 15; the diagonal and the near offsets together gain "
            "almost nothing: the weight goes to offsets training never showed"
        )
    if choice == "near":
        return "offsets 1 to 15 were trained and keep their low scores; the weight goes to offsets >= 16"
    if choice == "evenly":
        return (
            "spread evenly, offsets >= 16 would get only their share of the keys (under half); they get "
            "nearly all the weight the head loses"
        )
    return None


_VARIANTS = {
    "sinusoidal": "sinusoidal",
    "learned": "learned",
    "rope": "rope",
    "sinusoidal+offsets": "sinusoidal+offsets",
    "offsets": "sinusoidal+offsets",
}


@exercise(
    hint="""
    Absolute copy needs "where is position 5?". Which variant saw the same symbols at shifted positions in
    training, so that its PE no longer marks index 5 of the sequence?
    """,
    reference="sinusoidal+offsets",
    kind="prediction",
    wrong=[
        mistake("expect an offset-only encoding to fail", "rope", says="edge"),
        mistake("expect the fixed sinusoids to fail", "sinusoidal", says="index 5"),
        mistake("expect the learned table to fail", "learned", says="index 5"),
    ],
    explain="""
    Sinusoidal+offsets. Its training sequences start at random positions, so index 5 of a sequence sits at
    a different PE every time; to find it the model would have to count from the sequence's edge, and
    within this budget (400 steps) it did not: it stays near the no-PE level in every seed. That is a
    statement about this budget, not a proof it never could. RoPE did learn it inside the training
    lengths; how is not measured here (the lesson reasons that it counts keys from the sequence's left
    edge). Without PE the encoder cannot learn it at any budget: it
    cannot tell which token sits at index 5.
    """,
)
def predict_not_learned_absolute(answer):
    """answer: the variant (besides no PE) that does not learn absolute copy within the lesson's budget:
    'sinusoidal', 'learned', 'rope' or 'sinusoidal+offsets'."""
    choice = _as_word(answer, _VARIANTS)
    if choice is None:
        return f"write 'sinusoidal', 'learned', 'rope' or 'sinusoidal+offsets', got {answer!r}"
    if choice == "rope":
        return (
            "RoPE's scores depend on offsets only, yet every RoPE seed learned absolute copy up to length 16 "
            "within the budget (the lesson reasons, without measuring it, that a bidirectional encoder still "
            "sees the sequence's left edge)"
        )
    if choice in ("sinusoidal", "learned"):
        return (
            f"{choice} PE marks index 5 with the same vector in every training sequence, so the model "
            "finds it at every length; the variant that fails is the one whose index 5 moves"
        )
    return None


# --- Exercise 2. An ALiBi distance bias (transfer) ------------------------------------------------------


def _alibi_solution(T, num_heads):
    slopes = 2.0 ** (-8.0 * torch.arange(1, num_heads + 1, dtype=torch.float64) / num_heads)  # (num_heads,)
    i = torch.arange(T, dtype=torch.float64)
    distance = (i[:, None] - i[None, :]).abs()  # (T, T): |i - j|
    return -slopes[:, None, None] * distance  # (num_heads, T, T)


def _alibi_first_slope_one(T, num_heads):
    slopes = 2.0 ** (-8.0 * torch.arange(num_heads, dtype=torch.float64) / num_heads)
    i = torch.arange(T, dtype=torch.float64)
    return -slopes[:, None, None] * (i[:, None] - i[None, :]).abs()


def _alibi_positive(T, num_heads):
    return -_alibi_solution(T, num_heads)


def _alibi_signed(T, num_heads):
    slopes = 2.0 ** (-8.0 * torch.arange(1, num_heads + 1, dtype=torch.float64) / num_heads)
    i = torch.arange(T, dtype=torch.float64)
    return -slopes[:, None, None] * (i[:, None] - i[None, :])  # i - j without the absolute value


def _alibi_one_slope(T, num_heads):
    i = torch.arange(T, dtype=torch.float64)
    return -0.5 * (i[:, None] - i[None, :]).abs().expand(num_heads, T, T)


def _alibi_halving(T, num_heads):
    slopes = 2.0 ** -torch.arange(1, num_heads + 1, dtype=torch.float64)  # 1/2, 1/4, ... for any num_heads
    i = torch.arange(T, dtype=torch.float64)
    return -slopes[:, None, None] * (i[:, None] - i[None, :]).abs()


_ALIBI_MISTAKES = [
    mistake(
        "start the slopes at 1 (the first head's slope is 2^(-8/num_heads))",
        _alibi_first_slope_one,
        says="first head's slope",
    ),
    mistake("add the distance instead of subtracting it", _alibi_positive, says="subtracting"),
    mistake("use i - j instead of the distance |i - j|", _alibi_signed, says="|i - j|"),
    mistake(
        "give every head the slope 1/2 (each head has a slope of its own)", _alibi_one_slope, says="slope of its own"
    ),
    mistake(
        "halve the slope from head to head whatever the number of heads (the ratio is 2^(-8/num_heads))",
        _alibi_halving,
        says="ratio is 2^(-8/num_heads)",
    ),
]


@exercise(
    hint="""
    slopes = 2 ** (-8 * h / num_heads) for h = 1, ..., num_heads (torch.arange(1, num_heads + 1)).
    distance = (i[:, None] - i[None, :]).abs() for i = torch.arange(T). Return -slopes[:, None, None] * distance,
    shape (num_heads, T, T).
    """,
    reference=_alibi_solution,
    kind="transfer",
    wrong=_ALIBI_MISTAKES,
)
def alibi_bias(answer):
    """answer(T, num_heads) -> (num_heads, T, T) bias -m_h * |i - j|, slopes m_h = 2^(-8 h / num_heads)."""
    rng = random.Random(fresh_seed())  # a case drawn anew on every check, after the fixed ones
    sizes = ((5, 8), (6, 4), (3, 2), (rng.randint(1, 9), rng.randint(1, 12)))
    cases = [((T, h), _alibi_solution(T, h), f"T={T}, num_heads={h}") for T, h in sizes]
    return _compare_cases(answer, _ALIBI_MISTAKES, cases, "bias (rows: head and query i, columns: key j)")


# --- Exercise 3. Sin-cos encodings for a video, frame x row x column (transfer) -----------------------


def _pe_1d(n, d):
    """Lesson 01's table (n, d): sin in even columns, cos in odd ones."""
    pos = torch.arange(n, dtype=torch.float64)[:, None]  # (n, 1)
    w = 1.0 / 10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    pe = torch.zeros(n, d, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * w), torch.cos(pos * w)
    return pe


def _pe_3d_solution(frames, rows, cols, d_model):
    def pe(n, d):  # lesson 01's table (n, d): sin in even columns, cos in odd ones
        pos = torch.arange(n, dtype=torch.float64)[:, None]  # (n, 1)
        w = 1.0 / 10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
        table = torch.zeros(n, d, dtype=torch.float64)
        table[:, 0::2], table[:, 1::2] = torch.sin(pos * w), torch.cos(pos * w)
        return table

    third = d_model // 3
    f = torch.arange(frames).repeat_interleave(rows * cols)  # (N,): 0 0 ... 1 1 ...: frame by frame
    r = torch.arange(rows).repeat_interleave(cols).repeat(frames)  # (N,): reading order within a frame
    c = torch.arange(cols).repeat(frames * rows)  # (N,)
    return torch.cat([pe(frames, third)[f], pe(rows, third)[r], pe(cols, third)[c]], dim=-1)  # (N, d_model)


def _grid(frames, rows, cols):
    f = torch.arange(frames).repeat_interleave(rows * cols)
    r = torch.arange(rows).repeat_interleave(cols).repeat(frames)
    c = torch.arange(cols).repeat(frames * rows)
    return f, r, c


def _pe_3d_image_only(frames, rows, cols, d_model):  # lesson 08's 2-D encoding: the frame is lost
    f, r, c = _grid(frames, rows, cols)
    half = d_model // 2
    return torch.cat([_pe_1d(rows, half)[r], _pe_1d(cols, half)[c]], dim=-1)


def _pe_3d_column_first(frames, rows, cols, d_model):
    f, r, c = _grid(frames, rows, cols)
    third = d_model // 3
    return torch.cat([_pe_1d(cols, third)[c], _pe_1d(rows, third)[r], _pe_1d(frames, third)[f]], dim=-1)


def _pe_3d_added(frames, rows, cols, d_model):
    f, r, c = _grid(frames, rows, cols)
    return _pe_1d(frames, d_model)[f] + _pe_1d(rows, d_model)[r] + _pe_1d(cols, d_model)[c]


def _pe_3d_frames_last(frames, rows, cols, d_model):  # positions ordered row, column, then frame
    third = d_model // 3
    f = torch.arange(frames).repeat(rows * cols)
    r = torch.arange(rows).repeat_interleave(cols * frames)
    c = torch.arange(cols).repeat_interleave(frames).repeat(rows)
    return torch.cat([_pe_1d(frames, third)[f], _pe_1d(rows, third)[r], _pe_1d(cols, third)[c]], dim=-1)


def _pe_3d_full_width_frequencies(frames, rows, cols, d_model):
    f, r, c = _grid(frames, rows, cols)
    third = d_model // 3
    w = 1.0 / 10000 ** (torch.arange(0, third, 2, dtype=torch.float64) / d_model)  # d_model, not d_model / 3
    out = torch.zeros(len(f), d_model, dtype=torch.float64)
    for k, idx in enumerate((f, r, c)):
        pos = idx.double()[:, None]
        out[:, k * third : (k + 1) * third : 2] = torch.sin(pos * w)
        out[:, k * third + 1 : (k + 1) * third : 2] = torch.cos(pos * w)
    return out


_PE_3D_MISTAKES = [
    mistake(
        "reuse the image's 2-D encoding, which has no part for the frame",
        _pe_3d_image_only,
        says="no part for the frame",
    ),
    mistake(
        "put the column's encoding first (the order here is frame, row, column)",
        _pe_3d_column_first,
        says="frame, row, column",
    ),
    mistake(
        "add full-width PEs instead of giving each axis a third of the vector",
        _pe_3d_added,
        says="a third of the vector",
    ),
    mistake(
        "list the patches pixel position first and frame last, instead of frame by frame",
        _pe_3d_frames_last,
        says="frame by frame",
    ),
    mistake(
        "compute each third's frequencies with d_model instead of d_model / 3",
        _pe_3d_full_width_frequencies,
        says="d_model / 3",
    ),
]


@exercise(
    hint="""
    Write lesson 01's 1-D table pe(n, d) first (sin in even columns, cos in odd, w_i = 1 / 10000**(2i/d)).
    Patch k sits in frame f = k // (rows * cols), and within its frame at row r = (k // cols) % rows and
    column c = k % cols. Its vector is torch.cat([pe(frames, t)[f], pe(rows, t)[r], pe(cols, t)[c]]) with
    t = d_model // 3: the frame's PE, then the row's, then the column's.
    """,
    reference=_pe_3d_solution,
    kind="transfer",
    wrong=_PE_3D_MISTAKES,
)
def pe_3d(answer):
    """answer(frames, rows, cols, d_model) -> (frames * rows * cols, d_model): frame, row, column PE."""
    cases = []
    rng = random.Random(fresh_seed())  # a case drawn anew on every check, after the fixed ones
    drawn = (rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 4), 12 * rng.randint(1, 4))  # d_model: 12k
    for frames, rows, cols, d_model in ((2, 3, 4, 12), (3, 2, 2, 24), (4, 3, 3, 36), drawn):
        expected = _pe_3d_solution(frames, rows, cols, d_model)
        third = d_model // 3  # the row and column thirds are the MAE-style 2-D encoding of width 2 d_model / 3
        image = sinusoidal_encoding_2d(rows, cols, 2 * third, dtype=torch.float64).repeat(frames, 1)
        assert torch.allclose(expected[:, third:], image)
        cases.append(
            ((frames, rows, cols, d_model), expected, f"{frames} frames of {rows} x {cols}, d_model={d_model}")
        )
    return _compare_cases(answer, _PE_3D_MISTAKES, cases, "encoding (rows: patches, columns: features)")


# --- Exercise 1. RoPE by hand (practice) ---------------------------------------------------------------


def _rope_solution(x, positions):
    """Turn pair (x[t, 2i], x[t, 2i+1]) by angle positions[t] * w_i, as lesson 02's M_k does to PE_t."""
    d = x.shape[-1]
    w = 1.0 / 10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    theta = positions.double()[:, None] * w  # (T, d/2)
    cos, sin = theta.cos(), theta.sin()
    out = x.clone()
    out[:, 0::2] = x[:, 0::2] * cos + x[:, 1::2] * sin
    out[:, 1::2] = x[:, 1::2] * cos - x[:, 0::2] * sin
    return out


def _rope_turned_the_other_way(x, positions):
    return _rope_solution(x, -positions)


def _rope_halves_not_pairs(x, positions):
    """The 'rotate half' layout: pairs (i, i + d/2) instead of (2i, 2i+1)."""
    d = x.shape[-1]
    w = 1.0 / 10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    theta = positions.double()[:, None] * w  # (T, d/2)
    a, b = x[:, : d // 2], x[:, d // 2 :]
    return torch.cat([a * theta.cos() + b * theta.sin(), b * theta.cos() - a * theta.sin()], dim=-1)


def _rope_one_frequency(x, positions):
    """Every pair turned by the position itself, forgetting w_i."""
    theta = positions.double()[:, None].expand(-1, x.shape[-1] // 2)  # (T, d/2)
    out = x.clone()
    out[:, 0::2] = x[:, 0::2] * theta.cos() + x[:, 1::2] * theta.sin()
    out[:, 1::2] = x[:, 1::2] * theta.cos() - x[:, 0::2] * theta.sin()
    return out


_ROPE_MISTAKES = [
    mistake(
        "turn the pairs the other way (the angle's sign flipped)", _rope_turned_the_other_way, says="the other way"
    ),
    mistake(
        "pair feature i with feature i + d/2 (the 'rotate half' layout) instead of 2i with 2i+1",
        _rope_halves_not_pairs,
        says="2i with 2i+1",
    ),
    mistake(
        "turn every pair by the position itself, forgetting the frequency w_i",
        _rope_one_frequency,
        says="frequency w_i",
    ),
]


@exercise(
    hint="""
    w_i = 1 / 10000 ** (2i / d) for i = 0 .. d/2 - 1; for row t and pair i: theta = positions[t] * w_i.
    new x[t, 2i]   = x[t, 2i] * cos(theta) + x[t, 2i+1] * sin(theta)
    new x[t, 2i+1] = x[t, 2i+1] * cos(theta) - x[t, 2i] * sin(theta)
    (the same 2x2 block as lesson 02's M_k, so rotating PE_0 by t gives PE_t).
    Slices x[:, 0::2] and x[:, 1::2] do all pairs at once.
    """,
    reference=_rope_solution,
    kind="practice",
    wrong=_ROPE_MISTAKES,
)
def rope_rotate(answer):
    """answer(x (T, d) float64, positions (T,) long) -> x with row t's pairs turned by positions[t] * w_i."""
    g = torch.Generator().manual_seed(fresh_seed())  # inputs drawn anew on every check
    positions = torch.tensor([0, 1, 2, 5, 40, 1000])  # (T,)
    cases = []
    for d in (2, 8, 16):
        x = torch.randn(6, d, dtype=torch.float64, generator=g)  # (T, d)
        expected = apply_rotary(x, positions)
        assert torch.allclose(expected, _rope_solution(x, positions))
        pe = sinusoidal_encoding(3, d, dtype=torch.float64)  # rotating PE_0 by t gives PE_t
        assert torch.allclose(_rope_solution(pe[:1].expand(3, d), torch.arange(3)), pe)
        cases.append(((x, positions), expected, f"x of shape (6, {d})"))
    return _compare_cases(answer, _ROPE_MISTAKES, cases, "rotated x", atol=1e-4)


# --- Exercise 4. Position interpolation for RoPE (transfer) ---------------------------------------------


def _interpolated_solution(T, train_len):
    """Positions 0..T-1 of a target window of T, times train_len / T when it exceeds training (Chen et al., 2023)."""
    positions = torch.arange(T, dtype=torch.float64)  # (T,)
    return positions * train_len / T if T > train_len else positions


def _interpolated_not_squeezed(T, train_len):
    return torch.arange(T, dtype=torch.float64)


def _interpolated_upside_down(T, train_len):
    positions = torch.arange(T, dtype=torch.float64)
    return positions * T / train_len if T > train_len else positions


def _interpolated_rounded(T, train_len):
    return _interpolated_solution(T, train_len).floor()


def _interpolated_always(T, train_len):
    return torch.arange(T, dtype=torch.float64) * train_len / T


_INTERPOLATION_MISTAKES = [
    mistake(
        "keep the positions 0..T-1 (positions the model never trained on)",
        _interpolated_not_squeezed,
        says="never trained",
    ),
    mistake("multiply by T / train_len instead of train_len / T", _interpolated_upside_down, says="T / train_len"),
    mistake("round the squeezed positions down to whole numbers", _interpolated_rounded, says="whole numbers"),
    mistake(
        "squeeze when the target window already fits in the training length", _interpolated_always, says="already fit"
    ),
]


@exercise(
    hint="""
    Positions 0, 1, ..., T - 1 of the target window. If T <= train_len there is nothing to extend: the model
    trained on all of them, keep them. Otherwise multiply each by train_len / T, so that the largest,
    (T - 1) train_len / T, stays below train_len.
    The results are fractions: RoPE turns a pair by any real angle, so do not round them.
    """,
    reference=_interpolated_solution,
    kind="transfer",
    wrong=_INTERPOLATION_MISTAKES,
)
def interpolated_positions(answer):
    """answer(T, train_len) -> (T,) RoPE positions for a target window of T: 0..T-1, times train_len / T if T > train_len."""
    rng = random.Random(fresh_seed())  # a case drawn anew on every check, after the fixed ones
    train_len = rng.randint(4, 32)
    drawn = [(rng.randint(train_len + 1, 4 * train_len), train_len), (rng.randint(2, train_len - 1), train_len)]
    cases = []
    for T, L in [(48, 16), (40, 16), (10, 16), (16, 16)] + drawn:
        expected = _interpolated_solution(T, L)
        assert expected.max() < L and (T <= L or torch.allclose(expected.diff(), torch.full((T - 1,), L / T).double()))
        cases.append(((T, L), expected, f"T={T}, train_len={L}"))
    for case in cases:  # compared in float64, to 1e-6 of the largest position: a float32 answer passes
        problem = _compare_cases(answer, _INTERPOLATION_MISTAKES, [case], "positions", atol=1e-6 * case[0][1])
        if problem:
            return problem
    return None
