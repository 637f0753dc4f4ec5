"""What a sequence layer costs, counted from the layer itself (the columns of Table 1 of Vaswani et al., 2017):
its arithmetic, its chain of dependent operations, and the path between two positions."""

import inspect
import time
from collections import deque

import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils.flop_counter import FlopCounterMode

from utils import validation


def path_length(output, leaf, hops=None):
    """Fewest autograd-graph nodes from `output` back to the leaf tensor `leaf` (None if unreachable).

    With `hops` (tensors, e.g. the outputs of every cell application), count only the nodes that made them.
    """
    validation.tensor("output", output)
    validation.tensor("leaf", leaf)
    if output.grad_fn is None:
        raise ValueError("output must be computed from tensors that require grad (it has no grad_fn)")
    if not leaf.requires_grad or leaf.grad_fn is not None:
        raise ValueError("leaf must be a leaf tensor that requires grad (made with requires_grad_(True))")
    if hops is not None:
        validation.instance("hops", hops, (list, tuple), "list of tensors")
        for i, t in enumerate(hops):
            validation.tensor(f"hops[{i}]", t)
    marked = None if hops is None else {t.grad_fn for t in hops if t.grad_fn is not None}
    cost = (lambda node: 1) if marked is None else (lambda node: int(node in marked))
    start = output.grad_fn
    depth, queue = {start: cost(start)}, deque([start])
    while queue:  # 0-1 breadth-first search: a free edge goes to the front of the queue
        node = queue.popleft()
        if getattr(node, "variable", None) is leaf:  # the AccumulateGrad node of our input
            return depth[node] - (marked is None)  # counting all nodes: the leaf's own node is not a step
        for parent, _ in node.next_functions:
            if parent is None:
                continue
            d = depth[node] + cost(parent)
            if parent not in depth or d < depth[parent]:
                depth[parent] = d
                queue.appendleft(parent) if d == depth[node] else queue.append(parent)
    return None


class CountCalls(TorchFunctionMode):
    """Counts the top-level PyTorch function calls made inside a `with` block."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


def count_calls(fn, *args):
    """Number of PyTorch function calls fn(*args) makes (without recording gradients)."""
    validation.function("fn", fn)
    with torch.no_grad(), CountCalls() as counter:
        fn(*args)
    return counter.calls


def count_flops(fn, *args):
    """Floating-point operations of the matrix products and convolutions in fn(*args) (2 per multiply-add).

    oneDNN's fused CPU kernel for nn.LSTM hides its products from the counter (it would count 0), so it is
    switched off while counting: the recurrent layers run PyTorch's own kernels, whose products are counted.
    """
    validation.function("fn", fn)
    flags = torch.backends.mkldnn.flags
    keep = {
        k: None for k in ("deterministic", "allow_tf32", "fp32_precision") if k in inspect.signature(flags).parameters
    }
    no_fused_kernels = flags(enabled=False, **keep)  # the other flags as they are (their names vary by torch version)
    with torch.no_grad(), no_fused_kernels, FlopCounterMode(display=False) as counter:
        fn(*args)
    return counter.get_total_flops()


class CountSoftmax(TorchFunctionMode):
    """Counts the elements normalised by the softmax calls made inside a `with` block (one exponential each)."""

    FUNCTIONS = (torch.softmax, F.softmax, torch.Tensor.softmax, torch.special.softmax)

    def __init__(self):
        super().__init__()
        self.elements = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in self.FUNCTIONS:
            self.elements += args[0].numel()
        return func(*args, **(kwargs or {}))


def count_softmax_elements(fn, *args):
    """Elements that softmax normalises in fn(*args), without recording gradients (a fused kernel's own softmax
    is not seen)."""
    validation.function("fn", fn)
    with torch.no_grad(), CountSoftmax() as counter:
        fn(*args)
    return counter.elements


def saved_tensors(fn, *args):
    """The tensors autograd keeps for the backward pass of fn(*args), one per distinct storage, in the order
    first kept (a tensor kept twice, or a second view of a kept storage, is listed once)."""
    validation.function("fn", fn)
    kept = {}  # data pointer -> the first tensor kept with that storage

    def pack(t):
        kept.setdefault(t.untyped_storage().data_ptr(), t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*args)
    return list(kept.values())


def saved_storage_bytes(fn, *args):
    """Bytes of each distinct storage autograd keeps for the backward pass of fn(*args), in the order first kept
    (a tensor kept twice, or two views of one storage, count once)."""
    return [t.untyped_storage().nbytes() for t in saved_tensors(fn, *args)]


class CausalConv(nn.Module):
    """A 1-D convolution over positions: output t reads inputs t, t - dilation, ..., t - (kernel_size - 1) dilation."""

    def __init__(self, d_model, kernel_size, dilation=1):
        super().__init__()
        validation.positive_int("d_model", d_model)
        validation.positive_int("kernel_size", kernel_size)
        validation.positive_int("dilation", dilation)
        self.pad = (kernel_size - 1) * dilation
        self.conv = nn.Conv1d(d_model, d_model, kernel_size, dilation=dilation)

    def forward(self, x):  # x: (batch, seq, d_model)
        validation.tensor("x", x, min_dim=3, floating=True)
        validation.shape("x", x, ("batch", "seq", ("d_model", self.conv.in_channels)))
        x = F.pad(x.transpose(1, 2), (self.pad, 0))  # (batch, d_model, pad + seq): zeros before position 0
        return self.conv(x).transpose(1, 2)  # (batch, seq, d_model)


def layers_to_connect(make_layer, n, d_model, max_layers=64, seed=0):
    """Fewest layers make_layer(0), make_layer(1), ... stacked before output n-1 depends on input 0 (None if
    max_layers are not enough). Dependence = a gradient that is not exactly 0, in float64."""
    validation.function("make_layer", make_layer, "a function (layer index -> module)")
    validation.positive_int("n", n)
    validation.positive_int("d_model", d_model)
    validation.positive_int("max_layers", max_layers)
    seed = validation.seed("seed", seed)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(1, n, d_model, generator=gen, dtype=torch.float64, requires_grad=True)  # (1, n, d_model)
    y = x
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        for depth in range(1, max_layers + 1):
            layer = make_layer(depth - 1)
            validation.instance(
                f"make_layer({depth - 1})", layer, nn.Module, "torch.nn.Module (what make_layer returns)"
            )
            y = layer.double()(y)  # (1, n, d_model)
            validation.shape(f"make_layer({depth - 1})(x)", y, (1, ("n", n), ("d_model", d_model)))
            (grad,) = torch.autograd.grad(y[0, -1].sum(), x, retain_graph=True)  # (1, n, d_model)
            if grad[0, 0].abs().max() > 0:
                return depth
    return None


def median_time(fn, repeats=5):
    """Median wall-clock seconds of fn() over `repeats` runs."""
    validation.function("fn", fn)
    validation.positive_int("repeats", repeats)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]
