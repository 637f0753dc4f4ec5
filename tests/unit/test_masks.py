"""utils.masks: causal, padding and combined boolean masks (True = may attend)."""

import pytest
import torch

from utils.masks import causal_mask, combine_masks, padding_mask


@pytest.mark.parametrize("n", [1, 2, 5, 9])
def test_causal_mask_is_j_le_i(n):
    mask = causal_mask(n)
    assert mask.dtype == torch.bool and mask.shape == (n, n)
    for i in range(n):
        for j in range(n):
            assert mask[i, j].item() == (j <= i), f"row {i}, column {j}"
    assert mask.diagonal().all(), "every position may attend to itself"


def test_causal_mask_device():
    assert causal_mask(3, device="cpu").device.type == "cpu"


def test_padding_mask_values_and_shape():
    tokens = torch.tensor([[5, 6, 7, 0], [8, 0, 0, 0]])  # (batch, T), pad id 0
    mask = padding_mask(tokens, pad_id=0)
    assert mask.dtype == torch.bool and mask.shape == (2, 1, 4)
    assert mask[:, 0].tolist() == [[True, True, True, False], [True, False, False, False]]
    assert padding_mask(torch.tensor([1, 2, 9]), pad_id=9).tolist() == [[True, True, False]]  # 1-D
    assert padding_mask(torch.tensor([[1, 2]], dtype=torch.int32), pad_id=2).tolist() == [[[True, False]]]


def test_padding_mask_broadcasts_over_queries():
    tokens = torch.tensor([[5, 6, 0], [8, 0, 0]])
    scores = torch.zeros(2, 3, 3)  # (batch, T_q, T_k)
    full = padding_mask(tokens, 0).expand_as(scores)  # (batch, T_q, T_k)
    for b in range(2):
        for i in range(3):  # every query row sees the same keys
            assert full[b, i].tolist() == (tokens[b] != 0).tolist()


def test_combine_masks_is_logical_and_with_broadcasting():
    tokens = torch.tensor([[5, 6, 0], [8, 0, 0]])
    combined = combine_masks(causal_mask(3), padding_mask(tokens, 0))
    assert combined.shape == (2, 3, 3)
    for b in range(2):
        for i in range(3):
            for j in range(3):
                assert combined[b, i, j].item() == (j <= i and tokens[b, j].item() != 0)
    assert combine_masks(None, causal_mask(2)).equal(causal_mask(2))
    assert combine_masks() is None and combine_masks(None, None) is None


@pytest.mark.parametrize(
    "n, error, message",
    [
        (0, ValueError, "n must be a positive int, got 0"),
        (-3, ValueError, "n must be a positive int, got -3"),
        (2.5, TypeError, "n must be an int, got float 2.5"),
        ("4", TypeError, "n must be an int, got str '4'"),
        (True, TypeError, "n must be an int, got bool True"),
    ],
)
def test_causal_mask_bad_n(n, error, message):
    with pytest.raises(error, match=message):
        causal_mask(n)


@pytest.mark.parametrize(
    "tokens, message",
    [
        (
            torch.tensor([[1.0, 2.0, 0.0]]),
            r"tokens must be an integer tensor, got dtype torch.float32 with shape \(1, 3\)",
        ),
        (torch.tensor([True, False]), r"tokens must be an integer tensor, got dtype torch.bool with shape \(2,\)"),
    ],
)
def test_padding_mask_non_integer_tokens(tokens, message):
    with pytest.raises(ValueError, match=message):
        padding_mask(tokens, 0)


def test_padding_mask_other_bad_input():
    with pytest.raises(TypeError, match="tokens must be a torch.Tensor, got list"):
        padding_mask([1, 2, 0], 0)
    with pytest.raises(ValueError, match=r"tokens must have at least 1 dimensions, got shape \(\)"):
        padding_mask(torch.tensor(3), 0)
    with pytest.raises(TypeError, match="pad_id must be an int, got float 0.0"):
        padding_mask(torch.tensor([1, 0]), 0.0)
    with pytest.raises(ValueError, match=r"pad_id must be an int >= 0 \(a token id\), got -1"):
        padding_mask(torch.tensor([1, 0]), -1)
    with pytest.raises(ValueError, match=r"tokens must hold token ids >= 0, got min -2 and max 1"):
        padding_mask(torch.tensor([1, -2]), 0)


def test_combine_masks_bad_input():
    with pytest.raises(
        ValueError, match=r"masks\[1\] must be a bool tensor \(True = may attend\), got dtype torch.int64"
    ):
        combine_masks(causal_mask(3), torch.ones(3, 3, dtype=torch.long))
    with pytest.raises(TypeError, match=r"masks\[0\] must be a torch.Tensor, got list"):
        combine_masks([[True]])
    with pytest.raises(ValueError, match=r"masks must broadcast to one shape, got shapes \(3, 3\), \(2, 1, 4\)"):
        combine_masks(causal_mask(3), torch.ones(2, 1, 4, dtype=torch.bool))


def test_causal_mask_too_large_is_refused_before_allocating():
    with pytest.raises(ValueError, match=r"n=1000000 asks for an \(n, n\) bool mask of 1,000,000,000,000 bytes"):
        causal_mask(10**6)
