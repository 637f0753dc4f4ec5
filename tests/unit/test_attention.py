"""utils.attention.scaled_dot_product_attention against torch (outputs) and an explicit softmax (weights);
its unchecked core attend, with and without weights; the mask and head-weights checks of utils.validation."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from utils import validation
from utils.attention import attend, scaled_dot_product_attention
from utils.masks import causal_mask, combine_masks, padding_mask

# (q shape, k shape, v shape): 2-D, 3-D, 4-D, broadcast batch dims, T_q != T_k, d_k != d_v.
SHAPES = [
    ((5, 8), (5, 8), (5, 8)),
    ((2, 6, 4), (2, 6, 4), (2, 6, 4)),
    ((2, 3, 5, 8), (2, 3, 5, 8), (2, 3, 5, 8)),
    ((2, 1, 4, 8), (1, 3, 4, 8), (1, 3, 4, 8)),
    ((3, 4, 8), (3, 7, 8), (3, 7, 8)),
    ((2, 5, 6), (2, 5, 6), (2, 5, 3)),
    ((2, 2, 3, 16), (2, 2, 9, 16), (2, 2, 9, 5)),
]
DTYPES = {torch.float32: 1e-5, torch.float64: 1e-12}
MASK_KINDS = ["none", "causal", "padding", "causal+padding"]


def explicit_weights(q, k, mask=None):
    """softmax(q k^T / sqrt(d_k)) written out: exp, multiply by the mask, divide by the row sum (0 if empty)."""
    scores = (q.double() @ k.double().transpose(-2, -1)) / math.sqrt(q.shape[-1])  # (..., T_q, T_k)
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))  # (..., T_q, T_k)
    if mask is not None:
        e = e * mask  # (..., T_q, T_k)
    total = e.sum(dim=-1, keepdim=True)  # (..., T_q, 1)
    return torch.where(total > 0, e / torch.where(total > 0, total, 1.0), 0.0)  # (..., T_q, T_k)


def make_mask(kind, q_shape, k_shape, gen):
    """A bool mask of the given kind for these shapes; padding pads the end of each batch row's keys."""
    T_q, T_k = q_shape[-2], k_shape[-2]
    if kind == "none":
        return None
    causal = torch.ones(T_q, T_k, dtype=torch.bool).tril() if "causal" in kind else None  # (T_q, T_k)
    padding = None
    if "padding" in kind:
        batch = k_shape[:-2]
        lengths = torch.randint(1, T_k + 1, batch, generator=gen)  # (...,) at least one real key
        tokens = torch.where(torch.arange(T_k) < lengths[..., None], 1, 0)  # (..., T_k), pad id 0
        padding = padding_mask(tokens, pad_id=0)  # (..., 1, T_k)
    return combine_masks(causal, padding)


def random_qkv(shapes, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=gen, dtype=dtype) for s in shapes], gen


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kind", MASK_KINDS)
@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: "q{}k{}v{}".format(*s))
def test_matches_torch_and_explicit_softmax(shapes, kind, dtype):
    (q, k, v), gen = random_qkv(shapes, dtype)
    mask = make_mask(kind, q.shape, k.shape, gen)
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    assert out.shape == (*batch, q.shape[-2], v.shape[-1]) and out.dtype == dtype
    assert weights.shape == (*batch, q.shape[-2], k.shape[-2]) and weights.dtype == dtype
    tol = DTYPES[dtype]
    torch.testing.assert_close(
        weights.double(), explicit_weights(q, k, mask).expand_as(weights), atol=tol * 10, rtol=tol * 10
    )
    # torch broadcasts the batch dims of q, k, v itself only in some backends: expand them first.
    qe, ke, ve = (t.expand(*batch, *t.shape[-2:]) for t in (q, k, v))
    expected = F.scaled_dot_product_attention(qe, ke, ve, attn_mask=mask)  # (..., T_q, d_v)
    torch.testing.assert_close(out, expected, atol=tol * 10, rtol=tol * 10)
    allowed = torch.ones_like(weights, dtype=torch.bool) if mask is None else mask.expand_as(weights)
    assert torch.all(weights[~allowed] == 0), "a masked key got weight"
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1], dtype=dtype))


@pytest.mark.filterwarnings("ignore:Anomaly Detection")
def test_fully_masked_row_gives_zeros_and_no_nan_forward_or_backward():
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 4, 3, generator=gen, dtype=torch.float64, requires_grad=True) for _ in range(3))
    mask = causal_mask(4).expand(2, 4, 4).clone()  # (2, 4, 4)
    mask[0, 0] = False  # batch 0, query 0 may attend to nothing
    mask[1, :, 0] = False  # batch 1: key 0 is padding, so query 0 has nothing left (causal + padding)
    with torch.autograd.detect_anomaly():
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        (out.square().sum() + weights.sum()).backward()
    for b in range(2):
        assert torch.all(weights[b, 0] == 0) and torch.all(out[b, 0] == 0)
    assert torch.allclose(weights[:, 1:].sum(-1), torch.ones(2, 3, dtype=torch.float64))
    for name, t in (("q", q), ("k", k), ("v", v)):
        assert torch.isfinite(t.grad).all(), f"{name}.grad has NaN or inf"
    assert torch.all(q.grad[:, 0] == 0), "a query that sees nothing has no gradient"


def test_every_row_fully_masked():
    q = k = v = torch.randn(3, 4)
    out, weights = scaled_dot_product_attention(q, k, v, torch.zeros(3, 3, dtype=torch.bool))
    assert torch.all(out == 0) and torch.all(weights == 0)


def test_gradients_match_torch():
    (q, k, v), gen = random_qkv([(2, 5, 4), (2, 6, 4), (2, 6, 3)], torch.float64, seed=2)
    mask = combine_masks(
        torch.ones(5, 6, dtype=torch.bool).tril(1), padding_mask(torch.tensor([[1] * 6, [1] * 4 + [0] * 2]), 0)
    )
    grads = []
    for fn in (
        lambda *a: scaled_dot_product_attention(*a, mask)[0],
        lambda *a: F.scaled_dot_product_attention(*a, attn_mask=mask),
    ):
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        fn(*leaves).square().sum().backward()
        grads.append([t.grad for t in leaves])
    for ours, theirs in zip(*grads):
        torch.testing.assert_close(ours, theirs)


def test_dropout_drops_and_rescales_weights():
    q = k = v = torch.randn(1, 8, 4)
    torch.manual_seed(0)
    _, dropped = scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    _, plain = scaled_dot_product_attention(q, k, v)
    kept = dropped != 0
    assert 0 < kept.float().mean() < 1
    torch.testing.assert_close(dropped[kept], 2 * plain[kept])


# --- properties ----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_self_attention_is_permutation_equivariant(seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(7, 16, generator=gen, dtype=torch.float64)  # (seq, d_model)
    perm = torch.randperm(7, generator=gen)
    out, weights = scaled_dot_product_attention(x, x, x)
    out_p, weights_p = scaled_dot_product_attention(x[perm], x[perm], x[perm])
    torch.testing.assert_close(out_p, out[perm])  # Attention(PX) = P Attention(X)
    torch.testing.assert_close(weights_p, weights[perm][:, perm])  # A(PX) = P A(X) P^T
    torch.testing.assert_close(out_p.sum(0), out.sum(0))  # a sum-pool over positions is invariant


def test_with_projections_still_equivariant_with_pe_not():
    from utils.positional import sinusoidal_encoding

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(6, 8, generator=gen, dtype=torch.float64)  # (seq, d_model)
    W_q, W_k, W_v = (torch.randn(8, 8, generator=gen, dtype=torch.float64) for _ in range(3))
    perm = torch.tensor([5, 2, 0, 1, 4, 3])

    def attend(x):
        return scaled_dot_product_attention(x @ W_q, x @ W_k, x @ W_v)[0]  # (seq, d_model)

    torch.testing.assert_close(attend(x[perm]), attend(x)[perm])
    pe = sinusoidal_encoding(6, 8, dtype=torch.float64)  # (seq, d_model)
    assert not torch.allclose(attend(x[perm] + pe), attend(x + pe)[perm])


@pytest.mark.parametrize("seed", range(3))
def test_outputs_at_real_positions_do_not_depend_on_pads(seed):
    gen = torch.Generator().manual_seed(seed)
    tokens = torch.tensor([[3, 4, 5, 6, 0, 0], [7, 8, 0, 0, 0, 0]])  # (batch, T), pad id 0
    x = torch.randn(2, 6, 8, generator=gen)  # (batch, T, d_model)
    mask = padding_mask(tokens, 0)  # (batch, 1, T)
    out, _ = scaled_dot_product_attention(x, x, x, mask)
    y = torch.where((tokens == 0)[..., None], torch.randn(2, 6, 8, generator=gen) * 100, x)  # new pads
    out2, weights2 = scaled_dot_product_attention(y, y, y, mask)
    real = tokens != 0
    torch.testing.assert_close(out2[real], out[real])
    assert torch.all(weights2.masked_select(~mask) == 0)


def test_causal_mask_prevents_leakage_for_every_t():
    gen = torch.Generator().manual_seed(0)
    T = 6
    x = torch.randn(T, 8, generator=gen, dtype=torch.float64)  # (seq, d_model)
    mask = causal_mask(T)
    out, _ = scaled_dot_product_attention(x, x, x, mask)
    for t in range(T - 1):
        y = x.clone()
        y[t + 1 :] = torch.randn(T - t - 1, 8, generator=gen, dtype=torch.float64)  # change the future
        out_y, _ = scaled_dot_product_attention(y, y, y, mask)
        torch.testing.assert_close(out_y[: t + 1], out[: t + 1])  # the past is unchanged
        unmasked, _ = scaled_dot_product_attention(y, y, y)
        assert not torch.allclose(unmasked[: t + 1], scaled_dot_product_attention(x, x, x)[0][: t + 1])


# --- bad input -----------------------------------------------------------------------------------


def test_mismatched_d_k():
    with pytest.raises(
        ValueError, match=r"q and k must share their last dimension d_k, got q \(2, 5, 8\) and k \(2, 5, 4\)"
    ):
        scaled_dot_product_attention(torch.randn(2, 5, 8), torch.randn(2, 5, 4), torch.randn(2, 5, 4))


def test_mismatched_t_k_of_k_and_v():
    with pytest.raises(
        ValueError, match=r"k and v must have the same number of positions T_k.*k \(5, 8\) and v \(6, 8\)"
    ):
        scaled_dot_product_attention(torch.randn(5, 8), torch.randn(5, 8), torch.randn(6, 8))


def test_non_bool_mask():
    x = torch.randn(4, 8)
    with pytest.raises(ValueError, match=r"mask must be a bool tensor.*got dtype torch.int64 with shape \(4, 4\)"):
        scaled_dot_product_attention(x, x, x, torch.ones(4, 4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"mask must be a bool tensor.*torch.float32"):
        scaled_dot_product_attention(x, x, x, torch.ones(4, 4))


def test_non_broadcastable_mask():
    x = torch.randn(2, 4, 8)
    with pytest.raises(
        ValueError,
        match=r"mask of shape \(3, 3\) must broadcast to the scores' shape \(2, 4, 4\).*q \(2, 4, 8\) and k \(2, 4, 8\)",
    ):
        scaled_dot_product_attention(x, x, x, torch.ones(3, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"mask of shape \(5, 2, 4, 4\) must broadcast"):  # would grow the batch
        scaled_dot_product_attention(x, x, x, torch.ones(5, 2, 4, 4, dtype=torch.bool))


def test_mask_not_a_tensor():
    x = torch.randn(4, 8)
    with pytest.raises(TypeError, match="mask must be a torch.Tensor, got list"):
        scaled_dot_product_attention(x, x, x, [[True] * 4] * 4)


@pytest.mark.parametrize("name", ["q", "k", "v"])
def test_non_tensor_inputs(name):
    args = {"q": torch.randn(4, 8), "k": torch.randn(4, 8), "v": torch.randn(4, 8)}
    args[name] = args[name].tolist()
    with pytest.raises(TypeError, match=f"{name} must be a torch.Tensor, got list"):
        scaled_dot_product_attention(**args)


def test_other_bad_inputs():
    x = torch.randn(4, 8)
    with pytest.raises(ValueError, match=r"q must have at least 2 dimensions, got shape \(8,\)"):
        scaled_dot_product_attention(torch.randn(8), x, x)
    with pytest.raises(ValueError, match="k must be a floating-point tensor, got dtype torch.int64"):
        scaled_dot_product_attention(x, torch.ones(4, 8, dtype=torch.long), x)
    with pytest.raises(ValueError, match="q, k and v must share a dtype, got torch.float32, torch.float64"):
        scaled_dot_product_attention(x, x.double(), x)
    with pytest.raises(
        ValueError, match=r"leading \(batch\) dimensions of q, k and v must broadcast.*q \(2, 4, 8\), k \(3, 4, 8\)"
    ):
        scaled_dot_product_attention(torch.randn(2, 4, 8), torch.randn(3, 4, 8), torch.randn(3, 4, 8))
    with pytest.raises(ValueError, match=r"dropout_p must be a probability in \[0, 1\), got 1.5"):
        scaled_dot_product_attention(x, x, x, dropout_p=1.5)


# --- the unchecked core and the shared checks -----------------------------------------------------


@pytest.mark.filterwarnings("ignore:Anomaly Detection")
@pytest.mark.parametrize("kind", MASK_KINDS + ["empty rows"])
def test_attend_without_weights_equals_with_weights_forward_and_backward(kind):
    """attend(need_weights=False) runs torch's fused kernel: the same output and gradients, zero rows kept."""
    (q, k, v), gen = random_qkv([(2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4)], torch.float64, seed=3)
    mask = make_mask(kind.replace("empty rows", "padding"), q.shape, k.shape, gen)
    if kind == "empty rows":
        mask = mask.expand(2, 3, 5, 7).clone()
        mask[0, :, 1] = False  # query 1 of sequence 0 sees nothing, in every head
    results = []
    for need_weights in (True, False):
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]
        with torch.autograd.detect_anomaly():
            out, weights = attend(*leaves, mask, need_weights=need_weights)
            out.square().sum().backward()
        assert (weights is None) != need_weights
        results.append((out, [t.grad for t in leaves]))
    (out_w, grads_w), (out_f, grads_f) = results
    torch.testing.assert_close(out_f, out_w, atol=1e-12, rtol=0)
    for g_f, g_w in zip(grads_f, grads_w):
        torch.testing.assert_close(g_f, g_w, atol=1e-12, rtol=0)
    if kind == "empty rows":
        assert (out_f[0, :, 1] == 0).all()


def test_validation_mask_names_the_argument():
    shape = (2, 4, 5)
    m = torch.ones(4, 5, dtype=torch.bool)
    assert validation.mask("tgt_mask", m, shape) is m
    with pytest.raises(TypeError, match="tgt_mask must be a torch.Tensor, got ndarray"):
        validation.mask("tgt_mask", m.numpy(), shape)
    with pytest.raises(
        ValueError,
        match=r"tgt_mask must be a bool tensor \(True = may attend\), got dtype "
        r"torch.uint8 with shape \(4, 5\); for a 0/1 keep-mask \(1 = may attend\) use tgt_mask.bool\(\), "
        r"for an additive float mask \(0 = may attend, -inf = blocked\) use tgt_mask == 0",
    ):
        validation.mask("tgt_mask", m.to(torch.uint8), shape)
    with pytest.raises(
        ValueError,
        match=r"tgt_mask of shape \(5, 4\) must broadcast to the scores' shape "
        r"\(2, 4, 5\) \(..., T_q, T_k\); accepted: \(1, 4, 5\) or \(4, 5\) shared by the batch, \(2, 1, 5\) "
        r"per sentence's keys \(as utils.masks.padding_mask builds it\), \(2, 4, 5\) per sentence$",
    ):
        validation.mask("tgt_mask", m.T, shape)
    with pytest.raises(ValueError, match=r"\(3, 4, 5\) must broadcast .* for this layer; accepted: "):
        validation.mask("tgt_mask", m.expand(3, 4, 5), shape, "for this layer")


def test_the_mask_message_converts_an_additive_float_mask_the_right_way_round():
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 5, 3, generator=gen, dtype=torch.float64) for _ in range(3))  # (batch, h, T, d)
    additive = torch.zeros(5, 5, dtype=torch.float64).masked_fill(torch.rand(5, 5, generator=gen) < 0.4, float("-inf"))
    additive[:, 0] = 0.0  # every query keeps key 0
    with pytest.raises(ValueError, match=r"use mask == 0") as err:
        scaled_dot_product_attention(q, k, v, additive)
    assert "additive float mask (0 = may attend, -inf = blocked)" in str(err.value)
    converted, _ = scaled_dot_product_attention(q, k, v, additive == 0)  # the message's advice
    torch.testing.assert_close(converted, F.scaled_dot_product_attention(q, k, v, attn_mask=additive))
    inverted, _ = scaled_dot_product_attention(q, k, v, additive.bool())  # -inf -> True: the wrong way round
    assert not torch.allclose(inverted, converted)


def test_validation_head_weights():
    w = validation.head_weights("weights", torch.rand(2, 3, 4, requires_grad=True))
    assert isinstance(w, np.ndarray) and w.shape == (2, 3, 4)
    with pytest.raises(ValueError, match=r"weights must have shape \(num_heads, T_q, T_k\), got \(3, 4\)"):
        validation.head_weights("weights", np.ones((3, 4)))
    with pytest.raises(TypeError, match=r"weights must be an array of numbers \(num_heads, T_q, T_k\), got str"):
        validation.head_weights("weights", "heads")
    with pytest.raises(TypeError, match="got list"):
        validation.head_weights("weights", [[[1.0, 2.0]], [[1.0]]])  # ragged


def test_ambiguous_masks_are_refused_and_documented_ones_still_work():
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 3, 4), torch.randn(3, 5, 4), torch.randn(3, 5, 4)  # batch 3 = T_q 3
    with pytest.raises(ValueError, match=r"mask of shape \(3, 5\) is ambiguous for scores of shape \(3, 3, 5\)"):
        scaled_dot_product_attention(q, k, v, torch.ones(3, 5, dtype=torch.bool))
    tokens = torch.tensor([[1, 2, 0, 0, 0], [1, 2, 3, 0, 0], [1, 2, 3, 4, 5]])  # (batch, T_k), 0 = padding
    _, w = scaled_dot_product_attention(q, k, v, padding_mask(tokens, 0))  # (batch, 1, T_k): documented
    assert torch.equal(w > 0, padding_mask(tokens, 0).expand(3, 3, 5))
    x = torch.randn(3, 3, 4)  # self-attention, batch 3 = T 3: the causal mask needs its batch axis
    with pytest.raises(ValueError, match="ambiguous"):
        scaled_dot_product_attention(x, x, x, causal_mask(3))
    _, w = scaled_dot_product_attention(x, x, x, causal_mask(3)[None])  # (1, T, T)
    assert torch.equal(w > 0, causal_mask(3).expand(3, 3, 3))
    y = torch.randn(2, 3, 4)  # batch 2 != T 3: (T, T) is read as it always was
    _, w = scaled_dot_product_attention(y, y, y, causal_mask(3))
    assert torch.equal(w > 0, causal_mask(3).expand(2, 3, 3))
