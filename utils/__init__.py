"""Tested helpers for the lessons of "Attention, built by hand".

Each lesson builds an idea naively, then asserts it equals the vectorised version here. The top level is
the Transformer itself, one idea per module; read in this order, it is the model, built as the lessons build it:

- validation: the ValueError/TypeError every public helper raises on bad input (all lessons)
- positional: the sinusoidal positional encoding, and the learned, 2-D and rotary ones (lessons 01, 08)
- attention: scaled dot-product attention (lesson 03)
- masks: padding and causal masks, and how they combine (lesson 04)
- multihead: multi-head attention, split and merged heads (lesson 05)
- blocks: encoder and decoder layers and stacks (lesson 06)
- translator/: the encoder-decoder trained end to end: its grammar, vocabulary, data, model, training,
  decoding, evaluation and checkpoints (lesson 07; see its __init__)
- fast_attention: online softmax, tiled attention, the key-value cache and cache sizes (lesson 09)
- subwords: byte-pair encoding by hand, the same as Hugging Face tokenizers' (lesson 10)

Nothing above imports these sub-packages; each imports only the model and the ones before it, and neither the
model nor experiments/ imports matplotlib, ipywidgets or Jupyter (tests/unit/test_import_direction.py):

- experiments/: the measurements lessons run on the model (lessons 00 to 08)
- figures/: the figures and interactive explorers that draw those numbers
- course/: exercises, grading, the lesson list, links and the notebook runner
"""
