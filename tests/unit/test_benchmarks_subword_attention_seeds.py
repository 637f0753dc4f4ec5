"""benchmarks/subword_attention_seeds.py: its quick mode trains tiny word-level and sub-word models and writes each
run's noun head and exact match; the stored file has three seeds of both; bad options are named. (No accuracy
asserts on the quick runs: the models are too small to translate.)"""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from utils.experiments.subword_attention import TARGETS
from utils.experiments.subwords import ATTENTION_SEED_RUNS, load_seed_runs
from utils.translator import recipe

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "subword_attention_seeds.py"


def test_quick_runs_store_each_runs_noun_head(tmp_path):
    out = tmp_path / "attention.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--seeds", "0", "1", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 4, "one printed line per finished run"
    report = json.loads(out.read_text())
    assert report["quick"] is True and report["model"]["d_model"] == 16
    assert list(report["runs"]) == ["word@10steps", "dropout30@10steps"]
    for runs in report["runs"].values():
        assert sorted(runs) == ["0", "1"]
        for r in runs.values():
            assert 0 <= r["layer"] < 1 and 0 <= r["head"] < 2 and r["count"] > 0
            assert set(r["rates"]) == set(TARGETS) and all(0 <= v <= 1 for v in r["rates"].values())
            assert 0 <= r["unseen_form_exact_match"] <= 1


def test_stored_runs_have_three_seeds_of_word_level_and_the_live_setting():
    stored = load_seed_runs(ATTENTION_SEED_RUNS)
    assert stored["quick"] is False and stored["data_config"] == recipe.DATA
    assert stored["model"] == dataclasses.asdict(recipe.MODEL)
    assert {k: sorted(v) for k, v in stored["runs"].items()} == {
        "word": ["0", "1", "2"],
        "dropout30@500steps": ["0", "1", "2"],
    }
    assert all(r["unseen_form_exact_match"] == 0 for r in stored["runs"]["word"].values())


@pytest.mark.parametrize(
    "args, message",
    [
        (["--seeds", "0", "0"], r"--seeds must be distinct ints >= 0, got [0, 0]"),
        (["--seeds", "-1"], r"--seeds must be distinct ints >= 0, got [-1]"),
        (["--quick"], "--quick needs --out"),
    ],
)
def test_bad_options_are_named(script, capsys, args, message):
    with pytest.raises(SystemExit) as stop:
        script("subword_attention_seeds", folder="benchmarks").parse(args)
    assert stop.value.code == 2 and message in capsys.readouterr().err
