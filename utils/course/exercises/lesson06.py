"""Exercises of lesson 06 (transformer blocks): LayerNorm's gradient by hand, RMSNorm, the parameter count of the
paper's base model, a parallel block, and a prediction in each numbered section."""

import numbers

import torch
from torch import nn

from utils.blocks import Decoder, Encoder
from utils.course.exercises import compare_with_mistakes, exercise, fresh_seed, mistake


def _tensor_problem(got, expected_shape):
    """A message when `got` is not a tensor of the expected shape, else None."""
    if not isinstance(got, torch.Tensor):
        return f"return a torch.Tensor, got {type(got).__name__}"
    if tuple(got.shape) != tuple(expected_shape):
        return f"return a tensor of shape {tuple(expected_shape)} (the shape of x), got {tuple(got.shape)}"
    return None


def _compare_cases(answer, reference, wrong, cases, atol=1e-6):
    """Run `answer` on each case; the first miss, named after the learner's mistake when it is a known one."""
    for args, label in cases:
        expected = reference(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args]).detach()
        got = answer(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
        problem = _tensor_problem(got, expected.shape)
        if problem:
            return f"{label}: {problem}"
        H = expected.shape[-1]
        mistakes = {
            m.name: m.answer(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args]).detach().reshape(-1, H)
            for m in wrong
        }
        problem = compare_with_mistakes(
            got.detach().reshape(-1, H),
            expected.reshape(-1, H),
            f"{label}: your output (rows = tokens)",
            mistakes,
            atol=atol,
        )
        if problem:
            return problem
    return None


# --- 1. LayerNorm's gradient by hand (practice) ---------------------------------------------------


def _normalise(x, eps):
    """N(x) = (x - mu) / sqrt(biased variance + eps) over the last axis, and that root: (..., H), (..., 1)."""
    mu = x.mean(dim=-1, keepdim=True)  # (..., 1)
    s = torch.sqrt(((x - mu) ** 2).mean(dim=-1, keepdim=True) + eps)  # (..., 1)
    return (x - mu) / s, s


def _layer_norm_grad_solution(x, grad_out, eps):
    mu = x.mean(dim=-1, keepdim=True)  # (..., 1)
    s = torch.sqrt(((x - mu) ** 2).mean(dim=-1, keepdim=True) + eps)  # (..., 1): biased variance
    n = (x - mu) / s  # (..., H): N(x)
    along_n = (grad_out * n).mean(dim=-1, keepdim=True)  # (..., 1)
    return (grad_out - grad_out.mean(dim=-1, keepdim=True) - n * along_n) / s  # (..., H)


def _layer_norm_grad_only_scale(x, grad_out, eps):
    return grad_out / _normalise(x, eps)[1]  # both removed directions kept: wrong


def _layer_norm_grad_keeps_shift(x, grad_out, eps):
    n, s = _normalise(x, eps)
    return (grad_out - n * (grad_out * n).mean(dim=-1, keepdim=True)) / s  # the mean of grad_out kept: wrong


def _layer_norm_grad_keeps_scaling(x, grad_out, eps):
    n, s = _normalise(x, eps)
    return (grad_out - grad_out.mean(dim=-1, keepdim=True)) / s  # the part along N(x) kept: wrong


def _layer_norm_grad_times_sigma(x, grad_out, eps):
    n, s = _normalise(x, eps)
    return (grad_out - grad_out.mean(dim=-1, keepdim=True) - n * (grad_out * n).mean(dim=-1, keepdim=True)) * s


_LAYER_NORM_GRAD_MISTAKES = [
    mistake(
        "return grad_out / sqrt(var + eps) without removing any direction",
        _layer_norm_grad_only_scale,
        says="without removing",
    ),
    mistake(
        "forget to subtract the mean of grad_out (the direction 'add the same number to every feature')",
        _layer_norm_grad_keeps_shift,
        says="mean of grad_out",
    ),
    mistake(
        "forget to subtract N(x) times the mean of grad_out * N(x) (the direction 'scale the token')",
        _layer_norm_grad_keeps_scaling,
        says="scale the token",
    ),
    mistake(
        "multiply by sqrt(var + eps) instead of dividing", _layer_norm_grad_times_sigma, says="instead of dividing"
    ),
]


def _layer_norm_grad_cases():
    g_ = torch.Generator().manual_seed(fresh_seed())  # inputs drawn anew on every check
    cases = []
    for shape, eps in [((3, 4), 1e-5), ((2, 5, 6), 1e-5), ((4, 3), 0.5)]:
        x = 2.0 * torch.randn(*shape, generator=g_, dtype=torch.float64) + 1.0
        grad_out = torch.randn(*shape, generator=g_, dtype=torch.float64)
        cases.append(((x, grad_out, eps), f"x of shape {shape}, eps={eps}"))
    return cases


@exercise(
    hint="""
    Write n = (x - mu) / s with s = sqrt(var + eps) (biased var, last axis). The gradient is
    (grad_out - mean(grad_out) - n * mean(grad_out * n)) / s, the means over the last axis
    (keepdim=True): two directions removed, then divided by s. Derive it from
    dn_i/dx_j = (delta_ij - 1/H - n_i n_j / H) / s.
    """,
    reference=_layer_norm_grad_solution,
    kind="practice",
    wrong=_LAYER_NORM_GRAD_MISTAKES,
)
def layer_norm_grad(answer):
    """answer(x (..., H), grad_out (..., H), eps) -> the gradient of (grad_out * N(x)).sum() with respect to x."""
    for (x, grad_out, eps), _label in _layer_norm_grad_cases():  # the reference is autograd itself
        x_ = x.clone().requires_grad_()
        (grad_out * torch.nn.functional.layer_norm(x_, x.shape[-1:], eps=eps)).sum().backward()
        assert torch.allclose(x_.grad, _layer_norm_grad_solution(x, grad_out, eps))
    return _compare_cases(answer, _layer_norm_grad_solution, _LAYER_NORM_GRAD_MISTAKES, _layer_norm_grad_cases())


# --- 2. RMSNorm (transfer) ----------------------------------------------------------------------------


def _rms_norm_solution(x, g, eps):
    rms = torch.sqrt((x**2).mean(dim=-1, keepdim=True) + eps)  # (..., 1): root of the mean square
    return g * x / rms  # (..., H)


def _rms_norm_subtracts_mean(x, g, eps):
    mu = x.mean(dim=-1, keepdim=True)
    return g * (x - mu) / torch.sqrt(((x - mu) ** 2).mean(dim=-1, keepdim=True) + eps)


def _rms_norm_sum_of_squares(x, g, eps):
    return g * x / torch.sqrt((x**2).sum(dim=-1, keepdim=True) + eps)


def _rms_norm_eps_outside(x, g, eps):
    return g * x / (torch.sqrt((x**2).mean(dim=-1, keepdim=True)) + eps)


def _rms_norm_over_batch(x, g, eps):
    return g * x / torch.sqrt((x**2).mean(dim=0, keepdim=True) + eps)


_RMS_MISTAKES = [
    mistake(
        "subtract the mean first (that is LayerNorm; RMSNorm keeps the mean)",
        _rms_norm_subtracts_mean,
        says="RMSNorm keeps the mean",
    ),
    mistake(
        "divide by the root of the sum of the squares instead of their mean",
        _rms_norm_sum_of_squares,
        says="sum of the squares",
    ),
    mistake("add eps outside the square root", _rms_norm_eps_outside, says="outside the square root"),
    mistake(
        "average the squares over the batch (dim 0) instead of each token's features",
        _rms_norm_over_batch,
        says="over the batch",
    ),
]


def _rms_cases():
    g_ = torch.Generator().manual_seed(fresh_seed())  # inputs drawn anew on every check
    cases = []
    for shape, eps in [((3, 4), 1e-6), ((2, 5, 6), 1e-6), ((4, 3), 0.5)]:
        x = 2.0 * torch.randn(*shape, generator=g_, dtype=torch.float64) + 1.0
        g = torch.rand(shape[-1], generator=g_, dtype=torch.float64) + 0.5
        cases.append(((x, g, eps), f"x of shape {shape}, eps={eps}"))
    return cases


@exercise(
    hint="""
    RMSNorm is LayerNorm without the centring and without b: per token (dim=-1, keepdim=True),
    rms = sqrt(mean(x**2) + eps), then return g * x / rms. Do not subtract the mean.
    """,
    reference=_rms_norm_solution,
    kind="transfer",
    wrong=_RMS_MISTAKES,
)
def rms_norm(answer):
    """answer(x (..., H), g (H,), eps) -> g * x / sqrt(mean(x**2) + eps) over the last axis, as torch.nn.RMSNorm."""
    for (x, g, eps), _ in _rms_cases():  # the reference equals torch.nn.RMSNorm
        norm = nn.RMSNorm(x.shape[-1], eps=eps, dtype=torch.float64)
        with torch.no_grad():
            norm.weight.copy_(g)
        assert torch.allclose(norm(x), _rms_norm_solution(x, g, eps))
    with torch.no_grad():
        return _compare_cases(answer, _rms_norm_solution, _RMS_MISTAKES, _rms_cases())


# --- 3. The parameter count of the paper's base model (transfer) --------------------------------------


def _parameter_count_solution(d_model, d_ff, num_heads, num_layers, vocab_size):
    attention = 4 * (d_model * d_model + d_model)  # W_q, W_k, W_v, W_o with biases; num_heads does not matter
    ffn = d_model * d_ff + d_ff + d_ff * d_model + d_model  # W_1, b_1, W_2, b_2
    layer_norm = 2 * d_model  # g and b
    encoder_layer = attention + ffn + 2 * layer_norm
    decoder_layer = 2 * attention + ffn + 3 * layer_norm  # masked self-attention and cross-attention
    embedding = vocab_size * d_model  # one matrix: source, target and the output projection share it
    return num_layers * (encoder_layer + decoder_layer) + embedding


def _count_three_embeddings(d_model, d_ff, num_heads, num_layers, vocab_size):
    return _parameter_count_solution(d_model, d_ff, num_heads, num_layers, vocab_size) + 2 * vocab_size * d_model


def _count_without_biases(d_model, d_ff, num_heads, num_layers, vocab_size):
    biases = num_layers * (4 * d_model + d_ff + d_model + 8 * d_model + d_ff + d_model)
    return _parameter_count_solution(d_model, d_ff, num_heads, num_layers, vocab_size) - biases


def _count_no_cross_attention(d_model, d_ff, num_heads, num_layers, vocab_size):
    return _parameter_count_solution(d_model, d_ff, num_heads, num_layers, vocab_size) - num_layers * (
        4 * (d_model * d_model + d_model) + 2 * d_model
    )


def _count_per_head_full_projections(d_model, d_ff, num_heads, num_layers, vocab_size):
    q_k_v = 3 * (d_model * d_model + d_model)
    extra = num_layers * 3 * q_k_v * (num_heads - 1)  # 3 attentions per encoder + decoder layer, h maps each
    return _parameter_count_solution(d_model, d_ff, num_heads, num_layers, vocab_size) + extra


def _count_without_layer_norms(d_model, d_ff, num_heads, num_layers, vocab_size):
    return _parameter_count_solution(d_model, d_ff, num_heads, num_layers, vocab_size) - num_layers * 10 * d_model


_COUNT_MISTAKES = [
    mistake(
        "give the source embedding, the target embedding and the output projection a matrix each "
        "(the paper shares one)",
        _count_three_embeddings,
        says="the paper shares one",
    ),
    mistake("leave out the biases of the linear maps", _count_without_biases, says="biases"),
    mistake(
        "leave out the decoder's cross-attention sublayer (its attention and its LayerNorm)",
        _count_no_cross_attention,
        says="cross-attention",
    ),
    mistake(
        "give every head its own d_model x d_model W_q, W_k, W_v (each head's are d_model x d_k, "
        "d_k = d_model / num_heads)",
        _count_per_head_full_projections,
        says="d_k = d_model / num_heads",
    ),
    mistake("leave out the LayerNorms' g and b", _count_without_layer_norms, says="LayerNorms' g and b"),
]

BASE = dict(d_model=512, d_ff=2048, num_heads=8, num_layers=6, vocab_size=37000)  # Table 3, base
BIG = dict(d_model=1024, d_ff=4096, num_heads=16, num_layers=6, vocab_size=37000)  # Table 3, big


_GAP = 100 * max(abs(_parameter_count_solution(**BASE) / 65e6 - 1), abs(_parameter_count_solution(**BIG) / 213e6 - 1))
# the base model and Table 3's rows (C) that keep d_model = 512: (sizes changed, millions of parameters)
_TABLE3_512 = [({}, 65), (dict(num_layers=2), 36), (dict(num_layers=4), 50), (dict(num_layers=8), 80)]
_TABLE3_512 += [(dict(d_ff=1024), 53), (dict(d_ff=4096), 90)]
_OFFSETS = [table * 1e6 - _parameter_count_solution(**dict(BASE, **change)) for change, table in _TABLE3_512]


def _built_count(d_model, d_ff, num_heads, num_layers, vocab_size):
    """Parameters of the post-norm utils Encoder and Decoder plus one shared embedding (small sizes only)."""
    parts = [
        Encoder(d_model, num_heads, d_ff, num_layers),
        Decoder(d_model, num_heads, d_ff, num_layers),
        nn.Embedding(vocab_size, d_model),
    ]
    return sum(p.numel() for part in parts for p in part.parameters())


@exercise(
    hint="""
    Add up, per layer: an attention block is W_q, W_k, W_v, W_o, each d_model x d_model with a bias of
    d_model (all heads together: num_heads does not change the count). The FFN is d_model x d_ff + d_ff
    + d_ff x d_model + d_model. A LayerNorm has 2 * d_model (g and b). An encoder layer has one attention,
    one FFN, two LayerNorms; a decoder layer two attentions, one FFN, three LayerNorms. Then num_layers
    of each, plus ONE vocab_size x d_model embedding matrix (section 3.4 shares it three ways).
    """,
    reference=_parameter_count_solution,
    kind="transfer",
    wrong=_COUNT_MISTAKES,
    explain=f"""
    With Table 3's sizes the base model has {_parameter_count_solution(**BASE):,} parameters (Table 3: 65 million)
    and the big one {_parameter_count_solution(**BIG):,} (Table 3: 213 million), within {_GAP:.1f} % of both.
    Without the shared embedding the base model would have {_count_three_embeddings(**BASE):,}, far from 65
    million. Where does the rest sit? The base model and Table 3's rows (C) that keep d_model = 512 (N = 2,
    4, 8; d_ff = 1024, 4096) all lie {min(_OFFSETS) / 1e6:.1f} to {max(_OFFSETS) / 1e6:.1f} million above this
    count: about the same offset whatever N or d_ff, so it does not grow with the layers. The paper does not
    say what it is (its vocabulary is "about 37000" tokens, and it rounds to millions).
    """,
)
def parameter_count(answer):
    """answer(d_model, d_ff, num_heads, num_layers, vocab_size) -> parameters of the paper's encoder-decoder."""
    cases = [
        dict(d_model=16, d_ff=32, num_heads=4, num_layers=2, vocab_size=50),
        BASE,
        dict(BASE, num_heads=16),
        dict(BASE, num_layers=3, vocab_size=1000),
        BIG,
    ]
    assert all(_built_count(**case) == _parameter_count_solution(**case) for case in cases[:1])  # the formula
    assert all(1.5e6 < offset < 2.6e6 for offset in _OFFSETS)  # those rows: about 2 M above the formula
    for case in cases:
        expected = _parameter_count_solution(**case)
        got = answer(**case)
        sizes = ", ".join(f"{k}={v}" for k, v in case.items())
        if not isinstance(got, numbers.Real) or isinstance(got, bool) or got != int(got):
            return f"return a whole number (an int), got {got!r} for {sizes}"
        if int(got) == expected:
            continue
        for m in _COUNT_MISTAKES:
            if int(got) == m.answer(**case):
                return f"for {sizes} you count {int(got):,}: that is what you get if you {m.name}"
        return (
            f"for {sizes} the model has {expected:,} parameters, your function says {int(got):,} "
            f"(off by {int(got) - expected:+,})"
        )
    return None


# --- 4. A parallel block (transfer) -------------------------------------------------------------------


def _parallel_block_solution(x, attn, ffn, norm):
    h = norm(x)  # (..., d_model): one normalised copy, read by both sublayers
    return x + attn(h) + ffn(h)  # (..., d_model): both outputs join the residual stream


def _parallel_block_sequential(x, attn, ffn, norm):
    h = x + attn(norm(x))  # the pre-norm layer of the lesson: one sublayer after the other
    return h + ffn(norm(h))


def _parallel_block_no_residual(x, attn, ffn, norm):
    h = norm(x)
    return attn(h) + ffn(h)  # x itself is lost


def _parallel_block_post_norm(x, attn, ffn, norm):
    return norm(x + attn(x) + ffn(x))  # normalises the sum, post-norm style


def _parallel_block_ffn_unnormalised(x, attn, ffn, norm):
    return x + attn(norm(x)) + ffn(x)  # the FFN reads the raw stream


_PARALLEL_MISTAKES = [
    mistake(
        "run the sublayers one after the other (the FFN reading the stream after attention has been added)",
        _parallel_block_sequential,
        says="one after the other",
    ),
    mistake("leave out the residual x", _parallel_block_no_residual, says="residual x"),
    mistake(
        "normalise the sum, post-norm style: norm(x + attn(x) + ffn(x))", _parallel_block_post_norm, says="post-norm"
    ),
    mistake("give the FFN the raw x instead of the normalised one", _parallel_block_ffn_unnormalised, says="raw x"),
]


def _parallel_cases():
    seed = fresh_seed()  # weights and inputs drawn anew on every check
    torch.manual_seed(seed % 2**31)
    cases = []
    for shape in [(2, 3, 4), (1, 5, 8), (4, 6)]:
        d_model = shape[-1]
        x = 2.0 * torch.randn(*shape, dtype=torch.float64) + 1.0  # (..., d_model)
        attn = nn.Linear(d_model, d_model, dtype=torch.float64)  # a stand-in for attention: any map will do
        ffn = nn.Sequential(
            nn.Linear(d_model, 2 * d_model, dtype=torch.float64),
            nn.ReLU(),
            nn.Linear(2 * d_model, d_model, dtype=torch.float64),
        )
        norm = nn.LayerNorm(d_model, dtype=torch.float64)
        with torch.no_grad():
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.normal_()
        cases.append(((x, attn, ffn, norm), f"x of shape {shape}"))
    return cases


@exercise(
    hint="""
    Normalise once, h = norm(x); both sublayers read h; both outputs are added to x:
    return x + attn(h) + ffn(h). Unlike the lesson's pre-norm layer, the FFN does not see attention's output.
    """,
    reference=_parallel_block_solution,
    kind="transfer",
    wrong=_PARALLEL_MISTAKES,
)
def parallel_block(answer):
    """answer(x (..., d_model), attn, ffn, norm) -> x + attn(norm(x)) + ffn(norm(x))."""
    with torch.no_grad():
        return _compare_cases(answer, _parallel_block_solution, _PARALLEL_MISTAKES, _parallel_cases())


# --- Prediction in section 3: which variant gives the last layer the larger gradient? ----------------

_VARIANTS = {
    "post-norm": "post-norm",
    "post norm": "post-norm",
    "post": "post-norm",
    "postnorm": "post-norm",
    "pre-norm": "pre-norm",
    "pre norm": "pre-norm",
    "pre": "pre-norm",
    "prenorm": "pre-norm",
    "same": "same",
    "equal": "same",
    "about the same": "same",
}


@exercise(
    hint="""
    Look at what the RMS check showed: the stream of a pre-norm stack grows with depth, and the gradient
    reaching its last layer passes through the final LayerNorm, which divides it by each token's spread σ
    (about that RMS, since the tokens' means are small). Post-norm's stream stays at RMS 1.
    """,
    reference="post-norm",
    kind="prediction",
    wrong=[
        mistake("expect pre-norm, the variant that trains more easily, to get more", "pre-norm", says="divides"),
        mistake("expect the residual path to give both the same", "same", says="RMS 1"),
        mistake("answer with a layer instead of a variant", "first", says="post-norm"),
    ],
    explain="""
    Post-norm, in every stack. The gradient reaching the top of a pre-norm stack has passed through the
    final LayerNorm, which divides it by each token's spread σ; the stream has grown over every layer, and
    its tokens' means are small, so each token's σ is close to its RMS. Post-norm's last layer sees only its own
    LayerNorms, whose inputs have RMS near 1. So, in these stacks (PyTorch's default init), the gap is about
    pre-norm's stream RMS, and grows with depth ("Going further" finds the same with layers that start
    independently, same init).
    """,
)
def predict_largest_gradient(answer):
    """answer: 'post-norm', 'pre-norm' or 'same', written before the demonstration."""
    choice = _word(answer, _VARIANTS)
    if choice is None:
        return f"write 'post-norm', 'pre-norm' or 'same', got {answer!r}"
    if choice == "pre-norm":
        return (
            "pre-norm's top layer gets less: the gradient reaching it passes through the final LayerNorm, "
            "which divides it by each token's spread σ, large in the grown stream"
        )
    if choice == "same":
        return (
            "the residual path adds x back, but the two variants do not end alike: post-norm's stream "
            "stays at RMS 1, pre-norm's grows, and its final LayerNorm divides the gradient by each token's "
            "spread σ, which grows with it"
        )
    return None


# --- Predictions in sections 1, 2, 4 and 5 -----------------------------------------------------------

_MASK_WORDS = {
    "without mask": "without mask",
    "without a mask": "without mask",
    "no mask": "without mask",
    "unmasked": "without mask",
    "with causal mask": "with causal mask",
    "with a causal mask": "with causal mask",
    "with mask": "with causal mask",
    "causal mask": "with causal mask",
    "causal": "with causal mask",
    "masked": "with causal mask",
    "both": "both",
    "neither": "neither",
    "none": "neither",
}


def _word(answer, words):
    """The canonical form of a short written answer, or None."""
    if not isinstance(answer, str):
        return None
    return words.get(" ".join(answer.strip().lower().replace(",", " ").split()))


@exercise(
    hint="""
    Attention without a mask is permutation equivariant (lesson 03). Does the causal mask treat position 0
    like position 4, whatever token stands there?
    """,
    reference="with causal mask",
    kind="prediction",
    wrong=[
        mistake("expect attention to ignore order even with a causal mask", "neither", says="carries position"),
        mistake("expect attention, which mixes positions, to know their order", "both", says="equivariant"),
        mistake("swap the two", "without mask", says="the other way round"),
    ],
    explain="""
    Only attention with the causal mask. Without a mask, attention is permutation equivariant: shuffled
    tokens give the same outputs, shuffled. The causal mask lets position i see positions 0..i only, which
    depends on where a token stands, not on what it is.
    """,
)
def predict_order_aware(answer):
    """answer: "without mask", "with causal mask", "both" or "neither"."""
    choice = _word(answer, _MASK_WORDS)
    if choice is None:
        return f'write "without mask", "with causal mask", "both" or "neither", got {answer!r}'
    if choice == "neither":
        return (
            "one of them does change: the causal mask lets position i see positions 0..i only, so the mask "
            "itself carries position, and a shuffled input gives more than a shuffled output"
        )
    if choice == "both":
        return (
            "attention mixes positions but is permutation equivariant without a mask: a token's output depends "
            "on which tokens are there, not where, so shuffled tokens give the same outputs, shuffled"
        )
    if choice == "without mask":
        return (
            "the other way round: without a mask attention is permutation equivariant; the causal mask lets "
            "position i see positions 0..i only, so it is the mask that tells positions apart"
        )
    return None


_NORM_WORDS = {
    "layer norm": "layer norm",
    "layernorm": "layer norm",
    "layer": "layer norm",
    "batch norm": "batch norm",
    "batchnorm": "batch norm",
    "batch": "batch norm",
    "both": "both",
    "neither": "neither",
    "none": "neither",
}


@exercise(
    hint="""
    Layer norm takes μ and σ over one token's features; batch norm (in training mode) over one feature
    across every token of the batch. Which of them sees the other sentence?
    """,
    reference="layer norm",
    kind="prediction",
    wrong=[
        mistake("expect both to ignore the batch", "both", says="batch-mates"),
        mistake("mix up the two axes", "batch norm", says="over every token of the batch"),
        mistake("expect the batch-mate to change both", "neither", says="one token at a time"),
    ],
    explain="""
    Layer norm. It normalises each token over its own features, so a sentence's output is the same alone
    or in any batch. Batch norm in training mode takes each feature's statistics over every token of the
    batch, so the short sentence's output moved by more than 0.1 in every pair, with no padding at all.
    """,
)
def predict_same_alone_or_batched(answer):
    """answer: "layer norm", "batch norm", "both" or "neither"."""
    choice = _word(answer, _NORM_WORDS)
    if choice is None:
        return f'write "layer norm", "batch norm", "both" or "neither", got {answer!r}'
    if choice == "both":
        return (
            "batch norm in training mode takes each feature's mean and variance over the whole batch, so the "
            "batch-mates change the short sentence's output, even when they are just as long"
        )
    if choice == "batch norm":
        return (
            "the other way round: batch norm's statistics are taken over every token of the batch; "
            "layer norm's over one token's features"
        )
    if choice == "neither":
        return (
            "layer norm looks at one token at a time, so other sentences cannot reach a token's "
            "output; only batch norm changes"
        )
    return None


def _count(answer, largest):
    """The answer as a whole number from 0 to `largest`, or None."""
    if isinstance(answer, bool) or not isinstance(answer, (int, float)) or answer != int(answer):
        return None
    return int(answer) if 0 <= answer <= largest else None


@exercise(
    hint="""
    The causal mask sits in the decoder's *self*-attention. Which source positions may a target position's
    cross-attention query look at?
    """,
    reference=4,
    kind="prediction",
    wrong=[
        mistake("expect only the target word that translates it to change", 1, says="one target word"),
        mistake("expect the causal mask to hide the source from early positions", 3, says="not which source"),
        mistake("expect the decoder not to read the source", 0, says="cross-attention"),
    ],
    explain="""
    All 4. Cross-attention lets every target position attend to every real source position; the causal
    mask only limits which earlier target positions it sees. A change in the memory at one source position
    therefore reaches every target position's output; with cross-attention cut down to source position 0,
    the same change reaches none.
    """,
)
def predict_positions_reading_source(answer):
    """answer: how many of the 4 target positions change when the memory at source position 1 changes (0 to 4)."""
    n = _count(answer, 4)
    if n is None:
        return f"write a whole number from 0 to 4, got {answer!r}"
    if n == 0:
        return "the decoder reads the memory through cross-attention, so a change at a real source position reaches it"
    if n == 1:
        return (
            "no head is told which source word a target position translates: cross-attention mixes the whole "
            "source into every position, so a change reaches more than one target word"
        )
    if n < 4:
        return (
            "the causal mask limits which target positions a query sees, not which source positions: "
            "cross-attention lets every target position look at the whole (unpadded) source"
        )
    return None


@exercise(
    hint="""
    torch reads True in `src_key_padding_mask` as "blocked". Our mask is True on the real tokens. What
    can each query of the first sentence (no padding) and of the second (3 real, 3 padding) then see?
    """,
    reference=0,
    kind="prediction",
    wrong=[
        mistake("expect torch to read masks as we do", 12, says="blocked"),
        mistake("expect the unpadded sentence to be unaffected", 6, says="first sentence"),
        mistake("expect only the padding tokens to go wrong", 9, says="padding tokens"),
    ],
    explain="""
    None of the 12. torch reads True as "blocked", so our mask blocks every real token: the queries of the
    second sentence see only its padding, and those of the first sentence (all real) may see nothing at all.
    Every token comes out wrong; the negation of our mask gives the right answer.
    """,
)
def predict_tokens_right_with_our_mask(answer):
    """answer: how many of the 12 output tokens stay right when torch gets our mask unchanged (0 to 12)."""
    n = _count(answer, 12)
    if n is None:
        return f"write a whole number from 0 to 12, got {answer!r}"
    if n == 12:
        return (
            "torch's layers read True as blocked, the opposite of ours, so our mask blocks exactly the "
            "tokens that should be seen"
        )
    if n > 6:
        return (
            "not only the padding tokens go wrong: our mask, read as blocked, hides every real token from "
            "every query, so the real tokens' outputs change as well"
        )
    if n == 6:
        return (
            "the first sentence has no padding, but our mask is True on all its real tokens, which torch "
            "reads as blocked: its queries may see nothing, and their outputs change too"
        )
    if n > 0:
        return (
            "every query attends to the wrong keys: our mask, read as blocked, hides the real tokens, so "
            "no output token stays right"
        )
    return None
