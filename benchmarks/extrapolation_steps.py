"""Per-step training cost of lesson 08's models (one per PE kind), to choose a fixed step count.

Prints JSON: median wall and CPU milliseconds per Adam step over interleaved chunks, for each PE kind,
and the resulting time of one lesson training run (STEPS steps). Usage:
    python benchmarks/extrapolation_steps.py [--chunks 5] [--chunk-steps 10]
"""

import argparse
import json
import statistics
import time

import torch

from utils.experiments.extrapolation import PE_KINDS, train

LESSON_STEPS = 400  # lessons_src/08_extrapolation_and_beyond.py trains each model this many steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=5)
    parser.add_argument("--chunk-steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)  # the lesson trains on one thread
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    wall, cpu = {pe: [] for pe in PE_KINDS}, {pe: [] for pe in PE_KINDS}
    for pe in PE_KINDS:
        train(pe, 2)  # warm-up
    for _ in range(args.chunks):  # interleaved, so a burst of load hits every kind alike
        for pe in PE_KINDS:
            w, c = time.perf_counter(), time.process_time()
            train(pe, args.chunk_steps)
            wall[pe].append((time.perf_counter() - w) / args.chunk_steps * 1e3)
            cpu[pe].append((time.process_time() - c) / args.chunk_steps * 1e3)
    out = {"threads": args.threads, "lesson_steps": LESSON_STEPS, "ms_per_step": {}}
    for pe in PE_KINDS:
        w, c = statistics.median(wall[pe]), statistics.median(cpu[pe])
        out["ms_per_step"][pe] = {
            "wall_median": round(w, 2),
            "cpu_median": round(c, 2),
            "lesson_run_s_wall": round(w * LESSON_STEPS / 1e3, 1),
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
