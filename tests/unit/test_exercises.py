"""Every exercise: its reference solution passes, each named wrong answer fails with its own message,
a stub is 'not attempted'; every lesson has 3-5 exercises, 2 or more of them transfer, 1 or more a prediction."""

import functools
import importlib
import json
import operator
import pkgutil

import pytest

import utils.course.exercises as ex
from utils.course import grade_child as wire

MODULES = [
    importlib.import_module(f"utils.course.exercises.{m.name}")
    for m in pkgutil.iter_modules(ex.__path__)
    if m.name.startswith("lesson")
]
EXERCISES = [e for m in MODULES for e in vars(m).values() if isinstance(e, ex.Exercise)]
IDS = [e.name for e in EXERCISES]


def stub(*args, **kwargs):
    raise NotImplementedError


def test_exercises_exist():
    assert EXERCISES, "no exercise found in utils/course/exercises/lesson*.py"


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_reference_solution_passes(exercise):
    result = exercise.evaluate(exercise.reference)
    assert result.status == ex.PASS, str(result)


def over_the_wire(value, trusted=False):
    """`value` as it arrives through the grader's pipe to or from a child (JSON; only plain data from a child)."""
    return wire.decode(json.loads(json.dumps(wire.encode(value, trusted))), trusted)


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_reference_solution_passes_as_the_grader_receives_it(exercise):
    """The grader calls an answer in a child process: the arguments travel to it, the result back as plain data."""
    ref = exercise.reference
    if callable(ref):

        def answer(*args, **kwargs):
            args, kwargs = over_the_wire(list(args), trusted=True), over_the_wire(kwargs, trusted=True)
            return over_the_wire(ref(*args, **kwargs))

    else:
        answer = over_the_wire(ref)
    result = exercise.evaluate(answer)
    assert result.status == ex.PASS, str(result)


@pytest.mark.parametrize("module", MODULES, ids=[m.__name__.rsplit(".", 1)[-1] for m in MODULES])
def test_each_lesson_has_four_exercises_two_transfer_and_predictions(module):
    mine = [e for e in vars(module).values() if isinstance(e, ex.Exercise)]
    kinds = [e.kind for e in mine]
    closing = len(mine) - kinds.count("prediction")  # the exercises at the end of the lesson
    assert len(mine) >= 4, f"{module.__name__} has {len(mine)} exercises, expected at least 4"
    assert closing <= 5, f"{module.__name__} ends with {closing} exercises besides its predictions, expected at most 5"
    assert kinds.count("transfer") >= 2, f"{module.__name__}: {kinds.count('transfer')} transfer exercises, need 2"
    assert "prediction" in kinds, f"{module.__name__} has no prediction exercise"


@pytest.mark.parametrize("exercise", EXERCISES, ids=IDS)
def test_named_wrong_answers_are_caught_in_the_learners_terms(exercise):
    mistakes = exercise.wrong
    assert len(mistakes) >= 3, f"{exercise.name} names {len(mistakes)} wrong answers, expected 3 or more"
    assert all(isinstance(m, ex.Mistake) for m in mistakes), f"{exercise.name}: use mistake(name, answer, says)"
    assert len({m.name for m in mistakes}) == len(mistakes), f"{exercise.name}: two mistakes share a name"
    messages = set()
    for m in mistakes:
        result = exercise.evaluate(m.answer)
        assert result.status == ex.FAIL, f"{exercise.name} accepted the mistake '{m.name}'"
        assert m.says.lower() in result.message.lower(), (
            f"{exercise.name}: for '{m.name}' the message should say '{m.says}', it says: {result.message}"
        )
        assert result.message.strip().lower() not in {"mismatch", "wrong", "incorrect"}
        messages.add(result.message)
    assert len(messages) == len(mistakes), f"{exercise.name}: two different mistakes get the same message"


@pytest.mark.parametrize(
    "exercise",
    [e for e in EXERCISES if e.kind == "prediction"],
    ids=[e.name for e in EXERCISES if e.kind == "prediction"],
)
def test_prediction_explains_why(exercise, capsys):
    assert exercise.explain, f"{exercise.name} is a prediction without an explanation"
    exercise(exercise.reference)
    out = capsys.readouterr().out
    assert out.startswith("✓ ") and exercise.explain.strip().splitlines()[0].strip() in out


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


def test_prediction_close_to_accepts_within_its_tolerance_and_names_known_mistakes():
    says = {0.25: "the rest renormalise"}
    assert ex.prediction_close_to(0.334, 1 / 3, 0.01, says, "count the keys") is None
    assert ex.prediction_close_to(0.251, 1 / 3, 0.01, says, "count the keys") == "not 0.251: the rest renormalise"
    assert ex.prediction_close_to(0.9, 1 / 3, 0.01, says, "count the keys") == "not 0.9: count the keys"
    with pytest.raises(TypeError, match="write your prediction as a number, got 'a third'"):
        ex.prediction_close_to("a third", 1 / 3, 0.01, says, "count the keys")


def _reachable_offsets(kernel, growth, layers, below=None):
    """Every offset t - s (under `below`, if given) such that output t of `layers` causal layers (dilation
    growth**l) reads input s. Offsets only grow layer by layer, so dropping those >= `below` early loses none."""
    reach = 1  # bit o set: offset o is reachable
    keep = -1 if below is None else (1 << below) - 1
    for layer in range(layers):
        reach = functools.reduce(operator.or_, (reach << j * growth**layer for j in range(kernel))) & keep
    return {o for o in range(reach.bit_length()) if reach >> o & 1}


def test_dilated_layers_draws_only_growths_within_kernel_where_the_reach_has_no_gaps(monkeypatch):
    from utils.course.exercises import lesson00

    # Outside the domain the reference is wrong: kernel 2, growth 3 reaches offsets 0, 1, 3, 4, ... never 2.
    assert 2 not in _reachable_offsets(2, 3, 5) and lesson00._dilated_layers_solution(3, 2, 3) == 2
    seen = []

    def recording_reference(n, kernel, growth):
        seen.append((n, kernel, growth))
        return lesson00._dilated_layers_solution(n, kernel, growth)

    for seed in range(300):
        monkeypatch.setattr(lesson00, "fresh_seed", lambda seed=seed: seed)
        assert lesson00.dilated_layers.evaluate(recording_reference).status == ex.PASS
    assert all(1 <= growth <= kernel for _, kernel, growth in seen)
    assert any(growth == kernel > 2 for _, kernel, growth in seen)  # the edge of the domain is drawn
    for n, kernel, growth in set(seen):  # within it, the reference is the exact fewest layers
        layers = lesson00._dilated_layers_solution(n, kernel, growth)
        assert n - 1 in _reachable_offsets(kernel, growth, layers, below=n), (n, kernel, growth)
        assert layers == 0 or n - 1 not in _reachable_offsets(kernel, growth, layers - 1, below=n), (n, kernel, growth)


def test_lesson05_split_in_proj_reference_gives_each_heads_queries_of_a_fresh_torch_layer():
    import torch
    from torch import nn

    from utils.course.exercises import lesson05
    from utils.multihead import split_heads

    torch.manual_seed(0)
    mha = nn.MultiheadAttention(12, 3, batch_first=True)
    x = torch.randn(2, 5, 12)  # (batch, T, d_model)
    W_Q, _, _ = lesson05._split_in_proj(mha.in_proj_weight.detach(), 3)  # (num_heads, d_model, d_k)
    W_q_linear, b_q = mha.in_proj_weight.detach()[:12], mha.in_proj_bias.detach()[:12]
    by_head = x[:, None] @ W_Q + b_q.view(3, 1, 4)  # (batch, num_heads, T, d_k)
    assert torch.allclose(by_head, split_heads(x @ W_q_linear.T + b_q, 3), atol=1e-6)


def test_lesson05_head_contributions_reference_adds_up_to_a_real_forward_pass():
    import torch

    from utils.course.exercises import lesson05
    from utils.multihead import MultiHeadAttention, split_heads

    torch.manual_seed(0)
    mha = MultiHeadAttention(12, 3).eval()
    x = torch.randn(2, 5, 12)  # (batch, T, d_model)
    with torch.no_grad():
        out, weights = mha(x, x, x)  # (batch, T, d_model), (batch, num_heads, T, T)
        heads = weights @ split_heads(mha.W_v(x), 3)  # (batch, num_heads, T, d_k)
        terms = lesson05._head_contributions(heads, mha.W_o.weight.T)  # (batch, num_heads, T, d_model)
    assert torch.allclose(terms.sum(1) + mha.W_o.bias, out, atol=1e-5)
    assert not torch.allclose(terms[:, 0], terms[:, 1], atol=1e-3)  # the heads write different terms


def test_lesson04_masked_softmax_feedback_on_a_large_fill_agrees_with_the_weights_it_prints():
    import re

    import torch

    from utils.course.exercises import lesson04

    def printed_row(message):
        return [float(v) for v in re.search(r"its weights are \[([^\]]*)\]", message).group(1).split(", ")]

    replaced = lesson04.masked_softmax.evaluate(lambda s, m: torch.softmax(s.masked_fill(~m, -1e9), dim=-1))
    added = lesson04.masked_softmax.evaluate(lambda s, m: torch.softmax(s + (~m).to(s.dtype) * -1e9, dim=-1))
    assert replaced.status == added.status == ex.FAIL
    row = printed_row(replaced.message)
    assert "equally likely" in replaced.message and max(row) - min(row) < 1e-4, replaced.message
    row = printed_row(added.message)  # float64 scores: adding -1e9 keeps them apart, so the row is not uniform
    assert "equally likely" not in added.message and max(row) - min(row) > 1e-2, added.message
    assert "softmax of the unmasked scores" in added.message


def test_lesson04_packed_causal_mask_always_tries_one_and_four_sentences():
    from utils.course.exercises import lesson04

    def wrong_for(count):  # right except for `count` sentences, where it drops the causal part
        return lambda lengths: (
            lesson04._packed_blocks_only(lengths) if len(lengths) == count else lesson04._packed(lengths)
        )

    assert lesson04.packed_causal_mask.evaluate(lesson04._packed).status == ex.PASS
    for count in (1, 4):
        for _ in range(5):  # the fixed cases, not the random draws, must catch it every time
            assert lesson04.packed_causal_mask.evaluate(wrong_for(count)).status == ex.FAIL, count


def test_lesson10_unseen_bpe_messages_agree_with_the_stored_runs():
    from utils.course.exercises import lesson10
    from utils.experiments.subwords import load_seed_runs

    groups = load_seed_runs()["diagnosis"]["bpe100"]["groups"]
    cut_at_stem, not_all = groups["all siblings split at the stem"], groups["not all siblings split at the stem"]
    # "a held-out form whose siblings are all cut right after the stem (rub o</w>) is often written"
    assert "ruba" in cut_at_stem["forms"] and cut_at_stem["rate"] > lesson10.UNSEEN_BPE100 + 0.15
    # "... not all cut right after the stem (fe la</w>, nig ra</w>) is often not written"
    assert {"felo", "nigro"} <= set(not_all["forms"]) and not_all["rate"] < 0.5


def test_lesson03_cold_limit_catches_ties_that_only_count_copies_of_the_best_key():
    import torch

    from utils.course.exercises import lesson03

    copies_only = lesson03._copies_only  # the tied keys found by equality with the arg max, not by their score
    q, K, V = (
        torch.tensor([1.0, 0.0]),
        torch.tensor([[1.0, 0.0], [1.0, 3.0], [0.0, 1.0]]),
        torch.tensor([[0.0], [10.0], [5.0]]),
    )
    assert copies_only(q, K, V).item() == 0.0 and lesson03._cold_limit(q, K, V).item() == 5.0  # the lesson's case
    for _ in range(3):  # fresh inputs on every check
        result = lesson03.cold_limit.evaluate(copies_only)
        assert result.status == ex.FAIL and "copies" in result.message, str(result)


def test_lesson08_interpolated_positions_accepts_a_float32_answer_and_shows_a_small_miss():
    import torch

    from utils.course.exercises import lesson08

    def float32(T, train_len):  # torch's default dtype: each position rounded to float32
        return torch.arange(T) * train_len / T if T > train_len else torch.arange(T).float()

    for _ in range(3):  # fresh drawn cases on every check
        result = lesson08.interpolated_positions.evaluate(float32)
        assert result.status == ex.PASS, str(result)

    def off_by_a_little(T, train_len):  # a real miss, too small for six digits to show
        return float32(T, train_len).double() + 1e-3

    result = lesson08.interpolated_positions.evaluate(off_by_a_little)
    assert result.status == ex.FAIL and "off by 1.0e-03" in result.message, str(result)
    expected, got = result.message.split("expected ")[1].split(" (off by")[0].split(", got ")
    assert expected != got, result.message  # the two printed numbers differ


def test_lesson08_least_accurate_seen_explanation_matches_the_stored_runs():
    """The explanation of predict_least_accurate_seen: the offsets copy head loses a similar share of its weight
    on t-2 at positions 2..15 (length 16 -> 48) as RoPE's, more in some seeds, and stays more accurate at 0..15."""
    from utils.experiments.extrapolation import load_seed_runs

    copy = load_seed_runs()["runs"]["copy"]
    seeds = sorted(copy["rope"])
    assert len(seeds) >= 5 and seeds == sorted(copy["sinusoidal+offsets"])

    def drop(name, s):
        h = copy[name][s]["copy_head"]
        return h["at_train_len"] - h["seen"]

    rope = [drop("rope", s) for s in seeds]
    offsets = [drop("sinusoidal+offsets", s) for s in seeds]
    assert abs(sum(rope) / len(rope) - sum(offsets) / len(offsets)) < 0.1, (rope, offsets)  # "a similar share"
    assert any(o > r for r, o in zip(rope, offsets)), (rope, offsets)  # "in some stored seeds it loses more"
    for s in seeds:  # "yet that model stays accurate at 0..15", RoPE the least accurate there
        assert copy["sinusoidal+offsets"][s]["by_position"]["0..15"] > copy["rope"][s]["by_position"]["0..15"] + 0.05
