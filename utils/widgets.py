"""Thin ipywidgets wrappers around `utils.plotting` (API common to ipywidgets 7.7 and 8, for Colab)."""

import ipywidgets as W
import matplotlib.pyplot as plt

from utils import plotting


def _explorer(render, controls, layout=None):
    """Lay out `controls` above an output area that `render(**values)` redraws on every change."""

    def show(**values):
        render(**values)
        plt.show()

    out = W.interactive_output(show, controls)
    return W.VBox([layout or W.HBox(list(controls.values())), out])


def pe_explorer(max_len=100, d_model=128, base=10000.0, position=10):
    """Sliders for max_len, d_model, base and a highlighted position over the PE heatmap."""
    style = {"description_width": "initial"}
    controls = {
        "max_len": W.IntSlider(max_len, 2, 500, 1, description="max_len", continuous_update=False, style=style),
        "d_model": W.IntSlider(d_model, 2, 512, 2, description="d_model", continuous_update=False, style=style),
        "base": W.FloatLogSlider(base, base=10, min=1, max=5, step=0.25, description="base",
                                 continuous_update=False, style=style),
        "position": W.IntSlider(position, 0, max_len - 1, 1, description="position", style=style),
    }

    def clamp_position(change):  # the highlighted row must stay inside the table
        controls["position"].max = change["new"] - 1

    controls["max_len"].observe(clamp_position, names="value")
    return _explorer(plotting.plot_pe_heatmap, controls)


# --- lesson 07: toy translator ---


def cross_attention_explorer(model, src_vocab, tgt_vocab, sentence="the big dog sees a red cat", layer=0, head=0):
    """A text box for a sentence plus layer and head pickers over the model's cross-attention map."""
    from utils.translator.attention_maps import cross_attention_map

    cfg = model.config
    controls = {
        "sentence": W.Text(sentence, description="sentence", continuous_update=False,
                           layout=W.Layout(width="520px")),
        "layer": W.Dropdown(options=list(range(cfg["num_layers"])), value=layer, description="layer"),
        "head": W.Dropdown(options=list(range(cfg["num_heads"])), value=head, description="head"),
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
        note = "" if m["gold"] is not None else (
            "  (outside the grammar: no gold)" if m["reference"] is None else "  (differs from the reference: no gold)")
        return plotting.plot_cross_attention(m["weights"][layer][head], m["src"], m["tgt"], m["gold"],
                                             title=f"layer {layer}, head {head}{note}")

    layout = W.VBox([controls["sentence"], W.HBox([controls["layer"], controls["head"]])])
    return _explorer(render, controls, layout)
