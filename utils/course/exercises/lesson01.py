"""Lesson 01 exercises: a prediction per section (attention's outputs for swapped words, a gap in scaled
positions, PE(1, 0), the length of PE(pos), positions 0 and 710 in the first pair, PE against a word vector), the PE table without loops, read the
position back out of PE(t), choose the base that gives a wanted slowest wavelength, and find the closest two
positions at any width, length and base."""

import math

import numpy as np
import torch

from utils.course.exercises import compare_arrays, exercise, fresh_seed, matching_mistake, mistake, prediction_number
from utils.positional import sinusoidal_encoding

# --- prediction of section 4: the length of PE(pos) at d_model = 512 -----------------------------------

ROW_NORM_MISTAKES = [
    (
        "give every entry size 1",
        math.sqrt(512),
        "not every entry has size 1: a sine and a cosine of the same angle share one unit of squared length, "
        "sin^2 + cos^2 = 1, so each PAIR adds 1",
    ),
    ("forget the square root", 256.0, "256 is the squared length (one per pair); the length is its square root"),
    ("expect a unit vector", 1.0, "nothing normalises PE: each of the 256 pairs adds 1 to the squared length"),
    (
        "count every column once",
        512.0,
        "512 is the number of columns; the squared length adds sin^2 + cos^2 = 1 per pair, and the length "
        "is a square root",
    ),
]


@exercise(
    hint="""
    Look at PE(0) = (0, 1, 0, 1, ..., 0, 1) from section 3: what is its length? Then use
    sin^2(a) + cos^2(a) = 1 for each pair of columns (2i, 2i + 1) at any position.
    """,
    reference=16.0,
    kind="prediction",
    explain="""
    Each of the 256 pairs holds a sine and a cosine of one angle, and sin^2 + cos^2 = 1, so the squared
    length is 256 at every position and the length is sqrt(256) = 16 = sqrt(d_model / 2).
    """,
    wrong=[mistake(name, answer, says) for name, answer, says in ROW_NORM_MISTAKES],
)
def predict_row_norm(answer):
    """The length |PE(pos)| of a row of the d_model = 512 table (the same for every pos?)."""
    return _predicted(
        answer, 16.0, 0.05, ROW_NORM_MISTAKES, "the length is 16 at every position (work out |PE(0)| first)"
    )


def _predicted(answer, right, tolerance, mistakes, otherwise):
    """None when the number `answer` is within `tolerance` of `right`, else the message of the named mistake
    it is within 1% of, or `otherwise`."""
    got = prediction_number(answer)
    if math.isclose(got, right, abs_tol=tolerance):
        return None
    for _, value, says in mistakes:
        if math.isclose(got, value, rel_tol=0.01, abs_tol=1e-9):
            return f"you predicted {got:g}, the answer is {right:g}: {says}"
    return f"you predicted {got:g}: {otherwise}"


# --- prediction of section 5: positions 0 and 710 in the first pair alone ---------------------------

FIRST_PAIR_710 = 0.0  # |(sin 710, cos 710) - (sin 0, cos 0)| = |2 sin(355)| = 6.0e-5, to two decimals
FIRST_PAIR_MISTAKES = [
    (
        "expect far positions to be far apart",
        2.0,
        "2 is the most two points of the unit circle can be apart, but the first pair only sees the angle pos "
        "modulo 2 pi, and 710 = 113 x 2 pi + 0.00006: position 710 lands almost exactly where position 0 is",
    ),
    (
        "take a quarter turn",
        math.sqrt(2),
        "sqrt(2) is a quarter turn apart; 710 positions are 113 full turns of 2 pi and 0.00006 more",
    ),
    (
        "count the positions",
        710.0,
        "710 is how far apart they are in the sentence; in the first pair a position is a point on a circle of "
        "radius 1, so no two are more than 2 apart",
    ),
]


@exercise(
    hint="""
    The first pair is (sin pos, cos pos): the point at angle pos on the unit circle. It comes back after
    every 2 pi = 6.2832 positions. How many full turns is 710, and how much is left over?
    """,
    reference=FIRST_PAIR_710,
    kind="prediction",
    explain="""
    710 / (2 pi) = 113.00001: 710 positions are 113 full turns plus 0.00006, so the first pair puts
    position 710 about 0.00006 from position 0, 0.00 to two decimals. One pair cannot tell them apart; the
    slower pairs, whose wavelengths run up to 10000 x 2 pi, can.
    """,
    wrong=[mistake(name, answer, says) for name, answer, says in FIRST_PAIR_MISTAKES],
)
def predict_first_pair_distance(answer):
    """How far apart positions 0 and 710 are in the first pair (columns 0 and 1) alone, to two decimals."""
    return _predicted(
        answer,
        FIRST_PAIR_710,
        0.005,
        FIRST_PAIR_MISTAKES,
        "count the full turns of 2 pi in 710 positions and see how much is left over",
    )


# --- predictions of the other main sections --------------------------------------------------------


SHARED_OUTPUTS = 3  # of "A chases B"'s 3 unmasked-attention outputs, how many are also outputs of "B chases A"
SHARED_MISTAKES = [
    (
        "keep only the middle word",
        1,
        "'chases' stays in the middle, but A and B do not need to: each word's output depends on the SET of "
        "words, not on where they sit, so all 3 outputs reappear, reordered",
    ),
    ("expect attention to see the order", 0, "without a mask nothing in attention depends on the order"),
    ("change the swapped words only", 2, "the swapped words A and B come out unchanged too, in each other's place"),
]


@exercise(
    hint="""
    Unmasked attention gives every word a weighted average of ALL the words, with weights from dot products.
    Swap A and B: does any word's set of partners, or any dot product, change?
    """,
    reference=SHARED_OUTPUTS,
    kind="prediction",
    explain="""
    Without a mask every word attends to the same set of words with the same dot products, whatever their
    order, so all 3 output vectors of one sentence are output vectors of the other: the rows are only
    reordered.
    """,
    wrong=[mistake(name, answer, says) for name, answer, says in SHARED_MISTAKES],
)
def predict_shared_outputs(answer):
    """Of the 3 unmasked-attention outputs of "A chases B", how many are also outputs of "B chases A"?"""
    return _predicted(answer, SHARED_OUTPUTS, 0, SHARED_MISTAKES, "compare each word's partners in both sentences")


GAP_WORDS = 12.25  # a gap of 0.25 in positions scaled to [0, 1], counted in words, in a 50-word sentence
GAP_MISTAKES = [
    (
        "divide by the length",
        12.5,
        "the positions are pos / (seq_len - 1), so neighbours are 1/49 apart, not 1/50: 0.25 * 49 = 12.25",
    ),
    (
        "expect the same as in a short sentence",
        1.0,
        "0.25 is one word in the 5-word sentence (neighbours 1/4 apart), but neighbours are 1/49 apart in the "
        "50-word one",
    ),
    ("read 0.25 as a quarter of a word", 0.25, "0.25 is a fraction of the sentence, not of a word"),
]


@exercise(
    hint="""
    Scaled positions are pos / (seq_len - 1): neighbours are 1 / (seq_len - 1) apart. How many such steps fit
    in 0.25 when seq_len = 50?
    """,
    reference=GAP_WORDS,
    kind="prediction",
    explain="""
    Neighbours are 1/49 apart in a 50-word sentence, so 0.25 spans 0.25 * 49 = 12.25 words; in a 5-word
    sentence it spans exactly one word. The same number means a different distance.
    """,
    wrong=[mistake(name, answer, says) for name, answer, says in GAP_MISTAKES],
)
def predict_gap_in_words(answer):
    """How many words apart are two positions 0.25 apart, in a 50-word sentence scaled to [0, 1]?"""
    return _predicted(answer, GAP_WORDS, 0.01, GAP_MISTAKES, "count the steps of 1/49 in 0.25")


PE1_FIRST = math.sin(1.0)  # PE(1, 0) = sin(1 / 10000^0)
PE1_MISTAKES = [
    ("take the cosine", math.cos(1.0), "column 0 is the sine of the pair (column 1 is the cosine)"),
    (
        "take the slowest pair first",
        math.sin(1 / 10000 ** (510 / 512)),
        "column 0 belongs to pair i = 0, whose exponent 2i/d_model is 0: the FASTEST pair, w = 1",
    ),
    ("take position 0", 0.0, "that is PE(0, 0) = sin(0); at position 1 the angle is 1 radian"),
    ("expect 1", 1.0, "sin(1 radian) is not 1; 1 is cos(0), PE(0)'s odd columns"),
]


@exercise(
    hint="""
    Column 0 is PE(pos, 2i) with i = 0. What is 10000^(2 * 0 / d_model)? Then the angle at pos = 1 is ...
    """,
    reference=round(PE1_FIRST, 4),
    kind="prediction",
    explain="""
    Column 0 is the sine of pair i = 0, whose frequency is 1 / 10000^0 = 1 at every d_model: PE(1, 0) =
    sin(1) = 0.8415.
    """,
    wrong=[mistake(name, answer, says) for name, answer, says in PE1_MISTAKES],
)
def predict_pe1_first(answer):
    """PE(1, 0), the first entry of position 1's vector (to about 3 decimals)."""
    return _predicted(answer, PE1_FIRST, 0.002, PE1_MISTAKES, "PE(1, 0) = sin(1 / 10000^0) = sin(1)")


EMBEDDING_RATIO = 1 / math.sqrt(2)  # |PE| / |word vector| with entries of variance 1: 16 / sqrt(512)
EMBEDDING_RATIO_BAND = (0.65, 0.77)  # what 5 draws of the lesson's embedding give
EMBEDDING_MISTAKES = [
    (
        "divide by d_model",
        16 / 512,
        "16 / 512 is what nn.Embedding's N(0, 1) entries times sqrt(d_model) give; ours have variance 1 after "
        "the sqrt(d_model), so a word vector has norm about sqrt(512)",
    ),
    ("expect them equal", 1.0, "a word vector has norm about sqrt(512) = 22.6, PE has norm 16"),
    ("turn the ratio upside down", math.sqrt(2), "that is word / PE; the question asks PE / word"),
]


@exercise(
    hint="""
    PE(pos) has norm 16 (section 4). A word vector of 512 entries, each of variance 1, has squared norm about
    512. Divide.
    """,
    reference=round(EMBEDDING_RATIO, 2),
    kind="prediction",
    explain="""
    |PE| = sqrt(d_model / 2) = 16 and a word vector with unit-variance entries has norm about sqrt(d_model) =
    22.6: the ratio is about 1 / sqrt(2) = 0.71, so neither swamps the other. The lesson's draws land close
    to it, not on it: each word vector is random, so its norm is only about sqrt(d_model).
    """,
    wrong=[mistake(name, answer, says) for name, answer, says in EMBEDDING_MISTAKES],
)
def predict_pe_to_word_ratio(answer):
    """|PE(pos)| / |word vector| for embeddings with entries of variance 1 (after the sqrt(d_model))."""
    lo, hi = EMBEDDING_RATIO_BAND
    return _predicted(
        answer,
        (lo + hi) / 2,
        (hi - lo) / 2,
        EMBEDDING_MISTAKES,
        "compare 16 with the norm of 512 unit-variance numbers",
    )


# --- exercise 1, practice: the whole table, without loops -------------------------------------------


def pe_table_solution(max_len, d_model):
    pos = np.arange(max_len)[:, None]  # (max_len, 1)
    two_i = np.arange(0, d_model, 2)[None, :]  # (1, d_model/2)
    angles = pos / 10000 ** (two_i / d_model)  # (max_len, d_model/2)
    table = np.empty((max_len, d_model))  # (max_len, d_model)
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return table


def _table_halves(max_len, d_model):
    t = pe_table_solution(max_len, d_model)
    return np.concatenate([t[:, 0::2], t[:, 1::2]], axis=1)  # every sin, then every cos


def _table_from_one(max_len, d_model):
    return pe_table_solution(max_len + 1, d_model)[1:]  # positions 1..max_len


def _table_exponent_without_two(max_len, d_model):
    pos = np.arange(max_len)[:, None]
    i = np.arange(d_model // 2)[None, :]
    angles = pos / 10000 ** (i / d_model)  # forgot the 2 in 2i/d_model
    table = np.empty((max_len, d_model))
    table[:, 0::2], table[:, 1::2] = np.sin(angles), np.cos(angles)
    return table


def _table_sin_cos_swapped(max_len, d_model):
    t = pe_table_solution(max_len, d_model)
    out = np.empty_like(t)
    out[:, 0::2], out[:, 1::2] = t[:, 1::2], t[:, 0::2]
    return out


TABLE_MISTAKES = [
    mistake(
        "put every sine first, then every cosine",
        _table_halves,
        says="you put every sin first, then every cos (a layout some libraries use); the paper "
        "interleaves them: column 2i is sin, column 2i+1 is cos",
    ),
    mistake(
        "start the positions at 1",
        _table_from_one,
        says="row 0 must be position 0, PE(0) = (0, 1, 0, 1, ...): your rows start at position 1",
    ),
    mistake(
        "forget the 2 in 2i/d_model",
        _table_exponent_without_two,
        says="the exponent is 2i/d_model with i the PAIR index; you used i/d_model, so the waves are too fast",
    ),
    mistake(
        "swap sin and cos",
        _table_sin_cos_swapped,
        says="sin and cos are swapped: even columns (0, 2, ...) are sin, odd columns cos",
    ),
]
TABLE_CASES = [(7, 4), (50, 16), (128, 64)]


def _table_cases():
    """The fixed cases, then two drawn anew on every check: (max_len, d_model) with d_model even."""
    rng = np.random.default_rng(fresh_seed())
    return TABLE_CASES + [(int(rng.integers(1, 200)), 2 * int(rng.integers(1, 65))) for _ in range(2)]


@exercise(
    hint="""
    Build a column of positions (max_len, 1) and a row of exponents 2i/d_model (1, d_model/2);
    broadcasting gives every angle at once. Then write the sines into columns 0, 2, 4, ...
    (`table[:, 0::2]`) and the cosines into columns 1, 3, 5, ... (`table[:, 1::2]`).
    """,
    reference=pe_table_solution,
    wrong=TABLE_MISTAKES,
)
def pe_table(answer):
    """Check `answer(max_len, d_model)` -> the (max_len, d_model) PE table, as NumPy or torch."""
    for max_len, d_model in _table_cases():
        expected = sinusoidal_encoding(max_len, d_model).double().numpy()  # (max_len, d_model)
        got = np.asarray(answer(max_len, d_model), dtype=float)
        problem = compare_arrays(got, expected, what=f"pe_table({max_len}, {d_model})", atol=1e-5)
        if problem:
            for m in TABLE_MISTAKES:
                if compare_arrays(got, m.answer(max_len, d_model), atol=1e-5) is None:
                    return f"{problem}; {m.says}"
            return problem
    return None


# --- exercise 2, transfer: read the position back out of PE(t) -----------------------------------------


def position_from_pe_solution(pe_row):
    d_model = len(pe_row)
    i = d_model // 2 - 1  # the slowest pair: at d_model >= 8 its angle w t stays below 2 pi for t <= 5000
    w = 10000 ** (-2 * i / d_model)
    angle = math.atan2(pe_row[2 * i], pe_row[2 * i + 1]) % (2 * math.pi)  # sin in column 2i, cos in 2i+1
    return round(angle / w)


def _position_first_pair(pe_row):  # (sin t, cos t) comes back every 2 pi positions
    return round(math.atan2(pe_row[0], pe_row[1]) % (2 * math.pi))


def _position_asin(pe_row):  # asin only returns angles in [-pi/2, pi/2]
    return round(math.asin(pe_row[0]))


def _position_cos_sin_swapped(pe_row):
    d_model = len(pe_row)
    i = d_model // 2 - 1
    return round(math.atan2(pe_row[2 * i + 1], pe_row[2 * i]) / 10000 ** (-2 * i / d_model))


def _position_exponent_one(pe_row):  # the slowest pair read with w = 1/10000
    d_model = len(pe_row)
    return round(math.atan2(pe_row[d_model - 2], pe_row[d_model - 1]) * 10000)


POSITION_MISTAKES = [
    mistake(
        "read the first pair only",
        _position_first_pair,
        says="the first pair (sin t, cos t) comes back every 2 pi = 6.28 positions, so it only gives t "
        "up to a multiple of 2 pi; a slow pair does not wrap",
    ),
    mistake(
        "take asin of the first column",
        _position_asin,
        says="asin returns angles in [-pi/2, pi/2] only, and the first column wraps every 2 pi "
        "positions; use atan2(sin, cos) on a pair that does not wrap",
    ),
    mistake(
        "swap sin and cos in atan2",
        _position_cos_sin_swapped,
        says="atan2 takes (sine, cosine): column 2i is the sine, column 2i+1 the cosine",
    ),
    mistake(
        "give the slowest pair the frequency 1/10000",
        _position_exponent_one,
        says="the slowest pair is i = d_model/2 - 1, with frequency 10000^(-(d_model - 2)/d_model), "
        "a little faster than 1/10000",
    ),
]
POSITION_CASES = [(3, 16), (44, 16), (710, 64), (200, 512), (1234, 64), (5000, 16), (9, 128), (0, 8), (4999, 8)]


def _position_cases():
    """The fixed cases, then four drawn anew on every check: (t <= 5000, d_model a power of 2 from 8 to 512)."""
    rng = np.random.default_rng(fresh_seed())
    return POSITION_CASES + [(int(rng.integers(0, 5001)), 2 ** int(rng.integers(3, 10))) for _ in range(4)]


def _same_position(a, b):
    return abs(a - b) < 1e-3


@exercise(
    hint="""
    One pair (sin(w t), cos(w t)) gives the angle w t with atan2(sin, cos), but only up to a multiple of
    2 pi: take atan2(sin, cos) % (2 pi), in [0, 2 pi). Pick a pair whose angle stays below 2 pi over the
    positions you need: the slowest one, i = d_model/2 - 1, with w = 10000 ** (-2i / d_model). Then
    t = angle / w, rounded.
    """,
    reference=position_from_pe_solution,
    kind="transfer",
    wrong=POSITION_MISTAKES,
)
def position_from_pe(answer):
    """answer(pe_row) -> the position t of the row PE(t) (NumPy, float64, length d_model)."""
    cases = _position_cases()
    rows = {(t, d): sinusoidal_encoding(t + 1, d, dtype=torch.float64).numpy()[t] for t, d in cases}
    got_all = []
    for t, d in cases:
        got = answer(rows[t, d].copy())
        got_all.append(float(got))
    if all(_same_position(g, t) for g, (t, _) in zip(got_all, cases)):
        return None
    m = matching_mistake(got_all, [(rows[c],) for c in cases], POSITION_MISTAKES, _same_position)
    for (t, d), got in zip(cases, got_all):
        if not _same_position(got, t):
            where = f"for PE({t}) at d_model = {d} you returned {got:g}"
            return f"{where}: {m.says}" if m else where
    return None


# --- exercise 3, transfer: the base that gives a wanted slowest wavelength ----------------------------


def base_for_wavelength_solution(d_model, longest):
    # Pair i has wavelength 2 pi * base^(2i/d_model); the slowest, i = d_model/2 - 1, has exponent
    # (d_model - 2)/d_model. Solve 2 pi * base^((d_model - 2)/d_model) = longest for base.
    return (longest / (2 * math.pi)) ** (d_model / (d_model - 2))


def _base_without_two_pi(d_model, longest):  # 1/w taken as the wavelength
    return longest ** (d_model / (d_model - 2))


def _base_exponent_one(d_model, longest):  # the paper's "up to 10000 * 2 pi" read as exact
    return longest / (2 * math.pi)


def _base_exponent_upside_down(d_model, longest):
    return (longest / (2 * math.pi)) ** ((d_model - 2) / d_model)


BASE_MISTAKES = [
    mistake(
        "forget the 2 pi", _base_without_two_pi, says="a wave sin(w pos) repeats every 2 pi / w positions, not 1 / w"
    ),
    mistake(
        "give the slowest pair the exponent 1",
        _base_exponent_one,
        says="the slowest pair is i = d_model/2 - 1, so its wavelength is 2 pi * base^((d_model - 2)/"
        "d_model); 2 pi * base is a limit no pair reaches",
    ),
    mistake(
        "turn the exponent upside down",
        _base_exponent_upside_down,
        says="from 2 pi * base^e = longest, base = (longest / 2 pi)^(1/e) with e = (d_model - 2)/d_model",
    ),
]
BASE_CASES = [(512, 2 * math.pi * 10000 ** (510 / 512)), (64, 1000.0), (16, 100.0), (4, 50.0), (128, 5e5)]


def _base_cases():
    """The fixed cases, then three drawn anew on every check: an even d_model from 4 to 1024, and a
    longest wavelength from 20 to 10^6 positions (log-uniform)."""
    rng = np.random.default_rng(fresh_seed())
    return BASE_CASES + [(2 * int(rng.integers(2, 513)), float(10 ** rng.uniform(1.3, 6))) for _ in range(3)]


def _same_base(a, b):
    return math.isclose(a, b, rel_tol=1e-6)


@exercise(
    hint="""
    Pair i has angular frequency w_i = base ** (-2i / d_model), so its wavelength is 2 pi / w_i =
    2 pi * base ** (2i / d_model). The slowest pair is the last one, i = d_model/2 - 1. Set its wavelength
    equal to `longest` and solve for base.
    """,
    reference=base_for_wavelength_solution,
    kind="transfer",
    wrong=BASE_MISTAKES,
)
def base_for_wavelength(answer):
    """answer(d_model, longest) -> the base whose slowest pair has a wavelength of `longest` positions."""
    cases = _base_cases()
    got_all = [float(answer(d, longest)) for d, longest in cases]
    expected = [base_for_wavelength_solution(*case) for case in cases]
    if all(_same_base(g, e) for g, e in zip(got_all, expected)):
        return None
    m = matching_mistake(got_all, cases, BASE_MISTAKES, _same_base)
    for (d, longest), got, exp in zip(cases, got_all, expected):
        if not _same_base(got, exp):
            slowest = 2 * math.pi * got ** ((d - 2) / d) if got > 0 else float("nan")
            where = (
                f"for d_model = {d}, longest = {longest:g}: your base {got:.6g} gives a slowest "
                f"wavelength of {slowest:.6g} positions (expected base {exp:.6g})"
            )
            return f"{where}; {m.says}" if m else where
    return None


# --- exercise 4, transfer: the closest two positions, at any width, length and base ----------------


def closest_offset_solution(d_model, max_len, base=10000.0):
    # ||PE(t) - PE(t + k)||^2 = d_model - 2 * sum_i cos(w_i k) depends on the offset k only (section 4),
    # so one distance per offset k = 1 .. max_len - 1 covers every pair; the closest pair is the smallest.
    w = base ** (-np.arange(0, d_model, 2) / d_model)  # (d_model/2,) w_i = base^(-2i/d_model)
    k = np.arange(1, max_len)  # (max_len - 1,) every offset
    squared = d_model - 2 * np.cos(k[:, None] * w).sum(axis=1)  # (max_len - 1,)
    return int(k[np.argmin(squared)])


def _closest_neighbours(d_model, max_len, base=10000.0):  # the lesson's widths made it look like a rule
    return 1


def _closest_index(d_model, max_len, base=10000.0):  # argmin's index, not the offset it stands for
    return closest_offset_solution(d_model, max_len, base) - 1


def _closest_exponent_without_two(d_model, max_len, base=10000.0):  # w_i = base^(-i/d_model), i < d_model/2
    w = base ** (-np.arange(d_model // 2) / d_model)
    k = np.arange(1, max_len)
    return int(k[np.argmin(-np.cos(k[:, None] * w).sum(axis=1))])


def _closest_first_pair(d_model, max_len, base=10000.0):  # only (sin k, cos k) compared
    k = np.arange(1, max_len)
    return int(k[np.argmin(np.abs(np.sin(k / 2)))])


CLOSEST_MISTAKES = [
    mistake(
        "assume neighbours are always closest",
        _closest_neighbours,
        says="at d_model = 16 to 1024 and base 10000 the closest pair were neighbours, but not at small widths "
        "or small bases: compute every offset's distance and take the smallest",
    ),
    mistake(
        "return argmin's index",
        _closest_index,
        says="index j of the distances over offsets 1, 2, ... stands for offset j + 1",
    ),
    mistake(
        "use the exponent i/d_model",
        _closest_exponent_without_two,
        says="pair i's frequency is base^(-2i/d_model): the exponent has 2i, as in the formula",
    ),
    mistake(
        "compare only the first pair",
        _closest_first_pair,
        says="the first pair (sin k, cos k) nearly returns to (0, 1) at k = 44 or 710; the slower pairs keep "
        "those positions apart: sum over all d_model/2 pairs",
    ),
]
CLOSEST_CASES = [(512, 1000, 10000.0), (16, 1000, 10000.0), (2, 100, 10000.0), (2, 1000, 10000.0), (6, 500, 10000.0)]
CLOSEST_CASES += [(16, 800, 10.0), (64, 300, 100.0), (8, 1500, 1000.0), (32, 1200, 10000.0)]


def _closest_cases():
    """The fixed cases, then three drawn anew on every check: an even d_model from 2 to 64, max_len from 20
    to 1500 and a base from 10 to 10^5 (log-uniform)."""
    rng = np.random.default_rng(fresh_seed())
    drawn = [
        (2 * int(rng.integers(1, 33)), int(rng.integers(20, 1501)), float(10 ** rng.uniform(1, 5))) for _ in range(3)
    ]
    return CLOSEST_CASES + drawn


def _distance(d_model, max_len, base, k):
    """||PE(0) - PE(k)|| from the table itself, or None when k is no offset of max_len positions."""
    if not isinstance(k, (int, np.integer)) or not 1 <= k < max_len:
        return None
    table = sinusoidal_encoding(k + 1, d_model, base=base, dtype=torch.float64)  # (k + 1, d_model)
    return (table[k] - table[0]).norm().item()


def _closest_by_brute_force(d_model, max_len, base):
    """The smallest distance between any two of max_len positions, from every pair of rows of the table."""
    table = sinusoidal_encoding(max_len, d_model, base=base, dtype=torch.float64)  # (max_len, d_model)
    distances = torch.cdist(table, table)  # (max_len, max_len)
    t, s = torch.triu_indices(max_len, max_len, offset=1)  # every pair t < s
    return distances[t, s].min().item()


@exercise(
    hint="""
    Section 4's shortcut works at any width and base: ||PE(t) - PE(t + k)||^2 = d_model - 2 * sum_i cos(w_i k)
    with w_i = base ** (-2i / d_model), i = 0 .. d_model/2 - 1. Compute it for every offset k = 1 .. max_len - 1
    and return the k with the smallest value (as an int).
    """,
    reference=closest_offset_solution,
    kind="transfer",
    wrong=CLOSEST_MISTAKES,
)
def closest_offset(answer):
    """answer(d_model, max_len, base) -> the offset k of the closest two of positions 0 .. max_len - 1."""
    cases = _closest_cases()
    got_all = [answer(*case) for case in cases]
    got_all = [
        int(g) if isinstance(g, (int, np.integer)) or (isinstance(g, float) and g.is_integer()) else g for g in got_all
    ]
    problems = []
    for (d, max_len, base), got in zip(cases, got_all):
        smallest = _closest_by_brute_force(d, max_len, base)
        mine = _distance(d, max_len, base, got)
        if mine is None or not math.isclose(mine, smallest, rel_tol=1e-9, abs_tol=1e-9):
            shown = "no offset" if mine is None else f"{mine:.6f} apart"
            problems.append(
                f"for d_model = {d}, max_len = {max_len}, base = {base:g} you answered k = {got!r} ({shown}); the "
                f"closest two positions are {smallest:.6f} apart"
            )
    if not problems:
        return None
    m = matching_mistake(got_all, cases, CLOSEST_MISTAKES, lambda a, b: a == b)
    return f"{problems[0]}: {m.says}" if m else problems[0]
