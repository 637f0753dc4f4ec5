"""Lesson 06's sweep of post-norm with a 20-step warm-up on the copy task, over seeds 5 to 29.

Trains `train_copy_task` with the lesson's settings (`norm_probes.WARMUP_SWEEP`: copied layers, 12 layers,
d_model 32, Adam at 0.01, 60 steps), one thread per run as in the lesson, and prints JSON with the exact
command, the setup and each seed's end loss (mean of the last 10 steps). The lesson loads
the stored file and trains its stuck seeds again to check they are stuck there too. Reproduce it with
    OMP_NUM_THREADS=1 python benchmarks/warmup_seeds.py --out utils/experiments/data/warmup_seeds.json
--quick trains a tiny stack for a few steps (a check of the script, not of the claim).
"""

import argparse
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch

from utils.experiments import norm_probes
from utils.translator.train_cache import FLOAT_PATH  # the variables that change float bits

LAST_STEPS = 10  # the end loss is the mean of the last 10 steps, as in the lesson
QUICK = {**norm_probes.WARMUP_SWEEP, "steps": 12, "num_layers": 2, "d_model": 8}


def run(setup, seed):
    """One run: (seed, mean loss of its last LAST_STEPS steps)."""
    torch.set_num_threads(1)
    losses = norm_probes.train_copy_task(**setup, seed=seed)  # (steps,)
    return seed, float(losses[-LAST_STEPS:].mean())


def parse(argv=None):
    """The command line, each value checked (argparse's error names the option)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(5, 30)))
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (one thread each)")
    parser.add_argument("--quick", action="store_true", help="a tiny stack, a few steps (for tests)")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args(argv)
    if min(args.seeds) < 0 or len(set(args.seeds)) != len(args.seeds):
        parser.error(f"--seeds must be distinct ints >= 0, got {args.seeds}")
    if args.jobs < 1:
        parser.error(f"--jobs must be an int >= 1, got {args.jobs}")
    if args.quick and args.out is not None and args.out.resolve() == norm_probes.WARMUP_SEEDS:
        parser.error("--quick must not overwrite the stored full-size runs")
    return args


def main(argv=None):
    args = parse(argv)
    setup = QUICK if args.quick else norm_probes.WARMUP_SWEEP
    if args.jobs == 1:
        results = [run(setup, seed) for seed in args.seeds]
    else:
        with ProcessPoolExecutor(args.jobs) as pool:
            results = list(pool.map(run, [setup] * len(args.seeds), args.seeds))
    for seed, end in results:
        print(f"seed {seed}: loss at the end {end:.3f}", file=sys.stderr)
    env = {k: os.environ[k] for k in FLOAT_PATH if k in os.environ}
    result = {
        "command": "".join(f"{k}={v} " for k, v in env.items())
        + "python benchmarks/warmup_seeds.py"
        + (" --quick" if args.quick else "")
        + " --seeds "
        + " ".join(map(str, args.seeds))
        + (f" --out {args.out}" if args.out else ""),
        "quick": args.quick,
        "float_path": env,
        "torch": torch.__version__,
        "setup": setup,
        "last_steps": LAST_STEPS,
        "seeds": args.seeds,
        "end_loss": {str(seed): round(end, 4) for seed, end in results},
    }
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
