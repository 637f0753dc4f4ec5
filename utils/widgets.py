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


# --- lesson 05: multi-head attention ---

def head_explorer(weights, tokens=None, head=0):
    """A slider that picks one head of weights (num_heads, T_q, T_k); shown beside the head average."""
    weights = plotting._check_head_weights(weights)
    num_heads = weights.shape[0]
    controls = {"head": W.IntSlider(head, 0, num_heads - 1, 1, description="head")}

    def render(head):
        return plotting.plot_head_attention(weights, head, tokens)

    return _explorer(render, controls)
