"""benchmarks/subwords_seeds.py: its quick mode trains tiny models in a few settings and writes the JSON the lesson
loads (runs, data, diagnosis), one run at a time, skipping runs already stored and extending the file; bad options
are named. (No accuracy asserts: the quick models are too small to translate.)"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "subwords_seeds.py"


def run(*args):
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600, cwd=ROOT, check=False
    )


def test_quick_runs_are_written_one_by_one_and_extended(tmp_path):
    out = tmp_path / "runs.json"
    done = run("--quick", "--settings", "word", "dropout30", "--seeds", "0", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 4, "one printed line per finished run"
    report = json.loads(out.read_text())
    assert report["quick"] is True and report["train"]["steps"] == 10 and report["model"]["d_model"] == 16
    assert list(report["settings"]) == ["word", "dropout30"]
    assert report["settings"]["dropout30"] == {"merges": 30, "dropout": 0.1}
    for name in ("word", "dropout30"):
        assert sorted(report["runs"][name]) == ["0", "1"]
        for r in report["runs"][name].values():
            for key in ("in_distribution_exact_match", "unseen_form_exact_match", "token_accuracy"):
                assert 0 <= r[key] <= 1
            assert r["train_seconds"] > 0 and r["torch_threads"] == 1
            assert len(r["heldout_forms_written_by_form"]) == len(r["heldout_form_counts"]) == 9
        forms = report["diagnosis"][name]["forms"]
        assert len(forms) == 9 and all(len(f["per_seed"]) == 2 for f in forms.values())
    assert report["data"]["word"]["max_len"] == 64
    assert report["data"]["dropout30"]["mean_target_length"] > report["data"]["word"]["mean_target_length"]
    assert all(c["siblings_carry_ending"] is None for c in report["data"]["word"]["form_cuts"].values())
    assert all(0 <= c["siblings_carry_ending"] <= 3 for c in report["data"]["dropout30"]["form_cuts"].values())
    # a second call adds a seed and a setting, and trains only what is missing
    again = run("--quick", "--settings", "word", "characters", "--add-seeds", "1", "2", "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert [json.loads(line)["run"] for line in again.stdout.splitlines()] == ["word", "characters", "characters"]
    report2 = json.loads(out.read_text())
    assert sorted(report2["runs"]["word"]) == ["0", "1", "2"] and sorted(report2["runs"]["characters"]) == ["1", "2"]
    assert report2["runs"]["dropout30"] == report["runs"]["dropout30"]
    # other steps: stored under their own key
    short = run("--quick", "--settings", "word", "--seeds", "0", "--steps", "3", "--out", str(out))
    assert short.returncode == 0, short.stderr
    assert list(json.loads(out.read_text())["runs"]["word@3steps"]) == ["0"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--settings", "words"], "--settings must be distinct names from"),
        (["--settings", "word", "word"], "--settings must be distinct names from"),
        (["--steps", "0"], "--steps must be an int >= 1, got 0"),
        (["--seeds", "0", "0"], r"--seeds must be distinct ints >= 0, got [0, 0]"),
        (["--seeds", "-2"], r"--seeds must be distinct ints >= 0, got [-2]"),
        (["--steps", "many"], "argument --steps: invalid int value: 'many'"),
    ],
)
def test_bad_options_are_named(script, capsys, args, message):
    with pytest.raises(SystemExit) as stop:
        script("subwords_seeds", folder="benchmarks").parse(["--out", "x.json", *args])
    assert stop.value.code == 2 and message in capsys.readouterr().err


def test_quick_needs_an_out_file(script, capsys):
    with pytest.raises(SystemExit):
        script("subwords_seeds", folder="benchmarks").parse(["--quick"])
    assert "--quick needs --out" in capsys.readouterr().err


def test_the_benchmark_imports_the_installed_package_without_path_hacks():
    assert "sys.path" not in SCRIPT.read_text()
