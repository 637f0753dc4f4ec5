"""Forward+backward time of utils' multi-head attention and encoder layer vs torch's, same weights.

Each size builds torch's module, copies it into ours with `from_torch`, then times the two
interleaved (ours, torch, ours, torch, ...) so load on a shared machine hits both alike, and
prints medians and ratios (ours / torch) as JSON. Goal: ratio <= 1.3 at every size.

Usage: python benchmarks/attention.py            # the full run
       python benchmarks/attention.py --quick    # one tiny size, a few repeats (a smoke test)
"""

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from utils.blocks import EncoderLayer  # noqa: E402
from utils.masks import padding_mask  # noqa: E402
from utils.multihead import MultiHeadAttention  # noqa: E402

SIZES = [  # (batch, seq, d_model, num_heads)
    (32, 64, 128, 4), (32, 64, 128, 8), (32, 64, 256, 4), (32, 64, 256, 8),
    (32, 128, 128, 4), (32, 128, 128, 8), (32, 128, 256, 4), (32, 128, 256, 8),
]
QUICK_SIZES = [(4, 16, 32, 4)]


def fwd_bwd(fn, x):
    """One forward and backward pass; returns seconds."""
    x.grad = None
    start = time.perf_counter()
    out = fn(x)
    out.sum().backward()
    return time.perf_counter() - start


def compare(fns, x, repeats, warmup):
    """Time every fn in `fns` (name -> fn) interleaved; return name -> median ms, name_min -> fastest ms."""
    for _ in range(warmup):
        for fn in fns.values():
            fwd_bwd(fn, x)
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            times[name].append(fwd_bwd(fn, x))
    medians = {name: round(1000 * statistics.median(t), 3) for name, t in times.items()}
    return medians | {f"{name}_min": round(1000 * min(t), 3) for name, t in times.items()}


def mha_row(batch, seq, d_model, num_heads, repeats, warmup, masked):
    """Self-attention of utils MultiHeadAttention vs torch.nn.MultiheadAttention (both weight modes)."""
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(d_model, num_heads, batch_first=True)
    ours = MultiHeadAttention.from_torch(theirs)
    x = torch.randn(batch, seq, d_model, requires_grad=True)  # (batch, seq, d_model)
    mask = pad = None
    if masked:  # the last quarter of every other sequence is padding
        lengths = torch.where(torch.arange(batch) % 2 == 0, seq, seq - seq // 4)
        tokens = (torch.arange(seq) < lengths[:, None]).long()  # (batch, seq), 0 = pad
        mask = padding_mask(tokens, 0)  # (batch, 1, seq): True = may attend
        pad = tokens == 0  # torch's key_padding_mask: True = NOT allowed
    fns = {
        "ours": lambda x: ours(x, x, x, mask)[0],
        "torch_need_weights": lambda x: theirs(x, x, x, key_padding_mask=pad, need_weights=True)[0],
        "torch_no_weights": lambda x: theirs(x, x, x, key_padding_mask=pad, need_weights=False)[0],
    }
    ms = compare(fns, x, repeats, warmup)
    return {
        "batch": batch, "seq": seq, "d_model": d_model, "num_heads": num_heads, "masked": masked,
        "ours_ms": ms["ours"], "torch_need_weights_ms": ms["torch_need_weights"],
        "torch_no_weights_ms": ms["torch_no_weights"],
        "ratio_vs_need_weights": round(ms["ours"] / ms["torch_need_weights"], 3),
        "ratio_vs_no_weights": round(ms["ours"] / ms["torch_no_weights"], 3),
        "min_ratio_vs_need_weights": round(ms["ours_min"] / ms["torch_need_weights_min"], 3),
        "min_ratio_vs_no_weights": round(ms["ours_min"] / ms["torch_no_weights_min"], 3),
    }


def encoder_row(batch, seq, d_model, num_heads, repeats, warmup):
    """One utils EncoderLayer vs torch.nn.TransformerEncoderLayer (post-norm, d_ff = 4 d_model)."""
    torch.manual_seed(0)
    theirs = nn.TransformerEncoderLayer(d_model, num_heads, 4 * d_model, dropout=0.0, batch_first=True)
    ours = EncoderLayer.from_torch(theirs)
    x = torch.randn(batch, seq, d_model, requires_grad=True)  # (batch, seq, d_model)
    ms = compare({"ours": ours, "torch": theirs}, x, repeats, warmup)
    return {
        "batch": batch, "seq": seq, "d_model": d_model, "num_heads": num_heads, "d_ff": 4 * d_model,
        "ours_ms": ms["ours"], "torch_ms": ms["torch"], "ratio": round(ms["ours"] / ms["torch"], 3),
        "min_ratio": round(ms["ours_min"] / ms["torch_min"], 3),
    }


def run(quick=False, repeats=None):
    """Return the benchmark as a dict ready for json.dumps."""
    sizes = QUICK_SIZES if quick else SIZES
    repeats = repeats or (3 if quick else 15)
    warmup = 1 if quick else 3
    mha = [mha_row(*s, repeats, warmup, masked) for s in sizes for masked in (False, True)]
    enc = [encoder_row(*s, repeats, warmup) for s in sizes]
    return {
        "note": "forward+backward, median ms of interleaved runs; ratio = ours / torch (of medians), "
                "min_ratio = ours / torch of the fastest run each; measured on a shared machine under load",
        "quick": quick, "repeats": repeats, "torch": torch.__version__,
        "threads": torch.get_num_threads(), "machine": platform.machine(),
        "goal_ratio": 1.3,
        "multihead_attention": mha,
        "encoder_layer": enc,
        "worst_ratio_vs_need_weights": max(r["ratio_vs_need_weights"] for r in mha),
        "worst_ratio_vs_no_weights": max(r["ratio_vs_no_weights"] for r in mha),
        "worst_encoder_ratio": max(r["ratio"] for r in enc),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one tiny size, 3 repeats (smoke test)")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats per size")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    print(json.dumps(run(args.quick, args.repeats), indent=2))


if __name__ == "__main__":
    main()
