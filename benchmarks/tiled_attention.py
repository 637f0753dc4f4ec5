"""Peak memory of tiled vs plain attention at T = 8192 (one head, d_k = 16), and time of the tiled Python loop
vs torch.nn.functional.scaled_dot_product_attention (given 4-D (batch, heads, T, d_k) inputs, its fused CPU
kernel), as JSON.

Memory is measured two ways: the bytes of tensors held at once while the call runs (utils.fast_attention's
TensorMemory: every storage an operation creates, until it is freed; it does not see buffers a fused kernel
allocates inside), and the growth of the process's peak resident memory (VmHWM) in a fresh subprocess per
method, which sees everything. Goal: tiled <= 1/10 of plain at T = 8192. The time ratio (tiled / torch) is reported, not a goal:
a Python loop of small operations is far from a fused kernel.

Usage: python benchmarks/tiled_attention.py            # T = 8192
       python benchmarks/tiled_attention.py --quick    # T = 512 (a smoke test)
"""

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

from utils.attention import scaled_dot_product_attention
from utils.fast_attention import peak_tensor_bytes, tiled_attention

METHODS = ("plain", "tiled", "torch")


def run(method, q, k, v, block):
    if method == "plain":
        return scaled_dot_product_attention(q, k, v)[0]
    if method == "tiled":
        return tiled_attention(q, k, v, block_size=block)
    return F.scaled_dot_product_attention(q, k, v)


def rss_growth(method, T, d, block):
    """Peak resident memory growth (bytes) of one call, measured in a fresh python process."""
    script = (
        "import resource, torch\n"
        "import torch.nn.functional as F\n"
        "from utils.attention import scaled_dot_product_attention\n"
        "from utils.fast_attention import tiled_attention\n"
        "torch.set_num_threads(1)\n"
        f"q, k, v = (torch.randn(1, 1, {T}, {d}) for _ in range(3))\n"
        "w = q[:, :, :64]\n"  # load and warm up the code paths on a small input
        "tiled_attention(w, w, w, block_size=32); scaled_dot_product_attention(w, w, w); F.scaled_dot_product_attention(w, w, w)\n"
        "def peak():\n"  # VmHWM: this process's own peak (ru_maxrss may start at the parent's value after fork)
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmHWM:'): return int(line.split()[1])\n"
        "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "before = peak()\n"
        f"method = {method!r}\n"
        "if method == 'plain': out = scaled_dot_product_attention(q, k, v)[0]\n"
        f"elif method == 'tiled': out = tiled_attention(q, k, v, block_size={block})\n"
        "else: out = F.scaled_dot_product_attention(q, k, v)\n"
        "print((peak() - before) * 1024)\n"  # both in KiB on Linux
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T = 512, 2 repeats")
    parser.add_argument("--T", type=int, default=8192)
    parser.add_argument("--d", type=int, default=16)
    parser.add_argument("--block", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    T, repeats = (512, 2) if args.quick else (args.T, args.repeats)
    d, block = args.d, args.block
    torch.set_num_threads(1)
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 1, T, d) for _ in range(3))  # (batch, heads, T, d_k): 4-D, torch's fused path
    rss = {m: rss_growth(m, T, d, block) for m in METHODS}  # first, while this process is still small
    tracked = {m: peak_tensor_bytes(run, m, q, k, v, block) for m in METHODS}
    max_diff = float((run("tiled", q, k, v, block) - run("torch", q, k, v, block)).abs().max())
    times = {m: [] for m in ("tiled", "torch")}
    for _ in range(repeats):
        for m in times:
            start = time.perf_counter()
            run(m, q, k, v, block)
            times[m].append(time.perf_counter() - start)
    med = {m: statistics.median(t) for m, t in times.items()}
    print(
        json.dumps(
            {
                "quick": args.quick,
                "T": T,
                "d_k": d,
                "block_size": block,
                "repeats": repeats,
                "tensor_peak_bytes": tracked,
                "tensor_peak_ratio_tiled_over_plain": round(tracked["tiled"] / tracked["plain"], 5),
                "rss_growth_bytes": rss,
                "rss_ratio_tiled_over_plain": round(rss["tiled"] / rss["plain"], 5) if rss["plain"] > 0 else None,
                "goal_ratio": 0.1,
                "tiled_ms": round(1000 * med["tiled"], 2),
                "torch_ms": round(1000 * med["torch"], 2),
                "time_ratio_tiled_over_torch": round(med["tiled"] / med["torch"], 2),
                "max_abs_difference_tiled_vs_torch": max_diff,
                "threads": torch.get_num_threads(),
                "torch": torch.__version__,
                "machine": platform.machine(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
