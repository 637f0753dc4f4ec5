"""A toy English -> "Neo" translator built from the `utils` blocks (lesson 07).

One module per idea: grammar (the language pair and its gold alignments), vocab (tokens <-> ids),
data (the seeded splits and padded batches), model, train, decode, evaluate, checkpoint.
"""
