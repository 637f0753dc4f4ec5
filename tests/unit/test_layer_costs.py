"""utils.experiments.layer_costs: path lengths, call and FLOP counts, the causal convolution, layers to connect."""

import math

import pytest
import torch
from torch import nn

from utils.experiments.layer_costs import (
    CausalConv,
    count_calls,
    count_flops,
    count_softmax_elements,
    layers_to_connect,
    median_time,
    path_length,
    saved_storage_bytes,
    saved_tensors,
)

# --- path_length ---


def test_path_length_counts_nodes_or_only_the_marked_ones():
    x = torch.randn(3, requires_grad=True)
    a = x * 2
    b = a + 1
    c = b.exp()
    assert path_length(c, x) == 3  # ExpBackward -> AddBackward -> MulBackward -> x
    assert path_length(c, x, hops=[a, c]) == 2
    assert path_length(c, x, hops=[]) == 0


def test_path_length_takes_the_shortest_route_and_none_when_unreachable():
    x, other = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    long = x
    marks = []
    for _ in range(5):
        long = long * 1.5
        marks.append(long)
    y = long + x  # a direct route beside the long one
    assert path_length(y, x) == 1
    assert path_length(y, x, hops=marks) == 0
    assert path_length(y, other) is None


@pytest.mark.parametrize("n", [1, 3, 10])
def test_path_length_of_a_cell_loop_is_n(n):
    cell = nn.RNNCell(4, 4)
    xs = [torch.randn(4, requires_grad=True) for _ in range(n)]
    h, states = torch.zeros(4), []
    for x_t in xs:
        h = cell(x_t, h)
        states.append(h)
    assert path_length(states[-1], xs[0], hops=states) == n
    assert path_length(states[-1], xs[-1], hops=states) == 1
    assert path_length(states[0], xs[-1], hops=states) == (1 if n == 1 else None)  # state 0 never reads x_{n-1}


def _bad_path_args():
    x = torch.randn(2, requires_grad=True)
    y = x * 2
    return [
        (("y", x), TypeError, "output"),
        ((y, "x"), TypeError, "leaf"),
        ((torch.randn(2), x), ValueError, "output"),
        ((y, y), ValueError, "leaf"),
        ((y, torch.randn(2)), ValueError, "leaf"),
        ((y, x, y), TypeError, "hops"),
        ((y, x, [y, 3]), TypeError, r"hops\[1\]"),
    ]


@pytest.mark.parametrize("args, error, words", _bad_path_args())
def test_path_length_bad_input(args, error, words):
    with pytest.raises(error, match=words):
        path_length(*args)


# --- count_calls, count_flops, count_softmax_elements, median_time ---


def test_count_softmax_elements_counts_every_softmax_api_once():
    x = torch.randn(2, 3, 5)
    assert count_softmax_elements(lambda t: torch.softmax(t, -1), x) == 30
    assert count_softmax_elements(lambda t: nn.functional.softmax(t, dim=0).softmax(-1), x) == 60
    assert count_softmax_elements(lambda t: torch.special.softmax(t[0], -1), x) == 15
    assert count_softmax_elements(lambda t: t.exp() / t.exp().sum(-1, keepdim=True), x) == 0  # not a softmax call


@pytest.mark.parametrize("num_heads", [1, 2, 4])
def test_count_softmax_elements_of_attention_is_batch_heads_t_t(num_heads):
    from utils.multihead import MultiHeadAttention

    mha, x = MultiHeadAttention(8, num_heads), torch.randn(3, 5, 8)
    assert count_softmax_elements(lambda t: mha(t, t, t), x) == 3 * num_heads * 5 * 5


def test_saved_storage_bytes_lists_what_backward_keeps_once_per_storage():
    x = torch.randn(3, 5, requires_grad=True)
    assert saved_storage_bytes(lambda t: torch.softmax(t, -1), x) == [60]  # its output
    assert saved_storage_bytes(lambda t: t * t, x) == [60]  # x kept twice, one storage
    assert saved_storage_bytes(lambda t: t * t.exp(), x) == [60, 60]  # x and exp(x)
    assert saved_storage_bytes(lambda t: t + 1, x) == []  # nothing to keep
    assert saved_storage_bytes(lambda t: t.double().exp(), x) == [120]  # float64 output
    with torch.no_grad():
        assert saved_storage_bytes(lambda t: torch.softmax(t, -1), x) == []  # no graph, nothing kept


def test_saved_tensors_returns_what_backward_keeps_once_per_storage():
    x = torch.randn(3, 5, requires_grad=True)  # (3, 5)
    (kept,) = saved_tensors(lambda t: torch.softmax(t, -1), x)
    assert torch.equal(kept, torch.softmax(x, -1))  # softmax keeps its output
    (kept,) = saved_tensors(lambda t: t * t, x)  # x kept twice: listed once
    assert kept is x
    kept = saved_tensors(lambda t: t * t.exp(), x)  # x and exp(x)
    assert len(kept) == 2 and all(torch.equal(k, x) or torch.equal(k, x.exp()) for k in kept)
    assert not torch.equal(kept[0], kept[1])
    assert saved_tensors(lambda t: t + 1, x) == []


def test_saved_storage_bytes_of_attention_with_and_without_weights():
    from utils.multihead import MultiHeadAttention

    mha, x = MultiHeadAttention(8, 2), torch.randn(3, 5, 8)
    weight_bytes = 3 * 2 * 5 * 5 * 4  # (batch, heads, T, T) float32
    assert saved_storage_bytes(lambda t: mha(t, t, t), x).count(weight_bytes) == 1
    assert saved_storage_bytes(lambda t: mha(t, t, t, need_weights=False), x).count(weight_bytes) == 0


def test_count_calls_counts_each_torch_call():
    x = torch.randn(4)
    assert count_calls(lambda t: torch.add(t, 1).mul(2).sum(), x) == 3
    assert count_calls(lambda: None) == 0


@pytest.mark.parametrize("a, b, c", [(2, 3, 4), (5, 1, 7)])
def test_count_flops_of_products(a, b, c):
    assert count_flops(torch.mm, torch.randn(a, b), torch.randn(b, c)) == 2 * a * b * c
    linear = nn.Linear(b, c)
    assert count_flops(linear, torch.randn(a, b)) == 2 * a * b * c


@pytest.mark.parametrize("layer, matrices", [(nn.RNN, 2), (nn.GRU, 6), (nn.LSTM, 8)])
@pytest.mark.parametrize("d_model, seq, dtype", [(16, 16, torch.float32), (8, 5, torch.float64)])
def test_count_flops_of_recurrent_layers(layer, matrices, d_model, seq, dtype):
    # each step multiplies x_t and h_(t-1) by d x d matrices: 2 for the RNN, 3 gates x 2 for the GRU, 4 x 2 for the LSTM
    recurrent = layer(d_model, d_model, batch_first=True).to(dtype)
    assert count_flops(recurrent, torch.randn(1, seq, d_model, dtype=dtype)) == 2 * matrices * seq * d_model * d_model


@pytest.mark.parametrize("d_model, k, dilation, seq", [(3, 2, 1, 5), (4, 3, 2, 9), (2, 3, 9, 30)])
def test_count_flops_of_the_causal_conv(d_model, k, dilation, seq):
    conv = CausalConv(d_model, k, dilation)
    assert count_flops(conv, torch.randn(2, seq, d_model)) == 2 * 2 * seq * k * d_model * d_model


def test_median_time_calls_fn_repeats_times():
    calls = []
    t = median_time(lambda: calls.append(1), repeats=7)
    assert len(calls) == 7 and t >= 0


@pytest.mark.parametrize(
    "fn, args, error, words",
    [
        (count_calls, (3,), TypeError, "fn"),
        (count_flops, ("f",), TypeError, "fn"),
        (count_softmax_elements, (None,), TypeError, "fn"),
        (saved_storage_bytes, ("f",), TypeError, "fn"),
        (saved_tensors, (None,), TypeError, "fn"),
        (median_time, (None,), TypeError, "fn"),
        (median_time, (lambda: None, 0), ValueError, "repeats"),
        (median_time, (lambda: None, 2.0), TypeError, "repeats"),
    ],
)
def test_counters_bad_input(fn, args, error, words):
    with pytest.raises(error, match=words):
        fn(*args)


# --- CausalConv ---


@pytest.mark.parametrize("d_model, k, dilation, seq", [(3, 1, 1, 4), (3, 2, 1, 5), (4, 3, 2, 9), (2, 3, 9, 30)])
def test_causal_conv_equals_torch_conv_with_its_end_cut_off(d_model, k, dilation, seq):
    torch.manual_seed(0)
    layer = CausalConv(d_model, k, dilation)
    reference = nn.Conv1d(d_model, d_model, k, dilation=dilation, padding=(k - 1) * dilation)
    reference.load_state_dict(layer.conv.state_dict())
    x = torch.randn(2, seq, d_model)  # (batch, seq, d_model)
    expected = reference(x.transpose(1, 2))[..., :seq].transpose(1, 2)  # symmetric padding, keep the first seq
    assert torch.allclose(layer(x), expected, atol=1e-6)


@pytest.mark.parametrize("k, dilation", [(2, 1), (3, 1), (3, 3)])
def test_causal_conv_reads_exactly_its_window(k, dilation):
    seq, d_model = 12, 3
    layer = CausalConv(d_model, k, dilation).double()
    x = torch.randn(1, seq, d_model, dtype=torch.float64, requires_grad=True)
    for t in range(seq):
        (grad,) = torch.autograd.grad(layer(x)[0, t].sum(), x)
        reads = {s for s in range(seq) if grad[0, s].abs().max() > 0}
        assert reads == {t - j * dilation for j in range(k) if t - j * dilation >= 0}


@pytest.mark.parametrize(
    "args, error, words",
    [
        ((0, 3), ValueError, "d_model"),
        ((4, 0), ValueError, "kernel_size"),
        ((4, 3, 0), ValueError, "dilation"),
        ((4.0, 3), TypeError, "d_model"),
        ((4, "3"), TypeError, "kernel_size"),
    ],
)
def test_causal_conv_bad_construction(args, error, words):
    with pytest.raises(error, match=words):
        CausalConv(*args)


@pytest.mark.parametrize(
    "x, error",
    [
        (torch.randn(5, 4), ValueError),
        (torch.randn(2, 5, 3), ValueError),
        (torch.zeros(2, 5, 4, dtype=torch.long), ValueError),
        ([[0.0]], TypeError),
    ],
)
def test_causal_conv_bad_input(x, error):
    with pytest.raises(error, match="x"):
        CausalConv(4, 3)(x)


# --- layers_to_connect ---


class _MeanMix(nn.Module):
    """Every output reads every input: x + mean over positions."""

    def forward(self, x):
        return x + x.mean(dim=1, keepdim=True)


@pytest.mark.parametrize("n", [2, 5, 17, 40])
@pytest.mark.parametrize("k", [2, 3, 5])
def test_layers_to_connect_counts_the_stack(n, k):
    assert layers_to_connect(lambda depth: CausalConv(4, k), n, 4) == math.ceil((n - 1) / (k - 1))
    dilated = layers_to_connect(lambda depth: CausalConv(4, k, dilation=k**depth), n, 4)
    assert k**dilated >= n > k ** (dilated - 1)
    assert layers_to_connect(lambda depth: _MeanMix(), n, 4) == 1


def test_layers_to_connect_is_none_when_positions_never_meet():
    assert layers_to_connect(lambda depth: nn.Linear(4, 4), 6, 4, max_layers=5) is None
    assert layers_to_connect(lambda depth: CausalConv(4, 2), 10, 4, max_layers=8) is None


def test_layers_to_connect_leaves_the_random_state_alone():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    layers_to_connect(lambda depth: CausalConv(4, 3), 8, 4)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize(
    "args, kwargs, error, words",
    [
        ((3, 8, 4), {}, TypeError, "make_layer"),
        ((lambda d: _MeanMix(), 0, 4), {}, ValueError, "n"),
        ((lambda d: _MeanMix(), 8, 0), {}, ValueError, "d_model"),
        ((lambda d: _MeanMix(), 8, 4), dict(max_layers=0), ValueError, "max_layers"),
        ((lambda d: _MeanMix(), 8.0, 4), {}, TypeError, "n"),
        ((lambda d: "layer", 8, 4), {}, TypeError, "make_layer"),
        ((lambda d: nn.Linear(4, 3), 8, 4), {}, ValueError, "make_layer"),
    ],
)
def test_layers_to_connect_bad_input(args, kwargs, error, words):
    with pytest.raises(error, match=words):
        layers_to_connect(*args, **kwargs)
