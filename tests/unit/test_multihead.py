"""utils.multihead against torch.nn.MultiheadAttention with copied weights, and its bad-input errors."""

import pytest
import torch
from torch import nn

from utils import attention
from utils.attention import attend, scaled_dot_product_attention
from utils.masks import causal_mask, padding_mask
from utils.multihead import MultiHeadAttention, merge_heads, split_heads

ATOL = {torch.float32: 1e-5, torch.float64: 1e-10}
SHAPES = [(1, 1, 1), (2, 5, 5), (3, 4, 9), (4, 7, 3)]  # (batch, T_q, T_k)


def pair(d_model, num_heads, dtype=torch.float32, seed=0, bias=True):
    """A torch MultiheadAttention (eval) and our copy of it."""
    torch.manual_seed(seed)
    theirs = nn.MultiheadAttention(d_model, num_heads, bias=bias, batch_first=True, dtype=dtype).eval()
    return theirs, MultiHeadAttention.from_torch(theirs)


def lengths_mask(batch, T_k, seed=1):
    """A random key padding pattern with at least one real key per row: (True = pad) for torch."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, T_k + 1, (batch,), generator=g)
    tokens = (torch.arange(T_k) < lengths[:, None]).long()  # (batch, T_k), 0 = pad
    return tokens


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("num_heads", [1, 2, 4, 8])
@pytest.mark.parametrize("batch,T_q,T_k", SHAPES)
def test_cross_attention_equals_torch(dtype, num_heads, batch, T_q, T_k):
    theirs, ours = pair(16, num_heads, dtype)
    q = torch.randn(batch, T_q, 16, dtype=dtype)  # (batch, T_q, d_model)
    kv = torch.randn(batch, T_k, 16, dtype=dtype)  # (batch, T_k, d_model)
    out, w = ours(q, kv, kv)
    ref, ref_w = theirs(q, kv, kv, need_weights=True, average_attn_weights=True)
    assert w.shape == (batch, num_heads, T_q, T_k)
    torch.testing.assert_close(out, ref, atol=ATOL[dtype], rtol=0)
    torch.testing.assert_close(w.mean(1), ref_w, atol=ATOL[dtype], rtol=0)
    _, ref_heads = theirs(q, kv, kv, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(w, ref_heads, atol=ATOL[dtype], rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("num_heads", [1, 2, 4, 8])
def test_self_attention_with_distinct_key_and_value_tensors(dtype, num_heads):
    """The three projection paths (fused QKV, fused KV, separate) all equal torch."""
    theirs, ours = pair(32, num_heads, dtype)
    x = torch.randn(3, 6, 32, dtype=dtype)  # (batch, T, d_model)
    y = torch.randn(3, 4, 32, dtype=dtype)
    z = torch.randn(3, 4, 32, dtype=dtype)
    for args in [(x, x, x), (x, x.clone(), x.clone()), (x, y, y), (x, y, z)]:
        torch.testing.assert_close(ours(*args)[0], theirs(*args)[0], atol=ATOL[dtype], rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("num_heads", [1, 2, 4, 8])
@pytest.mark.parametrize("batch,T_q,T_k", SHAPES)
def test_key_padding_mask_equals_torch(dtype, num_heads, batch, T_q, T_k):
    theirs, ours = pair(16, num_heads, dtype, seed=2)
    q = torch.randn(batch, T_q, 16, dtype=dtype)
    kv = torch.randn(batch, T_k, 16, dtype=dtype)
    tokens = lengths_mask(batch, T_k)
    out, w = ours(q, kv, kv, mask=padding_mask(tokens, 0))  # ours: True = may attend
    ref, ref_w = theirs(q, kv, kv, key_padding_mask=tokens == 0)  # torch: True = NOT allowed
    torch.testing.assert_close(out, ref, atol=ATOL[dtype], rtol=0)
    torch.testing.assert_close(w.mean(1), ref_w, atol=ATOL[dtype], rtol=0)
    assert (w[(tokens == 0)[:, None, None, :].expand_as(w)] == 0).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("num_heads", [1, 2, 4, 8])
@pytest.mark.parametrize("T", [1, 4, 9])
def test_causal_and_combined_masks_equal_torch(dtype, num_heads, T):
    theirs, ours = pair(16, num_heads, dtype, seed=3)
    x = torch.randn(3, T, 16, dtype=dtype)  # (batch, T, d_model)
    causal = causal_mask(T)  # (T, T)
    out, _ = ours(x, x, x, mask=causal)
    ref, _ = theirs(x, x, x, attn_mask=~causal)
    torch.testing.assert_close(out, ref, atol=ATOL[dtype], rtol=0)
    tokens = lengths_mask(3, T, seed=4)
    both = causal & padding_mask(tokens, 0)  # (batch, T, T): every row keeps key 0
    out, w = ours(x, x, x, mask=both)
    ref, ref_w = theirs(x, x, x, attn_mask=~causal, key_padding_mask=tokens == 0)
    torch.testing.assert_close(out, ref, atol=ATOL[dtype], rtol=0)
    torch.testing.assert_close(w.mean(1), ref_w, atol=ATOL[dtype], rtol=0)


def test_per_head_4d_mask_matches_torch_3d_attn_mask():
    theirs, ours = pair(16, 4, torch.float64, seed=5)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    mask = torch.rand(2, 4, 5, 5, generator=g) > 0.5
    mask[..., 0] = True  # every query keeps at least one key
    out, _ = ours(x, x, x, mask=mask)
    ref, _ = theirs(x, x, x, attn_mask=~mask.reshape(8, 5, 5))  # torch: (batch * heads, T_q, T_k)
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=0)


def test_fully_masked_query_row_gives_zero_weights_not_nan():
    _, ours = pair(8, 2)
    x = torch.randn(1, 3, 8)
    mask = torch.tensor([[True, True, True], [False, False, False], [True, False, False]])
    out, w = ours(x, x, x, mask=mask)
    assert not torch.isnan(out).any() and (w[0, :, 1] == 0).all()
    assert torch.allclose(w[0, :, [0, 2]].sum(-1), torch.ones(2, 2))


def test_no_bias_variant_equals_torch():
    theirs, ours = pair(16, 4, torch.float64, bias=False)
    assert ours.W_q.bias is None and ours.W_o.bias is None
    x = torch.randn(2, 3, 16, dtype=torch.float64)
    torch.testing.assert_close(ours(x, x, x)[0], theirs(x, x, x)[0], atol=1e-10, rtol=0)


def test_attend_is_the_checked_function_without_checks():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, n, 4, generator=g, dtype=torch.float64) for n in (5, 6, 6))
    mask = torch.rand(2, 1, 5, 6, generator=g) > 0.4
    mask[0, 0, 2] = False  # a query with nothing to attend to
    for m in (None, mask):
        a, wa = attend(q, k, v, m)
        b, wb = scaled_dot_product_attention(q, k, v, m)
        assert torch.equal(a, b) and torch.equal(wa, wb)


def test_multihead_attention_computes_with_utils_attention_attend(monkeypatch):
    """MultiHeadAttention has no attention of its own: it calls lesson 03's utils.attention.attend."""
    import utils.multihead

    calls = []

    def spy(*args, **kwargs):
        calls.append(args[5] if len(args) > 5 else kwargs.get("need_weights", True))
        return attention.attend(*args, **kwargs)

    monkeypatch.setattr(utils.multihead, "attend", spy)
    _, ours = pair(8, 2)
    x = torch.randn(1, 3, 8)
    ours(x, x, x)
    ours(x, x, x, need_weights=False)
    assert calls == [True, False]


def test_split_and_merge_heads_are_inverse():
    x = torch.randn(2, 5, 12)  # (batch, T, d_model)
    heads = split_heads(x, 3)  # (batch, 3, T, 4)
    assert heads.shape == (2, 3, 5, 4)
    assert torch.equal(heads[:, 1], x[..., 4:8])  # head 1 owns columns 4..7
    assert torch.equal(merge_heads(heads), x)


@pytest.mark.parametrize("num_heads", [1, 2, 4, 8])
def test_gradients_reach_every_parameter_and_match_torch(num_heads):
    theirs, ours = pair(16, num_heads, torch.float64, seed=6)
    x = torch.randn(2, 5, 16, dtype=torch.float64, requires_grad=True)
    y = torch.randn(2, 4, 16, dtype=torch.float64)
    ours(x, y, y)[0].pow(2).sum().backward()
    theirs(x, y, y)[0].pow(2).sum().backward()
    for name, p in ours.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
    g = {n: p.grad for n, p in theirs.named_parameters()}
    in_w = torch.cat([ours.W_q.weight.grad, ours.W_k.weight.grad, ours.W_v.weight.grad])
    in_b = torch.cat([ours.W_q.bias.grad, ours.W_k.bias.grad, ours.W_v.bias.grad])
    torch.testing.assert_close(in_w, g["in_proj_weight"], atol=1e-10, rtol=0)
    torch.testing.assert_close(in_b, g["in_proj_bias"], atol=1e-10, rtol=0)
    torch.testing.assert_close(ours.W_o.weight.grad, g["out_proj.weight"], atol=1e-10, rtol=0)


def test_fused_self_attention_gradients_reach_wq_wk_wv():
    _, ours = pair(16, 4)
    x = torch.randn(2, 5, 16)
    ours(x, x, x)[0].sum().backward()
    for lin in (ours.W_q, ours.W_k, ours.W_v, ours.W_o):
        assert lin.weight.grad.abs().sum() > 0 and lin.bias.grad.abs().sum() > 0


def test_dropout_only_in_training_mode():
    theirs = nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True).train()
    ours = MultiHeadAttention.from_torch(theirs)
    assert ours.training and ours.dropout == 0.5
    x = torch.randn(1, 6, 8)
    torch.manual_seed(0)
    _, w = ours(x, x, x)
    assert (w == 0).any()  # some weights dropped
    ours.eval()
    _, w = ours(x, x, x)
    assert (w > 0).all()


# --- bad input -------------------------------------------------------------------------------


def test_d_model_not_divisible_by_num_heads():
    with pytest.raises(ValueError, match=r"d_model must be divisible by num_heads=3 .*got d_model=10"):
        MultiHeadAttention(10, 3)


def test_non_int_sizes():
    with pytest.raises(TypeError, match="num_heads must be an int, got float"):
        MultiHeadAttention(8, 2.0)
    with pytest.raises(ValueError, match="d_model must be a positive int, got 0"):
        MultiHeadAttention(0, 1)


def test_wrong_rank_width_and_type():
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 3, 8)
    with pytest.raises(ValueError, match=r"query must have shape \(batch, seq, d_model=8\), got \(3, 8\)"):
        mha(x[0], x, x)
    with pytest.raises(ValueError, match=r"key must have shape \(batch, seq, d_model=8\), got \(2, 3, 6\)"):
        mha(x, x[..., :6], x)
    with pytest.raises(TypeError, match="value must be a torch.Tensor, got list"):
        mha(x, x, [[1.0]])
    with pytest.raises(ValueError, match="query must be a floating-point tensor, got dtype torch.int64"):
        mha(x.long(), x, x)


def test_mismatched_key_value_and_batch():
    mha = MultiHeadAttention(8, 2)
    x, y = torch.randn(2, 3, 8), torch.randn(2, 4, 8)
    with pytest.raises(ValueError, match=r"key and value must have the same shape.*\(2, 3, 8\).*\(2, 4, 8\)"):
        mha(x, x, y)
    with pytest.raises(ValueError, match=r"query and key must have the same batch size"):
        mha(torch.randn(1, 3, 8), x, x)


def test_bad_masks():
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 3, 8)
    with pytest.raises(ValueError, match="mask must be a bool tensor"):
        mha(x, x, x, mask=torch.ones(3, 3))
    with pytest.raises(ValueError, match=r"mask of shape \(2, 4\) must broadcast"):
        mha(x, x, x, mask=torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="mask must be a torch.Tensor, got list"):
        mha(x, x, x, mask=[[True]])


def test_from_torch_rejects_wrong_modules():
    with pytest.raises(TypeError, match="m must be a torch.nn.MultiheadAttention, got Linear"):
        MultiHeadAttention.from_torch(nn.Linear(4, 4))
    with pytest.raises(ValueError, match="batch_first=True, got batch_first=False"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2))
    with pytest.raises(ValueError, match="kdim = vdim = embed_dim"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, kdim=4, vdim=4, batch_first=True))
    with pytest.raises(ValueError, match="no add_bias_kv"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, add_bias_kv=True, batch_first=True))


def test_masked_gradients_equal_torch():
    """The in-place masking of the scores keeps autograd correct."""
    theirs, ours = pair(16, 4, torch.float64, seed=7)
    x = torch.randn(3, 6, 16, dtype=torch.float64, requires_grad=True)
    x_t = x.detach().clone().requires_grad_(True)
    tokens = lengths_mask(3, 6, seed=8)
    mask = causal_mask(6) & padding_mask(tokens, 0)  # (batch, T, T)
    ours(x, x, x, mask=mask)[0].pow(2).sum().backward()
    theirs(x_t, x_t, x_t, attn_mask=~causal_mask(6), key_padding_mask=tokens == 0)[0].pow(2).sum().backward()
    torch.testing.assert_close(x.grad, x_t.grad, atol=1e-10, rtol=0)
    torch.testing.assert_close(ours.W_k.weight.grad, theirs.in_proj_weight.grad[16:32], atol=1e-10, rtol=0)


# --- need_weights=False: torch's fused kernel, the same numbers -------------------------------------

FUSED_SHAPES = [(1, 1, 1), (2, 5, 5), (3, 4, 9), (4, 7, 3), (2, 16, 16)]  # (batch, T_q, T_k)
FUSED_MASKS = ["none", "padding", "causal", "causal+padding", "empty rows"]


def fused_mask(kind, batch, T_q, T_k, seed=0):
    """A bool mask (True = may attend) of the given kind; "empty rows" has queries that may attend to nothing."""
    g = torch.Generator().manual_seed(seed)
    if kind == "none":
        return None
    tokens = lengths_mask(batch, T_k, seed)  # (batch, T_k), at least one real key
    causal = torch.ones(T_q, T_k, dtype=torch.bool).tril(T_k - T_q)  # (T_q, T_k): the last query sees all
    if kind == "padding":
        return padding_mask(tokens, 0)  # (batch, 1, T_k)
    if kind == "causal":
        return causal
    if kind == "causal+padding":
        return causal & padding_mask(tokens, 0)  # (batch, T_q, T_k), some rows may be empty
    mask = torch.rand(batch, T_q, T_k, generator=g) > 0.5  # (batch, T_q, T_k)
    mask[:, 0] = False  # query 0 of every sequence sees nothing
    mask[0] = False  # and the whole first sequence sees nothing
    return mask


def both_paths(ours, q, kv, mask, dtype):
    """Outputs and gradients (inputs and every parameter) of the weights path and of the fused path."""
    results = []
    for need_weights in (True, False):
        ours.zero_grad(set_to_none=True)
        q_, kv_ = (t.detach().clone().requires_grad_() for t in (q, kv))
        args = (q_, q_, q_) if q is kv else (q_, kv_, kv_)
        out, w = ours(*args, mask=mask, need_weights=need_weights)
        assert (w is None) == (not need_weights)
        out.square().sum().backward()
        grads = {"query": q_.grad} | ({} if q is kv else {"key": kv_.grad})
        grads |= {name: p.grad for name, p in ours.named_parameters()}
        results.append((out, grads))
    return results


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kind", FUSED_MASKS)
@pytest.mark.parametrize("num_heads", [1, 4])
@pytest.mark.parametrize("batch,T_q,T_k", FUSED_SHAPES)
def test_fused_path_equals_weights_path_cross_attention(dtype, kind, num_heads, batch, T_q, T_k):
    _, ours = pair(16, num_heads, dtype, seed=10)
    q = torch.randn(batch, T_q, 16, dtype=dtype)  # (batch, T_q, d_model)
    kv = torch.randn(batch, T_k, 16, dtype=dtype)  # (batch, T_k, d_model)
    (out_w, grads_w), (out_f, grads_f) = both_paths(ours, q, kv, fused_mask(kind, batch, T_q, T_k), dtype)
    torch.testing.assert_close(out_f, out_w, atol=ATOL[dtype], rtol=0)
    for name in grads_w:
        assert torch.isfinite(grads_f[name]).all(), name
        torch.testing.assert_close(grads_f[name], grads_w[name], atol=10 * ATOL[dtype], rtol=0, msg=name)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kind", FUSED_MASKS)
@pytest.mark.parametrize("num_heads", [2, 8])
@pytest.mark.parametrize("batch,T", [(1, 1), (2, 6), (3, 16)])
def test_fused_path_equals_weights_path_self_attention(dtype, kind, num_heads, batch, T):
    _, ours = pair(32, num_heads, dtype, seed=11)
    x = torch.randn(batch, T, 32, dtype=dtype)  # (batch, T, d_model)
    (out_w, grads_w), (out_f, grads_f) = both_paths(ours, x, x, fused_mask(kind, batch, T, T, seed=3), dtype)
    torch.testing.assert_close(out_f, out_w, atol=ATOL[dtype], rtol=0)
    for name in grads_w:
        torch.testing.assert_close(grads_f[name], grads_w[name], atol=10 * ATOL[dtype], rtol=0, msg=name)


@pytest.mark.filterwarnings("ignore:Anomaly Detection")
def test_fused_path_gives_zero_rows_and_no_nan_forward_or_backward():
    _, ours = pair(8, 2, torch.float64)
    x = torch.randn(2, 4, 8, dtype=torch.float64, requires_grad=True)
    mask = causal_mask(4).expand(2, 4, 4).clone()  # (batch, T, T)
    mask[0, 0] = False  # batch 0, query 0 may attend to nothing
    mask[1] = False  # batch 1 sees nothing at all
    with torch.autograd.detect_anomaly():
        out, w = ours(x, x, x, mask=mask, need_weights=False)
        out.square().sum().backward()
    assert w is None and torch.isfinite(x.grad).all()
    bias = ours.W_o.bias  # a query that attends to nothing outputs 0 W_o + b_o
    torch.testing.assert_close(out[0, 0], bias.expand(8), atol=0, rtol=0)
    torch.testing.assert_close(out[1], bias.expand(4, 8), atol=0, rtol=0)


def test_per_head_4d_mask_on_the_fused_path():
    _, ours = pair(16, 4, torch.float64, seed=5)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    mask = torch.rand(2, 4, 5, 5, generator=torch.Generator().manual_seed(0)) > 0.5  # some rows empty
    torch.testing.assert_close(ours(x, x, x, mask, need_weights=False)[0], ours(x, x, x, mask)[0], atol=1e-10, rtol=0)


def test_fused_path_with_dropout_runs_in_training_and_is_exact_in_eval():
    torch.manual_seed(0)
    ours = MultiHeadAttention(16, 4, dropout=0.5).train()
    x = torch.randn(3, 6, 16, requires_grad=True)
    mask = padding_mask(lengths_mask(3, 6), 0)  # (batch, 1, T)
    out, w = ours(x, x, x, mask, need_weights=False)
    out.sum().backward()
    assert w is None and out.shape == (3, 6, 16) and torch.isfinite(x.grad).all()
    torch.manual_seed(1)
    again, _ = ours(x, x, x, mask, need_weights=False)
    assert not torch.allclose(again, out)  # dropout is random in training mode
    ours.eval()
    torch.testing.assert_close(ours(x, x, x, mask, need_weights=False)[0], ours(x, x, x, mask)[0], atol=1e-5, rtol=0)


def test_fused_path_equals_torch_without_weights():
    theirs, ours = pair(16, 4, torch.float64, seed=12)
    x = torch.randn(3, 7, 16, dtype=torch.float64)
    tokens = lengths_mask(3, 7, seed=2)
    out, w = ours(x, x, x, mask=padding_mask(tokens, 0), need_weights=False)
    ref, ref_w = theirs(x, x, x, key_padding_mask=tokens == 0, need_weights=False)
    assert w is None and ref_w is None
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=0)


def test_need_weights_must_be_a_bool():
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 3, 8)
    with pytest.raises(TypeError, match="need_weights must be a bool .True or False., got int 0"):
        mha(x, x, x, need_weights=0)
    with pytest.raises(TypeError, match="need_weights must be a bool .True or False., got str 'no'"):
        mha(x, x, x, need_weights="no")


def test_split_and_merge_heads_check_their_arguments():
    x = torch.randn(2, 3, 8)
    assert torch.equal(merge_heads(split_heads(x, 2)), x)
    with pytest.raises(ValueError, match=r"x.shape\[-1\] \(d_model\) must be divisible by num_heads=2, got .*=7"):
        split_heads(torch.randn(2, 3, 7), 2)
    with pytest.raises(ValueError, match=r"x must have shape \(batch, T, d_model\), got \(3, 8\)"):
        split_heads(x[0], 2)
    with pytest.raises(ValueError, match="num_heads must be a positive int, got 0"):
        split_heads(x, 0)
    with pytest.raises(TypeError, match="x must be a torch.Tensor, got str"):
        split_heads("x", 2)
    with pytest.raises(ValueError, match=r"x must have shape \(batch, num_heads, T, d_k\), got \(2, 3, 8\)"):
        merge_heads(x)


@pytest.mark.parametrize("dropout", [2.0, -0.5, 1.0, float("nan")])
def test_bad_dropout_is_refused(dropout):
    with pytest.raises(ValueError, match=r"dropout must be a probability in \[0, 1\), got"):
        MultiHeadAttention(8, 2, dropout=dropout)


def test_bad_bias_and_huge_size():
    with pytest.raises(TypeError, match="bias must be a bool"):
        MultiHeadAttention(8, 2, bias="yes")
    with pytest.raises(ValueError, match=r"^d_model=1000000 asks for four float32 projections of "):
        MultiHeadAttention(10**6, 1)


def test_input_of_another_dtype_is_a_clear_error():
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 3, 8, dtype=torch.float64)
    with pytest.raises(
        ValueError, match=r"query must have dtype torch.float32 \(that of this module's weights\), got torch.float64"
    ):
        mha(x, x, x)
    out, _ = mha.double()(x, x, x)  # a float64 module takes float64 input
    assert out.dtype == torch.float64


def test_mask_whose_batch_equals_t_q_is_ambiguous():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2).eval()
    q, kv = torch.randn(3, 3, 8), torch.randn(3, 5, 8)  # batch 3 = T_q 3, T_k 5
    keys = torch.ones(3, 5, dtype=torch.bool)
    keys[1, 2] = False  # sentence 1 must not see key 2
    with pytest.raises(
        ValueError, match=r"mask of shape \(3, 5\) is ambiguous .* every dimension: \(1, 3, 5\) or \(3, 5\) shared"
    ):
        mha(q, kv, kv, keys)
    # the accepted spellings of that key mask give what the sentence alone gives
    out, w = mha(q, kv, kv, keys[:, None, :])  # (batch, 1, T_k)
    assert torch.all(w[1, :, :, 2] == 0) and torch.all(w[0, :, :, 2] > 0)
    alone, _ = mha(q[1:2], kv[1:2], kv[1:2], keys[1:2])  # batch 1: (1, T_k) is not ambiguous
    torch.testing.assert_close(out[1:2], alone)
    # with another batch size a (T_q, T_k) mask is what it has always been
    causal = torch.ones(3, 5, dtype=torch.bool).tril()
    _, w4 = mha(torch.randn(4, 3, 8), torch.randn(4, 5, 8), torch.randn(4, 5, 8), causal)
    assert torch.all(w4[:, :, 0, 1:] == 0)
