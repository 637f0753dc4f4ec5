"""Lesson 08's experiment over several seeds: every PE variant, both tasks, a fixed step count per run.

Writes JSON (the lesson loads it to show mean and min-max over seeds) with the exact command, the setup
and one summary per (task, variant, seed). Reproduce the committed file with
    python benchmarks/extrapolation_seeds.py --seeds 0 1 2 3 4 --out utils/experiments/data/extrapolation_seeds.json
and the reruns under other floating-point paths, from which the lesson's tolerance is chosen, with
    MKL_CBWR=AVX2 ATEN_CPU_CAPABILITY=default python benchmarks/extrapolation_seeds.py --seeds 0 1 \
        --out utils/experiments/data/extrapolation_seeds_avx2_default.json
    MKL_CBWR=COMPATIBLE ATEN_CPU_CAPABILITY=avx2 python benchmarks/extrapolation_seeds.py --seeds 0 1 \
        --out utils/experiments/data/extrapolation_seeds_compatible_avx2.json
The random-starts controls of lesson 08's "Going further" (sinusoidal+offsets with every training position
below 16, or below 32) are stored with
    python benchmarks/extrapolation_seeds.py --controls --seeds 0 1 2 3 4 \
        --out utils/experiments/data/extrapolation_controls.json
Each run pins one thread, as the lesson does (the thread count changes a run's last bits here, so the
lesson's seed 0 reproduces the stored one on the same machine); --jobs runs several at once.
"""

import argparse
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch

from utils.experiments import extrapolation as ex

FLOAT_PATH_VARIABLES = ("MKL_CBWR", "ATEN_CPU_CAPABILITY")  # they change matmul and softmax bits
SETUP = dict(
    steps=400,
    train_len=16,
    vocab_size=16,
    shift=2,
    anchor=5,
    max_position=48,
    test_lengths=list(range(4, 49, 4)),
    absolute_test_lengths=list(range(8, 49, 8)),
)


def run(task, pe, seed):
    """Train one model and summarise it: final loss, accuracy per test length, per position range, copy head."""
    torch.set_num_threads(1)
    s = SETUP
    k = s["shift"] if task == "copy" else s["anchor"]
    model, losses = ex.train(
        pe,
        s["steps"],
        train_len=s["train_len"],
        vocab_size=s["vocab_size"],
        shift=k,
        seed=seed,
        task=task,
        max_position=s["max_position"],
    )
    clamp = pe == "learned"
    lengths = s["test_lengths"] if task == "copy" else s["absolute_test_lengths"]
    acc = ex.evaluate(model, lengths, s["vocab_size"], k, clamp=clamp, task=task)
    long_len, L = max(lengths), s["train_len"]
    pos = ex.accuracy_by_position(model, long_len, s["vocab_size"], k, clamp=clamp, task=task)  # (long_len,)
    out = {
        "final_loss": float(np.mean(losses[-20:])),
        "accuracy": {str(n): a for n, a in acc.items()},
        "by_position": {
            f"{lo}..{hi - 1}": pos[lo:hi].nanmean().item() for lo, hi in ((0, L), (L, 2 * L), (2 * L, long_len))
        },
    }
    if task == "copy":
        out["copy_head"] = ex.copy_head(model, long_len, L, s["vocab_size"], k, clamp=clamp)
    return task, pe, seed, out


CONTROL_BELOW = (16, 32)  # max_position of the random-starts controls: every training position is below it


def run_control(below, seed):
    """Sinusoidal+offsets on delayed copy with random starts below `below`: accuracy per position range at 48."""
    torch.set_num_threads(1)
    s = SETUP
    model, losses = ex.train(
        "sinusoidal+offsets",
        s["steps"],
        train_len=s["train_len"],
        vocab_size=s["vocab_size"],
        shift=s["shift"],
        seed=seed,
        task="copy",
        max_position=below,
    )
    long_len, L = s["max_position"], s["train_len"]
    pos = ex.accuracy_by_position(model, long_len, s["vocab_size"], s["shift"])  # (long_len,)
    out = {
        "final_loss": float(np.mean(losses[-20:])),
        "by_position": {
            f"{lo}..{hi - 1}": pos[lo:hi].nanmean().item() for lo, hi in ((0, L), (L, 2 * L), (2 * L, long_len))
        },
    }
    return below, seed, out


def rounded(x):
    """Floats to 4 decimals, recursively, so the file is small and diffs stay readable."""
    if isinstance(x, float):
        return round(x, 4)
    if isinstance(x, dict):
        return {key: rounded(v) for key, v in x.items()}
    return x


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default=None, help="write the JSON here (default: print it)")
    parser.add_argument("--controls", action="store_true", help="run the random-starts controls instead")
    args = parser.parse_args()
    if args.controls:
        jobs = [(below, seed) for below in CONTROL_BELOW for seed in args.seeds]
        runs = {str(below): {} for below in CONTROL_BELOW}
        with ProcessPoolExecutor(args.jobs) as pool:
            for below, seed, out in pool.map(run_control, *zip(*jobs)):
                runs[str(below)][str(seed)] = rounded(out)
                print(f"positions below {below}, seed {seed}: loss {out['final_loss']:.3f}", file=sys.stderr)
    else:
        jobs = [(task, pe, seed) for task in ex.TASKS for pe in ex.PE_KINDS for seed in args.seeds]
        runs = {task: {pe: {} for pe in ex.PE_KINDS} for task in ex.TASKS}
        with ProcessPoolExecutor(args.jobs) as pool:
            for task, pe, seed, out in pool.map(run, *zip(*jobs)):
                runs[task][pe][str(seed)] = rounded(out)
                print(f"{task:>8} {pe:>18} seed {seed}: loss {out['final_loss']:.3f}", file=sys.stderr)
    env = {k: os.environ[k] for k in FLOAT_PATH_VARIABLES if k in os.environ}
    result = {
        "command": "".join(f"{k}={v} " for k, v in env.items())
        + "python benchmarks/extrapolation_seeds.py "
        + ("--controls " if args.controls else "")
        + "--seeds "
        + " ".join(map(str, args.seeds))
        + (f" --out {args.out}" if args.out else ""),
        "float_path": env,
        "torch": torch.__version__,
        "setup": SETUP,
        "seeds": args.seeds,
        "runs": runs,
    }
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
