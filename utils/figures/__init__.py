"""Figures and interactive explorers: each draws numbers computed by the model or by experiments/.

plotting (the static figures of lessons 01 to 07), widgets (the ipywidgets explorers around them),
norm_probes (lesson 06's batch-norm/layer-norm axes, per-layer, gradient-gap and loss-curve plots), translator (lesson 07's decoding steps and
per-head scores), progress (lessons 07 and 09's training progress line in a notebook), extrapolation
(lesson 08's accuracy plots and copy heads) and tile_widget (lesson 09's tile explorer).
"""
