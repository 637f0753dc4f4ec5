"""Exercises of lesson 05 (multi-head attention): predict each head's scale, the parameter count of 8 heads,
the error of a fixed split and the head average; the output as a sum of one term per head,
per-head matrices from `torch.nn.MultiheadAttention`, and the cost of multi-query / grouped-query attention."""

import random

import torch
from torch import nn

from utils.course.exercises import compare_arrays, exercise, fresh_seed, mistake, prediction_close_to

# ---------------------------------------------------------------------------------------------------
# Prediction: the parameters of 8 heads at d_model = 64.

_D, _H = 64, 8
_RIGHT = 4 * _D * _D + 4 * _D  # 16,640
_SAYS = {
    _H * _RIGHT: (
        f"that is {_H} × {_RIGHT:,}, as if every head had its own d_model × d_model W_q, W_k, W_v and "
        f"W_o; the heads share the four matrices out in blocks of width d_k = {_D // _H}"
    ),
    4 * _D * _D: f"that leaves out the four bias vectors of {_D} numbers each",
    _RIGHT // _H: (f"that is one head's share of the {_RIGHT:,}: all {_H} heads together own the whole four matrices"),
    3 * _D * _D + 3 * _D: "that counts W_q, W_k and W_v but not W_o, which mixes the heads after the concatenation",
}


@exercise(
    hint="""
    Look at the shapes in section 1: W_q, W_k, W_v and W_o are d_model × d_model, and num_heads only
    decides how their columns are cut into blocks of width d_k. Each nn.Linear also has a bias of
    d_model numbers.
    """,
    reference=_RIGHT,
    kind="prediction",
    explain=f"""
    W_q, W_k, W_v and W_o are d_model × d_model, each with a bias of d_model numbers, whatever num_heads is:
    4·64² + 4·64 = {_RIGHT:,} parameters for 1, 2, 4 or 8 heads. The heads divide the columns of W_q, W_k
    and W_v (and the rows of W_o) among themselves; they do not add matrices.
    """,
    wrong=[
        mistake("give every head its own full-size matrices", _H * _RIGHT, says="its own d_model × d_model"),
        mistake("forget the biases", 4 * _D * _D, says="bias vectors"),
        mistake("count one head's slices", _RIGHT // _H, says="one head's share"),
        mistake("forget W_o", 3 * _D * _D + 3 * _D, says="not W_o"),
    ],
)
def predict_param_count(answer):
    """answer: the number of parameters of MultiHeadAttention(d_model=64, num_heads=8), biases included."""
    got = answer
    if isinstance(got, bool) or not isinstance(got, (int, float)) or got != int(got):
        return f"write the number of parameters as a whole number; got {got!r}"
    got = int(got)
    if got == _RIGHT:
        return None
    if got in _SAYS:
        return f"not {got:,}: " + _SAYS[got]
    return f"not {got:,}: count the four d_model × d_model matrices and their four bias vectors, at d_model = {_D}"


# ---------------------------------------------------------------------------------------------------
# Prediction (section 1): the scale inside each head.


@exercise(
    hint="""
    The 1/sqrt(d_k) of lesson 03 keeps the variance of a dot product of d_k terms near 1. How many
    terms does one head's dot product q_i · k_j have when d_model = 12 is split into 3 heads?
    """,
    reference=2.0,
    kind="prediction",
    explain="""
    sqrt(d_k) = sqrt(4) = 2. Each head's queries and keys have d_k = d_model / h = 4 features, so each of
    its dot products sums 4 terms, and the scale that keeps their variance near 1 is sqrt(4). PyTorch's
    nn.MultiheadAttention divides by it too; sqrt(d_model) = sqrt(12) gives another answer.
    """,
    wrong=[
        mistake("use one wide head's scale", 12**0.5, says="one wide head"),
        mistake("divide by d_k instead of its square root", 4.0, says="square root"),
        mistake("forget the scale", 1.0, says="no scale"),
    ],
)
def predict_head_scale(answer):
    """answer: the number each head divides its scores q·k by, at d_model = 12 and 3 heads."""
    says = {
        12**0.5: "sqrt(12) is the scale of one wide head of d_model = 12; each head's dot products have d_k = 4 terms",
        4.0: "that is d_k itself; the scale is its square root, as in lesson 03",
        1.0: "with no scale the scores' variance grows with d_k; each head divides by the square root of its d_k",
    }
    return prediction_close_to(
        answer, 2.0, 0.01, says, "how many terms does one head's dot product have? Take its square root"
    )


# ---------------------------------------------------------------------------------------------------
# Prediction (section 3): the error of a fixed split.


@exercise(
    hint="""
    Output features 0-1 should be A's, features 2-3 B's. With weights 0.75 on A and 0.25 on B, every
    value is the same blend 0.75 A + 0.25 B. How well can a linear read-out of that blend recover A's
    features 0-1? And B's features 2-3? The error is the mean over the four features.
    """,
    reference=0.5,
    kind="prediction",
    explain="""
    1/2. With the blend wA + (1 - w)B, the best read-out leaves (1-w)²/(w² + (1-w)²) on A's features 0-1
    (0.1 at w = 0.75) and w²/(w² + (1-w)²) on B's features 2-3 (0.9): their mean is 1/2, for every w.
    A fixed split only moves the error between the features; it takes two softmaxes to read two places.
    """,
    wrong=[
        mistake("count only features 0-1", 0.1, says="features 2-3"),
        mistake("count only features 2-3", 0.9, says="features 0-1"),
        mistake("take B's share as the error", 0.25, says="b's share"),
        mistake("think a read-out can undo the blend", 0.0, says="cannot undo"),
    ],
)
def predict_fixed_split_error(answer):
    """answer: the mean squared error (read-out fitted and scored on the same sequences) of a head that always
    puts 0.75 on A and 0.25 on B."""
    says = {
        0.1: "0.1 is the error on A's features 0-1 only; B's features 2-3 are read from a blend that is mostly A",
        0.9: "0.9 is the error on B's features 2-3 only; add A's features 0-1 and take the mean",
        0.25: "B's share of the weight is not the error: the read-out can rescale the blend",
        0.0: "a linear read-out cannot undo the blend: A and B are mixed into the same numbers",
    }
    return prediction_close_to(
        answer, 0.5, 0.03, says, "the error is the mean over features 0-3 of what the blend loses"
    )


# ---------------------------------------------------------------------------------------------------
# Prediction (section 4): what the average over heads shows.


@exercise(
    hint="""
    One trained head puts almost all its weight on the word before, the other almost all on the word
    after. PyTorch's default returns the mean of the two heads' weights.
    """,
    reference=0.5,
    kind="prediction",
    explain="""
    About 0.5. One head gives the previous word nearly 1, the other nearly 0; their mean is about 0.5,
    and the same for the next word. The average looks like one unsure head that splits its weight,
    which is exactly what neither head does.
    """,
    wrong=[
        mistake("read one head's weight", 1.0, says="one head"),
        mistake("think the average cancels out", 0.0, says="mean of"),
        mistake("divide among four", 0.25, says="two heads"),
    ],
)
def predict_average_weight(answer):
    """answer: the head-averaged weight of a word on the word before it, with one 'previous' and one 'next' head."""
    says = {
        1.0: "that is one head's weight; the average mixes it with the other head's, which is about 0",
        0.0: "that is the 'next word' head's weight on the previous word; the average is the mean of both heads",
        0.25: "there are two heads, not four: (about 1 + about 0) / 2",
    }
    return prediction_close_to(answer, 0.5, 0.1, says, "average the two heads' weights on the previous word")


# ---------------------------------------------------------------------------------------------------
# Transfer: the output of W_o as a sum of one term per head (W_o's row blocks).


def _head_contributions(heads, W_o):
    num_heads, d_k = heads.shape[1], heads.shape[-1]
    blocks = W_o.reshape(num_heads, d_k, W_o.shape[-1])  # (num_heads, d_k, d_model): rows i*d_k ... (i+1)*d_k - 1
    return heads @ blocks  # (batch, num_heads, T, d_model)


def _contributions_linear_layout(heads, W_o):
    return _head_contributions(heads, W_o.T)  # nn.Linear's (out, in) layout: row blocks of W_o.T


def _contributions_interleaved(heads, W_o):
    num_heads, d_k = heads.shape[1], heads.shape[-1]
    return heads @ W_o.reshape(d_k, num_heads, W_o.shape[-1]).transpose(0, 1)  # every num_heads-th row


def _contributions_first_block(heads, W_o):
    return heads @ W_o[: heads.shape[-1]]  # every head through rows 0 ... d_k - 1


def _contributions_equal_shares(heads, W_o):
    batch, num_heads, T, d_k = heads.shape
    out = heads.transpose(1, 2).reshape(batch, T, num_heads * d_k) @ W_o  # (batch, T, d_model)
    return (out / num_heads).unsqueeze(1).expand(batch, num_heads, T, W_o.shape[-1])  # the output split evenly


_CONTRIBUTION_MISTAKES = {
    _contributions_linear_layout: (
        "you cut W_o.T, nn.Linear's (out, in) layout; here W_o is applied as concat @ W_o, so head i's "
        "block is rows i*d_k ... (i+1)*d_k - 1 of W_o itself"
    ),
    _contributions_interleaved: (
        "head i fills the contiguous columns i*d_k ... (i+1)*d_k - 1 of the concatenation, so it meets "
        "the contiguous rows i*d_k ... (i+1)*d_k - 1 of W_o; yours takes every num_heads-th row"
    ),
    _contributions_first_block: (
        "every head goes through the same first d_k rows of W_o; each head has its own block of rows"
    ),
    _contributions_equal_shares: (
        "the terms add up to the output, but each is the whole output divided by num_heads: term i must "
        "be computed from head i alone"
    ),
}


@exercise(
    hint="""
    concat @ W_o sums, over the d_model columns of concat, column j times row j of W_o. Head i fills
    columns i*d_k ... (i+1)*d_k - 1 of concat. So the terms belonging to head i are its d_k values times
    rows i*d_k ... (i+1)*d_k - 1 of W_o: reshape W_o to (num_heads, d_k, d_model) and let each head
    multiply its own block (heads @ blocks broadcasts over the batch).
    """,
    reference=_head_contributions,
    kind="transfer",
    wrong=[
        mistake("cut nn.Linear's transposed layout", _contributions_linear_layout, says="nn.Linear"),
        mistake("take every num_heads-th row for a head", _contributions_interleaved, says="every num_heads-th row"),
        mistake("use the first block for every head", _contributions_first_block, says="same first d_k rows"),
        mistake("split the output evenly", _contributions_equal_shares, says="head i alone"),
    ],
)
def head_contributions(answer):
    """answer(heads (batch, num_heads, T, d_k), W_o (d_model, d_model)) -> (batch, num_heads, T, d_model),
    term i computed from head i alone, the terms summing over the head axis to concat @ W_o."""
    rng = random.Random(fresh_seed())  # a case drawn anew on every check, after the fixed ones
    heads_drawn = rng.randint(2, 4)
    drawn = (rng.randint(1, 3), heads_drawn, rng.randint(1, 6), rng.randint(1, 4))
    for batch, h, T, d_k in [(2, 3, 5, 4), (1, 2, 3, 3), (3, 4, 2, 2), (1, 1, 4, 6), drawn]:
        d_model = h * d_k
        with torch.random.fork_rng():
            torch.manual_seed(batch * 1000 + h * 100 + T * 10 + d_k)
            heads = torch.randn(batch, h, T, d_k)  # (batch, num_heads, T, d_k)
            W_o = torch.randn(d_model, d_model)  # (d_model, d_model), applied as concat @ W_o
        where = f"for heads of shape {tuple(heads.shape)} and W_o of shape {tuple(W_o.shape)}"
        got = answer(heads.clone(), W_o.clone())
        if not isinstance(got, torch.Tensor):
            return f"{where}: return a torch.Tensor, got {type(got).__name__}"
        got = got.detach().to(heads.dtype)
        expected = _head_contributions(heads, W_o)
        if tuple(got.shape) != tuple(expected.shape):
            return (
                f"{where}: expected shape {tuple(expected.shape)} (batch, num_heads, T, d_model), "
                f"got {tuple(got.shape)}"
            )
        if compare_arrays(got, expected, atol=1e-5) is None:
            continue
        for wrong, says in _CONTRIBUTION_MISTAKES.items():
            if compare_arrays(got, wrong(heads, W_o), atol=1e-5) is None:
                return f"{where}: {says}"
        output = heads.transpose(1, 2).reshape(batch, T, d_model) @ W_o  # (batch, T, d_model): concat @ W_o
        if compare_arrays(got.sum(1), output, atol=1e-4) is not None:
            return (
                f"{where}: your terms summed over the head axis are not concat @ W_o "
                "(head i meets the rows of W_o that its columns of the concatenation multiply)"
            )
        return compare_arrays(got, expected, f"{where}: the terms add up to concat @ W_o, but term i", atol=1e-5)
    return None


# ---------------------------------------------------------------------------------------------------
# Practice: per-head W_Q, W_K, W_V from torch.nn.MultiheadAttention's in_proj_weight.


def _split_in_proj(in_proj_weight, num_heads):
    d_model = in_proj_weight.shape[1]
    d_k = d_model // num_heads
    W = in_proj_weight.reshape(3, num_heads, d_k, d_model)  # rows of W_q, W_k, W_v in blocks of d_k
    W_Q, W_K, W_V = W.transpose(-2, -1).unbind(0)  # (num_heads, d_model, d_k) each, for x @ W
    return W_Q, W_K, W_V


def _in_proj_no_transpose(in_proj_weight, num_heads):
    d_model = in_proj_weight.shape[1]
    return in_proj_weight.reshape(3, num_heads, d_model // num_heads, d_model).unbind(0)


def _in_proj_reshape_transposed(in_proj_weight, num_heads):
    d_model = in_proj_weight.shape[1]
    return tuple(W.T.reshape(num_heads, d_model, d_model // num_heads) for W in in_proj_weight.chunk(3))


def _in_proj_interleaved(in_proj_weight, num_heads):
    d_model = in_proj_weight.shape[1]
    return tuple(W.reshape(d_model // num_heads, num_heads, d_model).permute(1, 2, 0) for W in in_proj_weight.chunk(3))


def _in_proj_per_head_packing(in_proj_weight, num_heads):
    d_model = in_proj_weight.shape[1]
    W = in_proj_weight.reshape(num_heads, 3, d_model // num_heads, d_model)  # as if [q, k, v] per head
    return tuple(W[:, r].transpose(-2, -1) for r in range(3))


_IN_PROJ_MISTAKES = {
    _in_proj_reshape_transposed: (
        "reshaping W_q.T (d_model, d_model) straight to (num_heads, d_model, d_k) "
        "cuts it along the input features; head i's block is columns i*d_k ... "
        "(i+1)*d_k - 1 of W_q.T"
    ),
    _in_proj_interleaved: (
        "head i must take the contiguous rows i*d_k ... (i+1)*d_k - 1 of W_q in "
        "in_proj_weight; yours takes every num_heads-th row"
    ),
    _in_proj_per_head_packing: (
        "in_proj_weight stacks all of W_q (rows 0 to d_model - 1), then all of W_k, "
        "then all of W_v; yours reads it as [q, k, v] blocks per head"
    ),
}


@exercise(
    hint="""
    in_proj_weight is (3·d_model, d_model): W_q, W_k, W_v stacked, each in nn.Linear's layout
    (out_features, in_features), so queries are x @ W_q_linear.T. Head i owns output features
    i*d_k ... (i+1)*d_k - 1, i.e. rows of W_q_linear. So: reshape to (3, num_heads, d_k, d_model),
    transpose the last two axes to (3, num_heads, d_model, d_k) and unbind the first axis.
    """,
    reference=_split_in_proj,
    kind="practice",
    wrong=[
        mistake("keep nn.Linear's (out, in) layout", _in_proj_no_transpose, says="nn.Linear's"),
        mistake(
            "reshape the transposed matrix straight into heads", _in_proj_reshape_transposed, says="input features"
        ),
        mistake("take every num_heads-th row for a head", _in_proj_interleaved, says="every num_heads-th row"),
        mistake("read in_proj_weight as [q, k, v] per head", _in_proj_per_head_packing, says="stacks all of W_q"),
    ],
)
def split_in_proj(answer):
    """answer(in_proj_weight (3 d_model, d_model), num_heads) -> (W_Q, W_K, W_V), each (num_heads, d_model, d_k),
    head i's queries being x @ W_Q[i] (plus its bias slice)."""
    for d_model, h in ((8, 2), (12, 3), (6, 1)):
        with torch.random.fork_rng():
            torch.manual_seed(d_model)
            mha = nn.MultiheadAttention(d_model, h, batch_first=True)
        weight = mha.in_proj_weight.detach().clone()  # (3 d_model, d_model)
        where = f"for d_model={d_model}, num_heads={h}"
        got = answer(weight.clone(), h)
        if not isinstance(got, (tuple, list)) or len(got) != 3:
            return f"{where}: return three tensors (W_Q, W_K, W_V), got {type(got).__name__}"
        got = [torch.as_tensor(W).detach().to(weight.dtype) for W in got]
        d_k = d_model // h
        for name, W in zip(("W_Q", "W_K", "W_V"), got):
            if tuple(W.shape) == (h, d_k, d_model) and d_k != d_model:
                return (
                    f"{where}: {name} has shape {tuple(W.shape)}, (num_heads, d_k, d_model): that is "
                    "nn.Linear's (out_features, in_features) layout; transpose each head's block so "
                    f"that x @ {name}[i] works, shape (num_heads, d_model, d_k)"
                )
            if tuple(W.shape) != (h, d_model, d_k):
                return f"{where}: {name} has shape {tuple(W.shape)}, expected {(h, d_model, d_k)}"
        expected = _split_in_proj(weight, h)
        if all(compare_arrays(W, E, atol=1e-7) is None for W, E in zip(got, expected)):
            continue
        for wrong, says in _IN_PROJ_MISTAKES.items():
            if all(compare_arrays(W, E, atol=1e-7) is None for W, E in zip(got, wrong(weight, h))):
                return f"{where}: {says}"
        for name, W, E in zip(("W_Q", "W_K", "W_V"), got, expected):
            problem = compare_arrays(
                W.reshape(-1, d_k), E.reshape(-1, d_k), f"{where}: {name} as (num_heads·d_model, d_k)"
            )
            if problem:
                return problem
    return None


# ---------------------------------------------------------------------------------------------------
# Transfer: parameters and key-value cache of multi-query and grouped-query attention.


def _gqa_counts(d_model, num_heads, num_kv_heads, T):
    d_k = d_model // num_heads
    params = 2 * (d_model * d_model + d_model) + 2 * (d_model * num_kv_heads * d_k + num_kv_heads * d_k)
    return params, 2 * T * num_kv_heads * d_k


def _gqa_reference_by_modules(d_model, num_heads, num_kv_heads, T):
    """The same counts from real layers: parameters of W_q, W_k, W_v, W_o and the cached k, v tensors."""
    d_k = d_model // num_heads
    with torch.random.fork_rng():
        layers = [
            nn.Linear(d_model, d_model),
            nn.Linear(d_model, num_kv_heads * d_k),
            nn.Linear(d_model, num_kv_heads * d_k),
            nn.Linear(d_model, d_model),
        ]
    x = torch.zeros(T, d_model)  # (T, d_model)
    k = layers[1](x).view(T, num_kv_heads, d_k)  # (T, num_kv_heads, d_k) what the cache keeps
    v = layers[2](x).view(T, num_kv_heads, d_k)  # (T, num_kv_heads, d_k)
    return sum(p.numel() for layer in layers for p in layer.parameters()), k.numel() + v.numel()


@exercise(
    hint="""
    d_k = d_model / num_heads. W_q and W_o stay d_model × d_model (every query head keeps its own
    queries); W_k and W_v shrink to d_model × (num_kv_heads·d_k). Count the four biases too (d_model,
    num_kv_heads·d_k, num_kv_heads·d_k, d_model). The cache keeps, for each of the T tokens, one key and
    one value of d_k numbers per key-value head: 2·T·num_kv_heads·d_k.
    """,
    reference=_gqa_counts,
    kind="transfer",
    wrong=[
        mistake(
            "shrink W_q and W_o too",
            lambda d, h, g, T: (4 * (d * g * (d // h) + g * (d // h)), 2 * T * g * (d // h)),
            says="W_q and W_o stay",
        ),
        mistake(
            "count plain multi-head attention",
            lambda d, h, g, T: (4 * d * d + 4 * d, 2 * T * g * (d // h)),
            says="plain multi-head attention",
        ),
        mistake(
            "forget the biases",
            lambda d, h, g, T: (_gqa_counts(d, h, g, T)[0] - 2 * d - 2 * g * (d // h), _gqa_counts(d, h, g, T)[1]),
            says="biases",
        ),
        mistake(
            "cache only the keys",
            lambda d, h, g, T: (_gqa_counts(d, h, g, T)[0], T * g * (d // h)),
            says="values are cached too",
        ),
        mistake(
            "cache a key and a value per query head",
            lambda d, h, g, T: (_gqa_counts(d, h, g, T)[0], 2 * T * d),
            says="per key-value head",
        ),
    ],
)
def gqa_counts(answer):
    """answer(d_model, num_heads, num_kv_heads, T) -> (parameters, numbers in the key-value cache of T tokens)."""
    rng = random.Random(fresh_seed())  # a case drawn anew on every check, after the fixed ones
    heads = rng.choice([1, 2, 4, 8, 16])
    kv_heads = rng.choice([g for g in range(1, heads + 1) if heads % g == 0])
    drawn = (heads * rng.randint(1, 16), heads, kv_heads, rng.randint(1, 2000))
    for d_model, h, g, T in ((64, 8, 2, 100), (64, 8, 1, 10), (64, 8, 8, 10), (12, 4, 2, 7), (512, 8, 4, 1000), drawn):
        where = f"for d_model={d_model}, num_heads={h}, num_kv_heads={g}, T={T}"
        d_k = d_model // h
        params, cache = _gqa_reference_by_modules(d_model, h, g, T)
        got = answer(d_model, h, g, T)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            return f"{where}: return two numbers (parameters, cache size), got {got!r}"
        got_params, got_cache = (v.item() if hasattr(v, "item") else v for v in got)
        problems = []
        if got_params != params:
            why = {
                4 * (d_model * g * d_k + g * d_k): (
                    "W_q and W_o stay d_model × d_model: only the keys and values are shared between query heads"
                ),
                4 * d_model * d_model + 4 * d_model: (
                    f"{got_params:,} is plain multi-head attention: with "
                    f"num_kv_heads = {g}, W_k and W_v have only "
                    f"num_kv_heads·d_k = {g * d_k} columns"
                ),
                params - 2 * d_model - 2 * g * d_k: "count the four biases too",
            }
            problems.append(
                f"expected {params:,} parameters, got {got_params:,}"
                + (f" ({why[got_params]})" if got_params in why else "")
            )
        if got_cache != cache:
            why = {
                T * g * d_k: "the values are cached too, not only the keys",
                2 * T * d_model: (
                    f"query heads share keys and values: the cache keeps one key and one value "
                    f"per key-value head ({g}), not per query head ({h})"
                ),
            }
            problems.append(
                f"expected {cache:,} numbers in the cache, got {got_cache:,}"
                + (f" ({why[got_cache]})" if got_cache in why else "")
            )
        if problems:
            return f"{where}: " + "; ".join(problems)
    return None


# ---------------------------------------------------------------------------------------------------
# Transfer: the multiply-adds of cross-attention (T_q queries, T_k keys and values).


def _cross_macs(batch, T_q, T_k, d_model, num_heads):
    projections = (2 * T_q + 2 * T_k) * d_model * d_model  # W_q and W_o on T_q rows, W_k and W_v on T_k rows
    return batch * (projections + 2 * T_q * T_k * d_model)  # + scores and weighted sum, summed over the heads


def _cross_macs_by_module(batch, T_q, T_k, d_model, num_heads):
    """The same count from a real forward pass of utils.MultiHeadAttention, measured by torch's FlopCounterMode."""
    from torch.utils.flop_counter import FlopCounterMode

    from utils.multihead import MultiHeadAttention

    with torch.random.fork_rng():
        torch.manual_seed(0)
        mha = MultiHeadAttention(d_model, num_heads)
        target, source = torch.randn(batch, T_q, d_model), torch.randn(batch, T_k, d_model)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        mha(target, source, source)
    return counter.get_total_flops() // 2


_CROSS_WRONG = {
    "T_q rows everywhere": (
        lambda b, q, k, d, h: b * (4 * q * d * d + 2 * q * k * d),
        "W_k and W_v project the T_k source tokens, not the T_q target tokens",
    ),
    "self-attention at T_q": (
        lambda b, q, k, d, h: b * (4 * q * d * d + 2 * q * q * d),
        "that is self-attention on the T_q target tokens; the keys and values come from the T_k source tokens",
    ),
    "heads at full width": (
        lambda b, q, k, d, h: b * ((2 * q + 2 * k) * d * d + 2 * h * q * k * d),
        "each head's scores and weighted sum work in d_k = d_model / num_heads dimensions, so the heads "
        "together cost T_q·T_k·d_model each, not num_heads times that",
    ),
    "no W_o": (
        lambda b, q, k, d, h: b * ((q + 2 * k) * d * d + 2 * q * k * d),
        "count W_o too: it mixes the concatenated heads, T_q·d_model² multiply-adds",
    ),
    "one sequence": (
        lambda b, q, k, d, h: (2 * q + 2 * k) * d * d + 2 * q * k * d,
        "every sequence of the batch costs the same again: multiply by batch",
    ),
}


@exercise(
    hint="""
    Count each matrix product as (rows) × (inner size) × (columns). W_q and W_o act on the T_q target rows,
    W_k and W_v on the T_k source rows, each d_model × d_model. The scores Q Kᵀ of one head are
    T_q × d_k × T_k, the weighted sum T_q × T_k × d_k, and there are num_heads heads of d_k = d_model /
    num_heads. Multiply everything by batch.
    """,
    reference=_cross_macs,
    kind="transfer",
    wrong=[
        mistake("project every role on T_q rows", _CROSS_WRONG["T_q rows everywhere"][0], says="T_k source tokens"),
        mistake("count self-attention on the target", _CROSS_WRONG["self-attention at T_q"][0], says="self-attention"),
        mistake("give every head the full width", _CROSS_WRONG["heads at full width"][0], says="d_k = d_model"),
        mistake("forget W_o", _CROSS_WRONG["no W_o"][0], says="count W_o"),
        mistake("forget the batch", _CROSS_WRONG["one sequence"][0], says="multiply by batch"),
    ],
)
def cross_attention_macs(answer):
    """answer(batch, T_q, T_k, d_model, num_heads) -> multiply-adds of the matrix products of one forward pass
    of MultiHeadAttention(d_model, num_heads)(target (batch, T_q, d_model), source, source), source (batch, T_k, d_model)."""
    rng = random.Random(fresh_seed())  # a case drawn anew on every check, after the fixed ones
    heads = rng.choice([1, 2, 4, 8])
    drawn = (rng.randint(1, 3), rng.randint(1, 9), rng.randint(1, 9), heads * rng.randint(1, 6), heads)
    for case in ((2, 3, 7, 16, 4), (3, 5, 2, 12, 3), (1, 4, 4, 8, 2), (2, 1, 6, 8, 1), drawn):
        where = "for batch={}, T_q={}, T_k={}, d_model={}, num_heads={}".format(*case)
        expected = _cross_macs_by_module(*case)
        got = answer(*case)
        got = got.item() if hasattr(got, "item") else got
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            return f"{where}: return a number of multiply-adds, got {got!r}"
        if got == expected:
            continue
        for wrong, says in _CROSS_WRONG.values():
            if got == wrong(*case) != expected:
                return f"{where}: expected {expected:,} multiply-adds, got {got:,}: {says}"
        return f"{where}: expected {expected:,} multiply-adds, got {got:,}"
    return None
