"""The measurements the lessons run on the model, one experiment per module, in lesson order:

rnn and layer_costs (lesson 00: a recurrent layer's gradients, and what each sequence layer costs),
dot_products (02: dot products of random vectors and of positional encodings), attention_map and
attention_patterns (03: the explorer's seeded embeddings and weights, what attention matrices look like,
the adjective-noun task), next_token (04: why a decoder's input is shifted right), head_training (05: heads
trained on a retrieval task), norm_probes (06: activation scale and gradient norm per layer, pre- and
post-norm training) and extrapolation (08: length extrapolation per positional encoding; data/ holds its
stored seed runs). They compute; figures/ draws them.
"""
