"""benchmarks/bad_inputs.py: every bad input it tries on the model helpers gets a clear error (no silent
answer, no memory blow-up), and its classifier tells the kinds apart."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bad_inputs.py"
_spec = importlib.util.spec_from_file_location("bad_inputs", SCRIPT)
bad_inputs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bad_inputs)

# Kept as it is because lesson 08 prints it: it says "sequence length 6 exceeds ... max_len=4", not "x".
NAMES_THE_QUANTITY_NOT_THE_ARGUMENT = {("LearnedPositionalEncoding", "x too long")}


def test_every_bad_input_gets_a_clear_error():
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--list"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        cwd=ROOT,
    ).stdout.splitlines()
    counts = json.loads(out[-1])
    assert counts["tried"] >= 190 and counts["silent"] == 0 and counts["memory"] == 0
    unclear = [line for line in out[:-1] if not line.startswith("clear")]
    assert len(unclear) == counts["obscure"] == len(NAMES_THE_QUANTITY_NOT_THE_ARGUMENT), unclear
    assert "LearnedPositionalEncoding(x too long)" in unclear[0]


def test_the_script_imports_the_installed_package_without_path_hacks():
    assert "sys.path" not in SCRIPT.read_text()


def _silent():
    return None


def _vague():
    raise ValueError("something is off")


def _named():
    raise TypeError("n must be an int, got str 'a'")


def _keyerror():
    raise KeyError("n")


def _memory():
    raise MemoryError


@pytest.mark.parametrize(
    "thunk, kind",
    [(_silent, "silent"), (_vague, "obscure"), (_named, "clear"), (_keyerror, "obscure"), (_memory, "memory")],
)
def test_classify(thunk, kind):
    assert bad_inputs.classify(thunk, ["n"])[0] == kind


def test_a_name_counts_only_as_a_whole_word():
    def unpack():
        raise ValueError("not enough values to unpack (expected 3, got 2)")

    assert bad_inputs.classify(unpack, ["x"])[0] == "obscure"
