"""Every exercise: its reference solution passes, each known wrong answer fails, a stub is 'not attempted'."""

import importlib
import pkgutil

import pytest

import utils.exercises as ex

MODULES = [importlib.import_module(f"utils.exercises.{m.name}")
           for m in pkgutil.iter_modules(ex.__path__) if m.name.startswith("lesson")]
EXERCISES = [e for m in MODULES for e in vars(m).values() if isinstance(e, ex.Exercise)]
IDS = [e.name for e in EXERCISES]


def stub(*args, **kwargs):
    raise NotImplementedError


def test_exercises_exist():
    assert EXERCISES, "no exercise found in utils/exercises/lesson*.py"


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_reference_solution_passes(exercise):
    result = exercise.evaluate(exercise.reference)
    assert result.status == ex.PASS, str(result)


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_wrong_answers_are_caught(exercise):
    assert exercise.wrong, f"{exercise.name} lists no wrong answer to test its checker with"
    for wrong in exercise.wrong:
        result = exercise.evaluate(wrong)
        assert result.status == ex.FAIL and result.message, f"{exercise.name} accepted a wrong answer"


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_untouched_stub_is_not_attempted_and_never_raises(exercise, capsys):
    assert exercise.evaluate(stub).status == ex.NOT_ATTEMPTED
    assert exercise.evaluate(None).status == ex.NOT_ATTEMPTED
    exercise(stub)  # prints, records, does not raise
    assert "not attempted yet" in capsys.readouterr().out
    assert ex.results()[exercise.name]["status"] == ex.NOT_ATTEMPTED


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_hint_and_solution_print_something(exercise, capsys):
    exercise.hint()
    exercise.solution()
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) >= 2


def test_learner_code_that_crashes_is_reported_not_raised():
    def crashes(*args, **kwargs):
        raise ZeroDivisionError("boom")

    exercise = EXERCISES[0]
    result = exercise.evaluate(crashes)
    assert result.status == ex.FAIL and "ZeroDivisionError: boom" in result.message
