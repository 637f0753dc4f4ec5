# %% [markdown]
# # 01 · Positional encoding
#
# **Goals.** (placeholder: the real lesson replaces this file)
#
# **Prerequisites.** None.

# %% tags=["colab-setup"]
# On Google Colab, install this collection's `utils` first; elsewhere this cell does nothing.
import sys

if "google.colab" in sys.modules:
    get_ipython().run_line_magic(
        "pip", "install -q 'attention-by-hand[colab] @ git+https://github.com/attention-by-hand/attention-by-hand'"
    )

# %%
from utils.plotting import plot_pe_heatmap
from utils.widgets import pe_explorer

fig = plot_pe_heatmap()

# %%
# NBVAL_IGNORE_OUTPUT
pe_explorer()
