"""Exercises of lesson 00 (why attention): a prediction per section (the gradient through attention's context,
attention's calls at two lengths, the bidirectional RNN's path, restricted attention's layers, the orders of
magnitude the gradient loses) and where float32's gradient vanishes; count a stacked RNN, a dilated convolution
stack and the paper's centred restricted window the way Table 1 counts, and measure the gradient that reaches
position 0."""

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
        "that is where the gradient's norm reads 0 (once its entries fall below 2^-75, their squares underflow); the gradient itself "
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
    Section 5 printed the gradient at n = 1 (about 1) and how much it shrinks per step (about 0.45).
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
    kernels = [rng.randint(2, 5) for _ in range(2)]  # growth stays in 1..kernel, the exercise's domain:
    cases = DILATED_CASES + [(rng.randint(2, 1000), k, rng.randint(1, k)) for k in kernels]  # beyond it, gaps
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


# --- 4b. transfer: the paper's centred restricted window ------------------------------------------


def _centred_layers_solution(n, r):
    # A centred window of odd size r reaches (r - 1) / 2 positions to each side, so each layer brings
    # input 0 (r - 1) / 2 positions closer to output n - 1, which is n - 1 away.
    half = (r - 1) // 2
    return math.ceil((n - 1) / half)


def _centred_by_reach(n, r):
    """Stack windows and watch which inputs output n - 1 reads, until it reads input 0."""
    half, first_read, layers = (r - 1) // 2, n - 1, 0
    while first_read > 0:
        first_read = max(0, first_read - half)  # one more layer reads half positions further back
        layers += 1
    return layers


def _centred_as_causal(n, r):  # the lesson's causal window reaches r - 1 back
    return math.ceil((n - 1) / (r - 1))


def _centred_n_over_r(n, r):  # the paper's O(n/r), taken literally
    return math.ceil(n / r)


def _centred_floor(n, r):  # rounds down: the last, partial step is lost
    return (n - 1) // ((r - 1) // 2)


def _centred_half_with_self(n, r):  # counts the output's own position in the half window
    return math.ceil((n - 1) / ((r + 1) // 2))


CENTRED_MISTAKES = [
    mistake(
        "use the causal window's reach",
        _centred_as_causal,
        says="a causal window of r positions reaches r - 1 back; a centred one splits them, (r - 1) / 2 to "
        "each side, so it reaches only half as far back per layer",
    ),
    mistake(
        "take the paper's n / r literally",
        _centred_n_over_r,
        says="O(n/r) hides the constant: each layer moves (r - 1) / 2 positions, not r",
    ),
    mistake(
        "round down",
        _centred_floor,
        says="a partial last step still needs a whole layer: round (n - 1) / ((r - 1) / 2) up",
    ),
    mistake(
        "count the output's own position in each half",
        _centred_half_with_self,
        says="the window is (r - 1) / 2 positions to the left, the output's own position, and (r - 1) / 2 to "
        "the right: it moves (r - 1) / 2, not (r + 1) / 2, per layer",
    ),
]
CENTRED_CASES = [(2, 3), (3, 3), (64, 3), (64, 5), (64, 9), (10, 11), (100, 7), (101, 7), (1000, 21)]


@exercise(
    hint="""
    Output t of one layer reads inputs t - (r - 1) / 2 to t + (r - 1) / 2 (those that exist). Output n - 1
    is n - 1 positions from input 0, and each layer reaches (r - 1) / 2 positions further: how many layers
    cover n - 1? Round up.
    """,
    reference=_centred_layers_solution,
    kind="transfer",
    wrong=CENTRED_MISTAKES,
)
def centred_layers(answer):
    """answer(n, r) -> the fewest stacked centred windows of odd size r before output n - 1 reads input 0."""
    rng = random.Random(fresh_seed())  # two cases drawn anew on every check, after the fixed ones
    cases = CENTRED_CASES + [(rng.randint(2, 2000), 2 * rng.randint(1, 15) + 1) for _ in range(2)]
    got_all = [answer(*case) for case in cases]
    expected = [_centred_by_reach(*case) for case in cases]
    if all(g == e for g, e in zip(got_all, expected)):
        return None
    m = matching_mistake(got_all, cases, CENTRED_MISTAKES, lambda a, b: a == b)
    for (n, r), got, exp in zip(cases, got_all, expected):
        if got != exp:
            where = f"for n = {n}, r = {r} you answered {got!r} layers, expected {exp}"
            return f"{where}: {m.says}" if m else where
    return None


# --- 5. predictions of the main sections -----------------------------------------------------------


def _number_prediction(answer, right, mistakes, close, unit, otherwise):
    """None when `answer` is right (`close(n)`), else the message of the named mistake it falls in, or `otherwise`."""
    n = prediction_number(answer)
    if close(n):
        return None
    for _, _, (a, b), says in mistakes:
        if a <= n <= b:
            return f"you predicted {n:g} {unit}, the answer is {right}: {says}"
    return f"you predicted {n:g} {unit}, the answer is {right}: {otherwise}"


def _band_prediction(answer, right, band, mistakes, unit, otherwise):
    """_number_prediction that accepts any answer in band = (lo, hi), both ends included."""
    lo, hi = band
    return _number_prediction(answer, right, mistakes, lambda n: lo <= n <= hi, unit, otherwise)


ATTENTION_FLAT = 1.0  # through attention, ||d L / d x_0|| x n (L = sum of c) at n = 80 over n = 5: about the same
ATTENTION_FLAT_BAND = (0.5, 2.0)  # what every seed of the lesson gives lies well inside it
ATTENTION_FLAT_MISTAKES = [
    (
        "expect it to vanish like the final state",
        1e-20,
        (0.0, 1e-3),
        "the final state reaches x_0 only through n dependent steps; the context is a weighted sum that takes "
        "h_0, one step from x_0, directly",
    ),
    (
        "forget the x n",
        5 / 80,
        (0.01, 0.2),
        "without the x n it falls like 1/n (5/80 = 1/16), because each of the n words gets about 1/n of the "
        "weight; times n, nothing is left of the fall",
    ),
    (
        "expect it to grow with the sentence",
        16.0,
        (5.0, 1e6),
        "x n only undoes the 1/n share each word gets; nothing makes the first word count more in a longer sentence",
    ),
]


@exercise(
    hint="""
    The context is sum_j alpha_j h_j. x_0 reaches h_0 in one step; the other h_j reach it through the
    recurrence, whose gradient vanishes. How does alpha_0 change with n when no weight is far from uniform?
    """,
    reference=ATTENTION_FLAT,
    kind="prediction",
    explain="""
    Uniform weights would give each word exactly 1/n, and the x n undoes that share. The context takes h_0
    with weight alpha_0, about 1/n when the weights are spread out, so the gradient to
    x_0 falls like 1/n, not like a product of n Jacobians: times n it stays about 1 from n = 5 to 80, while
    through our tanh RNN's final state it falls by about 20 orders of magnitude or more.
    """,
    wrong=[mistake(name, answer, says) for name, answer, _, says in ATTENTION_FLAT_MISTAKES],
)
def predict_attention_flat(answer):
    """Through attention, ||d L / d x_0|| x n (L = sum of c) at n = 80 divided by its value at n = 5."""
    return _band_prediction(
        answer,
        ATTENTION_FLAT,
        ATTENTION_FLAT_BAND,
        ATTENTION_FLAT_MISTAKES,
        "as the ratio",
        "the first word keeps about its 1/n share of the context at every length",
    )


ATTENTION_CALLS = 1  # attention's PyTorch calls at n = 64 over n = 2: the same calls, on bigger tensors
ATTENTION_CALLS_MISTAKES = [
    (
        "count the scores",
        1024,
        (100, 1e9),
        "the 64 x 64 = 4096 scores (against 2 x 2 = 4) are computed by the same matrix product, one call on a "
        "bigger tensor: more FLOPs, not more calls",
    ),
    (
        "one call per position, like the RNN",
        32,
        (4, 99),
        "the RNN calls its cell once per position because each state needs the one before; attention's "
        "positions need nothing from each other, so one batched call serves all of them",
    ),
    (
        "grow with the length a little",
        2,
        (1.01, 3.99),
        "nothing in the layer loops over positions: the calls are the same at every n, only the tensors grow",
    ),
]


@exercise(
    hint="""
    SelfAttention.forward calls three projections and scaled_dot_product_attention (the count also includes
    every PyTorch call made inside them, such as its checks of the inputs). Does any of them run once per position?
    """,
    reference=ATTENTION_CALLS,
    kind="prediction",
    explain="""
    The layer makes the same calls at every n: three projections and the batched attention (with the calls
    inside them), whose matrix products handle all n queries at once. Its work grows like n^2 (FLOPs, section 4), its sequential
    operations do not: Table 1's O(1). The cell loop's calls grow with n, one cell run per position.
    """,
    wrong=[mistake(name, answer, says) for name, answer, _, says in ATTENTION_CALLS_MISTAKES],
)
def predict_attention_calls(answer):
    """How many times as many PyTorch calls self-attention makes at n = 64 as at n = 2."""
    return _number_prediction(
        answer,
        ATTENTION_CALLS,
        ATTENTION_CALLS_MISTAKES,
        lambda n: n == ATTENTION_CALLS,
        "as the ratio",
        "attention makes the same calls at every length",
    )


BI_PATH = 64  # cell applications between x_0 and the bidirectional RNN's output at position 63 (n = 64)
BI_PATH_MISTAKES = [
    (
        "meet in the middle",
        32,
        (30, 34),
        "the two directions do not meet: output 63 is [forward h_63, backward h_63], and the backward state at "
        "63 has read only x_63; x_0 reaches it through the forward chain, all 64 applications",
    ),
    (
        "take the backward shortcut",
        1,
        (1, 2),
        "the backward RNN's state at position 63 is its FIRST step: it has read x_63 alone; x_0 reaches the "
        "backward chain only at position 0",
    ),
    (
        "count both chains",
        128,
        (127, 129),
        "128 is how many cells run in both directions together; the route from x_0 to output 63 goes through "
        "one chain, the forward one: 64",
    ),
]


@exercise(
    hint="""
    Output 63 is [forward h_63, backward h_63]. Which inputs has each of the two states read? Through which
    of them can x_0 arrive, and after how many cell applications?
    """,
    reference=BI_PATH,
    kind="prediction",
    explain="""
    The backward state at position 63 is the backward RNN's first step: it has read only x_63. So x_0
    reaches output 63 only through the forward chain, 64 cell applications, as in the one-way RNN.
    """,
    wrong=[mistake(name, answer, says) for name, answer, _, says in BI_PATH_MISTAKES],
)
def predict_bi_path(answer):
    """How many cell applications lie between x_0 and the bidirectional RNN's output at position 63 (n = 64)."""
    return _number_prediction(
        answer,
        BI_PATH,
        BI_PATH_MISTAKES,
        lambda n: n == BI_PATH,
        "cell applications",
        "follow x_0 through each direction",
    )


RESTRICTED_PATH = 21  # restricted self-attention layers (window r = 4) from input 0 to output 63 (n = 64)
RESTRICTED_PATH_MISTAKES = [
    (
        "take n / r",
        16,
        (16, 16),
        "O(n/r) is the order, not the count: a window of r = 4 positions (itself and 3 before) reaches only "
        "r - 1 = 3 positions further back per layer, so 63 positions need ceil(63 / 3) = 21 layers",
    ),
    ("count it like full attention", 1, (1, 1), "a window of 4 positions cannot see x_0 from position 63 in one layer"),
    (
        "count it like a dilated stack",
        3,
        (3, 3),
        "log_4(64) = 3 would need windows that spread out layer by layer; here every layer has the same "
        "window of 4 neighbouring positions",
    ),
]


@exercise(
    hint="""
    One layer lets output t read inputs t - 3, ..., t (a window of r = 4). Each layer moves the reach back by
    r - 1 = 3 positions. How many layers until output 63 reaches input 0, 63 positions back?
    """,
    reference=RESTRICTED_PATH,
    kind="prediction",
    explain="""
    Each layer reaches r - 1 = 3 positions further back, so output 63 needs ceil(63 / 3) = 21 layers to read
    input 0, like a contiguous convolution of width 4. The paper's O(n/r) is the order of this count.
    """,
    wrong=[mistake(name, answer, says) for name, answer, _, says in RESTRICTED_PATH_MISTAKES],
)
def predict_restricted_path(answer):
    """How many restricted self-attention layers (window r = 4) connect output 63 to input 0 (n = 64)."""
    return _number_prediction(
        answer,
        RESTRICTED_PATH,
        RESTRICTED_PATH_MISTAKES,
        lambda n: n == RESTRICTED_PATH,
        "layers",
        "count how far back one layer reaches, r - 1 = 3 positions",
    )


ORDERS_LOST = 44  # orders of magnitude the seed-0 RNN's gradient loses from n = 1 to n = 128 (43.8 measured)
ORDERS_BAND = (40, 48)  # about 10% either side: a rough order is the point
ORDERS_MISTAKES = [
    (
        "shrink like 1/n",
        2,
        (1, 2.5),
        "1/n is what attention's near-uniform weights do; through the RNN the gradient is multiplied by a "
        "factor below 1 at each of the 128 steps, so it falls exponentially",
    ),
    (
        "shrink by ||W_hh||_2 per step",
        3,
        (2.6, 5),
        "||W_hh||_2 = 0.95 only bounds each step; tanh's slope and W_hh's gain on the directions the gradient "
        "takes make the real factor about 0.45 per step",
    ),
    (
        "lose one order per step",
        128,
        (100, 140),
        "a step multiplies the gradient by about 0.45, not 0.1: one order of magnitude every 3 steps",
    ),
]


@exercise(
    hint="""
    Each step back through the RNN multiplies the gradient by a factor below 1 (a product of tanh's slope and
    W_hh). If that factor is f, the 127 steps from n = 1 to n = 128 multiply by f^127. Guess f (0.9? 0.5?
    0.1?) and count the orders of magnitude: 127 * log10(1 / f).
    """,
    reference=ORDERS_LOST,
    kind="prediction",
    explain="""
    The gradient falls by about 0.45 per step on average, and 127 * log10(1 / 0.45) = 44 orders of
    magnitude: from about 1 at n = 1 to about 1e-44 at n = 128. Going further B shows where 0.45 comes from.
    """,
    wrong=[mistake(name, answer, says) for name, answer, _, says in ORDERS_MISTAKES],
)
def predict_orders_lost(answer):
    """How many orders of magnitude the RNN's gradient to x_0 loses from n = 1 to n = 128."""
    return _band_prediction(
        answer,
        ORDERS_LOST,
        ORDERS_BAND,
        ORDERS_MISTAKES,
        "orders of magnitude",
        "count the factor per step, about 0.45, over 127 steps",
    )
