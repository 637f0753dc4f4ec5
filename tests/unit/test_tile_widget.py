"""Lesson 09's tile explorer: its pure functions (the tile grid, one query row's running maximum and sum) and its
figure; the generic widget tests (tests/test_widgets_generic.py) move every control."""

import math

import pytest
import torch

from utils import fast_attention as fa
from utils.figures import tile_widget

# --- the tile explorer's pure functions ----------------------------------------------------------------


def test_tile_grid_counts_and_running_state():
    grid = tile_widget.tile_grid(32, 8, True, 20, 1)
    kinds = tile_widget.KINDS
    assert (grid == kinds.index("skipped")).sum() == fa.causal_skipped_tiles(32, 8)
    assert grid[2, 0] == kinds.index("computed") and grid[2, 1] == kinds.index("current")
    assert (grid[:2] != kinds.index("to compute")).all() and (grid[2:, 2:] != kinds.index("computed")).all()
    assert (tile_widget.tile_grid(32, 8, False, 20, 3) == kinds.index("skipped")).sum() == 0
    scores = tile_widget.row_scores(32)
    m, l = tile_widget.running_state(scores, 20, 8, 1, True)
    assert m == scores[20, :16].max()
    m_end, l_end = tile_widget.running_state(scores, 20, 8, 3, True)
    assert m_end == scores[20, :21].max() and math.isclose(
        l_end, float((torch.tensor(scores[20, :21]) - m_end).exp().sum()), rel_tol=1e-6
    )
    assert tile_widget.running_state(scores, 0, 8, 0, True)[0] == scores[0, 0]


def test_plot_tiles_draws_the_grid_and_rejects_bad_input():
    import matplotlib.pyplot as plt

    fig = tile_widget.plot_tiles(T=16, block_size=4, causal=True, query=5, key_block=2)
    image = fig.axes[0].images[0].get_array()
    assert image.shape == (16, 16)
    assert (image == tile_widget.KINDS.index("skipped")).sum() == 16 * fa.causal_skipped_tiles(16, 4)
    plt.close(fig)
    with pytest.raises(ValueError, match="key_block"):
        tile_widget.plot_tiles(T=16, block_size=4, query=5, key_block=4)
    with pytest.raises(ValueError, match="query"):
        tile_widget.plot_tiles(T=16, block_size=4, query=16)
    with pytest.raises(ValueError, match="query"):
        tile_widget.tile_explorer(T=16, query=20)
