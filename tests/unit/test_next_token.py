"""utils.experiments.next_token: shift_right, the one-layer causal model, and the copy it learns without the shift."""

import math

import pytest
import torch

from utils.experiments.next_token import CausalAttentionLM, chance, fit_next_token, shift_right
from utils.masks import causal_mask


def test_shift_right_puts_bos_first_and_drops_the_last_target():
    y = torch.tensor([[5, 6, 7, 8], [1, 2, 3, 4]])  # (batch, T)
    assert shift_right(y, bos_id=9).tolist() == [[9, 5, 6, 7], [9, 1, 2, 3]]
    assert shift_right(torch.tensor([3]), bos_id=0).tolist() == [0]  # 1-D, T = 1
    assert shift_right(torch.arange(4, dtype=torch.int32), bos_id=-1).dtype == torch.int32


@pytest.mark.parametrize("T", [1, 2, 5, 9])
def test_shifted_position_i_sees_only_earlier_targets(T):
    holds = shift_right(torch.arange(T), bos_id=-1)  # (T,) which target each input position holds
    mask = causal_mask(T)
    for i in range(T):
        assert (holds[mask[i]] < i).all(), f"position {i} sees a target at or after its own"
    unshifted = torch.arange(T)
    assert all((unshifted[mask[i]] == i).any() for i in range(T)), "unshifted: each sees its own answer"


@pytest.mark.parametrize(
    "targets, bos_id, error, message",
    [
        ([1, 2], 0, TypeError, "targets must be a torch.Tensor, got list"),
        (torch.tensor(3), 0, ValueError, "targets must have at least 1 dimensions, got shape ()"),
        (torch.tensor([1.0, 2.0]), 0, ValueError, "targets must be an integer tensor, got dtype torch.float32"),
        (torch.tensor([True]), 0, ValueError, "targets must be an integer tensor, got dtype torch.bool"),
        (torch.tensor([1, 2]), 0.5, TypeError, "bos_id must be an int, got float 0.5"),
        (torch.tensor([1, 2]), True, TypeError, "bos_id must be an int, got bool True"),
    ],
)
def test_shift_right_bad_input(targets, bos_id, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        shift_right(targets, bos_id)


def test_model_is_causal_the_future_cannot_change_the_past():
    torch.manual_seed(0)
    model = CausalAttentionLM(vocab_size=5, d_model=8, max_len=6)
    tokens = torch.randint(0, 6, (3, 6))  # (batch, T), id 5 is <bos>
    logits = model(tokens)  # (batch, T, vocab)
    assert logits.shape == (3, 6, 5) and model.bos_id == 5
    for t in range(5):
        changed = tokens.clone()
        changed[:, t + 1 :] = (changed[:, t + 1 :] + 1) % 6
        assert torch.allclose(model(changed)[:, : t + 1], logits[:, : t + 1], atol=1e-6)


def test_strict_model_masks_the_diagonal_yet_reads_its_own_token_through_the_query():
    torch.manual_seed(0)
    model = CausalAttentionLM(vocab_size=5, d_model=8, max_len=6, strict=True)
    tokens = torch.randint(0, 5, (3, 6))  # (batch, T)
    logits = model(tokens)  # (batch, T, vocab)
    assert torch.allclose(logits[:, 0], model.W_out.bias.expand(3, 5))  # position 0 attends to nothing: zeros in
    for t in range(6):
        changed = tokens.clone()
        changed[:, t] = (changed[:, t] + 1) % 5  # only token t
        moved = (model(changed) - logits).abs().amax(dim=(0, 2)) > 1e-6  # (T,)
        assert moved[:t].tolist() == [False] * t  # the past is untouched
        assert moved[t] == (t > 1)  # output t moves through its query once it has two keys to weigh (t >= 2)


def test_strict_mask_on_unshifted_input_beats_chance_shifted_does_not():
    acc_chance, ce_chance = chance(8)
    leak_acc, leak_ce = fit_next_token(shift=False, seed=0, steps=150, strict=True)
    honest_acc, _ = fit_next_token(shift=True, seed=0, steps=150, strict=True)
    assert leak_acc > acc_chance + 0.1 and leak_ce < ce_chance - 0.2, (leak_acc, leak_ce)
    assert abs(honest_acc - acc_chance) < 0.03, honest_acc


def test_per_position_accuracy_averages_to_the_accuracy_and_the_strict_leak_starts_at_position_2():
    acc_chance, _ = chance(8)
    accuracy, cross_entropy, by_position = fit_next_token(
        shift=False, seed=0, steps=150, strict=True, per_position=True
    )
    assert (accuracy, cross_entropy) == fit_next_token(shift=False, seed=0, steps=150, strict=True)
    assert len(by_position) == 6 and abs(sum(by_position) / 6 - accuracy) < 1e-12
    assert all(abs(a - acc_chance) < 0.03 for a in by_position[:2]), by_position  # no key, or one key: no choice
    assert all(a > acc_chance + 0.05 for a in by_position[2:]), by_position  # the query picks among >= 2 keys


def test_model_bad_input():
    model = CausalAttentionLM(vocab_size=5, d_model=8, max_len=4)
    with pytest.raises(ValueError, match="tokens has 5 positions, more than max_len=4"):
        model(torch.zeros(1, 5, dtype=torch.long))
    with pytest.raises(TypeError, match="tokens must be a torch.Tensor"):
        model([[1, 2]])
    with pytest.raises(ValueError, match="tokens must have at least 2 dimensions"):
        model(torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="vocab_size must be a positive int, got 0"):
        CausalAttentionLM(vocab_size=0)
    with pytest.raises(TypeError, match=r"strict must be a bool \(True or False\), got int 1"):
        CausalAttentionLM(vocab_size=5, strict=1)


def test_without_the_shift_the_model_copies_with_it_it_is_at_chance():
    acc_chance, ce_chance = chance(8)
    assert acc_chance == 1 / 8 and math.isclose(ce_chance, math.log(8))
    for seed in (0, 1):
        copy_acc, copy_ce = fit_next_token(shift=False, seed=seed, steps=150)
        honest_acc, honest_ce = fit_next_token(shift=True, seed=seed, steps=150)
        assert copy_acc > 0.95 and copy_ce < 0.2, (seed, copy_acc, copy_ce)
        assert abs(honest_acc - acc_chance) < 0.03 and honest_ce > ce_chance - 0.02, (seed, honest_acc, honest_ce)


def test_fit_next_token_is_reproducible():
    assert fit_next_token(True, seed=3, steps=5) == fit_next_token(True, seed=3, steps=5)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(shift=1, seed=0), TypeError, r"shift must be a bool \(True or False\), got int 1"),
        (dict(shift=True, seed=-1), ValueError, "seed must be an int in"),
        (dict(shift=True, seed=0.5), TypeError, "seed must be an int, got float 0.5"),
        (dict(shift=True, seed=0, steps=0), ValueError, "steps must be a positive int, got 0"),
        (dict(shift=True, seed=0, vocab_size=2.0), TypeError, "vocab_size must be an int, got float 2.0"),
        (dict(shift=True, seed=0, lr=0), ValueError, "lr must be a finite number > 0, got 0"),
        (dict(shift=True, seed=0, strict="no"), TypeError, r"strict must be a bool \(True or False\), got str 'no'"),
        (
            dict(shift=True, seed=0, per_position=1),
            TypeError,
            r"per_position must be a bool \(True or False\), got int 1",
        ),
    ],
)
def test_fit_next_token_bad_input(kwargs, error, message):
    with pytest.raises(error, match=message):
        fit_next_token(**kwargs)


def test_chance_bad_input():
    with pytest.raises(ValueError, match="vocab_size must be a positive int, got 0"):
        chance(0)


def test_model_rejects_ids_outside_its_vocabulary():
    model = CausalAttentionLM(vocab_size=4, d_model=8, max_len=4)
    model(torch.tensor([[4, 0]]))  # id 4 is <bos>
    with pytest.raises(ValueError, match=r"tokens must hold token ids in \[0, vocab_size=5\), got min 0 and max 5"):
        model(torch.tensor([[5, 0]]))
    with pytest.raises(ValueError, match="tokens must be an integer tensor"):
        model(torch.zeros(1, 2))
