"""utils.validation: each check returns what it was given (normalised) and raises TypeError for a wrong type,
ValueError for a wrong value or shape, with the argument's name, the expectation and what was given."""

import math

import numpy as np
import pytest
import torch

from utils import validation


def test_integer():
    assert validation.integer("n", 3) == 3 and validation.integer("n", np.int64(3)) == 3
    assert validation.integer("n", 0, minimum=0) == 0 and validation.integer("n", 5, 0, 5) == 5
    with pytest.raises(TypeError, match="n must be an int, got float 1.5"):
        validation.integer("n", 1.5)
    with pytest.raises(TypeError, match="n must be an int, got bool True"):
        validation.integer("n", True)
    with pytest.raises(ValueError, match=r"n must be an int >= 3 \(three at least\), got 2"):
        validation.integer("n", 2, minimum=3, why="three at least")
    with pytest.raises(ValueError, match=r"n must be an int <= 3, got 4"):
        validation.integer("n", 4, maximum=3)
    with pytest.raises(ValueError, match=r"n must be an int in \[0, 3\], got -1"):
        validation.integer("n", -1, 0, 3)


def test_seed():
    assert validation.seed("seed", 0) == 0 and validation.seed("seed", 2**63 - 1) == 2**63 - 1
    with pytest.raises(TypeError, match="seed must be an int, got str '1'"):
        validation.seed("seed", "1")
    for bad in (-1, 2**63):
        with pytest.raises(ValueError, match=r"seed must be an int in \[0, 2\*\*63\) \(a random seed\)"):
            validation.seed("seed", bad)


def test_real():
    assert validation.real("k", 2) == 2.0 and isinstance(validation.real("k", 2), float)
    assert validation.real("t", 0.0, minimum=0) == 0.0
    with pytest.raises(TypeError, match="k must be a real number, got str '1'"):
        validation.real("k", "1")
    with pytest.raises(TypeError, match="k must be a real number, got bool False"):
        validation.real("k", False)
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match="k must be a finite number"):
            validation.real("k", bad)
    with pytest.raises(ValueError, match="t must be >= 0, got -0.5"):
        validation.real("t", -0.5, minimum=0)


def test_probability_allow_one_takes_both_ends():
    assert validation.probability("p", 0, True) == 0.0 and validation.probability("p", 1, True) == 1.0
    assert isinstance(validation.probability("p", 1, True), float)
    for bad in (-0.01, 1.01, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"p must be a probability in \[0, 1\] \(a chance\), got"):
            validation.probability("p", bad, True, "a chance")
    for bad in (None, "0.5", True):
        with pytest.raises(TypeError, match=r"p must be a probability in \[0, 1\], got"):
            validation.probability("p", bad, allow_one=True)


def test_probability():
    assert validation.probability("dropout", 0) == 0.0 and validation.probability("dropout", 0.999) == 0.999
    for bad in (-0.1, 1.0, 1.5, math.nan):
        with pytest.raises(ValueError, match=r"dropout must be a probability in \[0, 1\), got"):
            validation.probability("dropout", bad)
    for bad in ("0.1", True, None):
        with pytest.raises(TypeError, match=r"dropout must be a probability in \[0, 1\), got"):
            validation.probability("dropout", bad)


def test_choice():
    assert validation.choice("mask_kind", "causal", ("none", "causal")) == "causal"
    assert validation.choice("ord", 2.0, (2, math.inf)) == 2.0
    with pytest.raises(ValueError, match=r"mask_kind must be one of \('none', 'causal'\), got 'future'"):
        validation.choice("mask_kind", "future", ("none", "causal"))
    with pytest.raises(TypeError, match=r"mask_kind must be one of \('none', 'causal'\), got bool True"):
        validation.choice("mask_kind", True, ("none", "causal"))
    with pytest.raises(ValueError, match=r"ord must be one of \(2, inf\), got 1"):
        validation.choice("ord", 1, (2, math.inf))
    with pytest.raises(ValueError, match=r"ord must be one of \(2, inf\), got \[2\]"):
        validation.choice("ord", [2], (2, math.inf))  # unhashable: not an option
    assert validation.choice("variant", "pre-norm", {"pre-norm": 1, "post-norm": 2}) == "pre-norm"  # a dict's keys


def test_instance_and_function():
    g = torch.Generator()
    assert validation.instance("generator", g, torch.Generator) is g
    with pytest.raises(TypeError, match="generator must be a Generator, got int"):
        validation.instance("generator", 3, torch.Generator)
    with pytest.raises(TypeError, match="x must be a list or tuple, got str"):
        validation.instance("x", "ab", (list, tuple))
    with pytest.raises(TypeError, match="model must be a torch.nn.Module, got str"):
        validation.instance("model", "m", torch.nn.Module, "torch.nn.Module")
    assert validation.function("fn", len) is len
    with pytest.raises(TypeError, match="fn must be a function, got int 3"):
        validation.function("fn", 3)
    with pytest.raises(TypeError, match=r"make_layer must be a function \(index -> module\), got str 'a'"):
        validation.function("make_layer", "a", "a function (index -> module)")


def test_floating_dtype():
    assert validation.floating_dtype("dtype", torch.float64) is torch.float64
    for bad in (torch.int64, "float32", float):
        with pytest.raises(TypeError, match="dtype must be a floating torch.dtype such as torch.float32, got"):
            validation.floating_dtype("dtype", bad)


def test_non_empty():
    assert validation.non_empty("values", [1], list) == [1]
    with pytest.raises(ValueError, match="values must be a non-empty list, got an empty one"):
        validation.non_empty("values", [], list)
    with pytest.raises(TypeError, match=r"scores must be a non-empty dict name -> array, got list"):
        validation.non_empty("scores", [1], dict, "dict name -> array")
    with pytest.raises(TypeError, match="seqs must be a non-empty list or tuple, got NoneType"):
        validation.non_empty("seqs", None)


def test_shape():
    x = torch.zeros(2, 3, 8)
    assert validation.shape("x", x, ("batch", "seq", 8)) is x
    assert validation.shape("x", x, ("...", ("d_model", 8))) is x
    assert validation.shape("x", np.zeros(3), (("T", 3),)) is not None  # arrays too
    validation.shape("x", torch.zeros(8), ("...", "d"))
    with pytest.raises(ValueError, match=r"x must have shape \(batch, seq, d_model=16\), got \(2, 3, 8\)"):
        validation.shape("x", x, ("batch", "seq", ("d_model", 16)))
    with pytest.raises(ValueError, match=r"x must have shape \(batch, seq\), got \(2, 3, 8\)"):
        validation.shape("x", x, ("batch", "seq"))
    with pytest.raises(ValueError, match=r"x must have shape \(n,\), got \(\)"):
        validation.shape("x", torch.tensor(1.0), ("n",))
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., T, T\), got \(4,\)"):
        validation.shape("x", torch.zeros(4), ("...", "T", "T"))


def test_int_tensor_and_token_ids():
    ids = torch.tensor([[0, 3, 4]])
    assert validation.int_tensor("lengths", torch.tensor([3], dtype=torch.int32)) is not None
    assert validation.token_ids("tokens", ids) is ids and validation.token_ids("tokens", ids, vocab_size=5) is ids
    assert validation.token_ids("tokens", torch.zeros(0, dtype=torch.long), vocab_size=1) is not None  # empty
    with pytest.raises(TypeError, match="tokens must be a torch.Tensor, got list"):
        validation.token_ids("tokens", [0, 1])
    for dtype in (torch.float32, torch.bool, torch.complex64):
        with pytest.raises(ValueError, match=f"tokens must be an integer tensor, got dtype {dtype}"):
            validation.token_ids("tokens", torch.zeros(2, dtype=dtype))
    with pytest.raises(ValueError, match=r"tokens must hold token ids in \[0, vocab_size=4\), got min 0 and max 4"):
        validation.token_ids("tokens", ids, vocab_size=4)
    with pytest.raises(ValueError, match=r"tokens must hold token ids >= 0, got min -1 and max 3"):
        validation.token_ids("tokens", torch.tensor([-1, 3]))
    with pytest.raises(ValueError, match=r"tokens must have at least 2 dimensions, got shape \(3,\)"):
        validation.token_ids("tokens", torch.tensor([1, 2, 3]), min_dim=2)


def test_token_id():
    assert validation.token_id("pad_id", 0) == 0 and validation.token_id("eos_id", 4, vocab_size=5) == 4
    with pytest.raises(TypeError, match="pad_id must be an int, got float 0.0"):
        validation.token_id("pad_id", 0.0)
    with pytest.raises(ValueError, match=r"pad_id must be an int >= 0 \(a token id\), got -1"):
        validation.token_id("pad_id", -1)
    with pytest.raises(
        ValueError, match=r"eos_id must be an int in \[0, 4\] \(a token id of a vocabulary of 5\), got 5"
    ):
        validation.token_id("eos_id", 5, vocab_size=5)


def test_max_positions():
    x = torch.zeros(2, 10, 4)
    assert validation.max_positions("x", x, 10, dim=-2) is x
    with pytest.raises(ValueError, match=r"x has 10 positions, more than max_len=9 .*build it with max_len >= 10"):
        validation.max_positions("x", x, 9, dim=-2)
    with pytest.raises(ValueError, match="tokens has 4 positions, more than max_len=3"):
        validation.max_positions("tokens", torch.zeros(1, 4, dtype=torch.long), 3)


def test_divisible():
    assert validation.divisible("d_model", 64, 4, "num_heads") == 64
    with pytest.raises(ValueError, match="d_model must be divisible by num_heads=4, got d_model=30"):
        validation.divisible("d_model", 30, 4, "num_heads")
    with pytest.raises(ValueError, match=r"d_model must be divisible by 4 \(rows and columns\), got d_model=6"):
        validation.divisible("d_model", 6, 4, why="rows and columns")


def test_bool_mask_and_mask():
    causal = torch.ones(3, 3, dtype=torch.bool).tril()
    assert validation.bool_mask("mask", causal) is causal
    assert validation.mask("mask", causal, (2, 4, 3, 3)) is causal
    with pytest.raises(TypeError, match="mask must be a torch.Tensor, got list"):
        validation.bool_mask("mask", [[True]])
    with pytest.raises(ValueError, match=r"mask must be a bool tensor \(True = may attend\), got dtype torch.float32"):
        validation.mask("mask", causal.float(), (3, 3))
    with pytest.raises(ValueError, match=r"mask of shape \(2, 3\) must broadcast to the scores' shape \(3, 3\)"):
        validation.mask("mask", torch.ones(2, 3, dtype=torch.bool), (3, 3))


def test_attention_inputs():
    q, k, v = torch.zeros(2, 1, 3, 4), torch.zeros(5, 4), torch.zeros(5, 6)
    assert validation.attention_inputs(q, k, v) == (2, 1)
    with pytest.raises(TypeError, match="k must be a torch.Tensor, got list"):
        validation.attention_inputs(q, [[0.0]], v)
    with pytest.raises(
        ValueError, match=r"q and k must share their last dimension d_k, got q \(2, 1, 3, 4\) and k \(5, 3\)"
    ):
        validation.attention_inputs(q, torch.zeros(5, 3), v)
    with pytest.raises(ValueError, match=r"k and v must have the same number of positions T_k \(dim -2\)"):
        validation.attention_inputs(q, k, torch.zeros(4, 6))
    with pytest.raises(ValueError, match="leading .batch. dimensions of q, k and v must broadcast"):
        validation.attention_inputs(torch.zeros(2, 3, 3, 4), torch.zeros(4, 5, 4), torch.zeros(4, 5, 6))
    with pytest.raises(ValueError, match="q, k and v must share a dtype"):
        validation.attention_inputs(q, k.double(), v)


def test_positive_float_refuses_infinity():
    assert validation.positive_float("lr", 0.5) == 0.5
    for bad in (math.inf, 0, -1.0, math.nan):
        with pytest.raises(ValueError, match=r"lr must be a finite number > 0, got"):
            validation.positive_float("lr", bad)


def test_pe_base():
    assert validation.pe_base("base", 10000) == 10000.0 and validation.pe_base("base", 1) == 1.0
    for bad in (math.inf, 0.999, 0, -2.0, math.nan):
        with pytest.raises(ValueError, match=r"base must be a finite number >= 1 .*, got"):
            validation.pe_base("base", bad)
    with pytest.raises(TypeError, match=r"base must be a finite number >= 1, got str '10'"):
        validation.pe_base("base", "10")


def test_allocation():
    validation.allocation("n=4", validation.MAX_BYTES, "a mask")  # at the limit: fine
    with pytest.raises(ValueError, match=r"^n=40000 asks for a mask of 1,600,000,000 bytes \(1.49 GiB\), more than"):
        validation.allocation("n=40000", 40000**2, "a mask")


def test_finite_and_real_tensor():
    t = torch.tensor([0.0, -math.inf])
    assert validation.finite("s", t, allow_neg_inf=True) is t
    with pytest.raises(
        ValueError, match=r"s must hold no NaN or infinity, got 1 such entry in shape \(2,\), the first"
    ):
        validation.finite("s", t)
    with pytest.raises(
        ValueError, match=r"s must hold no NaN or \+inf .*got 2 such entries .* first nan at index \(0,\)"
    ):
        validation.finite("s", torch.tensor([math.nan, math.inf, -math.inf]), allow_neg_inf=True)
    got = validation.real_tensor("m", 2)
    assert got.dtype == torch.float64 and got.item() == 2.0
    with pytest.raises(TypeError, match="m must be a real number or a floating torch.Tensor, got str 'a'"):
        validation.real_tensor("m", "a")
    with pytest.raises(TypeError, match="m must be a real number or a floating torch.Tensor, got bool True"):
        validation.real_tensor("m", True)
    with pytest.raises(ValueError, match="l must be >= 0, got a minimum of -1.0"):
        validation.real_tensor("l", -1.0, minimum=0)


def test_features_and_dtype_of():
    x = torch.randn(2, 3, 8)
    assert validation.features("x", x, 8, torch.float32) is x
    with pytest.raises(ValueError, match=r"x must have shape \(batch, seq, d_model=8\), got \(3, 8\)"):
        validation.features("x", x[0], 8)
    with pytest.raises(ValueError, match=r"x must have dtype torch.float32 \(that of the weights\), got torch.float64"):
        validation.features("x", x.double(), 8, torch.float32, "the weights")


def test_mask_that_could_be_batch_or_query_is_ambiguous():
    scores = (3, 2, 3, 5)  # (batch, heads, T_q, T_k) with batch = T_q = 3
    keys = torch.ones(3, 5, dtype=torch.bool)  # (batch, T_k)? or (T_q, T_k)? the shape cannot tell
    with pytest.raises(
        ValueError, match=r"mask of shape \(3, 5\) is ambiguous .* first dimension, 3, is the batch size"
    ):
        validation.mask("mask", keys, scores)
    with pytest.raises(
        ValueError, match=r"give it every dimension: \(1, 1, 3, 5\) or \(3, 5\) shared by the batch, \(3, 1, 1, 5\) per"
    ):
        validation.mask("mask", keys, scores)
    for fine in ((1, 3, 5), (3, 1, 1, 5), (1, 1, 3, 5), (5,)):  # full-rank, batch 1, or a key row
        validation.mask("mask", torch.ones(fine, dtype=torch.bool), scores)
    validation.mask("mask", keys, (4, 2, 3, 5))  # batch 4 != T_q 3: (T_q, T_k), nothing to confuse
    validation.mask("mask", keys, (1, 2, 3, 5))  # batch 1
    validation.mask("mask", keys, (3, 5))  # no batch
    with pytest.raises(ValueError, match="ambiguous"):  # (batch, 1, T_k) on 4-D scores: read as heads
        validation.mask("mask", torch.ones(2, 1, 5, dtype=torch.bool), (2, 2, 3, 5))


def test_items_id_list_and_word_lists():
    assert validation.items("words", ("a", "b")) == ["a", "b"]
    with pytest.raises(TypeError, match=r"words must be a list of words, got the str 'ab'; split"):
        validation.items("words", "ab", "a list of words")
    with pytest.raises(TypeError, match="ids must be a list, got int 3"):
        validation.items("ids", 3)
    assert validation.id_list("ids", [3, 4]).tolist() == [3, 4] and validation.id_list("ids", []).numel() == 0
    with pytest.raises(ValueError, match="ids must be an integer tensor, got dtype torch.float32"):
        validation.id_list("ids", [3, 4.5])  # refused, not truncated to 4
    with pytest.raises(TypeError, match=r"ids must be a list of int token ids, got \[3, 'a'\]"):
        validation.id_list("ids", [3, "a"])
    assert validation.word_lists("refs", [["a"], ("b", "c")], 2, "hyps")
    with pytest.raises(TypeError, match=r"refs\[1\] must be a list of words \(str\), got str 'b'"):
        validation.word_lists("refs", [["a"], "b"])
    with pytest.raises(ValueError, match=r"refs must have one item per item of hyps \(3\), got 2"):
        validation.word_lists("refs", [["a"], ["b"]], 3, "hyps")
    with pytest.raises(ValueError, match="refs must be a non-empty list of word lists, got an empty one"):
        validation.word_lists("refs", [])


def test_broadcast_together_names_the_tensors_and_their_shapes():
    assert validation.broadcast_together("a and b", torch.zeros(2, 1), torch.zeros(3)) == torch.Size([2, 3])
    with pytest.raises(ValueError, match=r"a and b must have shapes that broadcast, got \(2,\) and \(3,\)"):
        validation.broadcast_together("a and b", torch.zeros(2), torch.zeros(3))
