"""Lesson 09 exercises: five predictions (positions decoded without a cache, a grouped-query cache's size, a naive softmax of large scores,
tiles a causal mask skips, how plain attention's memory grows), the online-softmax update, the size of a
key-value cache, merging two partial attention results, and the tiles a sliding-window mask skips."""

import math
import random

import torch

from utils.course.exercises import compare_arrays, exercise, fresh_seed, mistake, prediction_number

# --- Predict: how many positions does greedy decoding push through a decoder layer without a cache? ----

CACHE_N = 64


@exercise(
    hint="""
    Without a cache, step t runs the decoder on all t tokens so far (<bos> and the t - 1 chosen ones) and
    keeps only the last position. Add up the positions of steps 1, 2, ..., 64.
    """,
    reference=CACHE_N * (CACHE_N + 1) // 2,
    kind="prediction",
    explain="""
    1 + 2 + ... + 64 = 64 x 65 / 2 = 2080 positions per layer, where 64 would do: each step recomputes
    every earlier position, although with the causal mask their keys and values never change. The cache
    keeps them, and each step processes one position.
    """,
    wrong=[
        mistake("count one position per step (that is the cached decoder)", CACHE_N, says="cache"),
        mistake("count all 64 positions at every step", CACHE_N * CACHE_N, says="so far"),
        mistake("start the count at 0 positions", CACHE_N * (CACHE_N - 1) // 2, says="<bos>"),
    ],
)
def positions_without_cache(answer):
    """answer: positions one decoder layer processes in 64 greedy steps without a key-value cache."""
    value = prediction_number(answer)
    right = CACHE_N * (CACHE_N + 1) // 2
    if value == right:
        return None
    if value == CACHE_N:
        return "64 positions is what the decoder processes with a cache; without one, step t recomputes all t"
    if value == CACHE_N * CACHE_N:
        return "step t runs the decoder only on the t tokens so far, not on all 64: 1 + 2 + ... + 64 positions"
    if value == CACHE_N * (CACHE_N - 1) // 2:
        return "the first step already processes one position, <bos>: step t processes t positions, t = 1..64"
    return f"{answer} positions: not right; step t processes t positions, for t = 1, ..., 64"


# --- Predict: the cache of a large decoder with grouped-query attention ------------------------------

GQA_MIB = 32 * 2 * 8 * 128 * 4096 * 2 // 2**20  # layers x (k, v) x kv heads x d_k x length x bytes, in MiB


@exercise(
    hint="""
    The cache stores keys and values per key/value head, not per query head. 32 key/value heads gave
    2 GiB = 2048 MiB; what fraction of that do 8 key/value heads store?
    """,
    reference=GQA_MIB,
    kind="prediction",
    explain="""
    512 MiB: the cache holds one key and one value per key/value head, so 8 instead of 32 divides it by 4.
    The 32 query heads still each have their own query, but queries are never cached: each step computes
    only the new position's query.
    """,
    wrong=[
        mistake("count the 32 query heads (queries are not cached)", 4 * GQA_MIB, says="query"),
        mistake("divide by the 8 key/value heads instead of by 32 / 8", GQA_MIB // 2, says="32 / 8"),
        mistake("keep one key/value head (that is multi-query)", GQA_MIB // 8, says="multi-query"),
    ],
)
def gqa_cache_mib(answer):
    """answer: MiB of the key-value cache of one 4096-position sequence, 32 layers, 8 key/value heads of 128."""
    value = prediction_number(answer)
    if value == GQA_MIB:
        return None
    if value == 4 * GQA_MIB:
        return "the cache stores keys and values, one per key/value head; the 32 query heads are not cached"
    if value == GQA_MIB // 2:
        return "8 key/value heads for 32 query heads shrink the cache by 32 / 8 = 4, not by 8"
    if value == GQA_MIB // 8:
        return "64 MiB is multi-query attention, with one key/value head; here there are 8"
    return f"{answer} MiB: not right; the cache scales with the number of key/value heads: 32 gave 2048 MiB"


# --- Predict: softmax of large scores, computed naively ----------------------------------------------


def _as_float(answer):
    """A float from a number or from the words 'nan' / 'inf'."""
    if isinstance(answer, str) and answer.strip().lower() in ("nan", "inf", "+inf", "infinity"):
        return float(answer.strip().lower().replace("infinity", "inf"))
    return prediction_number(answer)


@exercise(
    hint="""
    float32 holds numbers up to about 3.4e38. What is exp(1000)? And then what is that divided by a sum
    that contains it?
    """,
    reference=float("nan"),
    kind="prediction",
    explain="""
    nan. exp(1000) overflows float32 to inf, and so does the sum: inf / inf is nan. The exact softmax,
    0.731, needs the maximum subtracted first, which is what the safe (and the online) softmax does.
    """,
    wrong=[
        mistake("write the exact softmax", 0.7311, says="overflows"),
        mistake("expect the overflow to show as inf", "inf", says="inf / inf"),
        mistake("expect the huge numbers to vanish", 0.0, says="does not underflow"),
    ],
)
def naive_softmax_overflow(answer):
    """answer: exp(s_0) / sum_j exp(s_j) for the float32 scores [1000, 999, -5], computed naively
    (a number, or 'nan' / 'inf')."""
    value = _as_float(answer)
    if math.isnan(value):
        return None
    if math.isinf(value):
        return "the numerator overflows to inf, and so does the denominator: inf / inf is nan, not inf"
    if abs(value - 0.7311) < 0.01:
        return "0.731 is the exact softmax, but exp(1000) overflows float32 (largest about 3.4e38) to inf"
    if value == 0:
        return "exp(1000) does not underflow, it overflows: it is far above float32's largest number"
    return f"{answer}: not right; what is exp(1000) in float32, and inf divided by inf?"


# --- Predict: how many tiles does a causal mask skip? --------------------------------------------

SKIP_T, SKIP_B = 1000, 100


@exercise(
    hint="""
    Cut the 1000 x 1000 score grid into 100 x 100 tiles: 10 x 10 tiles. A tile is skipped only when every
    entry in it is masked (key j > query i for all of them). Which tiles are those: above, on, or below
    the diagonal?
    """,
    reference=45,
    kind="prediction",
    explain="""
    n = ceil(1000 / 100) = 10 tiles a side. The tiles strictly above the diagonal of tiles are entirely
    masked: n(n - 1)/2 = 45 of the 100. The 10 diagonal tiles are half masked, but their entries with
    j <= i must still be computed, so they are not skipped.
    """,
    wrong=[
        mistake("count the diagonal tiles as skipped", 55, says="diagonal"),
        mistake("take half of the 100 tiles", 50, says="half"),
        mistake("count masked entries, not tiles", SKIP_T * (SKIP_T - 1) // 2, says="entries"),
    ],
)
def skipped_tiles(answer):
    """answer: the number of tiles tiled attention skips for a causal mask, T = 1000, block size 100."""
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        return f"write a number of tiles, got {type(answer).__name__} {answer!r}"
    if answer == 45:
        return None
    if answer == 55:
        return (
            "55 counts the 10 diagonal tiles as skipped; each diagonal tile has entries with j <= i that "
            "must be computed, so only the tiles strictly above the diagonal are skipped"
        )
    if answer == 50:
        return (
            "50 is half of the 100 tiles, but the masked half of the grid cuts through the diagonal tiles; "
            "count the tiles whose every entry is masked"
        )
    if answer == SKIP_T * (SKIP_T - 1) // 2:
        return f"{answer} counts masked entries (j > i) of the 1000 x 1000 grid; the question asks for 100 x 100 tiles"
    return (
        f"{answer} tiles: not right; draw the 10 x 10 grid of tiles and mark those with every entry above the diagonal"
    )


# --- Predict: how plain attention's memory grows when T doubles -------------------------------------


@exercise(
    hint="""
    Plain attention holds the T x T scores and the T x T weights. What happens to the number of entries
    of a T x T matrix when T doubles?
    """,
    reference=4.0,
    kind="prediction",
    explain="""
    About 4. The scores and weights are T x T matrices: doubling T quadruples their entries, and they
    dwarf the T x d output. Here (d_k = 16, tiles of 256) tiled attention holds a fixed number of
    tile-sized matrices beyond the output, whatever T.
    """,
    wrong=[
        mistake("expect memory to grow like T", 2, says="t x t"),
        mistake("expect a constant", 1, says="tiles"),
        mistake("multiply by d_k as well", 8, says="d_k"),
    ],
)
def memory_growth(answer):
    """answer: peak memory of plain attention at T = 4096 divided by that at T = 2048 (d_k = 16)."""
    value = prediction_number(answer)
    if abs(value - 4) <= 0.5:
        return None
    if abs(value - 2) <= 0.5:
        return "the output grows like T, but plain attention also holds the T x T scores and weights"
    if abs(value - 1) <= 0.25:
        return "a fixed memory is what the tiles need; plain attention holds whole T x T matrices"
    if abs(value - 8) <= 1:
        return "d_k sets the cost of each score, not how many are held: T x T numbers, whatever d_k"
    return f"{answer}: not right; count the entries of a T x T matrix at T = 2048 and T = 4096"


# --- 1. The online-softmax update ---------------------------------------------------------------------


def _update_reference(m, l, x):
    m_new = max(m, x)
    return m_new, l * math.exp(m - m_new) + math.exp(x - m_new)


def _update_no_rescale(m, l, x):
    m_new = max(m, x)
    return m_new, l + math.exp(x - m_new)


def _update_rescale_upside_down(m, l, x):
    m_new = max(m, x)
    return m_new, l * math.exp(m_new - m) + math.exp(x - m_new)


def _update_keep_old_max(m, l, x):
    return m, l + math.exp(x - m)


UPDATE_CASES = [(1.0, 2.5, 0.3), (1.0, 2.5, 3.0), (-2.0, 1.0, 4.0), (5.0, 1.7, 5.0), (0.0, 3.0, 10.0)]


@exercise(
    hint="""
    The new maximum is m_new = max(m, x). Every term already in l was exp(s - m); it must become
    exp(s - m_new) = exp(s - m) * exp(m - m_new). So l_new = l * exp(m - m_new) + exp(x - m_new).
    """,
    reference=_update_reference,
    wrong=[
        mistake("forget to rescale the old sum", _update_no_rescale, says="rescale"),
        mistake("rescale by exp(m_new - m)", _update_rescale_upside_down, says="exp(m - m_new)"),
        mistake("keep the old maximum", _update_keep_old_max, says="maximum"),
    ],
)
def online_update(fn):
    """fn(m, l, x) -> (m_new, l_new): the running maximum and sum of exp(s - m) after one new score x."""
    got, expected, named = [], [], {"no rescale": [], "upside down": [], "old max": []}
    rng = random.Random(fresh_seed())  # two cases drawn anew on every check, after the fixed ones
    cases = UPDATE_CASES + [(rng.uniform(-5, 5), rng.uniform(0.5, 10), rng.uniform(-8, 8)) for _ in range(2)]
    for m, l, x in cases:
        got.append([float(v) for v in fn(m, l, x)])
        expected.append(list(_update_reference(m, l, x)))
        for key, f in (
            ("no rescale", _update_no_rescale),
            ("upside down", _update_rescale_upside_down),
            ("old max", _update_keep_old_max),
        ):
            named[key].append(list(f(m, l, x)))
    if compare_arrays(got, expected, atol=1e-9) is None:
        return None
    if compare_arrays(got, named["no rescale"], atol=1e-9) is None:
        return (
            "when x is a new maximum, the old terms of l were exp(s - m) and must become exp(s - m_new): "
            "rescale l by exp(m - m_new) before adding exp(x - m_new)"
        )
    if compare_arrays(got, named["upside down"], atol=1e-9) is None:
        return "the old sum must shrink when the maximum grows: multiply it by exp(m - m_new) <= 1, not exp(m_new - m)"
    if compare_arrays(got, named["old max"], atol=1e-9) is None:
        return (
            "the running maximum must become max(m, x); keeping the old one lets exp(x - m) overflow "
            "for a large new score"
        )
    for (m, l, x), g, e in zip(cases, got, expected):
        if compare_arrays(g, e, atol=1e-9) is not None:
            return f"for m={m}, l={l}, x={x}: expected (m_new, l_new) = ({e[0]:.4f}, {e[1]:.4f}), got ({g[0]:.4f}, {g[1]:.4f})"
    return "the result does not match the online-softmax update"


# --- 2. The size of a key-value cache (grouped-query attention, half precision, a batch) --------------


def _cache_reference(num_layers, num_heads, num_kv_heads, d_k, length, batch, bytes_per_value):
    return num_layers * 2 * num_kv_heads * d_k * length * batch * bytes_per_value


def _cache_no_two(num_layers, num_heads, num_kv_heads, d_k, length, batch, bytes_per_value):
    return num_layers * num_kv_heads * d_k * length * batch * bytes_per_value


def _cache_query_heads(num_layers, num_heads, num_kv_heads, d_k, length, batch, bytes_per_value):
    return num_layers * 2 * num_heads * d_k * length * batch * bytes_per_value


def _cache_no_batch(num_layers, num_heads, num_kv_heads, d_k, length, batch, bytes_per_value):
    return num_layers * 2 * num_kv_heads * d_k * length * bytes_per_value


CACHE_CASES = [
    (32, 32, 8, 128, 4096, 1, 2),
    (80, 64, 8, 128, 1000, 4, 2),
    (12, 12, 12, 64, 512, 3, 4),
    (2, 4, 1, 16, 64, 10, 4),
]


@exercise(
    hint="""
    Each layer stores keys AND values for every position of every sentence. With grouped-query attention
    only the num_kv_heads key/value heads are stored (the query heads are not cached at all):
    num_layers x 2 x num_kv_heads x d_k x length x batch x bytes_per_value.
    """,
    reference=_cache_reference,
    kind="practice",
    wrong=[
        mistake("count keys only", _cache_no_two, says="keys and values"),
        mistake("count the query heads", _cache_query_heads, says="query heads"),
        mistake("forget the batch", _cache_no_batch, says="batch"),
    ],
)
def cache_bytes(fn):
    """fn(num_layers, num_heads, num_kv_heads, d_k, length, batch, bytes_per_value) -> bytes of the cache."""
    for case in CACHE_CASES:
        got, expected = fn(*case), _cache_reference(*case)
        if got == expected:
            continue
        args = "num_layers={}, num_heads={}, num_kv_heads={}, d_k={}, length={}, batch={}, bytes_per_value={}"
        where = args.format(*case)
        if got == _cache_no_two(*case):
            return f"for {where}: {got} is half the answer; every layer caches keys and values (the factor 2)"
        if got == _cache_query_heads(*case):
            return (
                f"for {where}: {got} uses the num_heads query heads; only the num_kv_heads key/value heads "
                "are cached (queries are never cached)"
            )
        if got == _cache_no_batch(*case):
            return f"for {where}: {got} is one sentence's cache; the batch holds {case[5]} sentences, each with its own"
        return f"for {where}: expected {expected} bytes, got {got}"
    return None


# --- 3. Merge two partial attention results -----------------------------------------------------------


def _merge_reference(part1, part2):
    (m1, l1, o1), (m2, l2, o2) = part1, part2
    m = max(m1, m2)
    w1, w2 = l1 * math.exp(m1 - m), l2 * math.exp(m2 - m)
    return (w1 * o1 + w2 * o2) / (w1 + w2)


def _merge_average(part1, part2):
    return (part1[2] + part2[2]) / 2


def _merge_sums_without_max(part1, part2):
    (_, l1, o1), (_, l2, o2) = part1, part2
    return (l1 * o1 + l2 * o2) / (l1 + l2)


def _merge_max_without_sums(part1, part2):
    (m1, _, o1), (m2, _, o2) = part1, part2
    m = max(m1, m2)
    w1, w2 = math.exp(m1 - m), math.exp(m2 - m)
    return (w1 * o1 + w2 * o2) / (w1 + w2)


def _partial(scores, values):
    """(m, l, o) of one query over some keys: o = sum softmax-like weights exp(s - m) / l times values."""
    m = float(scores.max())
    p = torch.exp(scores - m)
    return m, float(p.sum()), (p / p.sum()) @ values


@exercise(
    hint="""
    Part i says: o_i = sum_j exp(s_j - m_i) v_j / l_i over its keys. Bring both parts to the common maximum
    m = max(m1, m2): part i's unnormalised sum is l_i exp(m_i - m) o_i, and its share of the denominator is
    w_i = l_i exp(m_i - m). So o = (w1 o1 + w2 o2) / (w1 + w2).
    """,
    reference=_merge_reference,
    kind="transfer",
    wrong=[
        mistake("average the two outputs", _merge_average, says="average"),
        mistake("weight by the sums, ignoring the maxima", _merge_sums_without_max, says="different maxima"),
        mistake("weight by the maxima, ignoring the sums", _merge_max_without_sums, says="running sum l"),
    ],
)
def merge_partials(fn):
    """fn((m1, l1, o1), (m2, l2, o2)) -> the attention output of one query over all keys, from two partial
    results over two halves of the keys (o_i normalised by its own l_i)."""
    g = torch.Generator().manual_seed(fresh_seed())  # inputs drawn anew on every check
    for n, split, shift in ((10, 4, 0.0), (16, 8, 3.0), (7, 1, -2.0)):
        scores = torch.randn(n, dtype=torch.float64, generator=g) * 2  # (n,)
        scores[:split] += shift  # one half gets a different maximum
        values = torch.randn(n, 3, dtype=torch.float64, generator=g)  # (n, d_v)
        parts = _partial(scores[:split], values[:split]), _partial(scores[split:], values[split:])
        expected = torch.softmax(scores, 0) @ values  # (d_v,)
        got = torch.as_tensor(fn(*parts), dtype=torch.float64)
        if compare_arrays(got, expected, atol=1e-9) is None:
            continue
        for f, message in (
            (
                _merge_average,
                "the plain average gives each part weight 1/2, whatever its keys' scores; "
                "weight each part by its share w_i = l_i exp(m_i - m) of the softmax sum",
            ),
            (
                _merge_sums_without_max,
                "l1 and l2 are sums of exp(s - m_i) under different maxima: bring them "
                "to the common maximum m with exp(m_i - m) before weighting",
            ),
            (
                _merge_max_without_sums,
                "exp(m_i - m) alone ignores each part's running sum l_i = Σ exp(s_j - m_i); "
                "weight by it too: w_i = l_i exp(m_i - m)",
            ),
        ):
            if compare_arrays(got, f(*parts), atol=1e-9) is None:
                return f"{n} keys split after {split}: {message}"
        return f"{n} keys split after {split}: " + compare_arrays(got, expected, "merged output", atol=1e-9)
    return None


# --- 4. Tiles a sliding-window mask skips (transfer) -----------------------------------------------------


def _window_tiles(T, block_size, window, keeps):
    """Tiles of block_size x block_size (the last row and column of tiles may be shorter) for which
    keeps(allowed_tile) is true, where allowed[i, j] says query i may read key j."""
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]  # (T, 1), (1, T)
    allowed = (j <= i) & (j > i - window)  # (T, T): the window keys up to and including i
    starts = range(0, T, block_size)
    return sum(bool(keeps(allowed[a : a + block_size, b : b + block_size])) for a in starts for b in starts)


def _window_reference(T, block_size, window):
    return _window_tiles(T, block_size, window, lambda tile: not tile.any())  # nothing to read in the tile


def _window_causal_only(T, block_size, window):
    n = -(-T // block_size)
    return n * (n - 1) // 2


def _window_one_key_more(T, block_size, window):
    return _window_reference(T, block_size, window + 1)


def _window_partly_masked(T, block_size, window):
    return _window_tiles(T, block_size, window, lambda tile: not tile.all())  # any masked entry


WINDOW_CASES = [(32, 8, 8), (32, 8, 9), (40, 8, 12), (30, 4, 5), (64, 16, 17)]


@exercise(
    hint="""
    Query i may read key j only when i - window < j <= i. Build that (T, T) boolean matrix, cut it into
    tiles of block_size x block_size (the last ones may be shorter), and count the tiles where it is False
    everywhere: those the loop can skip. A tile with some allowed entries must still be computed.
    """,
    reference=_window_reference,
    kind="transfer",
    wrong=[
        mistake("count only the tiles above the diagonal (the causal mask alone)", _window_causal_only, says="causal"),
        mistake("let each query read window + 1 keys", _window_one_key_more, says="window keys"),
        mistake("skip every tile that is partly masked", _window_partly_masked, says="partly"),
    ],
)
def window_skipped_tiles(fn):
    """fn(T, block_size, window) -> the number of tiles a causal sliding-window mask skips entirely."""
    rng = random.Random(fresh_seed())  # a case drawn anew on every check, after the fixed ones
    drawn = (rng.randint(10, 80), rng.randint(2, 12), rng.randint(1, 24))
    for T, B, w in WINDOW_CASES + [drawn]:
        got, expected = fn(T, B, w), _window_reference(T, B, w)
        if got == expected:
            continue
        where = f"T={T}, block_size={B}, window={w}"
        if got == _window_causal_only(T, B, w) and w < T:
            return (
                f"for {where}: {got} counts only the tiles above the diagonal, as the causal mask alone would; "
                "the window also removes keys more than window - 1 positions back"
            )
        if got == _window_one_key_more(T, B, w):
            return f"for {where}: {got} lets each query read window + 1 keys; it reads window keys, itself included"
        if got == _window_partly_masked(T, B, w):
            return (
                f"for {where}: {got} also skips tiles that are only partly masked; a tile with any allowed "
                "score must be computed"
            )
        return f"for {where}: expected {expected} skipped tiles, got {got}"
    return None
