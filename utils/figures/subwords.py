"""Lesson 10's figures: vocabulary size and sequence length against the number of byte-pair merges, and the merges
explorer (a sentence cut with the first n merges, and the tokens those merges made), as a pure render function and
a thin ipywidgets wrapper (API common to ipywidgets 7.7 and 8)."""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from utils import subwords, validation
from utils.figures.widgets import _explorer

WORD_COLORS = ("#dbe6f4", "#f6e0cc", "#dcefd9", "#f3d9e6", "#e8e1f3", "#f6f0c8")  # one per word, in turn
NEWEST = "#dd8452"  # the token the last merge made


def first_merges(bpe, num_merges):
    """The encoding after its first `num_merges` merges: what training with `num_merges` merges learns, since each
    merge depends only on the ones before it."""
    validation.instance("bpe", bpe, subwords.BPE)
    n = validation.integer("num_merges", num_merges, minimum=0)
    if n > len(bpe.merges):
        raise ValueError(f"num_merges must be at most the {len(bpe.merges)} merges of bpe, got {n}")
    return subwords.BPE(bpe.alphabet, bpe.merges[:n], bpe.counts[:n])


def merge_curve(bpe, corpus):
    """For n = 0 .. len(bpe.merges): (merges n, vocabulary size, mean tokens per sentence of `corpus`) as arrays."""
    validation.instance("bpe", bpe, subwords.BPE)
    counts = subwords.word_counts(corpus)
    n_sentences = len(corpus)
    sizes, lengths = [], []
    for n in range(len(bpe.merges) + 1):
        b = first_merges(bpe, n)
        sizes.append(len(b.vocabulary()))
        lengths.append(sum(len(subwords.encode_word(b, w)) * c for w, c in counts.items()) / n_sentences)
    return np.arange(len(bpe.merges) + 1), np.array(sizes), np.array(lengths)


def plot_merge_curve(merges, sizes, lengths, word_vocabulary=None, word_length=None, marks=()):
    """Vocabulary size (left) and mean tokens per sentence (right) against the number of merges; dashed lines at
    the word-level values if given; dotted verticals at `marks`."""
    merges, sizes, lengths = (np.asarray(a, dtype=float) for a in (merges, sizes, lengths))
    if not (merges.ndim == sizes.ndim == lengths.ndim == 1 and len(merges) == len(sizes) == len(lengths) > 0):
        raise ValueError(
            f"merges, sizes and lengths must be 1-D and of one length, got shapes {merges.shape}, {sizes.shape}, "
            f"{lengths.shape}"
        )
    fig, (ax_v, ax_l) = plt.subplots(1, 2, figsize=(9, 3.2), layout="constrained")
    for ax, y, word, what in (
        (ax_v, sizes, word_vocabulary, "target vocabulary (tokens)"),
        (ax_l, lengths, word_length, "mean tokens per Neo sentence"),
    ):
        ax.plot(merges, y, color="#4c72b0", label="sub-words")
        if word is not None:
            ax.axhline(word, color="#55a868", ls="--", label="words")
        for m in marks:
            ax.axvline(m, color="0.6", ls=":", lw=1)
        ax.set_xlabel("merges")
        ax.set_ylabel(what)
        ax.legend(fontsize=8)
    ax_v.set_title("Each merge adds one token", fontsize=10)
    ax_l.set_title("and shortens the sentences, fast at first", fontsize=10)
    return fig


def _cut(bpe, sentence):
    """(words, each word's sub-words) of `sentence`; a bad sentence raises an error that names it."""
    validation.instance("sentence", sentence, str)
    if subwords.END_OF_WORD in sentence:
        raise ValueError(f"sentence must not contain the end-of-word marker {subwords.END_OF_WORD!r}, got {sentence!r}")
    words = sentence.split()
    if not words:
        raise ValueError(f"sentence must hold at least one word, got {sentence!r}")
    return words, [subwords.encode_word(bpe, w, "sentence") for w in words]


def plot_tokenisation(bpe, sentence, num_merges, columns=8):
    """Top: `sentence` cut with the first `num_merges` merges of `bpe`, one box per token, one colour per word.
    Bottom: the tokens those merges made, in the order made, the newest one highlighted."""
    b = first_merges(bpe, num_merges)
    words, cuts = _cut(b, sentence)
    tokens = [t for cut in cuts for t in cut]
    made = [x + y for x, y in b.merges]
    rows = max(1, -(-len(made) // columns))
    shown_rows = min(rows, 24)
    fig, (ax_s, ax_v) = plt.subplots(
        2, 1, figsize=(10, 1.6 + 0.22 * shown_rows), gridspec_kw={"height_ratios": [1.0, 0.25 + 0.22 * shown_rows]}
    )
    # the sentence: boxes laid left to right, a box as wide as its text
    x = 0.0
    for i, cut in enumerate(cuts):
        for t in cut:
            width = 0.35 + 0.12 * len(t)
            ax_s.add_patch(plt.Rectangle((x, 0), width, 1, facecolor=WORD_COLORS[i % len(WORD_COLORS)], ec="0.3"))
            ax_s.text(x + width / 2, 0.5, t, ha="center", va="center", fontsize=9, family="monospace")
            x += width + 0.05
        x += 0.3
    ax_s.set_xlim(-0.1, max(x, 1.0))
    ax_s.set_ylim(-0.1, 1.1)
    ax_s.axis("off")
    ax_s.set_title(
        f"{num_merges} merges: {len(words)} words -> {len(tokens)} tokens; vocabulary {len(b.vocabulary())} tokens",
        fontsize=10,
    )
    # the tokens the merges made, column by column in the order made
    ax_v.axis("off")
    ax_v.set_xlim(0, columns)
    ax_v.set_ylim(shown_rows, -0.5)
    for k, t in enumerate(made[: columns * shown_rows]):
        r, c = divmod(k, columns)
        newest = k == len(made) - 1
        ax_v.text(
            c + 0.05,
            r,
            f"{k + 1}. {t}",
            fontsize=8,
            family="monospace",
            va="center",
            color=NEWEST if newest else "0.15",
            weight="bold" if newest else "normal",
        )
    hidden = len(made) - columns * shown_rows
    ax_v.set_title(
        "tokens made by the merges (newest in orange)" + (f"; {hidden} more not shown" if hidden > 0 else "")
        if made
        else "no merge yet: the tokens are the characters (an ending one marked </w>)",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def merges_explorer(bpe, sentence, num_merges=30):
    """A merges slider and a sentence box over plot_tokenisation: watch the sentence's cut and the vocabulary grow."""
    validation.instance("bpe", bpe, subwords.BPE)
    _cut(first_merges(bpe, num_merges), sentence)  # bad arguments raise here, by name
    style = {"description_width": "initial"}
    controls = {
        "num_merges": widgets.IntSlider(num_merges, 0, len(bpe.merges), 1, description="merges", style=style),
        "sentence": widgets.Text(
            sentence, description="Neo sentence", continuous_update=False, layout={"width": "32em"}, style=style
        ),
    }

    def render(num_merges, sentence):
        try:
            return plot_tokenisation(bpe, sentence, num_merges)
        except ValueError as err:  # a word with a letter Neo never uses: say so instead of drawing
            print(f"ValueError: {err}")
            return None

    return _explorer(render, controls)


def plot_merge_sweep(merges, unseen, in_distribution, lengths, word=None):
    """Left: exact match on the unseen-forms test (one dot per seed, a line through the means) and on the
    in-distribution test, against the number of merges; right: mean target tokens per sentence. unseen and
    in_distribution: (points, seeds) arrays; word: optional (unseen, in-distribution, length) of word level,
    drawn dashed."""
    merges = np.asarray(merges, dtype=float)
    unseen, in_distribution = np.asarray(unseen, dtype=float), np.asarray(in_distribution, dtype=float)
    lengths = np.asarray(lengths, dtype=float)
    if unseen.shape != in_distribution.shape or unseen.ndim != 2 or unseen.shape[0] != len(merges) != 0:
        raise ValueError(
            f"unseen and in_distribution must be (points, seeds) with one row per merges value ({len(merges)}), "
            f"got {unseen.shape} and {in_distribution.shape}"
        )
    if lengths.shape != merges.shape:
        raise ValueError(f"lengths must have one value per merges value ({len(merges)}), got shape {lengths.shape}")
    fig, (ax, ax_len) = plt.subplots(1, 2, figsize=(9.5, 3.3), layout="constrained")
    for values, color, label in ((in_distribution, "#4c72b0", "in-distribution"), (unseen, "#dd8452", "unseen forms")):
        for k in range(values.shape[1]):
            ax.scatter(merges, values[:, k], color=color, s=14, alpha=0.7)
        ax.plot(merges, values.mean(1), color=color, label=f"{label} (mean; dots: seeds)")
    ax_len.plot(merges, lengths, "o-", color="#4c72b0", label="sub-words")
    if word is not None:
        ax.axhline(word[0], color="#dd8452", ls="--", lw=1, label="unseen forms, word level")
        ax.axhline(word[1], color="#4c72b0", ls="--", lw=1, label="in-distribution, word level")
        ax_len.axhline(word[2], color="#55a868", ls="--", label="words")
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("merges")
    ax.set_ylabel("exact match")
    ax.legend(fontsize=7, loc="lower left")
    ax.set_title("Exact match against merges", fontsize=10)
    ax_len.set_xlabel("merges")
    ax_len.set_ylabel("mean target tokens per sentence")
    ax_len.legend(fontsize=8)
    ax_len.set_title("The price: longer target sequences", fontsize=10)
    return fig


def plot_length_tradeoff(names, lengths, unseen, in_distribution):
    """Exact match (one dot per seed, a cross at the mean) against mean target tokens per sentence, one setting per
    name: what each cut costs in length and what it buys. unseen and in_distribution: one list of per-seed values
    per name."""
    names = list(names)
    lengths = np.asarray(lengths, dtype=float)
    if not (len(names) == len(lengths) == len(unseen) == len(in_distribution) > 0):
        raise ValueError(
            f"names, lengths, unseen and in_distribution must have one entry per setting, got {len(names)}, "
            f"{len(lengths)}, {len(unseen)}, {len(in_distribution)}"
        )
    # Settings closer than 3% of the axis (plain BPE and BPE-dropout with the same merges have the same plain cut) are
    # drawn side by side, 2% of the axis apart, so that their dots do not overlap.
    span = max(np.ptp(lengths), 1.0)
    groups = []
    for i in np.argsort(lengths, kind="stable"):
        if groups and lengths[i] - lengths[groups[-1][-1]] < 0.03 * span:
            groups[-1].append(i)
        else:
            groups.append([i])
    drawn = lengths.copy()
    for group in groups:
        for k, i in enumerate(group):
            drawn[i] = lengths[group].mean() + (k - (len(group) - 1) / 2) * 0.02 * span
    fig, ax = plt.subplots(figsize=(7.5, 3.6), layout="constrained")
    for values, color, label in ((in_distribution, "#4c72b0", "in-distribution"), (unseen, "#dd8452", "unseen forms")):
        for k, (x, v) in enumerate(zip(drawn, values)):
            v = np.asarray(v, dtype=float)
            ax.scatter(
                np.full(len(v), x), v, color=color, s=16, alpha=0.6, label=f"{label}, per seed" if k == 0 else None
            )
            ax.scatter([x], [v.mean()], color=color, marker="x", s=60, label=f"{label}, mean" if k == 0 else None)
    ax.set_ylim(-0.03, 1.2)
    ax.set_yticks(np.linspace(0, 1, 6))  # the room above 1 is for the names
    ax.set_xlabel("mean target tokens per training sentence (plain cut; nearly equal lengths drawn side by side)")
    ax.set_ylabel("exact match")
    ax.legend(fontsize=7, loc="center right")
    ax.set_title("What each cut buys, against the length it costs", fontsize=10)
    fig.canvas.draw()  # the final layout, so that the labels' sizes below are measured where they will be drawn
    renderer, placed = fig.canvas.get_renderer(), []
    for i in np.argsort(drawn, kind="stable"):  # each name on the lowest row where it overlaps no other name
        for row in range(len(names)):
            text = ax.annotate(
                names[i], (drawn[i], 1.02), xytext=(0, 10 * row), textcoords="offset points", ha="center", fontsize=8
            )
            box = text.get_window_extent(renderer).expanded(1.1, 1.0)
            if not any(box.overlaps(other) for other in placed):
                placed.append(box)
                break
            text.remove()
    return fig


def plot_form_rates(diagnoses):
    """How often each held-out form was written where a sentence needed it: one bar per setting (the rate over the
    seeds) with a dot per seed. diagnoses: {setting name: {form: {"rate", "per_seed", "tokens"}}} (the stored
    diagnosis' "forms"); each form is labelled with its cut in the first setting."""
    validation.instance("diagnoses", diagnoses, dict, "{setting: {form: measures}}")
    names = list(diagnoses)
    forms = list(diagnoses[names[0]]) if names else []
    if not forms or any(list(diagnoses[n]) != forms for n in names):
        raise ValueError(f"diagnoses must give the same non-empty list of forms for every setting, got {names}")
    fig, ax = plt.subplots(figsize=(8, 3.4), layout="constrained")
    width = 0.8 / len(names)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, name in enumerate(names):
        x = np.arange(len(forms)) + (k - (len(names) - 1) / 2) * width
        rates = [diagnoses[name][f]["rate"] for f in forms]
        ax.bar(x, rates, width, color=colors[k % len(colors)], alpha=0.75, label=f"{name}, over the seeds")
        for xi, f in zip(x, forms):
            seeds = [r for r in diagnoses[name][f]["per_seed"] if r is not None]
            ax.scatter(np.full(len(seeds), xi), seeds, color="black", s=9, zorder=3)
    ax.scatter([], [], color="black", s=9, label="one seed")
    ax.set_xticks(np.arange(len(forms)), [f"{f}\n{diagnoses[names[0]][f]['tokens']}" for f in forms], fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("written where needed")
    ax.legend(fontsize=7, loc="lower left")
    ax.set_title(
        "Each held-out form: how often it was written (labels: its cut with the first setting's merges)", fontsize=9
    )
    return fig
