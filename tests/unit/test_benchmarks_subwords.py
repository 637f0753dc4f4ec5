"""benchmarks/subwords.py: its quick mode trains both models and prints the JSON keys the issue asks for, side by
side (no accuracy or timing asserts: the quick models are too small to translate); bad options are named."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "subwords.py"
PER_SEED = {
    "in_distribution_exact_match": float,
    "unseen_form_exact_match": float,
    "token_accuracy": float,
    "heldout_forms_written": str,
    "heldout_forms_written_by_form": dict,
    "train_seconds": float,
    "final_loss": float,
}


def run(*args):
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300, cwd=ROOT, check=False
    )


def test_quick_benchmark_prints_word_and_subword_measures_side_by_side():
    out = run("--quick", "--seeds", "0", "1")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["quick"] is True and result["seeds"] == [0, 1] and result["merges"] == 20
    for name in ("word", "subword"):
        side = result[name]
        for key, kind in PER_SEED.items():
            assert len(side[key]) == 2 and all(isinstance(x, kind) for x in side[key]), (name, key)
        for key in ("in_distribution_exact_match", "unseen_form_exact_match", "token_accuracy"):
            assert all(0 <= x <= 1 for x in side[key]), (name, key)
        assert all(x > 0 for x in side["train_seconds"])
        assert isinstance(side["mean_target_length"], float) and side["tgt_vocab_size"] > 4
        forms = side["heldout_form_tokens"]
        assert len(forms) == 9 and all(len(c) == len(forms) for c in side["heldout_forms_written_by_form"])
    assert all(form == tokens for form, tokens in result["word"]["heldout_form_tokens"].items())
    assert all(" " in tokens for tokens in result["subword"]["heldout_form_tokens"].values()), "a form is one token"
    # sub-words: a smaller vocabulary, longer targets (both from the data, not the training)
    assert result["subword"]["tgt_vocab_size"] < result["word"]["tgt_vocab_size"]
    assert result["subword"]["mean_target_length"] > result["word"]["mean_target_length"] > 4
    assert result["train"]["steps"] == 20 and result["model"]["d_model"] == 16


@pytest.mark.parametrize(
    "args, message",
    [
        (["--merges", "-1"], "--merges must be an int >= 0, got -1"),
        (["--steps", "0"], "--steps must be an int >= 1, got 0"),
        (["--seeds", "0", "0"], r"--seeds must be distinct ints >= 0, got [0, 0]"),
        (["--seeds", "-2"], r"--seeds must be distinct ints >= 0, got [-2]"),
        (["--merges", "many"], "argument --merges: invalid int value: 'many'"),
    ],
)
def test_bad_options_are_named(script, capsys, args, message):
    with pytest.raises(SystemExit) as stop:
        script("subwords", folder="benchmarks").parse(["--quick", *args])
    assert stop.value.code == 2 and message in capsys.readouterr().err


def test_the_benchmark_imports_the_installed_package_without_path_hacks():
    assert "sys.path" not in SCRIPT.read_text()
