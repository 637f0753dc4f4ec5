"""Speed of utils attention vs torch, and of one explorer redraw; prints JSON (medians, interleaved runs).

Usage: python benchmarks/sdpa.py [--repeats 30]
"""

import argparse
import json
import statistics
import time

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from utils.attention import scaled_dot_product_attention  # noqa: E402
from utils.figures.plotting import plot_attention_explorer  # noqa: E402
from utils.masks import causal_mask  # noqa: E402


def fwd_bwd(fn, q, k, v, mask):
    """One forward and backward pass; returns seconds."""
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    start = time.perf_counter()
    fn(q, k, v, mask).sum().backward()
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    batch, heads, T, d_k = 8, 8, 128, 64
    q, k, v = (torch.randn(batch, heads, T, d_k) for _ in range(3))
    mask = causal_mask(T)
    ours = lambda q, k, v, m: scaled_dot_product_attention(q, k, v, m)[0]  # noqa: E731
    theirs = lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)  # noqa: E731
    times = {"utils": [], "torch": []}
    for _ in range(3):  # warm-up
        fwd_bwd(ours, q, k, v, mask), fwd_bwd(theirs, q, k, v, mask)
    for _ in range(args.repeats):  # interleaved, so load changes hit both alike
        times["utils"].append(fwd_bwd(ours, q, k, v, mask))
        times["torch"].append(fwd_bwd(theirs, q, k, v, mask))
    med = {name: statistics.median(t) * 1000 for name, t in times.items()}
    renders = []
    for i in range(max(5, args.repeats // 3)):
        start = time.perf_counter()
        fig = plot_attention_explorer(
            "YOUR CAT IS A LOVELY CAT <pad> <pad>", temperature=1 + i % 3, mask_kind="causal+padding", query=i % 8
        )
        fig.canvas.draw()  # rasterise, as the inline backend does
        renders.append(time.perf_counter() - start)
        plt.close(fig)
    print(
        json.dumps(
            {
                "shape_q_k_v": [batch, heads, T, d_k],
                "mask": "causal",
                "threads": 1,
                "repeats": args.repeats,
                "fwd_bwd_ms_median": {k: round(v, 2) for k, v in med.items()},
                "utils_over_torch": round(med["utils"] / med["torch"], 2),
                "explorer_redraw_ms_median": round(statistics.median(renders) * 1000, 1),
                "note": "measured on a shared, loaded 2-core machine",
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
