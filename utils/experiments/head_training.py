"""Train a bare MultiHeadAttention on a small retrieval task and score it (lesson 05's experiments)."""

import torch

from utils import validation
from utils.multihead import MultiHeadAttention


def _check_rows(rows):
    """`rows` (the query positions that are scored) must be a slice."""
    return validation.instance("rows", rows, slice, "slice of query positions, e.g. slice(1, 10)")


def _check_task(make_batch):
    """`make_batch(n, generator)` must be callable and return (x, target) tensors."""
    validation.function("make_batch", make_batch, "a function make_batch(n, generator) -> (x, target)")
    sample = make_batch(1, torch.Generator().manual_seed(0))
    if not (isinstance(sample, tuple) and len(sample) == 2 and all(isinstance(t, torch.Tensor) for t in sample)):
        raise TypeError(
            f"make_batch(n, generator) must return a tuple (x, target) of two tensors, got {type(sample).__name__}"
        )
    x, target = sample
    validation.shape("make_batch's x", x, ("n", "T", "d_model"))
    validation.shape("make_batch's target", target, ("n", "rows", "features"))
    return x.shape[-1], target.shape[-1]


def heldout_error(model, x, target, rows):
    """Mean squared error of the first target.shape[-1] output features at query positions `rows`."""
    validation.tensor("x", x, min_dim=3, floating=True)
    validation.tensor("target", target, min_dim=3, floating=True)
    rows = _check_rows(rows)
    with torch.no_grad():
        out = model(x, x, x)[0][:, rows, : target.shape[-1]]  # (n, len(rows), features)
    validation.shape("target", target, tuple(zip(("n", "rows", "features"), out.shape)))
    return ((out - target) ** 2).mean().item()


def train_heads(make_batch, rows, num_heads, seed, steps=120, batch=128, lr=3e-2):
    """Train MultiHeadAttention(d_model, num_heads) from initialisation `seed` with Adam on batches of
    make_batch(batch, generator) (the same batches for every model); return (model, losses per step)."""
    d_model, features = _check_task(make_batch)
    rows = _check_rows(rows)
    num_heads = validation.positive_int("num_heads", num_heads)
    seed = validation.seed("seed", seed)
    steps = validation.positive_int("steps", steps)
    batch = validation.positive_int("batch", batch)
    lr = validation.positive_float("lr", lr)
    torch.manual_seed(seed)
    model = MultiHeadAttention(d_model, num_heads)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    data = torch.Generator().manual_seed(1)  # the same batches whatever the seed and num_heads
    losses = []
    for _ in range(steps):
        x, y = make_batch(batch, data)  # (batch, T, d_model), (batch, len(rows), features)
        loss = ((model(x, x, x)[0][:, rows, :features] - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return model, losses
