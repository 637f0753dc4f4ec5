"""Pure plotting functions: each draws a figure from numbers and returns it (widgets wrap them)."""

import math
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.ticker import MaxNLocator

from utils import validation
from utils.experiments.attention_map import as_tokens, attention_map
from utils.positional import angular_frequencies, sinusoidal_encoding


def plot_pe_heatmap(max_len=100, d_model=128, base=10000.0, position=10):
    """Heatmap of the PE table (position x dimension) with one position's vector drawn below it."""
    pe = sinusoidal_encoding(max_len, d_model, base).numpy()  # (max_len, d_model); checks the sizes
    validation.index("position", position, max_len, "max_len")
    # Fixed margins: a constrained layout would nearly double the work of every slider redraw.
    fig, (ax_map, ax_vec) = plt.subplots(
        2,
        1,
        figsize=(8, 6),
        height_ratios=[3, 1],
        gridspec_kw=dict(left=0.085, right=0.87, top=0.95, bottom=0.08, hspace=0.42),
    )
    im = ax_map.imshow(pe, aspect="auto", cmap="RdBu", vmin=-1, vmax=1, interpolation="nearest")
    ax_map.axhline(position, color="black", lw=1.5, label=f"position {position}")
    ax_map.set(
        title=f"Sinusoidal PE: {max_len} positions x d_model={d_model}, base={base:g}",
        xlabel="dimension (even: sin, odd: cos; frequency falls to the right)",
        ylabel="position (pos)",
    )
    map_box = ax_map.get_position()
    colorbar_ax = fig.add_axes([0.89, map_box.y0 + 0.1 * map_box.height, 0.02, 0.8 * map_box.height])
    fig.colorbar(im, cax=colorbar_ax, label="PE(pos, dimension)")
    for axis in (ax_map.xaxis, ax_map.yaxis, ax_vec.xaxis):  # dimensions and positions are whole numbers
        axis.set_major_locator(MaxNLocator(integer=True))
    ax_vec.plot(np.arange(d_model), pe[position], lw=1, color="black")
    ax_vec.set(xlim=(0, d_model - 1), ylim=(-1.1, 1.1), xlabel="dimension", title=f"PE({position})")
    return fig


# --- lesson 03: attention-map explorer (lesson 04 uses its mask control) ---


def plot_attention(tokens, weights, query=None, mask=None, title="attention weights"):
    """Heatmap of weights (T_q, T_k) labelled by tokens, and, if `query` is given, that row as bars.

    Cells where `mask` (bool, True = may attend) is False are marked with a dot.
    """
    keys = as_tokens(tokens)
    w = validation.shape("weights", np.asarray(weights, dtype=float), ("T_q", ("len(tokens)", len(keys))))  # (T_q, T_k)
    queries = keys if w.shape[0] == len(keys) else [str(i) for i in range(w.shape[0])]
    if query is not None:
        query = validation.index("query", query, w.shape[0], "T_q")
    # Fixed margins, not layout="constrained": the layout solver was the largest part of a redraw.
    if query is None:
        fig, ax_map = plt.subplots(figsize=(5.5, 4.5), gridspec_kw=dict(left=0.2, right=0.97, bottom=0.22, top=0.9))
    else:
        fig, (ax_map, ax_bar) = plt.subplots(
            1,
            2,
            figsize=(10, 4.5),
            gridspec_kw=dict(width_ratios=[1.1, 1], left=0.11, right=0.98, bottom=0.22, top=0.9, wspace=0.3),
        )
    im = ax_map.imshow(w, cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
    ax_map.set_xticks(range(len(keys)), keys, rotation=45, ha="right")
    ax_map.set_yticks(range(len(queries)), queries)
    ax_map.set(xlabel="key (attended to)", ylabel="query (attending)", title=title)
    fig.colorbar(im, ax=ax_map, shrink=0.8)
    if mask is not None:
        blocked = np.argwhere(~np.broadcast_to(np.asarray(mask, dtype=bool), w.shape))
        ax_map.plot(blocked[:, 1], blocked[:, 0], ".", color="white", ms=4, ls="none")
    if query is not None:
        ax_map.add_patch(plt.Rectangle((-0.5, query - 0.5), len(keys), 1, fill=False, ec="red", lw=2))
        ax_bar.bar(range(len(keys)), w[query], color="tab:red")
        ax_bar.set_xticks(range(len(keys)), keys, rotation=45, ha="right")
        ax_bar.set(
            ylim=(0, 1), ylabel="weight", title=f"query {query} ({queries[query]!r}): row sums to {w[query].sum():.3f}"
        )
    return fig


def plot_attention_explorer(
    tokens, scale=True, temperature=1.0, positional=False, mask_kind="none", query=0, d_model=16, seed=0
):
    """The explorer's figure: the self-attention map of seeded embeddings (utils.experiments.attention_map)."""
    weights, allowed = attention_map(
        tokens,
        scale=scale,
        temperature=temperature,
        positional=positional,
        mask_kind=mask_kind,
        d_model=d_model,
        seed=seed,
    )
    title = (
        f"{'scaled' if scale else 'unscaled'}, temperature={temperature:g}, "
        f"{'with' if positional else 'no'} PE, mask={mask_kind}"
    )
    return plot_attention(tokens, weights.numpy(), query=query, mask=allowed.numpy(), title=title)


# --- lesson 02: dot-product identities ---


def offset_dot_products(d_model, base=10000.0, k=10, num_t=60):
    """(t, PE_t . PE_{t+k}) for num_t positions t with t, t + k >= 0, read off the PE table (float64)."""
    d_model = validation.even_positive_int("d_model", d_model)
    k = validation.integer("k", k)
    num_t = validation.positive_int("num_t", num_t)
    pe = sinusoidal_encoding(num_t + abs(k), d_model, base, dtype=torch.float64).numpy()  # (num_t+|k|, d_model)
    t = np.arange(max(0, -k), max(0, -k) + num_t)  # (num_t,) positions whose t + k is in the table
    return t, np.einsum("td,td->t", pe[t], pe[t + k])  # (num_t,), (num_t,)


def plot_offset_explorer(d_model=64, base=10000.0, k=10, pair=0, t=3, max_offset=60):
    """Three panels: PE_t . PE_{t+k} against t (flat), against the offset (k marked), one pair's rotation."""
    d_model = validation.even_positive_int("d_model", d_model)
    base = validation.pe_base("base", base)
    max_offset = validation.positive_int("max_offset", max_offset)
    pair = validation.index("pair", pair, d_model // 2, "d_model/2")
    t = validation.integer("t", t, minimum=0, why="a position")
    ts, dots = offset_dot_products(d_model, base, k)  # (num_t,), (num_t,)
    w = angular_frequencies(d_model, base).numpy()  # (d_model/2,)
    offsets = np.arange(-max_offset, max_offset + 1)  # (2*max_offset+1,)
    by_offset = np.cos(np.outer(offsets, w)).sum(axis=1)  # (2*max_offset+1,) sum_i cos(w_i j)
    expected = float(np.cos(w * k).sum())

    # Fixed margins instead of layout="constrained": the layout pass would double the redraw time.
    fig, (ax_t, ax_k, ax_rot) = plt.subplots(
        1,
        3,
        figsize=(13, 4),
        gridspec_kw=dict(left=0.05, right=0.985, bottom=0.13, top=0.85, wspace=0.28, width_ratios=[1, 1, 0.8]),
    )
    ax_t.plot(ts, dots, color="C0", lw=2, label="PE_t . PE_t+k")
    ax_t.axhline(expected, color="C1", lw=1, ls="--", label="sum_i cos(w_i k)")
    ax_t.legend(loc="lower right", fontsize=8)
    ax_t.set(
        xlabel="position t",
        ylabel="dot product",
        title=f"against t at k={k}: flat",
        ylim=(-d_model / 2 * 1.1, d_model / 2 * 1.1),
    )
    ax_k.plot(offsets, by_offset, color="C1", lw=1.5, label="sum_i cos(w_i j)")
    ax_k.plot([k], [expected], "o", color="C0", ms=8, label="chosen k")
    ax_k.axvline(k, color="C0", lw=0.8, ls="--")
    ax_k.set(
        xlabel="offset j",
        ylabel="dot product",
        title="against the offset: symmetric in j",
        ylim=(-d_model / 2 * 1.1, d_model / 2 * 1.1),
    )

    wi = float(w[pair])
    p0 = np.array([np.sin(wi * t), np.cos(wi * t)])  # (2,) columns (2i, 2i+1) of PE_t
    p1 = np.array([np.sin(wi * (t + k)), np.cos(wi * (t + k))])  # (2,) of PE_{t+k}
    circle = np.linspace(0, 2 * np.pi, 200)
    ax_rot.plot(np.sin(circle), np.cos(circle), color="0.8", lw=1, label="unit circle")
    ax_rot.plot([0, p0[0]], [0, p0[1]], "-o", color="C2", markevery=[1], label=f"PE_{t}")
    ax_rot.plot([0, p1[0]], [0, p1[1]], "-o", color="C3", markevery=[1], label=f"PE_{t + k}")
    a0 = wi * t  # angle of PE_t's point, clockwise from the cos axis; PE_{t+k} is w_i k further
    turns, rest = divmod(abs(wi * k), 2 * math.pi)  # whole turns, and what is left of w_i k after them
    shown = math.copysign(rest, k)  # the arc turns the way the pair does: clockwise for k > 0
    arc = np.linspace(a0, a0 + shown, 100)
    ax_rot.plot(0.35 * np.sin(arc), 0.35 * np.cos(arc), color="black", lw=1, label="arc: w_i k less whole turns")
    whole = "" if turns == 0 else ("2pi+" if turns == 1 else f"{int(turns)}x2pi+")
    split = "" if turns == 0 else (f" = {whole}{rest:.2f}" if k > 0 else f" = -({whole}{rest:.2f})")
    ax_rot.set(
        xlim=(-1.2, 1.2),
        ylim=(-1.2, 1.2),
        aspect="equal",
        xlabel=f"sin(w_{pair} t)  (column {2 * pair})",
        ylabel=f"cos(w_{pair} t)  (column {2 * pair + 1})",
    )
    ax_rot.set_title(f"pair {pair}: w={wi:.3g}, w k={wi * k:.3g}{split} rad", fontsize=10)
    ax_rot.legend(loc="lower left", fontsize=7)
    fig.suptitle(f"PE_t . PE_t+k = sum_i cos(w_i k) = {expected:.3f}   (d_model={d_model}, base={base:g})")
    return fig


# --- lesson 07: toy translator ---


def plot_cross_attention(
    weights,
    src_words,
    tgt_words,
    gold=None,
    title="cross-attention",
    labels=("source word (key)", "predicted Neo word (query)", "weight"),
):
    """Heatmap of cross-attention weights (T_tgt x T_src) with the gold alignment drawn as orange circles.

    labels: the x axis, the y axis and the colour bar (e.g. for a matrix that is not attention weights).

    gold[j] is the source index Neo word j translates, or None where it translates none (len(gold) <= T_tgt;
    gold=None: no markers).
    """
    w = validation.shape(
        "weights",
        np.asarray(weights, dtype=float),
        (("len(tgt_words)", len(tgt_words)), ("len(src_words)", len(src_words))),
    )
    if gold is not None and (
        len(gold) > len(tgt_words) or any(g is not None and not 0 <= g < len(src_words) for g in gold)
    ):
        raise ValueError(
            f"gold must give at most {len(tgt_words)} source indices in [0, {len(src_words)}) "
            f"(or None), got {list(gold)}"
        )
    labels = validation.items("labels", labels, "3 strings (x axis, y axis, colour bar)")
    if len(labels) != 3 or not all(isinstance(text, str) for text in labels):
        raise ValueError(f"labels must be 3 strings (x axis, y axis, colour bar), got {labels!r:.80}")
    xlabel, ylabel, value_label = labels
    width = 1.2 + 0.5 * len(src_words)
    fig, ax = plt.subplots(figsize=(width, 1.0 + 0.42 * len(tgt_words)), layout="constrained")
    # aspect="auto": the axes fill their box, so the colour bar stays below the title
    im = ax.imshow(w, cmap="Blues", vmin=0, vmax=1, interpolation="nearest", aspect="auto")
    marked = [] if gold is None else [(g, j) for j, g in enumerate(gold) if g is not None]
    if marked:
        ax.scatter(
            [g for g, _ in marked],
            [j for _, j in marked],
            s=110,
            facecolors="none",
            edgecolors="orange",
            linewidths=2,
            label="gold alignment",
        )
        fig.legend(loc="outside lower center", fontsize="small", frameon=False)  # below: the heatmap keeps its width
    ax.set_xticks(range(len(src_words)), src_words, rotation=60, ha="right")
    ax.set_yticks(range(len(tgt_words)), tgt_words)
    ax.set(xlabel=xlabel, ylabel=ylabel)
    ax.set_title(textwrap.fill(title, max(30, int(9 * width))))  # about 9 characters per inch of figure
    fig.colorbar(im, ax=ax, shrink=0.8, label=value_label)
    return fig


def plot_training_history(losses, lrs, tokens_per_step=None):
    """Two panels: the training loss per step and the learning rate of the warm-up schedule per step."""
    steps = np.arange(1, len(losses) + 1)
    validation.shape("lrs", np.asarray(lrs), (("len(losses)", len(losses)),))
    fig, (ax_loss, ax_lr) = plt.subplots(1, 2, figsize=(10, 3.2), layout="constrained")
    ax_loss.plot(steps, losses, lw=0.8, color="tab:blue")
    ax_loss.set(yscale="log", xlabel="step", ylabel="cross-entropy (nats per target token)", title="training loss")
    ax_lr.plot(steps, lrs, color="tab:red")
    ax_lr.set(xlabel="step", ylabel="learning rate", title="warm-up, then 1/sqrt(step) decay")
    return fig


# --- lesson 05: multi-head attention ---


def _attention_image(ax, weights, tokens, title, vmax=1.0):
    """One attention map (T_q, T_k) on `ax`, with token labels when given."""
    T_q, T_k = weights.shape
    im = ax.imshow(weights, cmap="viridis", vmin=0, vmax=vmax, interpolation="nearest")
    if tokens is not None:
        q_tokens, k_tokens = tokens if isinstance(tokens, tuple) else (tokens, tokens)
        ax.set_xticks(range(T_k), k_tokens, rotation=90)
        ax.set_yticks(range(T_q), q_tokens)
    ax.set(title=title, xlabel="key", ylabel="query")
    return im


def panel_grid(count, ncols, panel_size):
    """A figure with `count` panels in rows of at most `ncols`: (fig, axes) with axes 2-D, extras included."""
    count = validation.positive_int("count", count)
    ncols = min(validation.positive_int("ncols", ncols), count)
    nrows = -(-count // ncols)
    width, height = panel_size
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, layout="constrained")


def plot_head_grid(weights, tokens=None, ncols=4):
    """Every head's attention map side by side: weights (num_heads, T_q, T_k), one panel per head."""
    weights = validation.head_weights("weights", weights)
    num_heads = weights.shape[0]
    fig, axes = panel_grid(num_heads, ncols, (3.2, 3.2))
    for i, ax in enumerate(axes.flat):
        if i < num_heads:
            im = _attention_image(ax, weights[i], tokens, f"head {i}")
        else:
            ax.axis("off")
    fig.colorbar(im, ax=axes, shrink=0.8)
    return fig


def plot_head_attention(weights, head=0, tokens=None):
    """The chosen head's attention map next to the average over heads (what torch returns by default)."""
    weights = validation.head_weights("weights", weights)
    num_heads = weights.shape[0]
    head = validation.index("head", head, num_heads, "num_heads")
    fig, (ax_head, ax_mean) = plt.subplots(1, 2, figsize=(8, 3.8), layout="constrained")
    _attention_image(ax_head, weights[head], tokens, f"head {head} of {num_heads}")
    im = _attention_image(ax_mean, weights.mean(axis=0), tokens, "average over heads")
    fig.colorbar(im, ax=[ax_head, ax_mean], shrink=0.8)
    return fig
