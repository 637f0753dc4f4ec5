"""A toy English -> "Neo" translator built from the `utils` blocks (lesson 07).

One module per idea: grammar (the language pair and its gold alignments), vocab (words, or their sub-words, <-> ids),
data (the seeded splits and padded batches), config (TranslatorConfig, the model's sizes), model
(Seq2SeqTransformer, and eval_mode for decoding and evaluation), train (teacher forcing, warm-up;
train_cache lets a test run that executes a lesson twice train once),
decode (greedy decoding, translate), evaluate (exact match, token accuracy, BLEU, alignment accuracy),
attention_maps (one sentence's cross-attention), checkpoint (save / load), torch_reference (the same
model on torch.nn.Transformer) and recipe (the lesson's configuration, shared with the benchmark).
"""
