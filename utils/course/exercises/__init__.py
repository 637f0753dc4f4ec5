"""Self-checking exercises. A checker prints "✓ name", what is wrong ("✗ name: ..."), or "not attempted yet" and
never raises, so a lesson always runs top to bottom; `hint()` and `solution()` help a stuck learner.

A lesson's exercises live in `utils/course/exercises/lessonNN.py`, each one written as

    @exercise(hint="...", reference=solution_fn, kind="transfer",
              wrong=[mistake("forget the 1/sqrt(d_k)", wrong_fn, says="sqrt(d_k)"), ...])
    def name(answer):
        ...                      # return None when right, or a message saying what is wrong

and used in the notebook as `check.name(my_answer)`, `check.name.hint()`, `check.name.solution()`.
Kinds: "practice" (the lesson's own computation), "transfer" (its idea on a case the lesson did not
show) and "prediction" (a value written down before the demonstration that settles it; `reference`
is then the right value and `explain` says why, printed with the verdict).
"""

import dataclasses
import inspect
import secrets
import textwrap

PASS, FAIL, NOT_ATTEMPTED = "PASS", "FAIL", "NOT ATTEMPTED"
_RESULTS = {}  # "lesson01.pe_formula" -> the last Result, read by the grader


@dataclasses.dataclass
class Result:
    """The outcome of one check: a status and a message for the learner."""

    exercise: str
    status: str
    message: str = ""

    def __str__(self):
        if self.status == PASS:
            return f"✓ {self.exercise}" + (f" ({self.message})" if self.message else "")
        if self.status == NOT_ATTEMPTED:
            return f"{self.exercise}: not attempted yet ({self.message})"
        return f"✗ {self.exercise}: {self.message}"


@dataclasses.dataclass(frozen=True)
class Mistake:
    """A wrong answer learners give, named in their terms; the checker's message for it contains `says`."""

    name: str
    answer: object
    says: str


def mistake(name, answer, says):
    """A named wrong answer for `exercise(wrong=[...])`; the tests check its message contains `says`."""
    return Mistake(name, answer, says)


KINDS = ("practice", "transfer", "prediction")


class NotAttempted(Exception):
    """Raised by a checker that finds the stub untouched."""


class Exercise:
    """A checker with its hint, its reference solution and known wrong answers (for the tests)."""

    def __init__(self, check, hint, reference, wrong=(), kind="practice", explain=None):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        self.check_fn, self.hint_text, self.reference, self.wrong = check, hint, reference, list(wrong)
        self.kind, self.explain = kind, explain
        module = check.__module__.rsplit(".", 1)[-1]
        self.name = f"{module}.{check.__name__}"
        self.__doc__ = check.__doc__

    def evaluate(self, answer):
        """Run the checker on `answer` and return a Result; never raises."""
        short = self.name.split(".")[-1]
        if answer is None or answer is Ellipsis:
            return Result(short, NOT_ATTEMPTED, "fill in the stub above, then run this cell again")
        try:
            if callable(answer) and not callable(self.reference):  # a value asked for, a stub function given
                answer = answer()
            message = self.check_fn(answer)
        except (NotImplementedError, NotAttempted):
            return Result(short, NOT_ATTEMPTED, "replace `raise NotImplementedError` with your code")
        except Exception as err:  # the learner's code failed: say how, never crash the notebook
            return Result(short, FAIL, f"your code raised {type(err).__name__}: {err}")
        return Result(short, PASS) if message is None else Result(short, FAIL, message)

    def __call__(self, answer):
        """Check `answer`, print the verdict, and record it for the grader."""
        result = self.evaluate(answer)
        _RESULTS[self.name] = result
        print(result)
        if self.explain and result.status != NOT_ATTEMPTED:
            print(textwrap.dedent(self.explain).strip())

    def hint(self):
        """Print a hint."""
        print(textwrap.dedent(self.hint_text).strip())

    def solution(self):
        """Print the reference solution's source (a prediction's right value and why)."""
        if callable(self.reference):
            print(textwrap.dedent(inspect.getsource(self.reference)).strip())
        else:
            print(f"{self.reference!r}")
            if self.explain:
                print(textwrap.dedent(self.explain).strip())

    def __repr__(self):
        return f"<exercise {self.name}: call it with your answer; .hint(), .solution()>"


def exercise(hint, reference, wrong=(), kind="practice", explain=None):
    """Decorator: turn a check function (answer -> None or a failure message) into an Exercise."""
    return lambda check: Exercise(check, hint, reference, wrong, kind, explain)


def results():
    """Every exercise checked so far in this kernel: {name: {"status": ..., "message": ...}}."""
    return {name: {"status": r.status, "message": r.message} for name, r in _RESULTS.items()}


def fresh_seed():
    """A seed drawn anew on every call, from the operating system: inputs no answer can know in advance
    (a checker tests its fixed cases first, then cases drawn from this)."""
    return secrets.randbits(62)


def compare_arrays(got, expected, what="value", atol=1e-4):
    """None when `got` matches `expected` (shape and values), else a message naming the first miss."""
    import numpy as np

    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    if got.shape != expected.shape:
        return f"{what} has shape {got.shape}, expected {expected.shape}"
    bad = np.argwhere(~np.isclose(got, expected, atol=atol, rtol=0) | np.isnan(got))
    if len(bad):
        idx = tuple(int(i) for i in bad[0])
        where = (
            ", ".join(f"{n} {i}" for n, i in zip(("row", "column", "index"), idx)) if len(idx) <= 2 else f"index {idx}"
        )
        e, g = float(expected[idx]), float(got[idx])
        digits = next((d for d in range(6, 18) if f"{e:.{d}g}" != f"{g:.{d}g}"), 17)  # enough to tell them apart
        return f"{what} at {where}: expected {e:.{digits}g}, got {g:.{digits}g} (off by {g - e:.1e})"
    return None


def prediction_number(answer):
    """A prediction as a float, or raise TypeError saying a number was expected."""
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        raise TypeError(f"write your prediction as a number, got {answer!r}")
    return float(answer)


def prediction_in_band(answer, reference, accept, misses, what):
    """None when the number `answer` lies in the band `accept` = (lo, hi); else what the first miss whose
    range holds it says. `misses`: (name, a typical answer, (lo, hi) it explains, what to tell the learner)."""
    value = prediction_number(answer)
    lo, hi = accept
    if lo <= value <= hi:
        return None
    for _, _, (a, b), says in misses:
        if a <= value <= b:
            return f"you predicted {value:g}, {what} is {reference:g}: {says}"
    return f"you predicted {value:g}, {what} is {reference:g}: work it out from the text above the cell"


def band_mistakes(misses):
    """The named wrong answers of a `prediction_in_band` exercise, for `exercise(wrong=...)`."""
    return [mistake(name, answer, says) for name, answer, _, says in misses]


def prediction_close_to(answer, right, atol, says, otherwise):
    """None if the number `answer` is within `atol` of `right`; else a message: `says` maps known wrong
    values (matched within `atol`) to why they are wrong, `otherwise` covers the rest."""
    got = prediction_number(answer)
    if abs(got - right) <= atol:
        return None
    for value, why in says.items():
        if abs(got - value) <= atol:
            return f"not {got:g}: " + why
    return f"not {got:g}: " + otherwise


def matching_mistake(got_all, cases, mistakes, same):
    """The named mistake whose answers equal the learner's `got_all` on every case (`same(a, b)`), or None."""
    for m in mistakes:
        try:
            if all(same(got, m.answer(*case)) for got, case in zip(got_all, cases)):
                return m
        except (ArithmeticError, ValueError):  # this mistake cannot even produce an answer here
            continue
    return None


def compare_with_mistakes(got, expected, what="value", mistakes=(), atol=1e-4):
    """Like compare_arrays, but when `got` equals what a named mistake gives, say so in those words.

    `mistakes` maps a mistake's name ("forget the 1/sqrt(d_k)") to the value that mistake produces."""
    problem = compare_arrays(got, expected, what, atol)
    if problem is None:
        return None
    for name, value in dict(mistakes).items():
        if compare_arrays(got, value, what, atol) is None:
            return f"{what} is what you get if you {name}"
    return problem
