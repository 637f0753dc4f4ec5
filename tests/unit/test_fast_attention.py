"""utils.fast_attention against its references: online softmax = torch.softmax, tiled attention = utils and
torch attention, grouped-query attention = torch's enable_gqa, the KV-cached decoder = the uncached one (greedy
decoding's use_cache too), cache sizes, the memory tracker; bad input."""

import math
import time

import pytest
import torch
import torch.nn.functional as F

from utils import fast_attention as fa
from utils.attention import scaled_dot_product_attention
from utils.masks import causal_mask
from utils.translator.decode import greedy_decode
from utils.translator.model import Seq2SeqTransformer, TranslatorConfig

# --- online softmax -----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape, block", [((5,), 1), ((4, 7), 1), ((3, 5, 33), 8), ((2, 64), 64), ((2, 3, 10), 100)])
def test_online_softmax_equals_torch(shape, block):
    g = torch.Generator().manual_seed(0)
    s = torch.randn(shape, generator=g, dtype=torch.float64) * 30
    assert torch.allclose(fa.online_softmax(s, block_size=block), torch.softmax(s, -1), atol=1e-12)


def test_online_softmax_extreme_and_masked_rows():
    s = torch.tensor(
        [[1000.0, 999.0, 1e4, -5.0], [-1e4, -1e4 - 3, -2e4, -1e4 + 1], [0.0, 1.0, 2.0, 50.0], [1.0, 2.0, 3.0, 4.0]],
        dtype=torch.float64,
    )
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[3] = False  # a fully masked row
    mask[0, 2] = False
    got = fa.online_softmax(s, mask)
    expected = torch.softmax(s.masked_fill(~mask, float("-inf")), -1)
    assert torch.allclose(got[:3], expected[:3], atol=1e-12)
    assert torch.isnan(expected[3]).all() and torch.equal(got[3], torch.zeros(4, dtype=torch.float64))
    all_inf = torch.full((2, 3), float("-inf"))
    assert torch.equal(fa.online_softmax(all_inf), torch.zeros(2, 3))


def test_online_softmax_update_matches_the_formula():
    m, l = fa.online_softmax_update(-math.inf, 0.0, 2.0)
    assert float(m) == 2.0 and float(l) == 1.0
    m2, l2 = fa.online_softmax_update(m, l, 5.0)
    assert float(m2) == 5.0 and math.isclose(float(l2), math.exp(-3) + 1)
    m3, l3 = fa.online_softmax_update(-math.inf, 0.0, -math.inf)
    assert float(l3) == 0.0 and not math.isnan(float(l3))


@pytest.mark.parametrize(
    "bad, error", [([1.0, 2.0], TypeError), (torch.tensor(1.0), ValueError), (torch.tensor([1, 2]), ValueError)]
)
def test_online_softmax_rejects_bad_scores(bad, error):
    with pytest.raises(error, match="scores"):
        fa.online_softmax(bad)


def test_online_softmax_rejects_bad_mask_and_block():
    s = torch.randn(3, 4)
    with pytest.raises(ValueError, match="mask"):
        fa.online_softmax(s, torch.ones(3, 4))
    with pytest.raises(ValueError, match="mask"):
        fa.online_softmax(s, torch.ones(3, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="block_size"):
        fa.online_softmax(s, block_size=0)


# --- tiled attention ----------------------------------------------------------------------------------

SHAPES = [
    ((1, 1, 17, 8), 4),
    ((2, 4, 37, 16), 5),
    ((3, 2, 64, 8), 16),
    ((1, 2, 10, 4), 32),
    ((2, 33, 8), 8),
    ((12, 3), 1),
]


@pytest.mark.parametrize("shape, block", SHAPES)
@pytest.mark.parametrize("causal", [False, True])
def test_tiled_attention_equals_utils_and_torch(shape, block, causal):
    torch.manual_seed(0)
    q, k, v = (torch.randn(shape, dtype=torch.float64) for _ in range(3))
    out, stats = fa.tiled_attention(q, k, v, block_size=block, causal=causal, return_stats=True)
    T = shape[-2]
    mask = causal_mask(T) if causal else None
    assert torch.allclose(out, scaled_dot_product_attention(q, k, v, mask)[0], atol=1e-12)
    assert torch.allclose(out, F.scaled_dot_product_attention(q, k, v, is_causal=causal), atol=1e-12)
    n = -(-T // block)
    assert stats["skipped"] == (fa.causal_skipped_tiles(T, block) if causal else 0)
    assert stats["computed"] + stats["skipped"] == n * n


@pytest.mark.parametrize(
    "T_q, T_k, block, query_block", [(7, 20, 4, None), (20, 7, 3, None), (30, 30, 8, 30), (30, 30, 4, 10)]
)
@pytest.mark.parametrize("causal", [False, True])
def test_tiled_attention_rectangular_and_query_blocks(T_q, T_k, block, query_block, causal):
    torch.manual_seed(1)
    q = torch.randn(2, T_q, 8, dtype=torch.float64)
    k, v = torch.randn(2, T_k, 8, dtype=torch.float64), torch.randn(2, T_k, 5, dtype=torch.float64)
    out = fa.tiled_attention(q, k, v, block_size=block, causal=causal, query_block=query_block)
    mask = torch.ones(T_q, T_k, dtype=torch.bool).tril() if causal else None  # j <= i
    assert torch.allclose(out, scaled_dot_product_attention(q, k, v, mask)[0], atol=1e-12)


def test_tiled_attention_float32_matches_torch():
    torch.manual_seed(2)
    q, k, v = (torch.randn(2, 4, 100, 16) for _ in range(3))
    out = fa.tiled_attention(q, k, v, block_size=32, causal=True)
    assert torch.allclose(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), atol=1e-5)


def test_causal_skipped_tiles_formula_and_tile_states():
    for T, B in [(1000, 100), (37, 5), (64, 16), (10, 32), (1, 1), (33, 8)]:
        n = -(-T // B)
        assert fa.causal_skipped_tiles(T, B) == n * (n - 1) // 2
        states = fa.tile_states(T, B, causal=True)
        assert states.shape == (n, n) and (states == "skipped").sum() == n * (n - 1) // 2
        assert (fa.tile_states(T, B, causal=False) == "full").all()
    assert fa.causal_skipped_tiles(1000, 100) == 45


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        (dict(q=[1.0]), TypeError, "q"),
        (dict(q=torch.randn(4, 5)), ValueError, "d_k"),
        (dict(k=torch.randn(5, 4)), ValueError, "T_k"),
        (dict(q=torch.randn(2, 4, 4)), ValueError, "leading"),
        (dict(block_size=0), ValueError, "block_size"),
        (dict(block_size=2.5), TypeError, "block_size"),
        (dict(causal=1), TypeError, "causal"),
        (dict(query_block=0), ValueError, "query_block"),
        (dict(v=torch.randn(4, 4, dtype=torch.float64)), ValueError, "dtype"),
    ],
)
def test_tiled_attention_rejects_bad_input(kwargs, error, name):
    args = dict(q=torch.randn(4, 4), k=torch.randn(4, 4), v=torch.randn(4, 4), block_size=2)
    args.update(kwargs)
    with pytest.raises(error, match=name):
        fa.tiled_attention(**args)


# --- grouped-query attention and cache sizes ----------------------------------------------------------


@pytest.mark.parametrize("h, g", [(8, 8), (8, 2), (8, 1), (6, 3)])
@pytest.mark.parametrize("causal", [False, True])
def test_grouped_query_attention_equals_torch(h, g, causal):
    torch.manual_seed(3)
    q = torch.randn(2, h, 9, 16)
    k, v = torch.randn(2, g, 9, 16), torch.randn(2, g, 9, 16)
    ours = fa.grouped_query_attention(q, k, v, causal_mask(9) if causal else None)
    theirs = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    assert torch.allclose(ours, theirs, atol=1e-5)


def test_grouped_query_attention_rejects_bad_heads():
    with pytest.raises(ValueError, match="heads"):
        fa.grouped_query_attention(torch.randn(1, 6, 3, 4), torch.randn(1, 4, 3, 4), torch.randn(1, 4, 3, 4))
    with pytest.raises(ValueError, match="shape"):
        fa.grouped_query_attention(torch.randn(6, 3, 4), torch.randn(1, 3, 4), torch.randn(1, 3, 4))


def test_kv_cache_bytes():
    assert fa.kv_cache_bytes(32, 32, 128, 4096, 2) == 2 * 2**30
    assert fa.kv_cache_bytes(2, 4, 16, 10, 4, batch=3) == 2 * 2 * 4 * 16 * 10 * 4 * 3
    with pytest.raises(ValueError, match="length"):
        fa.kv_cache_bytes(2, 4, 16, 0)
    with pytest.raises(TypeError, match="num_layers"):
        fa.kv_cache_bytes(2.0, 4, 16, 10)


# --- the KV cache of the translator -------------------------------------------------------------------


def small_model(norm_first=False, seed=0):
    torch.manual_seed(seed)
    config = TranslatorConfig(30, 40, d_model=32, num_heads=4, d_ff=64, num_layers=2, max_len=70, norm_first=norm_first)
    return Seq2SeqTransformer(config).eval()


def batch_src():
    src = torch.randint(4, 30, (6, 9), generator=torch.Generator().manual_seed(1))  # (6, 9)
    src[2, 6:] = 0  # padding in one sentence
    src[4, 3:] = 0
    return src


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cached_greedy_steps_equal_uncached(norm_first, seed):
    model = small_model(norm_first, seed)
    src = batch_src()
    ids, logits = fa.greedy_steps(model, src, 1, 64, use_cache=False)
    ids_c, logits_c = fa.greedy_steps(model, src, 1, 64, use_cache=True)
    assert ids.shape == (6, 64) and logits.shape == (6, 64, 40)
    assert torch.equal(ids, ids_c) and torch.allclose(logits, logits_c, atol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_greedy_decode_use_cache_gives_the_same_tokens(norm_first):
    model = small_model(norm_first)
    src = batch_src()
    for eos in (2, 5, 7):  # several end tokens, so that sentences finish at different steps
        assert greedy_decode(model, src, 1, eos, use_cache=True) == greedy_decode(model, src, 1, eos)
    assert greedy_decode(model, src, 1, 2, max_len=5, use_cache=True) == greedy_decode(model, src, 1, 2, max_len=5)
    with pytest.raises(TypeError, match="use_cache"):
        greedy_decode(model, src, 1, 2, use_cache="yes")


def test_cache_grows_by_one_row_and_matches_the_formula():
    model = small_model()
    src = batch_src()
    memory, src_mask = model.encode(src)
    cache = fa.start_cache(model, memory, src_mask)
    assert cache.length == 0 and cache.cross_k[0].shape == (6, 4, 9, 8)
    token = torch.full((6,), 1)
    for t in range(1, 4):
        token = fa.decode_step(model, cache, token).argmax(-1)
        assert cache.length == t and all(k.shape == (6, 4, t, 8) for k in cache.self_k + cache.self_v)
    assert cache.nbytes("self") == fa.kv_cache_bytes(2, 4, 8, 3, 4, batch=6)
    assert cache.nbytes("cross") == fa.kv_cache_bytes(2, 4, 8, 9, 4, batch=6)
    with pytest.raises(ValueError, match="part"):
        cache.nbytes("both")


def test_cache_bad_input():
    model = small_model()
    memory, src_mask = model.encode(batch_src())
    cache = fa.start_cache(model, memory, src_mask)
    with pytest.raises(TypeError, match="cache"):
        fa.decode_step(model, {}, torch.ones(6, dtype=torch.long))
    with pytest.raises(ValueError, match="one id per sentence"):
        fa.decode_step(model, cache, torch.ones(5, dtype=torch.long))
    with pytest.raises(TypeError, match="model"):
        fa.start_cache(object(), memory, src_mask)
    with pytest.raises(ValueError, match="src_mask"):
        fa.start_cache(model, memory, src_mask[:, 0])
    with pytest.raises(ValueError, match="steps"):
        fa.greedy_steps(model, batch_src(), 1, 70)
    with pytest.raises(TypeError, match="use_cache"):
        fa.greedy_steps(model, batch_src(), 1, 3, use_cache=None)


def test_cache_refuses_to_grow_past_max_len():
    torch.manual_seed(0)
    model = Seq2SeqTransformer(
        TranslatorConfig(30, 40, d_model=16, num_heads=2, d_ff=32, num_layers=1, max_len=3)
    ).eval()
    memory, src_mask = model.encode(batch_src()[:, :3])
    cache = fa.start_cache(model, memory, src_mask)
    token = torch.ones(6, dtype=torch.long)
    for _ in range(3):
        fa.decode_step(model, cache, token)
    with pytest.raises(ValueError, match="max_len"):
        fa.decode_step(model, cache, token)


def test_time_per_token_returns_one_value_per_repeat():
    times = fa.time_per_token(small_model(), batch_src(), 1, 4, use_cache=True, repeats=2)
    assert len(times) == 2 and all(t > 0 for t in times)


def test_time_per_token_leaves_the_encoder_out_and_time_encoder_times_it(monkeypatch):
    model = small_model()
    calls = []
    encode = model.encode

    def slow_encode(src):
        calls.append(src.shape)
        time.sleep(0.05)
        return encode(src)

    monkeypatch.setattr(model, "encode", slow_encode)
    times = fa.time_per_token(model, batch_src(), 1, 1, use_cache=False, repeats=2)
    assert len(calls) == 2 and all(t < 0.05 for t in times)
    assert all(t >= 0.05 for t in fa.time_encoder(model, batch_src(), repeats=2))


def test_timers_reject_bad_arguments():
    with pytest.raises(ValueError, match="repeats"):
        fa.time_encoder(small_model(), batch_src(), repeats=0)
    with pytest.raises(ValueError, match="max_len"):
        fa.time_per_token(small_model(), batch_src(), 1, 1000, use_cache=True)
    with pytest.raises(TypeError, match="use_cache"):
        fa.time_per_token(small_model(), batch_src(), 1, 2, use_cache=None)


# --- memory tracking ----------------------------------------------------------------------------------


def test_tensor_memory_counts_known_sizes():
    assert fa.peak_tensor_bytes(lambda: torch.zeros(100, 100)) == 40000
    assert fa.peak_tensor_bytes(lambda: torch.zeros(100, 100) + 1) == 80000
    x = torch.zeros(100, 100)
    assert fa.peak_tensor_bytes(lambda: x.view(-1)) == 0  # a view allocates nothing
    assert fa.peak_tensor_bytes(lambda: x.add_(1)) == 0  # nor does an in-place operation
    with fa.TensorMemory() as mem:
        y = torch.ones(10, 10, dtype=torch.float64)
        del y
    assert mem.peak == 800 and mem.current == 0
    with pytest.raises(TypeError, match="fn"):
        fa.peak_tensor_bytes(3)


def test_plain_attention_memory_is_quadratic_and_tiled_linear():
    Ts = [128, 256, 512, 1024]
    plain, tiled = [], []
    for T in Ts:
        q, k, v = (torch.randn(1, T, 8) for _ in range(3))
        plain.append(fa.peak_tensor_bytes(scaled_dot_product_attention, q, k, v))
        tiled.append(fa.peak_tensor_bytes(fa.tiled_attention, q, k, v, block_size=32, query_block=T))
    assert 1.8 <= fa.loglog_slope(Ts, plain) <= 2.2
    assert 0.8 <= fa.loglog_slope(Ts, tiled) <= 1.2


def test_loglog_slope():
    assert math.isclose(fa.loglog_slope([1, 2, 4], [3, 12, 48]), 2.0)
    with pytest.raises(ValueError, match="positive"):
        fa.loglog_slope([1, 2], [0, 1])


# --- non-finite input, huge sizes ----------------------------------------------------------------------


def test_online_softmax_refuses_nan_and_plus_inf_but_keeps_minus_inf():
    for bad in ([1.0, math.inf, 0.0], [1.0, math.nan, 0.0]):
        with pytest.raises(ValueError, match=r"scores must hold no NaN or \+inf .* at index \(1,\)"):
            fa.online_softmax(torch.tensor(bad))
        assert torch.isnan(torch.softmax(torch.tensor(bad), -1)).all()  # torch has no number to give either
    s = torch.tensor([1.0, -math.inf, 0.0])  # a removed score
    torch.testing.assert_close(fa.online_softmax(s), torch.softmax(s, -1))


@pytest.mark.parametrize(
    "args, error, match",
    [
        (("a", 0.0, 1.0), TypeError, "m must be a real number or a floating torch.Tensor, got str 'a'"),
        ((0.0, -1.0, 1.0), ValueError, "l must be >= 0, got a minimum of -1.0"),
        ((0.0, math.inf, 1.0), ValueError, "l must hold no NaN or infinity"),
        ((0.0, 1.0, math.nan), ValueError, r"x must hold no NaN or \+inf"),
        ((math.inf, 1.0, 0.0), ValueError, r"m must hold no NaN or \+inf"),
        ((torch.zeros(2), 1.0, torch.zeros(3)), ValueError, r"m, l and x must have shapes that broadcast"),
        ((0.0, 1.0, torch.tensor(1)), ValueError, "x must be a floating-point tensor"),
    ],
)
def test_online_softmax_update_rejects_bad_state(args, error, match):
    with pytest.raises(error, match=match):
        fa.online_softmax_update(*args)


@pytest.mark.parametrize("name, value", [("q", math.nan), ("k", math.nan), ("q", math.inf), ("v", -math.inf)])
@pytest.mark.parametrize("causal", [False, True])
def test_tiled_attention_refuses_non_finite_input(name, value, causal):
    torch.manual_seed(0)
    args = {n: torch.randn(1, 1, 6, 4) for n in ("q", "k", "v")}
    args[name][0, 0, 3, 0] = value
    with pytest.raises(ValueError, match=rf"{name} must hold no NaN or infinity, got 1 such entry .* \(0, 0, 3, 0\)"):
        fa.tiled_attention(**args, block_size=2, causal=causal)


def _spoiled_rows(out):
    """One letter per query row of a (1, 1, T, d) output: N (a NaN), 0 (all zeros) or . (numbers)."""
    return "".join("N" if torch.isnan(r).any() else "0" if (r == 0).all() else "." for r in out[0, 0])


@pytest.mark.parametrize(
    "name, causal, fused, math_kernel",
    [("q", False, "...0..", "...N.."), ("k", True, "...NNN", "NNNNNN")],
)
def test_torch_kernels_disagree_on_non_finite_input(name, causal, fused, math_kernel):
    # Why tiled_attention refuses non-finite input instead of propagating NaN "as torch does": torch's own
    # kernels disagree. A NaN in query 3 gives a zero row in the fused kernel and a NaN row in the math one; a
    # NaN in key 3 under the causal mask spoils rows 3-5 in the fused kernel and every row in the math one.
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.manual_seed(0)
    args = {n: torch.randn(1, 1, 6, 4) for n in ("q", "k", "v")}
    args[name][0, 0, 3, 0] = math.nan
    assert _spoiled_rows(F.scaled_dot_product_attention(*args.values(), is_causal=causal)) == fused
    with sdpa_kernel(SDPBackend.MATH):
        assert _spoiled_rows(F.scaled_dot_product_attention(*args.values(), is_causal=causal)) == math_kernel


def test_tile_states_is_capped():
    assert fa.tile_states(fa.MAX_TILES, 1, False).shape == (fa.MAX_TILES, fa.MAX_TILES)
    with pytest.raises(
        ValueError, match=r"T=20000 and block_size=1 give 20000 tiles a side; tile_states draws at most"
    ):
        fa.tile_states(20000, 1, True)


def test_grouped_query_attention_with_no_key_head():
    with pytest.raises(ValueError, match=r"k.shape\[1\] \(num_kv_heads\) must be a positive int, got 0"):
        fa.grouped_query_attention(torch.randn(1, 4, 3, 8), torch.randn(1, 0, 3, 8), torch.randn(1, 0, 3, 8))


def test_decoding_helpers_check_token_ids():
    model = small_model()
    memory, src_mask = model.encode(batch_src())
    cache = fa.start_cache(model, memory, src_mask)
    with pytest.raises(ValueError, match=r"tokens must hold token ids in \[0, vocab_size=40\), got min 999"):
        fa.decode_step(model, cache, torch.full((6,), 999))
    with pytest.raises(ValueError, match=r"bos_id must be an int in \[0, 39\]"):
        fa.greedy_steps(model, batch_src(), -1, 2)
    with pytest.raises(TypeError, match="fn must be a function"):
        fa.peak_tensor_bytes(5)
