"""Lesson 09's benchmarks run at tiny sizes and print the JSON keys their reports rely on (no timing asserts)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_quick(name):
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / name), "--quick"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        cwd=ROOT,
    ).stdout
    return json.loads(out)


def test_kv_cache_benchmark_prints_json():
    result = run_quick("kv_cache.py")
    assert result["quick"] is True and result["goal_speedup"] == 3.0
    assert result["identical_tokens"] is True and result["logits_within_1e-4"] is True
    for key in ("uncached_tokens_per_second", "cached_tokens_per_second", "speedup"):
        assert result[key] > 0


def test_tiled_attention_benchmark_prints_json():
    result = run_quick("tiled_attention.py")
    assert result["quick"] is True and result["T"] == 512 and result["goal_ratio"] == 0.1
    assert set(result["tensor_peak_bytes"]) == {"plain", "tiled", "torch"}
    assert 0 < result["tensor_peak_ratio_tiled_over_plain"] < 1
    assert result["time_ratio_tiled_over_torch"] > 0 and result["max_abs_difference_tiled_vs_torch"] < 1e-4
    assert all(v >= 0 for v in result["rss_growth_bytes"].values())
