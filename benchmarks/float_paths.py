"""Which environment settings change the low bits of the lessons' results on this machine? Prints JSON.

Each configuration runs the same probes in a fresh process: a small float32 matmul difference (lesson
05 prints one), a larger matmul, softmax, LayerNorm, and 40 training steps of lesson 07's translator.
A probe's "bits" is a hash of its exact float results; a configuration that changes a hash takes
another floating-point path. `.ci/run` reruns the notebooks under configurations found here.

Usage: python benchmarks/float_paths.py [--steps 40]
       python benchmarks/float_paths.py --check "MKL_CBWR=AVX2 ATEN_CPU_CAPABILITY=default" [--check ...]
The second form compares only those configurations with the default and exits 1 if one of them
changes no bits (a rerun under it would test nothing).
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys

CONFIGS = {
    "default": {},
    "threads=1": {"OMP_NUM_THREADS": "1"},
    "threads=4": {"OMP_NUM_THREADS": "4"},
    "MKL_CBWR=COMPATIBLE": {"MKL_CBWR": "COMPATIBLE"},
    "MKL_CBWR=AVX2": {"MKL_CBWR": "AVX2"},
    "ATEN_CPU_CAPABILITY=default": {"ATEN_CPU_CAPABILITY": "default"},
    "ATEN_CPU_CAPABILITY=avx2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "ONEDNN_MAX_CPU_ISA=AVX2": {"ONEDNN_MAX_CPU_ISA": "AVX2"},
}


def digest(*tensors):
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:12]


def probes(steps):
    """Run every probe in this process; return {probe: hash}."""
    import math

    import torch

    from utils.translator import recipe
    from utils.translator.data import make_dataset, to_tensors
    from utils.translator.model import Seq2SeqTransformer
    from utils.translator.train import train

    out = {}
    torch.manual_seed(0)
    x = torch.randn(2, 5, 12)
    W = [torch.randn(12, 12) / math.sqrt(12) for _ in range(2)]
    naive = torch.cat([x @ W[0][:, i * 4 : (i + 1) * 4] for i in range(3)], -1) @ W[1]
    out["small matmul (lesson 05)"] = digest(naive - (x @ W[0]) @ W[1])
    a, b = torch.randn(256, 512), torch.randn(512, 384)
    out["matmul 256x512x384"] = digest(a @ b)
    s = torch.randn(64, 1000) * 10
    out["softmax"] = digest(torch.softmax(s, -1))
    out["layer_norm"] = digest(torch.nn.functional.layer_norm(s, (1000,)))
    ds = make_dataset(**recipe.DATA)
    src, tgt = to_tensors(ds.train, ds.src_vocab, ds.tgt_vocab)  # (N, S), (N, T)
    torch.manual_seed(recipe.MODEL_SEED)
    model = Seq2SeqTransformer(recipe.MODEL)
    history = train(model, src, tgt, **dict(recipe.TRAIN, steps=steps), progress=False)
    out[f"translator losses, {steps} steps"] = digest(torch.tensor(history["loss"]))
    return out


def parse_env(text):
    """'A=1 B=2' -> {'A': '1', 'B': '2'}."""
    pairs = [item.partition("=") for item in text.split()]
    bad = [k for k, eq, _ in pairs if not eq or not k]
    if bad:
        raise SystemExit(f"--check takes space-separated NAME=VALUE settings, got {text!r}")
    return {k: v for k, _, v in pairs}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--check", action="append", default=[], metavar="'NAME=VALUE ...'")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(probes(args.steps)))
        return
    configs = {"default": {}, **{text: parse_env(text) for text in args.check}} if args.check else CONFIGS
    results = {}
    for name, env in configs.items():
        proc = subprocess.run(
            [sys.executable, __file__, "--child", "--steps", str(args.steps)],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            check=True,
        )
        results[name] = json.loads(proc.stdout.splitlines()[-1])
    base = results["default"]
    changed = {name: sorted(k for k in r if r[k] != base[k]) for name, r in results.items() if name != "default"}
    print(json.dumps({"hashes": results, "changes_bits": changed}, indent=1))
    inert = [name for name in args.check if not changed[name]]
    if inert:
        sys.exit(f"these settings change no bits here, so a rerun under them tests nothing: {inert}")


if __name__ == "__main__":
    main()
