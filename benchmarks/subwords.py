"""Lesson 07's translator recipe trained on the same data with word-level targets and with sub-word targets
(byte-pair encoding, utils.subwords), printed as JSON side by side: one entry per seed for each measure.

Sub-words on the target side only. The failure measured is in writing Neo: a held-out adjective or verb form whose
stem and ending each occur in training. Every English word of a test sentence occurs in training, so cutting the
source into sub-words would change nothing the experiment tests; keeping it word level keeps lesson 07's source
vocabulary and its gold alignments (source word indices). (The paper's shared vocabulary pays off for English and
German, which share an alphabet and many sub-words; English and Neo share few.) The merges are learned on the
training translations only.

in_distribution_exact_match: the test split (sentences drawn like the training ones); unseen_form_exact_match: the
test_unseen split (each sentence needs a Neo form that no training sentence has); token_accuracy: the test split.
All three compare decoded words, so both models are measured alike. heldout_forms_written: how many of the places
that need a held-out form got it (and _by_form, for each form; heldout_form_counts: what was written there, by
kind); heldout_form_tokens: how each form is cut.
mean_target_length: target tokens per training sentence (no <bos> / <eos>).

Usage: python benchmarks/subwords.py [--merges N] [--steps N] [--seeds 0 1 2] [--quick]
"""

import argparse
import dataclasses
import json
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads OpenMP: idle threads sleep, not spin

import torch  # noqa: E402

from utils.experiments import subwords as experiment  # noqa: E402
from utils.translator import recipe  # noqa: E402
from utils.translator.data import make_dataset, to_tensors, with_subword_targets
from utils.translator.model import Seq2SeqTransformer
from utils.translator.train import train

MERGES = 100  # Neo's training translations have 108 words; about 176 merges make every one of them a single token
QUICK = {
    "data": {"seed": 0, "n_train": 300, "n_val": 20, "n_test": 30, "n_test_unseen": 30},
    "model": {"d_model": 16, "num_heads": 2, "d_ff": 32, "num_layers": 1},
    "steps": 20,
    "merges": 20,
}


def run(ds, config, train_config, seed):
    """Train one model (initial weights from `seed`) on ds.train; its measures on the two test splits
    (utils.experiments.subwords.measure), its training time and final loss."""
    src, tgt = to_tensors(ds.train, ds.src_vocab, ds.tgt_vocab)  # (N, S), (N, T)
    torch.manual_seed(seed)
    model = Seq2SeqTransformer(config)
    history = train(model, src, tgt, progress=False, **train_config)
    return {
        **experiment.measure(model, ds),
        "train_seconds": round(history["seconds"], 2),
        "final_loss": round(sum(history["loss"][-50:]) / len(history["loss"][-50:]), 4),
    }


def compare(ds, merges, config, train_config, seeds):
    """{"word": ..., "subword": ...}: each a dict of per-seed lists of run's measures, plus the vocabulary size,
    the position table used, mean_target_length and the tokens of each held-out form."""
    out = {}
    for name, data in (("word", ds), ("subword", with_subword_targets(ds, merges))):
        cfg = experiment.fit_config(config, data)
        runs = [run(data, cfg, train_config, seed) for seed in seeds]
        out[name] = {key: [r[key] for r in runs] for key in runs[0]}
        out[name]["mean_target_length"] = round(experiment.mean_target_length(data), 3)
        out[name]["tgt_vocab_size"] = cfg.tgt_vocab_size
        out[name]["max_len"] = cfg.max_len
        out[name]["heldout_form_tokens"] = {
            f.neo: " ".join(data.tgt_vocab.itos[i] for i in data.tgt_vocab.encode([f.neo])) for f in data.heldout_forms
        }
    return out


def parse(argv=None):
    """The command line, each number checked (argparse's error names the option)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny data and model, a few steps (for tests)")
    parser.add_argument("--merges", type=int, default=None, help=f"byte-pair merges (default {MERGES})")
    parser.add_argument("--steps", type=int, default=None, help=f"training steps (default {recipe.TRAIN['steps']})")
    parser.add_argument("--seeds", type=int, nargs="+", default=[recipe.MODEL_SEED], help="model seeds")
    args = parser.parse_args(argv)
    if args.merges is not None and args.merges < 0:
        parser.error(f"--merges must be an int >= 0, got {args.merges}")
    if args.steps is not None and args.steps < 1:
        parser.error(f"--steps must be an int >= 1, got {args.steps}")
    if min(args.seeds) < 0 or len(set(args.seeds)) != len(args.seeds):
        parser.error(f"--seeds must be distinct ints >= 0, got {args.seeds}")
    return args


def main(argv=None):
    args = parse(argv)
    data = QUICK["data"] if args.quick else recipe.DATA
    config = dataclasses.replace(recipe.MODEL, **QUICK["model"]) if args.quick else recipe.MODEL
    default_steps, merges = (QUICK["steps"], QUICK["merges"]) if args.quick else (recipe.TRAIN["steps"], MERGES)
    train_config = dict(recipe.TRAIN, steps=args.steps or default_steps)
    merges = merges if args.merges is None else args.merges
    ds = make_dataset(**data)
    result = compare(ds, merges, config, train_config, args.seeds)
    if not args.quick:  # the word-level run is lesson 07's model exactly
        assert experiment.fit_config(config, ds) == recipe.MODEL
    report = {
        "quick": args.quick,
        "seeds": args.seeds,
        "merges": merges,
        **result,
        "data": data,
        "model": dataclasses.asdict(config),
        "train": train_config,
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
