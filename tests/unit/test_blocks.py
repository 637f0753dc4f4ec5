"""utils.blocks against torch.nn.Transformer{Encoder,Decoder}{Layer,} with copied weights, and bad input."""

import functools

import pytest
import torch
from torch import nn

from utils.blocks import Decoder, DecoderLayer, Encoder, EncoderLayer, FeedForward
from utils.masks import causal_mask, padding_mask

ATOL = {torch.float32: 1e-5, torch.float64: 1e-10}
D_MODEL, D_FF = 16, 32


def torch_layer(kind, num_heads, norm_first, dtype=torch.float32, seed=0):
    """A seeded torch layer of class `kind` in eval mode, its LayerNorms perturbed away from (1, 0)."""
    torch.manual_seed(seed)
    layer = kind(D_MODEL, num_heads, D_FF, dropout=0.0, batch_first=True, norm_first=norm_first, dtype=dtype)
    _perturb_norms(layer)
    return layer.eval()


torch_encoder_layer = functools.partial(torch_layer, nn.TransformerEncoderLayer)
torch_decoder_layer = functools.partial(torch_layer, nn.TransformerDecoderLayer)


def _perturb_norms(module):
    """LayerNorms start at gamma = 1, beta = 0; random values make sure they are really copied."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)


def key_padding(batch, T, seed=1):
    """Token ids with trailing padding (id 0); each sequence keeps at least one real token."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, T + 1, (batch,), generator=g)
    return (torch.arange(T) < lengths[:, None]).long()  # (batch, T)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("num_heads", [1, 2, 4, 8])
@pytest.mark.parametrize("batch,T", [(1, 1), (2, 5), (3, 8)])
def test_encoder_layer_equals_torch(dtype, norm_first, num_heads, batch, T):
    theirs = torch_encoder_layer(num_heads, norm_first, dtype)
    ours = EncoderLayer.from_torch(theirs)
    x = torch.randn(batch, T, D_MODEL, dtype=dtype)  # (batch, T, d_model)
    torch.testing.assert_close(ours(x), theirs(x), atol=ATOL[dtype], rtol=0)
    tokens = key_padding(batch, T)
    out = ours(x, mask=padding_mask(tokens, 0))  # ours: True = may attend
    ref = theirs(x, src_key_padding_mask=tokens == 0)  # torch: True = NOT allowed
    torch.testing.assert_close(out, ref, atol=ATOL[dtype], rtol=0)
    out = ours(x, mask=causal_mask(T))
    ref = theirs(x, src_mask=~causal_mask(T))
    torch.testing.assert_close(out, ref, atol=ATOL[dtype], rtol=0)
    assert ours.self_attn_weights.shape == (batch, num_heads, T, T)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("num_heads", [1, 2, 4, 8])
@pytest.mark.parametrize("batch,T_tgt,T_src", [(1, 1, 1), (2, 4, 7), (3, 6, 2)])
def test_decoder_layer_equals_torch(dtype, norm_first, num_heads, batch, T_tgt, T_src):
    theirs = torch_decoder_layer(num_heads, norm_first, dtype)
    ours = DecoderLayer.from_torch(theirs)
    y = torch.randn(batch, T_tgt, D_MODEL, dtype=dtype)  # (batch, T_tgt, d_model)
    memory = torch.randn(batch, T_src, D_MODEL, dtype=dtype)  # (batch, T_src, d_model)
    torch.testing.assert_close(ours(y, memory), theirs(y, memory), atol=ATOL[dtype], rtol=0)
    src, tgt = key_padding(batch, T_src, 2), key_padding(batch, T_tgt, 3)
    tgt_mask = causal_mask(T_tgt) & padding_mask(tgt, 0)  # (batch, T_tgt, T_tgt)
    out = ours(y, memory, tgt_mask=tgt_mask, memory_mask=padding_mask(src, 0))
    ref = theirs(
        y, memory, tgt_mask=~causal_mask(T_tgt), tgt_key_padding_mask=tgt == 0, memory_key_padding_mask=src == 0
    )
    torch.testing.assert_close(out, ref, atol=ATOL[dtype], rtol=0)
    assert ours.self_attn_weights.shape == (batch, num_heads, T_tgt, T_tgt)
    assert ours.cross_attn_weights.shape == (batch, num_heads, T_tgt, T_src)
    # the padded source positions receive no cross-attention
    assert (ours.cross_attn_weights.masked_select((src == 0)[:, None, None, :]) == 0).all()


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("num_heads", [2, 4])
def test_encoder_and_decoder_stacks_equal_torch(norm_first, num_heads):
    dtype = torch.float64
    final = (lambda: nn.LayerNorm(D_MODEL, dtype=dtype)) if norm_first else (lambda: None)
    enc_t = nn.TransformerEncoder(
        torch_encoder_layer(num_heads, norm_first, dtype), 3, norm=final(), enable_nested_tensor=False
    )
    dec_t = nn.TransformerDecoder(torch_decoder_layer(num_heads, norm_first, dtype), 3, norm=final())
    torch.manual_seed(9)
    for stack in (enc_t, dec_t):  # make the three copied layers (and the final norm) differ
        for p in stack.parameters():
            p.data.add_(0.05 * torch.randn_like(p))
    enc, dec = Encoder.from_torch(enc_t.eval()), Decoder.from_torch(dec_t.eval())
    assert len(enc.layers) == 3 and len(dec.layers) == 3
    assert isinstance(enc.norm, nn.LayerNorm) == norm_first
    x = torch.randn(2, 6, D_MODEL, dtype=dtype)  # (batch, T_src, d_model)
    y = torch.randn(2, 5, D_MODEL, dtype=dtype)  # (batch, T_tgt, d_model)
    src = key_padding(2, 6, 5)
    memory = enc(x, mask=padding_mask(src, 0))
    torch.testing.assert_close(memory, enc_t(x, src_key_padding_mask=src == 0), atol=1e-10, rtol=0)
    out = dec(y, memory, tgt_mask=causal_mask(5), memory_mask=padding_mask(src, 0))
    ref = dec_t(y, memory, tgt_mask=~causal_mask(5), memory_key_padding_mask=src == 0)
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=0)


def test_fresh_stacks_have_independent_layers_and_the_right_final_norm():
    enc = Encoder(D_MODEL, 2, D_FF, num_layers=2, norm_first=True)
    assert enc.layers[0].ff.linear1.weight is not enc.layers[1].ff.linear1.weight
    assert isinstance(enc.norm, nn.LayerNorm)
    assert isinstance(Decoder(D_MODEL, 2, D_FF, 2).norm, nn.Identity)


@pytest.mark.parametrize("norm_first", [False, True])
def test_gradients_reach_every_parameter(norm_first):
    torch.manual_seed(0)
    enc = Encoder(D_MODEL, 4, D_FF, 2, norm_first=norm_first)
    dec = Decoder(D_MODEL, 4, D_FF, 2, norm_first=norm_first)
    x, y = torch.randn(2, 5, D_MODEL), torch.randn(2, 4, D_MODEL)
    dec(y, enc(x), tgt_mask=causal_mask(4)).pow(2).sum().backward()
    for model in (enc, dec):
        for name, p in model.named_parameters():
            assert p.grad is not None and p.grad.abs().sum() > 0, name


@pytest.mark.parametrize("norm_first", [False, True])
def test_layer_gradients_equal_torch(norm_first):
    theirs = torch_decoder_layer(4, norm_first, torch.float64)
    ours = DecoderLayer.from_torch(theirs)
    y = torch.randn(2, 4, D_MODEL, dtype=torch.float64)
    m = torch.randn(2, 3, D_MODEL, dtype=torch.float64)
    ours(y, m).pow(2).sum().backward()
    theirs(y, m).pow(2).sum().backward()
    torch.testing.assert_close(ours.ff.linear1.weight.grad, theirs.linear1.weight.grad, atol=1e-10, rtol=0)
    torch.testing.assert_close(ours.norm3.weight.grad, theirs.norm3.weight.grad, atol=1e-10, rtol=0)
    torch.testing.assert_close(
        ours.cross_attn.W_o.weight.grad, theirs.multihead_attn.out_proj.weight.grad, atol=1e-10, rtol=0
    )


@pytest.mark.parametrize("norm_first", [False, True])
def test_stacks_without_weights_give_the_same_outputs_and_gradients(norm_first):
    """need_weights=False (torch's fused kernel) passes through the stacks: same numbers, no weights kept."""
    torch.manual_seed(1)
    enc = Encoder(D_MODEL, 4, D_FF, 2, norm_first=norm_first).double()
    dec = Decoder(D_MODEL, 4, D_FF, 2, norm_first=norm_first).double()
    x, y = torch.randn(3, 6, D_MODEL, dtype=torch.float64), torch.randn(3, 5, D_MODEL, dtype=torch.float64)
    src, tgt = key_padding(3, 6, 4), key_padding(3, 5, 5)
    tgt_mask = causal_mask(5) & padding_mask(tgt, 0)  # (batch, T_tgt, T_tgt)
    results = []
    for need_weights in (True, False):
        for m in (enc, dec):
            m.zero_grad(set_to_none=True)
        memory = enc(x, padding_mask(src, 0), need_weights=need_weights)
        out = dec(y, memory, tgt_mask, padding_mask(src, 0), need_weights=need_weights)
        out.pow(2).sum().backward()
        grads = [p.grad for m in (enc, dec) for p in m.parameters()]
        kept = [layer.self_attn_weights for layer in enc.layers] + [layer.cross_attn_weights for layer in dec.layers]
        assert all((w is None) != need_weights for w in kept)
        results.append((out, grads))
    (out_w, grads_w), (out_f, grads_f) = results
    torch.testing.assert_close(out_f, out_w, atol=1e-10, rtol=0)
    for g_f, g_w in zip(grads_f, grads_w):
        torch.testing.assert_close(g_f, g_w, atol=1e-9, rtol=0)


def test_layers_without_weights_equal_torch():
    theirs = torch_decoder_layer(4, False, torch.float64)
    ours = DecoderLayer.from_torch(theirs)
    y, m = torch.randn(2, 4, D_MODEL, dtype=torch.float64), torch.randn(2, 3, D_MODEL, dtype=torch.float64)
    out = ours(y, m, tgt_mask=causal_mask(4), need_weights=False)
    torch.testing.assert_close(out, theirs(y, m, tgt_mask=~causal_mask(4)), atol=1e-10, rtol=0)
    theirs_enc = torch_encoder_layer(2, True, torch.float64)
    x = torch.randn(2, 5, D_MODEL, dtype=torch.float64)
    out = EncoderLayer.from_torch(theirs_enc)(x, need_weights=False)
    torch.testing.assert_close(out, theirs_enc(x), atol=1e-10, rtol=0)


def test_feed_forward_is_position_wise():
    torch.manual_seed(0)
    ff = FeedForward(D_MODEL, D_FF)
    x = torch.randn(2, 7, D_MODEL)
    perm = torch.randperm(7)
    torch.testing.assert_close(ff(x[:, perm]), ff(x)[:, perm])
    torch.testing.assert_close(ff(x[:, 3]), ff(x)[:, 3])


# --- bad input -------------------------------------------------------------------------------


def test_bad_layer_sizes_and_inputs():
    with pytest.raises(ValueError, match=r"d_model must be divisible by num_heads=3 .*got d_model=16"):
        EncoderLayer(16, 3, 32)
    layer = EncoderLayer(16, 2, 32)
    with pytest.raises(ValueError, match=r"x must have shape \(batch, seq, d_model=16\), got \(5, 16\)"):
        layer(torch.randn(5, 16))
    with pytest.raises(ValueError, match=r"got \(2, 5, 8\)"):
        layer(torch.randn(2, 5, 8))
    with pytest.raises(TypeError, match="must be a torch.Tensor, got ndarray"):
        layer(torch.randn(2, 5, 16).numpy())
    dec = DecoderLayer(16, 2, 32)
    with pytest.raises(ValueError, match=r"memory must have shape \(batch, seq, d_model=16\), got \(2, 3, 4\)"):
        dec(torch.randn(2, 5, 16), torch.randn(2, 3, 4))
    with pytest.raises(TypeError, match="need_weights must be a bool"):
        layer(torch.randn(2, 5, 16), need_weights=None)


def test_from_torch_rejects_wrong_layers():
    with pytest.raises(
        TypeError, match="layer must be a torch.nn.TransformerEncoderLayer, got TransformerDecoderLayer"
    ):
        EncoderLayer.from_torch(nn.TransformerDecoderLayer(16, 2, batch_first=True))
    with pytest.raises(TypeError, match="layer must be a torch.nn.TransformerDecoderLayer, got Linear"):
        DecoderLayer.from_torch(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="batch_first=True, got batch_first=False"):
        EncoderLayer.from_torch(nn.TransformerEncoderLayer(16, 2))
    with pytest.raises(ValueError, match="must use the ReLU activation"):
        EncoderLayer.from_torch(nn.TransformerEncoderLayer(16, 2, activation="gelu", batch_first=True))
    with pytest.raises(ValueError, match="norm_first=True given but layer has norm_first=False"):
        DecoderLayer.from_torch(nn.TransformerDecoderLayer(16, 2, batch_first=True), norm_first=True)
    with pytest.raises(TypeError, match="stack must be a torch.nn.TransformerEncoder, got TransformerEncoderLayer"):
        Encoder.from_torch(nn.TransformerEncoderLayer(16, 2, batch_first=True))


@pytest.mark.parametrize(
    "args, error, match",
    [
        ((8, 0), ValueError, "d_ff must be a positive int, got 0"),
        ((0, 8), ValueError, "d_model must be a positive int, got 0"),
        (("8", 16), TypeError, "d_model must be an int, got str '8'"),
        ((8, 16, 2.0), ValueError, r"dropout must be a probability in \[0, 1\), got 2.0"),
        ((10**6, 10**6), ValueError, r"^d_model=1000000, d_ff=1000000 asks for two float32 layers of "),
    ],
)
def test_feed_forward_bad_sizes(args, error, match):
    with pytest.raises(error, match=match):
        FeedForward(*args)


def test_feed_forward_bad_input():
    ff = FeedForward(8, 16)
    with pytest.raises(ValueError, match=r"x must have shape \(..., d_model=8\), got \(2, 3, 7\)"):
        ff(torch.randn(2, 3, 7))
    with pytest.raises(ValueError, match=r"x must have dtype torch.float32 .*got torch.float64"):
        ff(torch.randn(2, 3, 8, dtype=torch.float64))
    with pytest.raises(ValueError, match="x must be a floating-point tensor"):
        ff(torch.ones(2, 3, 8, dtype=torch.long))


@pytest.mark.parametrize("eps", [-1, 0, float("nan"), float("inf")])
@pytest.mark.parametrize("layer", [EncoderLayer, DecoderLayer])
def test_bad_eps(layer, eps):
    with pytest.raises(ValueError, match="eps must be a finite number > 0, got"):
        layer(8, 2, 16, eps=eps)


@pytest.mark.parametrize("layer", [EncoderLayer, DecoderLayer, Encoder, Decoder])
def test_bad_norm_first(layer):
    args = (8, 2, 16) if layer in (EncoderLayer, DecoderLayer) else (8, 2, 16, 1)
    with pytest.raises(TypeError, match="norm_first must be a bool"):
        layer(*args, norm_first="yes")


@pytest.mark.parametrize("stack", [Encoder, Decoder])
@pytest.mark.parametrize("num_layers, error", [(0, ValueError), (-1, ValueError), (2.5, TypeError)])
def test_bad_num_layers(stack, num_layers, error):
    with pytest.raises(error, match="num_layers must be"):
        stack(8, 2, 16, num_layers)


def test_layers_check_x_and_memory_before_any_sublayer():
    pre = EncoderLayer(8, 2, 16, norm_first=True)  # LayerNorm first: its own error would not name x
    with pytest.raises(ValueError, match=r"x must have shape \(batch, seq, d_model=8\), got \(2, 3, 7\)"):
        pre(torch.randn(2, 3, 7))
    with pytest.raises(ValueError, match=r"x must have dtype torch.float32 \(that of this layer's weights\)"):
        pre(torch.randn(2, 3, 8, dtype=torch.float64))
    dec = DecoderLayer(8, 2, 16)
    with pytest.raises(ValueError, match=r"memory must have shape \(batch of x=2, T_src, d_model=8\), got \(3, 4, 8\)"):
        dec(torch.randn(2, 3, 8), torch.randn(3, 4, 8))
    with pytest.raises(ValueError, match=r"x must have shape"):
        Encoder(8, 2, 16, 2)(torch.randn(1, 3, 7))
