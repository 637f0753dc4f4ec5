"""Lesson 10's attention control, stored: for word-level targets (the recipe's steps) and for the lesson's live
sub-word setting (its steps), several model seeds each, where the head that looks most at an adjective's noun
looks while the unseen-forms test's first adjectives of two are written (utils.experiments.subword_attention.
noun_head). Writes JSON to utils/experiments/data/subword_attention_seeds.json, which the lesson loads.

Usage: python benchmarks/subword_attention_seeds.py [--seeds 0 1 2] [--out PATH] [--quick]
"""

import argparse
import dataclasses
import json
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads OpenMP: idle threads sleep, not spin

import torch  # noqa: E402

from utils.experiments import subwords as experiment  # noqa: E402
from utils.experiments.subword_attention import noun_head  # noqa: E402
from utils.translator import recipe  # noqa: E402
from utils.translator.train_cache import FLOAT_PATH  # noqa: E402

OUT = experiment.ATTENTION_SEED_RUNS
RUNS = (("word", None), ("dropout30", 500))  # (setting, steps; None: the recipe's): word level and the live run
QUICK = {
    "data": {"seed": 0, "n_train": 300, "n_val": 20, "n_test": 40, "n_test_unseen": 60},
    "model": {"d_model": 16, "num_heads": 2, "d_ff": 32, "num_layers": 1},
    "steps": 10,
}


def one_run(name, seed, steps, data_config, model_config):
    """Train one setting and seed; its noun head and its exact match on the two test splits."""
    cpu = time.process_time()
    model, data, _ = experiment.train_setting(name, seed, steps, data_config=data_config, model_config=model_config)
    measured = experiment.measure(model, data)
    return {
        **noun_head(model, data),
        "in_distribution_exact_match": measured["in_distribution_exact_match"],
        "unseen_form_exact_match": measured["unseen_form_exact_match"],
        "cpu_seconds": round(time.process_time() - cpu, 2),
    }


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny data and model, a few steps (for tests)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="model seeds")
    parser.add_argument("--out", type=Path, default=None, help=f"JSON file (default {OUT})")
    args = parser.parse_args(argv)
    if min(args.seeds) < 0 or len(set(args.seeds)) != len(args.seeds):
        parser.error(f"--seeds must be distinct ints >= 0, got {args.seeds}")
    if args.out is None:
        if args.quick:
            parser.error("--quick needs --out (the stored runs are full-size)")
        args.out = OUT
    return args


def main(argv=None):
    args = parse(argv)
    if args.quick:
        data_config, model_config = QUICK["data"], dataclasses.replace(recipe.MODEL, **QUICK["model"])
    else:
        data_config, model_config = recipe.DATA, recipe.MODEL
    report = {
        "quick": args.quick,
        "data_config": data_config,
        "model": dataclasses.asdict(model_config),
        "torch_version": torch.__version__,
        "float_path": {v: os.environ.get(v) for v in FLOAT_PATH},
        "runs": {},
    }
    for name, steps in RUNS:
        steps = QUICK["steps"] if args.quick else steps or recipe.TRAIN["steps"]
        key = name if steps == recipe.TRAIN["steps"] else f"{name}@{steps}steps"
        for seed in args.seeds:
            result = one_run(name, seed, steps, data_config, model_config)
            report["runs"].setdefault(key, {})[str(seed)] = result
            args.out.write_text(json.dumps(report, indent=1) + "\n")
            print(json.dumps({"run": key, "seed": seed, **result}), flush=True)
    return report


if __name__ == "__main__":
    main()
