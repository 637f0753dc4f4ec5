# %% [markdown]
# # probe

# %%
import os
from utils.widgets import pe_explorer
from utils.plotting import plot_pe_heatmap
print(os.getcwd())

# %%
fig = plot_pe_heatmap()

# %%
pe_explorer()

# %%
from tqdm.auto import tqdm
for i in tqdm(range(3)): pass
