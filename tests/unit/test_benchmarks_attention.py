"""The attention benchmark's quick mode runs and prints the JSON keys the report relies on (no timing asserts)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "attention.py"


def test_quick_benchmark_prints_both_pairs_side_by_side():
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, check=True, timeout=300, cwd=ROOT
    ).stdout
    result = json.loads(out)
    assert result["quick"] is True and result["goal_ratio"] == 1.1
    for key in (
        "median_ratio_with_weights",
        "worst_ratio_with_weights",
        "median_ratio_no_weights",
        "worst_ratio_no_weights",
        "worst_encoder_ratio_no_weights",
    ):
        assert result[key] > 0, key
    mha_keys = {
        "batch",
        "seq",
        "d_model",
        "num_heads",
        "masked",
        "ours_weights_ms",
        "torch_weights_ms",
        "ours_fused_ms",
        "torch_fused_ms",
        "ratio_with_weights",
        "ratio_no_weights",
        "min_ratio_with_weights",
        "min_ratio_no_weights",
    }
    assert {r["masked"] for r in result["multihead_attention"]} == {False, True}
    for row in result["multihead_attention"]:
        assert mha_keys <= row.keys() and min(row[k] for k in mha_keys if k.endswith("_ms")) > 0
    for row in result["encoder_layer"]:
        assert {
            "ours_weights_ms",
            "ours_fused_ms",
            "torch_ms",
            "ratio_with_weights",
            "ratio_no_weights",
            "d_ff",
        } <= row.keys() and row["ratio_no_weights"] > 0


def test_the_benchmark_imports_the_installed_package_without_path_hacks():
    assert "sys.path" not in SCRIPT.read_text()
