"""Thin ipywidgets wrappers around `utils.figures.plotting` (API common to ipywidgets 7.7 and 8, for Colab)."""

import io
import math

import ipywidgets as widgets
import matplotlib.pyplot as plt
from IPython.display import Image, display

from utils import validation
from utils.experiments.attention_map import MASK_KINDS, as_tokens
from utils.figures import plotting


def _explorer(render, controls, layout=None):
    """Lay out `controls` above an output area that `render(**values)` redraws on every change (a render that
    returns None has printed why there is nothing to draw)."""

    def show(**values):
        fig = render(**values)
        if fig is None:
            return
        png = io.BytesIO()
        # Saved here rather than by plt.show(): the inline backend's tight bounding box doubles the
        # time from a slider step to the new image (the target is under 300 ms).
        fig.savefig(png, format="png")
        plt.close(fig)  # do not pile up one open figure per slider step
        display(Image(png.getvalue()))

    out = widgets.interactive_output(show, controls)
    return widgets.VBox([layout or widgets.HBox(list(controls.values())), out])


def pe_explorer(max_len=100, d_model=128, base=10000.0, position=10):
    """Sliders for max_len, d_model, base and a highlighted position over the PE heatmap."""
    max_len = validation.positive_int("max_len", max_len)  # bad arguments raise here, by name
    d_model = validation.even_positive_int("d_model", d_model)
    base = validation.pe_base("base", base)
    validation.index("position", position, max_len, "max_len")
    style = {"description_width": "initial"}
    log_base = math.log10(base)
    # Table sizes redraw on release (continuous_update=False); the position slider follows the drag.
    controls = {
        "max_len": widgets.IntSlider(
            max_len, 1, max(500, max_len), 1, description="max_len", continuous_update=False, style=style
        ),
        "d_model": widgets.IntSlider(
            d_model, 2, max(512, d_model), 2, description="d_model", continuous_update=False, style=style
        ),
        "base": widgets.FloatLogSlider(
            base,
            base=10,
            min=min(0.0, log_base),
            max=max(5.0, log_base),
            step=0.25,
            description="base",
            readout_format=".5g",
            continuous_update=False,
            style=style,
        ),
        "position": widgets.IntSlider(position, 0, max_len - 1, 1, description="position", style=style),
    }

    def clamp_position(change):  # the highlighted row must stay inside the table
        controls["position"].max = change["new"] - 1

    controls["max_len"].observe(clamp_position, names="value")
    return _explorer(plotting.plot_pe_heatmap, controls)


# --- lesson 03: attention-map explorer (lesson 04 uses its mask control) ---


def attention_explorer(
    tokens="YOUR CAT IS A LOVELY CAT",
    scale=True,
    temperature=1.0,
    positional=False,
    mask_kind="none",
    query=0,
    d_model=16,
    seed=0,
):
    """Self-attention map of a sentence with controls: scaling, temperature, PE, mask kind, query token."""
    toks = as_tokens(tokens)  # bad arguments raise here, by name
    validation.boolean("scale", scale)
    validation.positive_float("temperature", temperature)
    validation.boolean("positional", positional)
    validation.choice("mask_kind", mask_kind, MASK_KINDS)
    validation.index("query", query, len(toks), "len(tokens)")
    validation.positive_int("d_model", d_model)
    validation.seed("seed", seed)
    style = {"description_width": "initial"}
    controls = {
        "scale": widgets.Checkbox(value=scale, description="scale by 1/√d_k", style=style),
        "temperature": widgets.FloatLogSlider(
            value=temperature,
            base=10,
            min=-1.5,
            max=1,
            step=0.05,
            description="temperature",
            continuous_update=False,
            style=style,
        ),
        "positional": widgets.Checkbox(value=positional, description="add positional encoding", style=style),
        "mask_kind": widgets.Dropdown(options=list(MASK_KINDS), value=mask_kind, description="mask", style=style),
        "query": widgets.Dropdown(
            options=[(f"{i}: {t}", i) for i, t in enumerate(toks)], value=query, description="query token", style=style
        ),
    }
    fixed = {"tokens": widgets.fixed(toks), "d_model": widgets.fixed(d_model), "seed": widgets.fixed(seed)}
    layout = widgets.VBox(
        [
            widgets.HBox([controls["scale"], controls["positional"], controls["temperature"]]),
            widgets.HBox([controls["mask_kind"], controls["query"]]),
        ]
    )
    return _explorer(plotting.plot_attention_explorer, {**controls, **fixed}, layout)


# --- lesson 02: dot-product identities ---


def offset_explorer(d_model=64, base=10000.0, k=10, pair=0, t=3):
    """Sliders for d_model, base, offset k, frequency pair and position t over plot_offset_explorer."""
    d_model = validation.even_positive_int("d_model", d_model)  # bad arguments raise here, by name
    base = validation.pe_base("base", base)
    validation.integer("k", k, minimum=-60, maximum=60)
    validation.index("pair", pair, d_model // 2, "d_model/2")
    validation.integer("t", t, minimum=0, maximum=50, why="a position")
    style = {"description_width": "initial"}
    controls = {
        "d_model": widgets.IntSlider(d_model, 2, 512, 2, description="d_model", continuous_update=False, style=style),
        "base": widgets.FloatLogSlider(
            base, base=10, min=1, max=5, step=0.25, description="base", continuous_update=False, style=style
        ),
        "k": widgets.IntSlider(k, -60, 60, 1, description="offset k", style=style),
        "pair": widgets.IntSlider(pair, 0, d_model // 2 - 1, 1, description="pair i", style=style),
        "t": widgets.IntSlider(t, 0, 50, 1, description="position t", style=style),
    }

    def clamp_pair(change):  # the frequency pair must exist at the new d_model
        controls["pair"].max = change["new"] // 2 - 1

    controls["d_model"].observe(clamp_pair, names="value")
    rows = widgets.VBox(
        [
            widgets.HBox([controls[n] for n in ("d_model", "base")]),
            widgets.HBox([controls[n] for n in ("k", "pair", "t")]),
        ]
    )
    return _explorer(plotting.plot_offset_explorer, controls, layout=rows)


# --- lesson 07: toy translator ---


def cross_attention_explorer(model, src_vocab, tgt_vocab, sentence="the big dog sees a red cat", layer=0, head=0):
    """A text box for a sentence plus layer and head pickers over the model's cross-attention map."""
    from utils.translator.attention_maps import cross_attention_map
    from utils.translator.model import Seq2SeqTransformer

    cfg = validation.instance("model", model, Seq2SeqTransformer).config
    validation.index("layer", layer, cfg.num_layers, "num_layers")
    validation.index("head", head, cfg.num_heads, "num_heads")
    validation.instance("sentence", sentence, str)
    controls = {
        "sentence": widgets.Text(
            sentence, description="sentence", continuous_update=False, layout=widgets.Layout(width="520px")
        ),
        "layer": widgets.Dropdown(options=list(range(cfg.num_layers)), value=layer, description="layer"),
        "head": widgets.Dropdown(options=list(range(cfg.num_heads)), value=head, description="head"),
    }
    cache = {}

    def render(sentence, layer, head):
        if sentence not in cache:
            try:
                cache[sentence] = cross_attention_map(model, sentence, src_vocab, tgt_vocab)
            except ValueError as err:  # unknown words, empty input: say so in the figure, never raise
                fig, ax = plt.subplots(figsize=(8, 1.2))
                ax.axis("off")
                ax.text(0, 0.5, f"{err}", wrap=True, va="center", fontsize=10)
                return fig
        m = cache[sentence]
        note = (
            ""
            if m["gold"] is not None
            else (
                "  (outside the grammar: no gold)"
                if m["reference"] is None
                else "  (differs from the reference: no gold)"
            )
        )
        return plotting.plot_cross_attention(
            m["weights"][layer][head], m["src"], m["tgt"], m["gold"], title=f"layer {layer}, head {head}{note}"
        )

    layout = widgets.VBox([controls["sentence"], widgets.HBox([controls["layer"], controls["head"]])])
    return _explorer(render, controls, layout)


# --- lesson 05: multi-head attention ---


def head_explorer(weights, tokens=None, head=0):
    """A slider that picks one head of weights (num_heads, T_q, T_k); shown beside the head average."""
    weights = validation.head_weights("weights", weights)
    num_heads = weights.shape[0]
    validation.index("head", head, num_heads, "num_heads")
    controls = {"head": widgets.IntSlider(head, 0, num_heads - 1, 1, description="head")}

    def render(head):
        return plotting.plot_head_attention(weights, head, tokens)

    return _explorer(render, controls)
