"""The lesson's configuration, in one place so that lesson 07 and benchmarks/translator.py train the same model."""

from utils.translator import grammar
from utils.translator.config import TranslatorConfig
from utils.translator.vocab import Vocab

DATA = {
    "seed": 0,
    "n_train": 20000,
    "n_val": 500,
    "n_test": 500,
    "n_test_unseen": 500,
    "n_adjective_forms": 6,
    "n_verb_forms": 3,
}
# The vocabulary sizes are those of make_dataset's vocabularies (the grammar's words + 4 special tokens).
MODEL = TranslatorConfig(
    src_vocab_size=len(Vocab(grammar.source_words())),
    tgt_vocab_size=len(Vocab(grammar.target_words())),
    d_model=64,
    num_heads=4,
    d_ff=128,
    num_layers=2,
    dropout=0.0,
    max_len=64,
)
# One thread, so that float sums do not depend on the number of cores.
# 1300 steps: in-distribution test exact match 0.992, 0.990, 0.996, 1.000, 0.998 for model seeds 0-4, and 0.998 /
# 0.986 for seed 0 under MKL_CBWR=AVX2 ATEN_CPU_CAPABILITY=default / MKL_CBWR=COMPATIBLE ATEN_CPU_CAPABILITY=avx2;
# unseen-forms test exact match 0.000 in all seven runs. The best head's arg-max on the subject noun when the
# verb is written varied from 0.11 to 1.00 across runs (determiner: >= 0.99; adjective: <= 0.10); lesson 07's own
# builds have printed 0.112 and 0.930. The lesson prints this range widened to include its own run's figure.
VERB_HEAD_ON_SUBJECT_RANGE = (0.11, 1.00)  # that verb figure, lowest and highest over the runs above and lesson 07's
# In-distribution test exact match, lowest and highest over the seven runs above and lesson 10's three stored
# word-level runs of this recipe (utils/experiments/data/subwords_seeds.json, runs["word"], model seeds 0-2: 0.986,
# 0.996, 0.976). Lesson 07 asserts at least 0.95, below every one of them.
IN_DISTRIBUTION_EXACT_MATCH_RANGE = (0.976, 1.000)
TRAIN = {
    "steps": 1300,
    "batch_size": 64,
    "warmup": 200,
    "factor": 0.5,
    "label_smoothing": 0.0,
    "seed": 0,
    "num_threads": 1,
}
MODEL_SEED = 0  # torch.manual_seed before building the model: the same initial weights every run
