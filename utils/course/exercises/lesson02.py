"""Exercises of lesson 02 (dot-product identities): a prediction per section (the squared length of PE_t,
the corner entry of M_5, f(k) at long range, the share of nearly perpendicular pairs, Var(q . k), the mean
self-score, overflowing softmax), then recover a signed offset, choose a temperature, a stable softmax,
the score scale for queries and keys of any spread."""

import math
import random

import numpy as np
import torch

from utils.course.exercises import (
    band_mistakes,
    compare_arrays,
    exercise,
    fresh_seed,
    matching_mistake,
    mistake,
    prediction_in_band,
    prediction_number,
)
from utils.positional import sinusoidal_encoding

# --- 1. prediction: the share of random pairs within 5 degrees of perpendicular, d = 512 ----------

NEAR_90 = 0.95  # 2 * Phi(sqrt(512) * sin(5 deg)) - 1 = 0.951 for Gaussian directions
NEAR_90_BAND = (0.90, 0.99)
NEAR_90_MISTAKES = [  # (name, a typical answer, the range it explains, what the message says)
    (
        "spread the angles evenly, as in the plane",
        10 / 180,
        (0.0, 0.15),
        "in the plane, angles are spread evenly and 10 of 180 degrees lie within 5 of 90; in 512 dimensions "
        "the cosine has standard deviation 1/sqrt(512) = 0.044, so angles crowd around 90 degrees",
    ),
    (
        "guess one standard deviation",
        0.68,
        (0.6, 0.75),
        "5 degrees is not one standard deviation: |cos| < sin(5 deg) = 0.087 is about 2 standard deviations of 0.044",
    ),
    (
        "guess half of them",
        0.5,
        (0.3, 0.6),
        "half is far too few: the cosine's standard deviation is 1/sqrt(512) = 0.044, half the 0.087 allowed",
    ),
    (
        "say every pair",
        1.0,
        (0.99 + 1e-9, 1.0),
        "not all: about 1 pair in 20 lies further than 5 degrees from perpendicular (|cos| above 2 standard "
        "deviations)",
    ),
]


@exercise(
    hint="""
    The cosine of two random directions in d dimensions has mean 0 and standard deviation 1/sqrt(d).
    Within 5 degrees of perpendicular means |cos| < sin(5 degrees). How many standard deviations is that at
    d = 512, and what share of a bell curve lies within that many?
    """,
    reference=NEAR_90,
    kind="prediction",
    explain="""
    The cosine of two random directions has standard deviation 1/sqrt(512) = 0.044; within 5 degrees of
    perpendicular means |cos| < sin(5 deg) = 0.087, about 2 standard deviations, and a bell curve holds
    about 95% of its mass within 2 standard deviations.
    """,
    wrong=band_mistakes(NEAR_90_MISTAKES),
)
def predict_near_perpendicular(answer):
    """The share (0 to 1) of random pairs in 512 dimensions within 5 degrees of perpendicular."""
    share = prediction_number(answer)
    if share > 1 or share < 0:
        return f"you wrote {share:g}: write a share between 0 and 1 (half is 0.5)"
    return prediction_in_band(share, NEAR_90, NEAR_90_BAND, NEAR_90_MISTAKES, "the share")


# --- predictions of the other sections: a number, accepted within a band, with named wrong answers ---


PE_LENGTH_MISSES = [
    ("count one per column", 128, (100, 200), "each PAIR of columns gives sin^2 + cos^2 = 1, not each column"),
    ("take PE_t as a unit vector", 1, (0.5, 2), "PE_t is not normalised: each of the 64 pairs adds 1"),
    ("give the length, not its square", 8, (7, 12), "8 is |PE_t|; the question asks for |PE_t|^2"),
]


@exercise(
    hint="Pair the columns: sin^2(w_i t) + cos^2(w_i t) = 1 for every pair i. How many pairs at d_model = 128?",
    reference=64,
    kind="prediction",
    explain="Each of the d_model/2 = 64 pairs contributes sin^2 + cos^2 = 1, so |PE_t|^2 = 64 for every t.",
    wrong=band_mistakes(PE_LENGTH_MISSES),
)
def predict_pe_length_squared(answer):
    """|PE_t|^2 at d_model = 128 (the same for every position t)."""
    return prediction_in_band(answer, 64, (63.5, 64.5), PE_LENGTH_MISSES, "|PE_t|^2")


ROTATION_CORNER = math.cos(5.0)  # M_5[0, 0] at d_model = 128: pair 0 turns by omega_0 * 5 = 5 radians
ROTATION_MISSES = [
    (
        "read the angle in degrees, or expect a small turn",
        math.cos(math.radians(5)),
        (0.95, 1.0),
        "omega_0 = 1, so pair 0 turns by 5 RADIANS (about 286 degrees), not 5 degrees: far from the identity",
    ),
    ("take the sine", math.sin(5.0), (-1.0, -0.9), "sin(5) = -0.96 sits off the diagonal; the corner holds cos(5)"),
    ("put zero on the diagonal", 0, (-0.1, 0.1), "a rotation block is [[cos, -sin], [sin, cos]]: its diagonal is cos"),
    (
        "give the angle, not the entry",
        5,
        (1.001, 400),
        "5 (radians) is the angle; the entry is its cosine, within [-1, 1]",
    ),
]


@exercise(
    hint="M_5's first 2x2 block rotates pair 0 by omega_0 * 5. What is omega_0 = 1 / 10000^0, and which entry "
    "of [[cos b, -sin b], [sin b, cos b]] is the top-left one? (Angles in radians.)",
    reference=ROTATION_CORNER,
    kind="prediction",
    explain="Pair 0 has omega_0 = 1, so it turns by b = 5 radians (286 degrees); the top-left entry is cos(5) = 0.284.",
    wrong=band_mistakes(ROTATION_MISSES),
)
def predict_rotation_corner(answer):
    """The top-left entry M_5[0, 0] of M_5 at d_model = 128."""
    return prediction_in_band(answer, round(ROTATION_CORNER, 3), (0.27, 0.30), ROTATION_MISSES, "M_5[0, 0]")


LONG_RANGE = 0.32  # max of f(k) / f(0) over 1000 <= k <= 10000 at d_model = 128 (the lesson asserts it)
LONG_RANGE_AT = 1030  # where that maximum is (the lesson asserts it)
LONG_RANGE_MISSES = [
    (
        "expect the periodic waves to come back",
        1.0,
        (0.6, 1.0),
        "each pair is periodic, but the 64 wavelengths share no period: the 63 faster pairs are never all "
        "in phase at once within the range (at d_model = 8, four pairs do line up, near k = 2000 pi)",
    ),
    (
        "expect it to decay to nothing",
        0.0,
        (-0.1, 0.15),
        "f has not finished decaying at k = 1000: the range's largest value, about a third of f(0), is at its "
        f"start (k = {LONG_RANGE_AT}), and the fast pairs keep f swinging after that (from k = 5000 to 10,000 the "
        "highest peak is about 0.2 f(0), most are below 0.1)",
    ),
    (
        "expect it to turn negative",
        -0.5,
        (-1.0, -0.1),
        "the question asks for the largest value, and f's peaks are positive",
    ),
    (
        "guess about half",
        0.5,
        (0.45, 0.6),
        "f is already below half of f(0) at k = 200 (section 3's plot), and past k = 1000 no peak climbs back "
        f"that high: the 63 faster pairs are never in phase at once; the largest, at k = {LONG_RANGE_AT}, is about a third",
    ),
    (
        "take the later peaks' level",
        0.18,
        (0.15, 0.2),
        "from k = 5000 to 10,000 the highest peak is about 0.2 f(0) (most are below 0.1), but the largest sits at "
        "the start of the range, "
        f"k = {LONG_RANGE_AT}, where f is still decaying from f(0): about a third",
    ),
]


@exercise(
    hint="f(k) is a sum of 64 cosines with wavelengths from 6.3 to 54,410 positions. Can they all be near "
    "their peak at once? And can they all cancel everywhere?",
    reference=LONG_RANGE,
    kind="prediction",
    explain=f"""
    The 64 pairs never all line up again within 10,000 positions: their wavelengths share no period, and
    getting the 63 faster pairs in phase at once is what fails (the slowest pair alone would cost little).
    So f never returns near f(0). The largest value in the range, about a third of f(0), sits at its
    start (k = {LONG_RANGE_AT}), where f is still decaying; later peaks within this range are lower (from
    k = 5000 to 10,000 the highest is about 0.2 f(0), most are below 0.1), but the fast pairs keep f swinging,
    so it never settles at 0.
    """,
    wrong=band_mistakes(LONG_RANGE_MISSES),
)
def predict_long_range(answer):
    """The largest f(k) / f(0) over 1000 <= k <= 10000, d_model = 128."""
    return prediction_in_band(answer, LONG_RANGE, (0.2, 0.45), LONG_RANGE_MISSES, "the largest f(k) / f(0)")


SCORE_VARIANCE_MISSES = [
    ("give the standard deviation", 8, (6, 12), "8 = sqrt(64) is the standard deviation of q.k; its variance is 64"),
    ("give the scaled score's variance", 1, (0.5, 2.5), "1 is the variance AFTER dividing by sqrt(d_k); q.k has 64"),
    ("expect the mean, 0", 0, (-0.5, 0.5), "q.k has mean 0, but it spreads: each of the 64 products adds variance 1"),
    ("square d_k", 64**2, (1000, 10000), "the 64 products are independent, so their variances add: 64, not 64^2"),
]


@exercise(
    hint="q . k = sum_j q_j k_j. What is the variance of one product q_j k_j, and what happens to variances "
    "when independent terms are added?",
    reference=64,
    kind="prediction",
    explain="""
    Each product q_j k_j has mean 0 and variance E[q_j^2] E[k_j^2] = 1, and the 64 products are independent, so
    their variances add: Var(q . k) = d_k = 64, a standard deviation of 8. Dividing by sqrt(d_k) = 8 brings it
    back to 1.
    """,
    wrong=band_mistakes(SCORE_VARIANCE_MISSES),
)
def predict_score_variance(answer):
    """Var(q . k) for independent q, k with 64 independent entries of mean 0 and variance 1."""
    return prediction_in_band(answer, 64, (60, 68), SCORE_VARIANCE_MISSES, "Var(q . k)")


SELF_SCORE_MISSES = [
    (
        "apply the independent q, k result",
        0,
        (-0.5, 0.5),
        "with q = k = x the products x_j x_j = x_j^2 are never negative: their mean is 1, not 0",
    ),
    ("take the standard deviation", 8, (6, 12), "8 = sqrt(64) is the spread of q.k for INDEPENDENT q, k, not a mean"),
    ("use the scaled variance", 1, (0.5, 2.5), "1 is the variance of q.k / sqrt(d_k) for independent q, k"),
]


@exercise(
    hint="x . x = sum_j x_j^2. What is the mean of x_j^2 when x_j has mean 0 and variance 1?",
    reference=64,
    kind="prediction",
    explain="""
    x . x = |x|^2 = sum of 64 squares, each with mean E[x_j^2] = Var(x_j) = 1: the mean is d_k = 64, not 0.
    The argument for Var(q . k) = d_k needs q and k independent, which fails when they are the same vector.
    """,
    wrong=band_mistakes(SELF_SCORE_MISSES),
)
def predict_self_score_mean(answer):
    """The mean of x . x for x with 64 independent N(0, 1) entries."""
    return prediction_in_band(answer, 64, (60, 68), SELF_SCORE_MISSES, "the mean of x . x")


OVERFLOW_MISSES = [
    ("trust shift invariance", 0, (0, 0), "on paper softmax(x + 1000) = softmax(x), but float32 exp overflows"),
    ("think only the largest overflows", 1, (1, 1), "exp overflows above about 88.7, so all four exp(x) are inf"),
    ("think the largest survives", 3, (2, 3), "inf / inf is nan for the largest too: all four weights"),
]


@exercise(
    hint="float32 holds numbers up to about 3.4e38 = e^88.7. What are exp(1000.5), exp(1003), and inf / inf?",
    reference=4,
    kind="prediction",
    explain="Every exp(x_i + 1000) overflows to inf in float32, the sum is inf, and inf / inf = nan: all 4.",
    wrong=band_mistakes(OVERFLOW_MISSES),
)
def predict_overflow_nans(answer):
    """How many of the four weights exp(x) / sum(exp(x)) returns as nan for x = [1001, 1002, 1003, 1000.5]."""
    return prediction_in_band(answer, 4, (4, 4), OVERFLOW_MISSES, "the number of nan weights")


# --- 2. transfer: the signed offset from PE_t and PE_{t+k} ---------------------------------------


def _signed_offset_solution(pe_t, pe_s):
    d_model = len(pe_t)
    i = d_model // 2 - 1  # the slowest pair: its angle w k stays within (-pi, pi) for the offsets we need
    w = 10000 ** (-2 * i / d_model)
    s_t, c_t, s_s, c_s = pe_t[2 * i], pe_t[2 * i + 1], pe_s[2 * i], pe_s[2 * i + 1]
    cos_wk = s_t * s_s + c_t * c_s  # cos(w (t + k) - w t): the pair's share of the dot product
    sin_wk = s_s * c_t - c_s * s_t  # sin(w (t + k) - w t): minus the pair's J form term, odd in k
    return round(math.atan2(sin_wk, cos_wk) / w)


def _offset_from_dot_only(pe_t, pe_s):  # acos of the slowest pair's dot product: |k|, sign lost
    d_model = len(pe_t)
    i = d_model // 2 - 1
    cos_wk = pe_t[2 * i] * pe_s[2 * i] + pe_t[2 * i + 1] * pe_s[2 * i + 1]
    return round(math.acos(max(-1.0, min(1.0, cos_wk))) / 10000 ** (-2 * i / d_model))


def _offset_from_pair(pe_t, pe_s, i):  # the reference's reading, from pair i instead of the slowest
    s_t, c_t, s_s, c_s = pe_t[2 * i], pe_t[2 * i + 1], pe_s[2 * i], pe_s[2 * i + 1]
    return round(math.atan2(s_s * c_t - c_s * s_t, s_t * s_s + c_t * c_s) / 10000 ** (-2 * i / len(pe_t)))


def _offset_fastest_pair(pe_t, pe_s):  # the fastest pair (w = 1) wraps every 2 pi positions
    return _offset_from_pair(pe_t, pe_s, 0)


def _offset_sign_flipped(pe_t, pe_s):  # the angle from PE_{t+k} to PE_t: -k
    return -_signed_offset_solution(pe_t, pe_s)


def _offset_second_slowest_pair(pe_t, pe_s):  # the next-to-slowest pair: at d_model = 8, w = 0.01 wraps past |k| = 314
    return _offset_from_pair(pe_t, pe_s, len(pe_t) // 2 - 2)


def _offset_whole_J_sign(pe_t, pe_s):  # the sign of the whole J form, -sum_i sin(w_i k), times |k|
    d_model = len(pe_t)
    whole = sum(pe_t[2 * i] * pe_s[2 * i + 1] - pe_t[2 * i + 1] * pe_s[2 * i] for i in range(d_model // 2))
    return -math.copysign(1.0, whole) * _offset_from_dot_only(pe_t, pe_s) if whole != 0 else 0


OFFSET_MISTAKES = [
    mistake(
        "use the dot product only",
        _offset_from_dot_only,
        says="the dot product is even in k (cos(w k) = cos(-w k)): it gives |k| and loses the sign; the "
        "odd part, sin(w k), from the J form, tells k from -k",
    ),
    mistake(
        "read the fastest pair",
        _offset_fastest_pair,
        says="the fastest pair (w = 1) turns by k radians, which wraps every 2 pi = 6.28 positions; a slow "
        "pair does not wrap",
    ),
    mistake(
        "measure the angle the wrong way round",
        _offset_sign_flipped,
        says="your sign is flipped: k > 0 means PE_{t+k} is LATER than PE_t, so measure the angle from "
        "PE_t to PE_{t+k}",
    ),
    mistake(
        "read a pair faster than the slowest",
        _offset_second_slowest_pair,
        says="a pair turns by w_i k radians and wraps once |w_i k| > pi; at d_model = 8 only the slowest pair "
        "(w = 10000^(-6/8)) stays within pi up to |k| = 2000",
    ),
    mistake(
        "take the sign of the whole J form",
        _offset_whole_J_sign,
        says="the whole J form, -sum_i sin(w_i k), is odd in k but its fast pairs wrap: for large |k| the sum "
        "can take either sign; read the sign from one slow pair, where |w_i k| < pi",
    ),
]
OFFSET_CASES = [
    (10, 5, 16),
    (100, -5, 64),
    (0, 37, 128),
    (300, -150, 64),
    (3, 2000, 16),
    (1500, -1234, 512),
    (7, 0, 8),
    (0, 35, 16),  # from here the whole J form has the wrong sign: only a slow pair gets these right
    (0, 1745, 16),
    (3, 1739, 128),
    (0, 1000, 8),  # at d_model = 8 every pair but the slowest wraps by |k| = 1000: only the slowest gets these right
    (2000, -1500, 8),
]


def _same_offset(a, b):
    return abs(a - b) < 1e-3


@exercise(
    hint="""
    PE_{t+k} is PE_t rotated by the angle w_i k in every pair i. For one pair, the dot product of the two
    (sin, cos) rows gives cos(w_i k), and sin_2 cos_1 - cos_2 sin_1 (minus that pair's J form term, see
    Going further) gives sin(w_i k); atan2 of the two is w_i k, within (-pi, pi]. Use a slow pair, so that
    w_i k does not wrap.
    """,
    reference=_signed_offset_solution,
    kind="transfer",
    wrong=OFFSET_MISTAKES,
)
def signed_offset(answer):
    """answer(pe_t, pe_t_plus_k) -> the signed offset k between two rows of the PE table (NumPy, float64)."""
    rng = random.Random(fresh_seed())  # two cases drawn anew on every check, after the fixed ones
    drawn = [(t, rng.randint(-t, 2000), 2 ** rng.randint(4, 9)) for t in (rng.randint(0, 1500), rng.randint(0, 1500))]
    cases = OFFSET_CASES + drawn
    got_all, args = [], []
    for t, k, d_model in cases:
        pe = sinusoidal_encoding(max(t, t + k) + 1, d_model, dtype=torch.float64).numpy()  # (rows, d_model)
        args.append((pe[t].copy(), pe[t + k].copy()))
        got_all.append(float(answer(pe[t].copy(), pe[t + k].copy())))
    if all(_same_offset(g, k) for g, (_, k, _) in zip(got_all, cases)):
        return None
    m = matching_mistake(got_all, args, OFFSET_MISTAKES, _same_offset)
    for (t, k, d_model), got in zip(cases, got_all):
        if not _same_offset(got, k):
            where = f"for PE_{t} and PE_{t + k} (d_model = {d_model}) you returned {got:g}, expected k = {k}"
            return f"{where}: {m.says}" if m else where
    return None


# --- 3. transfer: the temperature that gives the arg-max a wanted weight --------------------------


def _temperature_solution(x, target):
    # The arg-max's weight, 1 / sum_j exp((x_j - x_max) / T), falls from 1 towards 1/n as T grows:
    # bisect on log T until it equals the target.
    z = torch.as_tensor(x, dtype=torch.float64)
    z = z - z.max()  # (n,) every entry <= 0, the maximum 0
    lo, hi = 1e-6, 1e6
    for _ in range(200):
        T = math.sqrt(lo * hi)
        weight = 1 / torch.exp(z / T).sum().item()
        lo, hi = (T, hi) if weight > target else (lo, T)
    return math.sqrt(lo * hi)


def _temperature_two_scores(x, target):  # gap / log-odds: right for two scores, ignores the others
    top2 = torch.as_tensor(x, dtype=torch.float64).topk(2).values
    return float(top2[0] - top2[1]) / math.log(target / (1 - target))


def _temperature_inverted(x, target):  # 1/T: the scores multiplied by the temperature
    return 1 / _temperature_solution(x, target)


def _temperature_log10(x, target):  # the two-score formula with log10 instead of the natural log
    top2 = torch.as_tensor(x, dtype=torch.float64).topk(2).values
    return float(top2[0] - top2[1]) / math.log10(target / (1 - target))


TEMPERATURE_MISTAKES = [
    mistake(
        "use the gap to the runner-up only",
        _temperature_two_scores,
        says="every other key takes weight too: the arg-max gets 1 / sum_j exp((x_j - x_max) / T), not "
        "only 1 / (1 + exp(-gap / T))",
    ),
    mistake(
        "multiply the scores by the temperature",
        _temperature_inverted,
        says="softmax(x / T) DIVIDES the scores by T; your T works for softmax(x * T)",
    ),
    mistake(
        "take log10 for the log-odds",
        _temperature_log10,
        says="softmax uses exp, so its inverse is the natural log (math.log), not log10",
    ),
]
TEMPERATURE_CASES = [
    ([1.0, 3.0], 0.9),
    ([1.0, 3.0, 2.5, 0.0, 2.0], 0.6),
    ([1.0, 3.0, 2.5, 0.0, 2.0], 0.99),
    ([0.2, -1.0, 0.5, 0.4, 0.1, 0.0, -0.3, 0.45], 0.7),
    ([10.0, 0.0, 0.0, 0.0], 0.95),
]


def _top_weight(x, T):
    z = torch.as_tensor(x, dtype=torch.float64)
    return torch.softmax(z / T, dim=-1).max().item()


def _same_temperature(a, b):
    return math.isclose(a, b, rel_tol=1e-3)


@exercise(
    hint="""
    The arg-max's weight, softmax(x / T)[argmax], falls from 1 (T -> 0) towards 1/n (T -> infinity), always
    downwards. With two scores it is 1 / (1 + exp(-gap / T)), which you can solve by hand; with more, search:
    bisect T between a tiny and a huge value (on log T), keeping the half where the weight crosses the target.
    """,
    reference=_temperature_solution,
    kind="transfer",
    wrong=TEMPERATURE_MISTAKES,
)
def temperature_for_weight(answer):
    """answer(x, target) -> the temperature T > 0 at which softmax(x / T) gives the largest score `target`."""
    got_all = [float(answer(torch.tensor(x, dtype=torch.float64), target)) for x, target in TEMPERATURE_CASES]
    ok = [T > 0 and abs(_top_weight(x, T) - target) < 1e-4 for T, (x, target) in zip(got_all, TEMPERATURE_CASES)]
    if all(ok):
        return None
    m = matching_mistake(got_all, TEMPERATURE_CASES, TEMPERATURE_MISTAKES, _same_temperature)
    for T, (x, target), good in zip(got_all, TEMPERATURE_CASES, ok):
        if not good:
            if not T > 0:
                return f"for x = {x} and target {target} you returned T = {T:g}: a temperature must be positive"
            where = (
                f"for x = {x}: at your T = {T:.4g} the largest score gets weight {_top_weight(x, T):.4f}, not {target}"
            )
            return f"{where}; {m.says}" if m else where
    return None


# --- 4. practice: a softmax that never overflows ---------------------------------------------------


def _softmax_solution(x, temperature=1.0):
    z = x / temperature  # (..., n)
    z = z - z.max(dim=-1, keepdim=True).values  # softmax(z - c) = softmax(z): exp never overflows
    e = torch.exp(z)  # (..., n)
    return e / e.sum(dim=-1, keepdim=True)


def _softmax_naive(x, temperature=1.0):  # exp(1000) overflows to inf, inf / inf = nan
    e = torch.exp(x / temperature)
    return e / e.sum(dim=-1, keepdim=True)


def _softmax_times_temperature(x, temperature=1.0):  # multiplies where it should divide
    z = x * temperature
    e = torch.exp(z - z.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


def _softmax_wrong_axis(x, temperature=1.0):  # normalises columns instead of the last axis
    z = x / temperature
    e = torch.exp(z - z.max(dim=0, keepdim=True).values)
    return e / e.sum(dim=0, keepdim=True)


SOFTMAX_MISTAKES = [
    mistake(
        "skip the shift",
        _softmax_naive,
        says="your softmax returned nan: exp(1000) overflows to inf and inf / inf = nan; subtract the maximum first",
    ),
    mistake(
        "multiply by the temperature",
        _softmax_times_temperature,
        says="softmax(x / T) divides the scores by the temperature; you multiplied",
    ),
    mistake(
        "normalise over the first axis",
        _softmax_wrong_axis,
        says="each ROW must sum to 1: take the max and the sum over the last axis (dim=-1)",
    ),
]


@exercise(
    hint="""
    softmax(x / T): divide by the temperature T, subtract the row maximum (allowed, because
    softmax(z + c) = softmax(z)), exponentiate, divide by the sum over the LAST axis (dim=-1).
    """,
    reference=_softmax_solution,
    wrong=SOFTMAX_MISTAKES,
)
def stable_softmax(answer):
    """answer(x, temperature) must equal torch.softmax(x / temperature, dim=-1), also for huge x."""
    gen = torch.Generator().manual_seed(fresh_seed())  # inputs drawn anew on every check
    cases = [
        ("x = [1, 2, 3] at temperature 1", torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64), 1.0),
        ("a (3, 5) batch of rows at temperature 2", torch.randn(3, 5, generator=gen, dtype=torch.float64) * 4, 2.0),
        ("x = [1, 2, 3] at temperature 0.5", torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64), 0.5),
        ("x = [1000, 1001, 1002] at temperature 1", torch.tensor([1000.0, 1001.0, 1002.0], dtype=torch.float64), 1.0),
        ("x = [-1000, 0, 5] at temperature 0.01", torch.tensor([-1000.0, 0.0, 5.0], dtype=torch.float64), 0.01),
    ]
    for name, x, temperature in cases:
        got = answer(x.clone(), temperature)
        got = np.asarray(got.detach() if isinstance(got, torch.Tensor) else got, dtype=float)
        if np.isnan(got).any():
            return f"softmax of {name}: {SOFTMAX_MISTAKES[0].says}"
        miss = compare_arrays(got, torch.softmax(x / temperature, dim=-1), what=f"softmax of {name}", atol=1e-6)
        if miss:
            for m in SOFTMAX_MISTAKES[1:]:
                if compare_arrays(got, m.answer(x.clone(), temperature), atol=1e-6) is None:
                    return f"{miss}: {m.says}"
            return miss
    return None


# --- 5. transfer: the scale that gives scores variance 1 when q and k are not unit-variance ---------


def _scale_solution(d_k, std_q, std_k):
    # Var(q_j k_j) = E[q_j^2] E[k_j^2] = std_q^2 std_k^2, summed over d_k independent products
    return std_q * std_k * math.sqrt(d_k)


def _scale_keep_sqrt_dk(d_k, std_q, std_k):  # the paper's 1/sqrt(d_k), which assumes unit variances
    return math.sqrt(d_k)


def _scale_no_root(d_k, std_q, std_k):  # divides by the variance, not the standard deviation
    return std_q**2 * std_k**2 * d_k


def _scale_add_variances(d_k, std_q, std_k):  # adds the variances, as for q + k instead of q * k
    return math.sqrt(d_k * (std_q**2 + std_k**2))


SCALE_MISTAKES = [
    mistake(
        "keep the paper's sqrt(d_k)",
        _scale_keep_sqrt_dk,
        says="sqrt(d_k) assumes entries of variance 1; here each product q_j k_j has variance std_q^2 std_k^2",
    ),
    mistake(
        "divide by the variance",
        _scale_no_root,
        says="you divided by Var(q . k); to get variance 1 divide by its square root, the standard deviation",
    ),
    mistake(
        "add the variances",
        _scale_add_variances,
        says="variances add for a SUM q_j + k_j; for a product of independent q_j, k_j with mean 0 they multiply",
    ),
]
SCALE_CASES = [(64, 1.0, 1.0), (64, 2.0, 1.0), (16, 0.5, 3.0), (512, 0.1, 0.1), (1, 4.0, 0.25)]


def _same_scale(a, b):
    return math.isclose(a, b, rel_tol=1e-6)


@exercise(
    hint="""
    Redo footnote 4's argument with Var(q_j) = std_q^2 and Var(k_j) = std_k^2: what is the variance of one
    product q_j k_j (mean 0, q_j and k_j independent), of the sum of d_k of them, and what do you divide by
    to bring it to 1?
    """,
    reference=_scale_solution,
    kind="transfer",
    wrong=SCALE_MISTAKES,
)
def score_scale(answer):
    """answer(d_k, std_q, std_k) -> the number to divide q . k by so that the scores have variance 1."""
    rng = random.Random(fresh_seed())  # two cases drawn anew on every check, after the fixed ones
    drawn = [(rng.randint(2, 1024), rng.uniform(0.05, 5), rng.uniform(0.05, 5)) for _ in range(2)]
    cases = SCALE_CASES + drawn
    got_all = [float(answer(*case)) for case in cases]
    if all(_same_scale(g, _scale_solution(*case)) for g, case in zip(got_all, cases)):
        return None
    m = matching_mistake(got_all, cases, SCALE_MISTAKES, _same_scale)
    for case, got in zip(cases, got_all):
        if not _same_scale(got, _scale_solution(*case)):
            d_k, std_q, std_k = case
            if not got > 0:
                return f"for d_k = {d_k} you returned {got:g}: a scale must be positive"
            where = (
                f"for d_k = {d_k}, std_q = {std_q:.3g}, std_k = {std_k:.3g} you returned {got:.4g}; dividing by it "
                f"leaves the scores a variance of {(_scale_solution(*case) / got) ** 2:.3g}, not 1"
            )
            return f"{where}: {m.says}" if m else where
    return None
