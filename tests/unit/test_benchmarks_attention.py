"""The attention benchmark's quick mode runs and prints the JSON keys the report relies on (no timing asserts)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_benchmark_prints_the_expected_json():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "attention.py"), "--quick"],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    result = json.loads(out)
    assert result["quick"] is True and result["goal_ratio"] == 1.3
    for key in ("worst_ratio_vs_need_weights", "worst_ratio_vs_no_weights", "worst_encoder_ratio"):
        assert result[key] > 0
    mha_keys = {"batch", "seq", "d_model", "num_heads", "masked", "ours_ms", "torch_need_weights_ms",
                "torch_no_weights_ms", "ratio_vs_need_weights", "ratio_vs_no_weights", "min_ratio_vs_need_weights",
                "min_ratio_vs_no_weights"}
    assert {r["masked"] for r in result["multihead_attention"]} == {False, True}
    for row in result["multihead_attention"]:
        assert mha_keys <= row.keys() and row["ours_ms"] > 0
    for row in result["encoder_layer"]:
        assert {"ours_ms", "torch_ms", "ratio", "min_ratio", "d_ff"} <= row.keys() and row["ratio"] > 0
