"""Exercises of lesson 00 (why attention): predict where float32's gradient vanishes, count a stacked RNN
and a dilated convolution stack the way Table 1 counts, and measure the gradient that reaches position 0."""

import math
import random

import torch
from torch import nn

from utils.course.exercises import exercise, fresh_seed, matching_mistake, mistake, prediction_number

# --- 1. prediction: the distance at which the float32 gradient is exactly 0 -----------------------

UNDERFLOW = 131  # float64's prediction for the seed-0 RNN of the lesson (the float32 run lands within 3)
UNDERFLOW_BAND = (118, 144)  # within 10% of it: a rough estimate from the printed numbers is enough


UNDERFLOW_MISTAKES = [  # (name, a typical answer, the range it explains, what the message says)
    (
        "stop at float32's smallest normal number",
        111,
        (95, 117),
        "float32's smallest *normal* number is 2^-126; below it come the subnormals down to 2^-149, and only "
        "under those is a number exactly 0",
    ),
    (
        "stop where the norm reads 0",
        66,
        (50, 80),
        "that is where the gradient's norm reads 0 (its squares underflow below 2^-75); the gradient itself "
        "lives on until its entries fall below 2^-149",
    ),
    (
        "use float64's smallest number",
        938,
        (700, 1200),
        "2^-1074 is float64's smallest number; the question is about float32, whose smallest is 2^-149",
    ),
    (
        "shrink by ||W_hh||_2 per step",
        2148,
        (1500, 4000),
        "||W_hh||_2 = 0.95 only bounds the shrink per step; the gradient falls by the measured factor, about "
        "0.45 per step",
    ),
]


@exercise(
    hint="""
    Section 5.2 printed the gradient at n = 1 (about 1) and how much it shrinks per step (about 0.45).
    float32's smallest positive number is 2^-149, about 1.4e-45. Solve 1 * 0.45^(n - 1) = 1.4e-45 for n:
    n - 1 = log(1.4e-45) / log(0.45).
    """,
    reference=UNDERFLOW,
    kind="prediction",
    explain="""
    The gradient starts near 1 at n = 1 and shrinks by about 0.45 per step. float32 keeps numbers down to
    2^-149 = 1.4e-45, 45 orders of magnitude lower, and log10(0.45) = -0.35: about 45 / 0.35 = 130 steps.
    Float64 carries the same gradient on and crosses 2^-149 at about n = 131.
    """,
    wrong=[mistake(name, answer, says) for name, answer, _, says in UNDERFLOW_MISTAKES],
)
def predict_underflow(answer):
    """The distance n at which the float32 gradient from the loss at position n to x_0 is first exactly 0."""
    n = prediction_number(answer)
    lo, hi = UNDERFLOW_BAND
    if lo <= n <= hi:
        return None
    for _, _, (a, b), says in UNDERFLOW_MISTAKES:
        if a <= n <= b:
            return f"you predicted n = {n:g}, the gradient is exactly 0 from about n = {UNDERFLOW}: {says}"
    if n < lo:
        return (
            f"you predicted n = {n:g}: too early; the gradient is exactly 0 only from about n = {UNDERFLOW} "
            "(count the orders of magnitude from about 1 down to 2^-149 = 1.4e-45)"
        )
    return (
        f"you predicted n = {n:g}: too late; the gradient is exactly 0 from about n = {UNDERFLOW} "
        "(at about 0.45 per step it loses one order of magnitude every 3 steps)"
    )


# --- 2. transfer: a stacked RNN, counted like Table 1 ----------------------------------------------


def _stacked_rnn_solution(n, num_layers):
    # Cell (l, t) needs cell (l - 1, t) below it and cell (l, t - 1) before it: n * num_layers runs.
    # They run in diagonal waves, (l, t) in wave l + t, so the longest chain is n + num_layers - 1 runs,
    # and the shortest route from x_0 to the top output at n - 1 climbs num_layers - 1 cells and walks
    # n - 1 to the right after the first cell: n + num_layers - 1 cell applications too.
    cell_runs = n * num_layers
    sequential = n + num_layers - 1
    path = n + num_layers - 1
    return cell_runs, sequential, path


def _stacked_no_overlap(n, num_layers):  # layer 2 waits for all of layer 1
    return n * num_layers, n * num_layers, n + num_layers - 1


def _stacked_path_through_every_cell(n, num_layers):
    return n * num_layers, n + num_layers - 1, n * num_layers


def _stacked_first_layer_only(n, num_layers):
    return n, n, n


def _stacked_path_without_climbing(n, num_layers):  # the horizontal steps only
    return n * num_layers, n + num_layers - 1, n


STACKED_MISTAKES = [
    mistake(
        "count every cell run as a sequential step",
        _stacked_no_overlap,
        says="the layers overlap: cell (2, t) can run as soon as cells (1, t) and (2, t - 1) are done, "
        "while layer 1 already works on position t + 1",
    ),
    mistake(
        "route the path through every cell",
        _stacked_path_through_every_cell,
        says="the path is the SHORTEST route from x_0 to the top output: climb the layers once, then "
        "walk along the top layer",
    ),
    mistake(
        "count only the first layer",
        _stacked_first_layer_only,
        says="the other layers are cells too: they add runs, steps and path",
    ),
    mistake(
        "count only the steps along the sequence",
        _stacked_path_without_climbing,
        says="the route also climbs from layer 1 to the top layer, one cell application per layer",
    ),
]
STACKED_CASES = [(1, 1), (10, 1), (1, 3), (10, 2), (64, 2), (5, 4), (100, 6)]
STACKED_PARTS = ("cell runs", "sequential steps", "path length")


@exercise(
    hint="""
    Draw the grid: a row per layer, a column per position; cell (l, t) needs the cell below it, (l - 1, t),
    and the one before it, (l, t - 1). Runs: count the grid. Sequential steps: cell (l, t) can run in wave
    l + t (from 0); how many waves? Path: from x_0 (into cell (1, 0)) to the top cell at position n - 1,
    the fewest cells on the way.
    """,
    reference=_stacked_rnn_solution,
    kind="transfer",
    wrong=STACKED_MISTAKES,
)
def stacked_rnn(answer):
    """answer(n, num_layers) -> (cell runs, sequential steps, path length) of a stacked RNN over n positions."""
    rng = random.Random(fresh_seed())  # two cases drawn anew on every check, after the fixed ones
    cases = STACKED_CASES + [(rng.randint(1, 200), rng.randint(1, 8)) for _ in range(2)]
    got_all = []
    for n, num_layers in cases:
        got = answer(n, num_layers)
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            return f"return three numbers (cell runs, sequential steps, path length), got {got!r}"
        got_all.append(tuple(int(g) if float(g) == int(g) else float(g) for g in got))
    expected = [_stacked_rnn_solution(*case) for case in cases]
    if got_all == expected:
        return None
    m = matching_mistake(got_all, cases, STACKED_MISTAKES, lambda a, b: tuple(a) == tuple(b))
    for (n, num_layers), got, exp in zip(cases, got_all, expected):
        if got != exp:
            part = next(p for p, g, e in zip(STACKED_PARTS, got, exp) if g != e)
            where = (
                f"for n = {n}, num_layers = {num_layers} your {part} is "
                f"{got[STACKED_PARTS.index(part)]}, expected {exp[STACKED_PARTS.index(part)]}"
            )
            return f"{where}: {m.says}" if m else where
    return None


# --- 3. transfer: how many dilated layers connect the two ends -------------------------------------


def _dilated_layers_solution(n, kernel, growth):
    # Layer l (from 0) has dilation growth**l: it reaches (kernel - 1) * growth**l positions further back.
    # L layers see 1 + (kernel - 1) * (1 + growth + ... + growth**(L - 1)) positions; stop when that is >= n.
    layers, seen = 0, 1
    while seen < n:
        seen += (kernel - 1) * growth**layers
        layers += 1
    return layers


def _dilated_lesson_formula(n, kernel, growth):  # the lesson's kernel**L >= n, whatever the growth
    layers = 0
    while kernel**layers < n:
        layers += 1
    return layers


def _dilated_reach_is_dilation(n, kernel, growth):  # a layer reaches `dilation` back, not (kernel-1) x it
    layers, seen = 0, 1
    while seen < n:
        seen += growth**layers
        layers += 1
    return layers


def _dilated_one_too_many(n, kernel, growth):  # wants to see n + 1 positions
    return _dilated_layers_solution(n + 1, kernel, growth)


DILATED_MISTAKES = [
    mistake(
        "use the lesson's kernel**L >= n whatever the growth",
        _dilated_lesson_formula,
        says="kernel**L >= n holds only when each layer's dilation is kernel times the last; here it grows by `growth`",
    ),
    mistake(
        "let each layer reach back only its dilation",
        _dilated_reach_is_dilation,
        says="a layer of width kernel and dilation D reads kernel positions, the farthest (kernel - 1) x D back",
    ),
    mistake(
        "ask for n + 1 positions",
        _dilated_one_too_many,
        says="outputs n - 1 and input 0 are n positions apart counting both ends: the stack must see "
        "n positions, not n + 1",
    ),
]
DILATED_CASES = [
    (2, 2, 2),
    (4, 2, 2),
    (16, 2, 2),
    (17, 2, 2),
    (64, 3, 3),
    (30, 3, 2),
    (31, 3, 2),
    (100, 3, 1),
    (1000, 4, 2),
    (50, 5, 3),
    (9, 3, 3),
]


@exercise(
    hint="""
    Go layer by layer. A causal layer of width kernel and dilation D lets output t read inputs t, t - D, ...,
    t - (kernel - 1) D: it adds (kernel - 1) D positions to what the stack sees. Start from 1 position (the
    output itself), add (kernel - 1) * growth**l for layer l = 0, 1, 2, ... and count the layers until the
    stack sees n positions.
    """,
    reference=_dilated_layers_solution,
    kind="transfer",
    wrong=DILATED_MISTAKES,
)
def dilated_layers(answer):
    """answer(n, kernel, growth) -> the fewest causal layers (dilation growth**l in layer l) that connect
    output n - 1 to input 0."""
    rng = random.Random(fresh_seed())  # two cases drawn anew on every check, after the fixed ones
    cases = DILATED_CASES + [(rng.randint(2, 1000), rng.randint(2, 5), rng.randint(1, 3)) for _ in range(2)]
    got_all = [answer(*case) for case in cases]
    expected = [_dilated_layers_solution(*case) for case in cases]
    if all(g == e for g, e in zip(got_all, expected)):
        return None
    m = matching_mistake(got_all, cases, DILATED_MISTAKES, lambda a, b: a == b)
    for (n, kernel, growth), got, exp in zip(cases, got_all, expected):
        if got != exp:
            where = f"for n = {n}, kernel = {kernel}, growth = {growth} you answered {got!r} layers, expected {exp}"
            return f"{where}: {m.says}" if m else where
    return None


# --- 4. practice: the gradient that reaches position 0 ---------------------------------------------


def _rnn(input_size=3, hidden_size=4, seed=0):
    with torch.random.fork_rng():  # a fixed RNN without disturbing the learner's random state
        torch.manual_seed(seed)
        return nn.RNN(input_size, hidden_size, nonlinearity="tanh").double()


def _inputs(seq, input_size=3, seed=1):
    return torch.randn(seq, input_size, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _close(a, b):
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-300)


def _grad_to_first_solution(rnn, x):
    x = x.clone().requires_grad_(True)  # (seq, input_size)
    out, _ = rnn(x)  # (seq, hidden)
    out[-1].sum().backward()  # the loss at the last position
    return x.grad[0].norm().item()  # how much of it reaches position 0


def _grad_to_last(rnn, x):  # the gradient at the last input, one step away, not the first
    x = x.clone().requires_grad_(True)
    out, _ = rnn(x)
    out[-1].sum().backward()
    return x.grad[-1].norm().item()


def _grad_of_every_position(rnn, x):  # the loss summed over all positions: position 0 is 0 steps away
    x = x.clone().requires_grad_(True)
    out, _ = rnn(x)
    out.sum().backward()
    return x.grad[0].norm().item()


def _grad_summed_not_norm(rnn, x):  # the sum of the gradient's entries, not its length
    x = x.clone().requires_grad_(True)
    out, _ = rnn(x)
    out[-1].sum().backward()
    return x.grad[0].sum().item()


GRAD_MISTAKES = [
    mistake(
        "take the gradient at the last input",
        _grad_to_last,
        says="that is the gradient at the LAST input, one step from the loss; take x.grad[0]",
    ),
    mistake(
        "sum the loss over every position",
        _grad_of_every_position,
        says="the loss must be the last output only, out[-1].sum(); with every output, position 0's own "
        "output is 0 steps away",
    ),
    mistake(
        "sum the gradient's entries",
        _grad_summed_not_norm,
        says="return the gradient's norm (its length, .norm()), not the sum of its entries",
    ),
]


@exercise(
    hint="""
    x = x.clone().requires_grad_(True); out, _ = rnn(x); take the loss out[-1].sum() (the last position
    only), call .backward(), and return the norm of x.grad[0] as a float.
    """,
    reference=_grad_to_first_solution,
    wrong=GRAD_MISTAKES,
)
def grad_to_first(answer):
    """answer(rnn, x) must return || d out[-1].sum() / d x[0] || for an unbatched x (seq, input_size)."""
    cases = [4, 10, 30]
    rnn = _rnn()
    got_all = [float(answer(rnn, _inputs(seq))) for seq in cases]
    expected = [_grad_to_first_solution(rnn, _inputs(seq)) for seq in cases]
    if all(_close(g, e) for g, e in zip(got_all, expected)):
        return None
    for seq, got, exp in zip(cases, got_all, expected):
        if not _close(got, exp):
            where = f"for a sequence of length {seq}: expected {exp:.4e}, got {got:.4e}"
            for m in GRAD_MISTAKES:
                if _close(got, m.answer(rnn, _inputs(seq))):
                    return f"{where}: {m.says}"
            return where
    return None
