"""Lesson 10's stored runs: lesson 07's recipe in each setting of utils.experiments.subwords.SETTINGS (word level;
plain byte-pair encoding; BPE-dropout at several merge counts) for several model seeds, written as JSON to
utils/experiments/data/subwords_seeds.json, which the lesson loads.

Each finished run is written at once (the file is read, extended and replaced under a lock, so two processes may
run different settings or seeds into the same file): an interrupted sweep keeps what it finished, and a second
call with other --settings / --seeds (--add-seeds) extends the file. A run already in the file is skipped.
Runs with other --steps than the recipe's are stored under "<setting>@<steps>steps" (e.g. a shorter live setting).

The file holds "settings", the configuration, "data" (per setting: vocabulary size, position table, mean target
length, held-out forms' cuts and their siblings' cuts), "runs" ({run key: {seed: measures}}, the measures of
utils.experiments.subwords.measure plus train_seconds, train_cpu_seconds, final_loss, torch_threads, load_average_1min) and
"diagnosis" (per run key: each held-out form's written rate over the seeds next to its cuts).

Usage: python benchmarks/subwords_seeds.py [--settings word dropout30 ...] [--seeds 0 1 2] [--steps N]
                                          [--out PATH] [--quick]
       python benchmarks/subwords_seeds.py --diagnose-only   # the data and diagnosis again, from the stored runs
"""

import argparse
import contextlib
import dataclasses
import json
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads OpenMP: idle threads sleep, not spin

import torch  # noqa: E402

from utils.experiments import subwords as experiment  # noqa: E402
from utils.translator import recipe  # noqa: E402
from utils.translator.train_cache import FLOAT_PATH  # noqa: E402

QUICK = {
    "data": {"seed": 0, "n_train": 300, "n_val": 20, "n_test": 30, "n_test_unseen": 30},
    "model": {"d_model": 16, "num_heads": 2, "d_ff": 32, "num_layers": 1},
    "steps": 10,
    "settings": ("word", "dropout30", "characters"),
}


def configuration(quick):
    """(data config, model config, train config) of a full or a quick run."""
    if quick:
        return (
            QUICK["data"],
            dataclasses.replace(recipe.MODEL, **QUICK["model"]),
            dict(recipe.TRAIN, steps=QUICK["steps"]),
        )
    return recipe.DATA, recipe.MODEL, dict(recipe.TRAIN)


def run_key(name, steps, default_steps):
    return name if steps == default_steps else f"{name}@{steps}steps"


def data_summary(name, data_config, model_config):
    """What a setting's data looks like (no training): vocabulary, position table, target length, cuts."""
    s = experiment.setting(name)
    data = experiment.dataset(s, data_config)
    cfg = experiment.fit_config(model_config, data, s["dropout"])
    return {
        "tgt_vocab_size": cfg.tgt_vocab_size,
        "max_len": cfg.max_len,
        "mean_target_length": round(experiment.mean_target_length(data), 3),
        "form_cuts": experiment.form_cuts(data, s["dropout"]),
    }


def one_run(name, seed, steps, data_config, model_config):
    """Train and measure one setting and seed; the measures with the training time and final loss.
    train_seconds is wall-clock time, which other processes on the machine stretch; train_cpu_seconds is the
    processor time this process spent in training (and in building the setting's data and model)."""
    cpu = time.process_time()
    model, data, history = experiment.train_setting(
        name, seed, steps, data_config=data_config, model_config=model_config
    )
    cpu = time.process_time() - cpu
    return {
        **experiment.measure(model, data),
        "train_seconds": round(history["seconds"], 2),
        "train_cpu_seconds": round(cpu, 2),
        "final_loss": round(sum(history["loss"][-50:]) / len(history["loss"][-50:]), 4),
        "tokens_trained": sum(history["tokens"]),
        "torch_threads": torch.get_num_threads(),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }


@contextlib.contextmanager
def locked(path):
    """An exclusive lock next to `path` (POSIX; elsewhere none)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(path.with_name(path.name + ".lock"), "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def diagnose(report):
    """{run key: experiment.diagnosis} for every run key with stored runs."""
    out = {}
    for key, runs in report["runs"].items():
        name = key.split("@")[0]
        out[key] = experiment.diagnosis(runs, report["data"][name]["form_cuts"])
    return out


def update(path, header, name, data, key=None, seed=None, result=None):
    """Read `path` (or start from `header`), add one setting's data and one run, recompute the diagnosis, write it
    back atomically; return the report."""
    with locked(path):
        report = json.loads(path.read_text()) if path.exists() else dict(header, data={}, runs={}, diagnosis={})
        for field in ("quick", "data_config", "model", "train"):
            if report[field] != header[field]:
                raise SystemExit(f"{path} holds runs of another {field}: {report[field]} (this call: {header[field]})")
        report["settings"][name] = experiment.SETTINGS[name]
        report["data"][name] = data
        if result is not None:
            report["runs"].setdefault(key, {})[str(seed)] = result
        report["diagnosis"] = diagnose(report)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_text(json.dumps(report, indent=1) + "\n")
        partial.replace(path)
        return report


def parse(argv=None):
    """The command line, each value checked (argparse's error names the option)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny data and model, a few steps (for tests)")
    parser.add_argument(
        "--settings", nargs="+", default=None, help=f"settings to run (default all: {list(experiment.SETTINGS)})"
    )
    parser.add_argument(
        "--seeds", "--add-seeds", dest="seeds", type=int, nargs="+", default=[0, 1, 2], help="model seeds"
    )
    parser.add_argument("--steps", type=int, default=None, help=f"training steps (default {recipe.TRAIN['steps']})")
    parser.add_argument(
        "--diagnose-only",
        action="store_true",
        help="recompute each stored setting's data and the diagnosis; no training",
    )
    parser.add_argument("--out", type=Path, default=None, help=f"JSON file (default {experiment.SEED_RUNS})")
    args = parser.parse_args(argv)
    if args.settings is None:
        args.settings = list(QUICK["settings"] if args.quick else experiment.SETTINGS)
    unknown = [s for s in args.settings if s not in experiment.SETTINGS]
    if unknown or len(set(args.settings)) != len(args.settings):
        parser.error(f"--settings must be distinct names from {list(experiment.SETTINGS)}, got {args.settings}")
    if args.steps is not None and args.steps < 1:
        parser.error(f"--steps must be an int >= 1, got {args.steps}")
    if min(args.seeds) < 0 or len(set(args.seeds)) != len(args.seeds):
        parser.error(f"--seeds must be distinct ints >= 0, got {args.seeds}")
    if args.out is None:
        if args.quick:
            parser.error("--quick needs --out (the stored runs are full-size)")
        args.out = experiment.SEED_RUNS
    return args


def main(argv=None):
    args = parse(argv)
    data_config, model_config, train_config = configuration(args.quick)
    steps = args.steps or train_config["steps"]
    header = {
        "quick": args.quick,
        "settings": {},
        "data_config": data_config,
        "model": dataclasses.asdict(model_config),
        "train": train_config,
        "cpu_count": os.cpu_count(),
        "torch_version": torch.__version__,
        "float_path": {v: os.environ.get(v) for v in FLOAT_PATH},
    }
    report = None
    if args.diagnose_only:
        if not args.out.exists():
            raise SystemExit(f"{args.out} holds no runs to diagnose")
        for name in json.loads(args.out.read_text())["settings"]:
            report = update(args.out, header, name, data_summary(name, data_config, model_config))
        return report
    for name in args.settings:
        data = data_summary(name, data_config, model_config)
        key = run_key(name, steps, train_config["steps"])
        report = update(args.out, header, name, data)
        for seed in args.seeds:
            if str(seed) in report["runs"].get(key, {}):
                continue
            result = one_run(name, seed, steps, data_config, model_config)
            report = update(args.out, header, name, data, key, seed, result)
            print(
                json.dumps({"run": key, "seed": seed, **{k: v for k, v in result.items() if "form" not in k}}),
                flush=True,
            )
    return report


if __name__ == "__main__":
    main()
