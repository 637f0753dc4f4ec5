"""Lesson 09's tile explorer: the T x T score grid cut into tiles, which tiles tiled attention computes or
skips, and one query row's running maximum as the key blocks go by (API common to ipywidgets 7.7 and 8)."""

import io

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from IPython.display import Image, display
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch, Rectangle

from utils import validation
from utils.fast_attention import tile_states

COLORS = {"to compute": "#e8eef7", "computed": "#4c72b0", "current": "#dd8452", "skipped": "#9a9a9a"}
KINDS = list(COLORS)


def row_scores(T, d_k=16, seed=0):
    """Scores q_i . k_j / sqrt(d_k) of T random queries and keys (seeded): a (T, T) array to draw from."""
    T = validation.positive_int("T", T)
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(T, d_k, generator=g), torch.randn(T, d_k, generator=g)  # (T, d_k) each
    return (q @ k.T / d_k**0.5).numpy()  # (T, T)


def running_state(scores, query, block_size, key_block, causal):
    """One query row after key blocks 0 .. key_block: (running maximum m, running sum l) over its allowed
    scores (m = -inf, l = 0 while nothing is allowed yet)."""
    row = np.asarray(scores)[query]
    end = min((key_block + 1) * block_size, len(row))
    seen = row[: min(end, query + 1)] if causal else row[:end]
    if len(seen) == 0:
        return float("-inf"), 0.0
    m = float(seen.max())
    return m, float(np.exp(seen - m).sum())


def tile_grid(T, block_size, causal, query, key_block):
    """(n, n) ints indexing KINDS: tiles skipped by the causal mask; the query blocks go in order, so the rows
    above the query's block row are computed; in that row, key blocks before key_block computed, key_block the
    current one; every other tile still to compute."""
    states = tile_states(T, block_size, causal)
    grid = np.where(states == "skipped", KINDS.index("skipped"), KINDS.index("to compute"))
    i = query // block_size
    grid[:i][grid[:i] != KINDS.index("skipped")] = KINDS.index("computed")  # earlier query blocks: done
    for j in range(min(key_block + 1, grid.shape[1])):
        if grid[i, j] != KINDS.index("skipped"):
            grid[i, j] = KINDS.index("current" if j == key_block else "computed")
    return grid


def plot_tiles(T=32, block_size=8, causal=True, query=20, key_block=1, seed=0):
    """Left: the T x T grid of scores cut into block_size tiles, coloured by what tiled attention does with
    them; right: the query row's scores, the ones read so far, and its running maximum."""
    T = validation.positive_int("T", T)
    block_size = validation.positive_int("block_size", block_size)
    validation.boolean("causal", causal)
    validation.index("query", query, T, "T")
    n = -(-T // block_size)
    validation.index("key_block", key_block, n, "number of key blocks")
    grid = tile_grid(T, block_size, causal, query, key_block)
    scores = row_scores(T, seed=seed)
    m, l = running_state(scores, query, block_size, key_block, causal)
    fig, (ax, ax_row) = plt.subplots(1, 2, figsize=(11, 4.6), gridspec_kw={"width_ratios": [1, 1.3]})
    cells = np.kron(grid, np.ones((block_size, block_size), dtype=int))[:T, :T]  # (T, T) tile kind per entry
    ax.imshow(cells, cmap=ListedColormap(list(COLORS.values())), vmin=0, vmax=len(KINDS) - 1, interpolation="nearest")
    for edge in range(0, T + 1, block_size):
        ax.axhline(edge - 0.5, color="white", lw=1.5)
        ax.axvline(edge - 0.5, color="white", lw=1.5)
    ax.add_patch(Rectangle((-0.5, query - 0.5), T, 1, fill=False, edgecolor="black", lw=1.5))
    if causal:
        ax.plot([-0.5, T - 0.5], [-0.5, T - 0.5], color="black", lw=0.8, ls=":")
    skipped = int((grid == KINDS.index("skipped")).sum())
    ax.set_title(f"{n} x {n} tiles of {block_size}: {skipped} skipped", fontsize=10)
    ax.set_xlabel("key position j")
    ax.set_ylabel("query position i")
    ax.legend(
        handles=[Patch(color=c, label=k) for k, c in COLORS.items()],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.14),
        ncol=4,
        fontsize=8,
        frameon=False,
    )
    row = scores[query]
    allowed = np.arange(T) <= query if causal else np.ones(T, dtype=bool)
    read = np.arange(T) < (key_block + 1) * block_size
    for mask, color, label in (
        (allowed & read, COLORS["computed"], "read so far"),
        (allowed & ~read, COLORS["to compute"], "not read yet"),
        (~allowed, COLORS["skipped"], "masked (j > i)"),
    ):
        ax_row.bar(np.arange(T)[mask], row[mask], color=color, edgecolor="#555555", lw=0.3, label=label)
    if np.isfinite(m):
        ax_row.axhline(m, color=COLORS["current"], lw=2, label=f"running max m = {m:.2f}")
    for edge in range(0, T + 1, block_size):
        ax_row.axvline(edge - 0.5, color="#cccccc", lw=0.8, zorder=0)
    ax_row.set_xlim(-0.5, T - 0.5)
    ax_row.set_xlabel("key position j")
    ax_row.set_ylabel(f"score of query {query}")
    ax_row.legend(fontsize=8, loc="lower right")
    state = "nothing allowed yet" if not np.isfinite(m) else f"m = {m:.2f}, l = {l:.2f}"
    ax_row.set_title(f"query {query} after key block {key_block}: {state}", fontsize=10)
    fig.tight_layout()
    return fig


def tile_explorer(T=32, block_size=8, causal=True, query=20, key_block=1):
    """Sliders for T, block size, the query row and the key block reached, and a causal toggle, over plot_tiles."""
    T = validation.positive_int("T", T)
    block_size = validation.positive_int("block_size", block_size)
    validation.index("query", query, T, "T")
    validation.index("key_block", key_block, -(-T // block_size), "number of key blocks")
    style = {"description_width": "initial"}
    controls = {
        "T": widgets.IntSlider(
            T, 4, max(64, T), 4, description="sequence length T", continuous_update=False, style=style
        ),
        "block_size": widgets.IntSlider(
            block_size, 2, max(16, block_size), 1, description="block size", continuous_update=False, style=style
        ),
        "causal": widgets.Checkbox(value=causal, description="causal mask", style=style),
        "query": widgets.IntSlider(query, 0, T - 1, 1, description="query row", style=style),
        "key_block": widgets.IntSlider(key_block, 0, -(-T // block_size) - 1, 1, description="key block", style=style),
    }

    def clamp(change):  # the query row and the key block must exist for the new T and block size
        n = -(-controls["T"].value // controls["block_size"].value)
        controls["query"].max = controls["T"].value - 1
        controls["key_block"].max = n - 1

    controls["T"].observe(clamp, names="value")
    controls["block_size"].observe(clamp, names="value")

    def show(T, block_size, causal, query, key_block):
        # While T or the block size changes, the other sliders may not be clamped yet: clamp here too.
        n = -(-T // block_size)
        fig = plot_tiles(T, block_size, causal, min(query, T - 1), min(key_block, n - 1))
        png = io.BytesIO()
        fig.savefig(png, format="png")
        plt.close(fig)
        display(Image(png.getvalue()))

    out = widgets.interactive_output(show, controls)
    layout = widgets.VBox(
        [
            widgets.HBox([controls["T"], controls["block_size"], controls["causal"]]),
            widgets.HBox([controls["query"], controls["key_block"]]),
        ]
    )
    return widgets.VBox([layout, out])
