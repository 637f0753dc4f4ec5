"""Greedy decoding of forced 64-token outputs with and without lesson 09's key-value cache, in one run: tokens
per second for each, the speed-up, and whether the two give identical tokens (and logits within 1e-4).

The model has lesson 07's sizes (recipe.MODEL, positional table widened to 80 positions so that 64 steps fit)
and random weights: the speed and the equality do not depend on training. Runs are interleaved (uncached,
cached, uncached, ...) so that load on a shared computer hits both alike. Goal: cached >= 3x faster at 64 tokens.

Usage: python benchmarks/kv_cache.py            # the full run
       python benchmarks/kv_cache.py --quick    # tiny sizes (a smoke test)
"""

import argparse
import dataclasses
import json
import os
import platform
import statistics
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

from utils.fast_attention import greedy_steps  # noqa: E402
from utils.translator import recipe  # noqa: E402
from utils.translator.model import Seq2SeqTransformer  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, 2 repeats")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    tokens, batch, repeats = (8, 4, 2) if args.quick else (args.tokens, args.batch, args.repeats)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = dataclasses.replace(recipe.MODEL, src_vocab_size=60, tgt_vocab_size=60, max_len=max(80, tokens + 1))
    model = Seq2SeqTransformer(config).eval()
    src = torch.randint(4, 60, (batch, 12), generator=torch.Generator().manual_seed(1))  # (batch, S)
    ids, logits = greedy_steps(model, src, 1, tokens, use_cache=False)
    ids_c, logits_c = greedy_steps(model, src, 1, tokens, use_cache=True)
    times = {"uncached": [], "cached": []}
    for _ in range(repeats):
        for mode in times:
            start = time.perf_counter()
            greedy_steps(model, src, 1, tokens, use_cache=(mode == "cached"))
            times[mode].append(time.perf_counter() - start)
    med = {mode: statistics.median(t) for mode, t in times.items()}
    print(
        json.dumps(
            {
                "quick": args.quick,
                "tokens": tokens,
                "batch": batch,
                "repeats": repeats,
                "model": {
                    "d_model": model.d_model,
                    "num_heads": model.decoder.layers[0].self_attn.num_heads,
                    "num_layers": len(model.decoder.layers),
                },
                "uncached_tokens_per_second": round(batch * tokens / med["uncached"], 1),
                "cached_tokens_per_second": round(batch * tokens / med["cached"], 1),
                "uncached_ms_per_step": round(1000 * med["uncached"] / tokens, 3),
                "cached_ms_per_step": round(1000 * med["cached"] / tokens, 3),
                "speedup": round(med["uncached"] / med["cached"], 2),
                "goal_speedup": 3.0,
                "identical_tokens": bool(torch.equal(ids, ids_c)),
                "max_logit_difference": float((logits - logits_c).abs().max()),
                "logits_within_1e-4": bool(torch.allclose(logits, logits_c, atol=1e-4)),
                "threads": torch.get_num_threads(),
                "torch": torch.__version__,
                "machine": platform.machine(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
