"""Forward+backward time of utils' multi-head attention and encoder layer vs torch's, same weights.

Each size builds torch's module, copies it into ours with `from_torch`, and times, interleaved
(ours, torch, ours, torch, ...) so load on a shared machine hits all alike, two pairs side by side:
ours with weights vs `torch.nn.MultiheadAttention(need_weights=True)` (per-head weights, like ours), and
ours with `need_weights=False` vs torch's fused path (`need_weights=False`, which calls
`F.scaled_dot_product_attention`). It prints medians and ratios (ours / torch) as JSON. Goal: ratio <= 1.1.

Usage: python benchmarks/attention.py            # the full run
       python benchmarks/attention.py --quick    # one tiny size, a few repeats (a smoke test)
"""

import argparse
import json
import platform
import statistics
import time

import torch
from torch import nn

from utils.blocks import EncoderLayer
from utils.masks import padding_mask
from utils.multihead import MultiHeadAttention

GOAL_RATIO = 1.1
SIZES = [  # (batch, seq, d_model, num_heads)
    (32, 64, 128, 4),
    (32, 64, 128, 8),
    (32, 64, 256, 4),
    (32, 64, 256, 8),
    (32, 128, 128, 4),
    (32, 128, 128, 8),
    (32, 128, 256, 4),
    (32, 128, 256, 8),
]
QUICK_SIZES = [(4, 16, 32, 4)]
PAIRS = {"with_weights": ("ours_weights", "torch_weights"), "no_weights": ("ours_fused", "torch_fused")}


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


def ratios(ms):
    """ours / torch of the medians (ratio_*) and of the fastest runs (min_ratio_*) for every pair."""
    out = {}
    for pair, (ours, theirs) in PAIRS.items():
        out[f"ratio_{pair}"] = round(ms[ours] / ms[theirs], 3)
        out[f"min_ratio_{pair}"] = round(ms[f"{ours}_min"] / ms[f"{theirs}_min"], 3)
    return out


def mha_row(batch, seq, d_model, num_heads, repeats, warmup, masked):
    """Self-attention of utils MultiHeadAttention vs torch.nn.MultiheadAttention, with and without weights."""
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
        "ours_weights": lambda x: ours(x, x, x, mask)[0],
        "torch_weights": lambda x: theirs(x, x, x, key_padding_mask=pad, need_weights=True, average_attn_weights=False)[
            0
        ],
        "ours_fused": lambda x: ours(x, x, x, mask, need_weights=False)[0],
        "torch_fused": lambda x: theirs(x, x, x, key_padding_mask=pad, need_weights=False)[0],
    }
    ms = compare(fns, x, repeats, warmup)
    return (
        {"batch": batch, "seq": seq, "d_model": d_model, "num_heads": num_heads, "masked": masked}
        | {f"{name}_ms": ms[name] for name in fns}
        | ratios(ms)
    )


def encoder_row(batch, seq, d_model, num_heads, repeats, warmup):
    """One utils EncoderLayer (with and without weights) vs torch.nn.TransformerEncoderLayer (post-norm,
    d_ff = 4 d_model; torch's layer never keeps weights, so both of ours are compared with the same run)."""
    torch.manual_seed(0)
    theirs = nn.TransformerEncoderLayer(d_model, num_heads, 4 * d_model, dropout=0.0, batch_first=True)
    ours = EncoderLayer.from_torch(theirs)
    x = torch.randn(batch, seq, d_model, requires_grad=True)  # (batch, seq, d_model)
    fns = {"ours_weights": ours, "ours_fused": lambda x: ours(x, need_weights=False), "torch": theirs}
    ms = compare(fns, x, repeats, warmup)
    return {
        "batch": batch,
        "seq": seq,
        "d_model": d_model,
        "num_heads": num_heads,
        "d_ff": 4 * d_model,
        "ours_weights_ms": ms["ours_weights"],
        "ours_fused_ms": ms["ours_fused"],
        "torch_ms": ms["torch"],
        "ratio_with_weights": round(ms["ours_weights"] / ms["torch"], 3),
        "ratio_no_weights": round(ms["ours_fused"] / ms["torch"], 3),
        "min_ratio_no_weights": round(ms["ours_fused_min"] / ms["torch_min"], 3),
    }


def run(quick=False, repeats=None):
    """Return the benchmark as a dict ready for json.dumps."""
    sizes = QUICK_SIZES if quick else SIZES
    repeats = repeats or (3 if quick else 15)
    warmup = 1 if quick else 3
    mha = [mha_row(*s, repeats, warmup, masked) for s in sizes for masked in (False, True)]
    enc = [encoder_row(*s, repeats, warmup) for s in sizes]
    summary = {}
    for pair in PAIRS:
        rows = [r[f"ratio_{pair}"] for r in mha]
        summary[f"median_ratio_{pair}"] = round(statistics.median(rows), 3)
        summary[f"worst_ratio_{pair}"] = max(rows)
    return {
        "note": "forward+backward, median ms of interleaved runs; ratio = ours / torch (of medians), "
        "min_ratio = ours / torch of the fastest run each; with_weights: ours vs "
        "nn.MultiheadAttention(need_weights=True, average_attn_weights=False); no_weights: ours "
        "need_weights=False vs nn.MultiheadAttention(need_weights=False) (F.scaled_dot_product_attention)",
        "quick": quick,
        "repeats": repeats,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "machine": platform.machine(),
        "goal_ratio": GOAL_RATIO,
        **summary,
        "worst_encoder_ratio_no_weights": max(r["ratio_no_weights"] for r in enc),
        "multihead_attention": mha,
        "encoder_layer": enc,
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
