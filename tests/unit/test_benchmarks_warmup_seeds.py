"""benchmarks/warmup_seeds.py: its quick mode trains tiny post-norm stacks and writes the JSON the lesson loads
(setup, seeds, end loss per seed); bad options are named. (No loss asserts: the quick stacks train 12 steps.)"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from utils.experiments import norm_probes

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "warmup_seeds.py"


def run(*args):
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600, cwd=ROOT, check=False
    )


def test_quick_runs_print_and_write_the_same_json(tmp_path):
    out = tmp_path / "runs.json"
    done = run("--quick", "--seeds", "3", "0", "--out", str(out))
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert json.loads(done.stdout) == report
    assert report["quick"] is True and report["seeds"] == [3, 0] and report["last_steps"] == 10
    assert report["setup"] == {**norm_probes.WARMUP_SWEEP, "steps": 12, "num_layers": 2, "d_model": 8}
    assert "warmup_seeds.py --quick --seeds 3 0" in report["command"]
    assert done.stderr.splitlines()[0].startswith("seed 3: loss at the end")
    # the loader reads it, seeds as ints, and the end loss is the mean of the last 10 steps of the same run
    runs = norm_probes.load_warmup_seeds(out)
    losses = norm_probes.train_copy_task(**report["setup"], seed=0)  # (12,)
    assert sorted(runs["end_loss"]) == [0, 3]
    assert runs["end_loss"][0] == pytest.approx(losses[-10:].mean(), abs=1e-4)


def test_stored_runs_have_all_25_seeds_of_the_lessons_setup():
    runs = norm_probes.load_warmup_seeds()
    assert runs["quick"] is False and "warmup_seeds.py" in runs["command"]
    assert runs["setup"] == norm_probes.WARMUP_SWEEP and runs["last_steps"] == 10
    assert runs["seeds"] == list(range(5, 30)) and sorted(runs["end_loss"]) == list(range(5, 30))
    assert all(0 <= loss < 10 for loss in runs["end_loss"].values())


@pytest.mark.parametrize(
    "args, message",
    [
        (["--seeds", "0", "0"], r"--seeds must be distinct ints >= 0, got [0, 0]"),
        (["--seeds", "-2"], r"--seeds must be distinct ints >= 0, got [-2]"),
        (["--jobs", "0"], "--jobs must be an int >= 1, got 0"),
        (["--jobs", "two"], "argument --jobs: invalid int value: 'two'"),
        (["--quick", "--out", str(norm_probes.WARMUP_SEEDS)], "--quick must not overwrite the stored full-size runs"),
    ],
)
def test_bad_options_are_named(script, capsys, args, message):
    with pytest.raises(SystemExit) as stop:
        script("warmup_seeds", folder="benchmarks").parse(args)
    assert stop.value.code == 2 and message in capsys.readouterr().err


def test_the_benchmark_imports_the_installed_package_without_path_hacks():
    assert "sys.path" not in SCRIPT.read_text()
