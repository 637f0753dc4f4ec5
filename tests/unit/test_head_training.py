"""utils.experiments.head_training: training learns a task two heads can solve, is reproducible, and rejects bad input."""

import pytest
import torch

from utils.experiments.head_training import heldout_error, train_heads


def copy_previous(n, generator, T=5):
    """Every token but the first must output the previous token's 2 features (one place per query)."""
    content = torch.randn(n, T, 2, generator=generator)  # (n, T, 2)
    position = torch.eye(T).expand(n, T, T)  # (n, T, T): one-hot positions
    x = torch.cat([content, position], dim=-1)  # (n, T, 2 + T)
    return x, content[:, :-1]  # (n, T - 1, 2)


ROWS = slice(1, None)


def test_training_lowers_the_error_and_is_reproducible():
    x, y = copy_previous(500, torch.Generator().manual_seed(9))
    untrained, _ = train_heads(copy_previous, ROWS, num_heads=1, seed=0, steps=1)
    model, losses = train_heads(copy_previous, ROWS, num_heads=1, seed=0, steps=80)
    assert len(losses) == 80
    assert heldout_error(model, x, y, ROWS) < 0.1 < heldout_error(untrained, x, y, ROWS)
    again, losses_again = train_heads(copy_previous, ROWS, num_heads=1, seed=0, steps=80)
    assert losses_again == losses
    other, losses_other = train_heads(copy_previous, ROWS, num_heads=1, seed=1, steps=80)
    assert losses_other != losses  # the seed sets the initialisation


def test_heldout_error_is_the_mean_squared_error_at_the_rows():
    x, y = copy_previous(20, torch.Generator().manual_seed(3))
    model, _ = train_heads(copy_previous, ROWS, num_heads=1, seed=0, steps=2)
    with torch.no_grad():
        out = model(x, x, x)[0][:, 1:, :2]
    assert heldout_error(model, x, y, ROWS) == pytest.approx(((out - y) ** 2).mean().item())


def test_bad_input():
    x, y = copy_previous(4, torch.Generator().manual_seed(3))
    model, _ = train_heads(copy_previous, ROWS, num_heads=1, seed=0, steps=1)
    with pytest.raises(TypeError, match=r"make_batch must be a function .* got int"):
        train_heads(3, ROWS, 1, 0)
    with pytest.raises(TypeError, match=r"must return a tuple \(x, target\) of two tensors, got Tensor"):
        train_heads(lambda n, g: torch.zeros(n, 5, 7), ROWS, 1, 0)
    with pytest.raises(ValueError, match=r"make_batch's x must have shape \(n, T, d_model\), got \(1, 7\)"):
        train_heads(lambda n, g: (torch.zeros(n, 7), torch.zeros(n, 1, 2)), ROWS, 1, 0)
    with pytest.raises(TypeError, match=r"rows must be a slice of query positions, e\.g\. slice\(1, 10\), got list"):
        train_heads(copy_previous, [1, 2], 1, 0)
    with pytest.raises(TypeError, match=r"num_heads must be an int, got float 1\.0"):
        train_heads(copy_previous, ROWS, 1.0, 0)
    with pytest.raises(ValueError, match=r"num_heads must be a positive int, got 0"):
        train_heads(copy_previous, ROWS, 0, 0)
    with pytest.raises(ValueError, match=r"seed must be an int in \[0, 2\*\*63\) \(a random seed\), got -1"):
        train_heads(copy_previous, ROWS, 1, -1)
    with pytest.raises(ValueError, match=r"steps must be a positive int, got 0"):
        train_heads(copy_previous, ROWS, 1, 0, steps=0)
    with pytest.raises(ValueError, match=r"lr must be a finite number > 0, got 0"):
        train_heads(copy_previous, ROWS, 1, 0, lr=0)
    with pytest.raises(ValueError, match=r"d_model must be divisible by num_heads"):
        train_heads(copy_previous, ROWS, 2, 0)  # d_model = 7
    with pytest.raises(TypeError, match=r"x must be a torch.Tensor, got ndarray"):
        heldout_error(model, x.numpy(), y, ROWS)
    with pytest.raises(ValueError, match=r"target must have shape \(n=4, rows=4, features=2\), got \(4, 3, 2\)"):
        heldout_error(model, x, y[:, 1:], ROWS)
    with pytest.raises(TypeError, match=r"rows must be a slice"):
        heldout_error(model, x, y, 1)
