"""Argument checks whose errors name the argument, what was expected and what was given."""

import math
import numbers

import numpy as np
import torch


def positive_int(name, value):
    """Return `value` if it is an int >= 1, else raise naming `name`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def index(name, value, size, size_name):
    """Return `value` if it is an int in [0, size) (an index into `size_name` = size things), else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if not 0 <= value < size:
        raise ValueError(f"{name} must be an int in [0, {size_name}={size}), got {value!r}")
    return int(value)


def even_positive_int(name, value):
    """Return `value` if it is an even int >= 2 (sin/cos come in pairs), else raise."""
    value = positive_int(name, value)
    if value % 2:
        raise ValueError(f"{name} must be even (sin and cos columns come in pairs), got {value}")
    return value


def positive_float(name, value):
    """Return `value` as a float if it is a finite real number > 0, else raise naming `name`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive number, got {type(value).__name__} {value!r}")
    if not 0 < value < math.inf:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def pe_base(name, value):
    """Return `value` as a float if it is a finite number >= 1: the base of sinusoidal frequencies
    w_i = base^(-2i/d_model), which then fall from 1 (base 1: every pair the same wave)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a finite number >= 1, got {type(value).__name__} {value!r}")
    if not 1 <= value < math.inf:
        raise ValueError(
            f"{name} must be a finite number >= 1 (frequencies base^(-2i/d_model) falling from 1), got {value!r}"
        )
    return float(value)


MAX_BYTES = 2**30  # the largest tensor or array a helper builds on request (1 GiB): a bigger size is a typo


def allocation(args, nbytes, what):
    """Raise a ValueError before building `what` (e.g. "a (n, n) bool mask") of `nbytes` bytes when that is more
    than MAX_BYTES; `args` names the arguments and their values, e.g. "n=1000000"."""
    if nbytes > MAX_BYTES:
        raise ValueError(
            f"{args} asks for {what} of {nbytes:,} bytes ({nbytes / 2**30:.3g} GiB), more than the "
            f"{MAX_BYTES / 2**30:g} GiB a helper builds at once; use smaller sizes"
        )


def tensor(name, value, min_dim=0, floating=False):
    """Check that `value` is a torch.Tensor with at least `min_dim` dimensions."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.dim() < min_dim:
        raise ValueError(f"{name} must have at least {min_dim} dimensions, got shape {tuple(value.shape)}")
    if floating and not value.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")
    return value


def finite(name, value, allow_neg_inf=False):
    """Return tensor `value` if it holds no NaN and no infinity (-inf allowed with allow_neg_inf: a removed score)."""
    ok = torch.isfinite(value).all() if not allow_neg_inf else not (torch.isnan(value) | torch.isposinf(value)).any()
    if not ok:
        bad = ~torch.isfinite(value) if not allow_neg_inf else torch.isnan(value) | torch.isposinf(value)
        where = tuple(int(i) for i in bad.nonzero()[0])
        what = "NaN or +inf (-inf, a removed score, is allowed)" if allow_neg_inf else "NaN or infinity"
        n = int(bad.sum())
        raise ValueError(
            f"{name} must hold no {what}, got {n} such entr{'y' if n == 1 else 'ies'} in shape "
            f"{tuple(value.shape)}, the first {value[where].item()} at index {where}"
        )
    return value


def real_tensor(name, value, allow_neg_inf=False, minimum=None):
    """Return `value` as a floating tensor (a real number becomes a 0-d float64 tensor) holding no NaN and no
    infinity (-inf allowed with allow_neg_inf), every entry >= minimum when given."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        value = torch.tensor(float(value), dtype=torch.float64)
    elif not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a real number or a floating torch.Tensor, got {_kind(value)}")
    tensor(name, value, floating=True)
    finite(name, value, allow_neg_inf)
    if minimum is not None and value.numel() and value.min() < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got a minimum of {value.min().item()!r}")
    return value


def dtype_of(name, value, dtype, owner):
    """Return tensor `value` if its dtype is `dtype`, that of `owner` (e.g. "this module's weights")."""
    if value.dtype != dtype:
        raise ValueError(
            f"{name} must have dtype {dtype} (that of {owner}), got {value.dtype}; convert {name} with "
            f".to({dtype}) or {owner} with .to({value.dtype})"
        )
    return value


def features(name, value, d_model, dtype=None, owner="this module's weights"):
    """Return `value` if it is a floating tensor (batch, seq, d_model) of `dtype` (when given), else raise."""
    tensor(name, value, floating=True)
    shape(name, value, ("batch", "seq", ("d_model", d_model)))
    if dtype is not None:
        dtype_of(name, value, dtype, owner)
    return value


def broadcast_together(names, *tensors):
    """Return the broadcast shape of `tensors`, else raise naming them (`names`, e.g. "m, l and x")."""
    try:
        return torch.broadcast_shapes(*(t.shape for t in tensors))
    except RuntimeError:
        got = ", ".join(str(tuple(t.shape)) for t in tensors[:-1]) + f" and {tuple(tensors[-1].shape)}"
        raise ValueError(f"{names} must have shapes that broadcast, got {got}") from None


def attention_inputs(q, k, v):
    """Check q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v): floating tensors of one dtype whose
    leading (batch) dimensions broadcast; return the broadcast leading shape."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        tensor(name, t, min_dim=2, floating=True)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share their last dimension d_k, got q {tuple(q.shape)} and k {tuple(k.shape)}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of positions T_k (dim -2), "
            f"got k {tuple(k.shape)} and v {tuple(v.shape)}"
        )
    try:
        batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"the leading (batch) dimensions of q, k and v must broadcast, got q {tuple(q.shape)}, "
            f"k {tuple(k.shape)} and v {tuple(v.shape)}"
        ) from None
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"q, k and v must share a dtype, got {q.dtype}, {k.dtype} and {v.dtype}")
    return batch


def bool_mask(name, value):
    """Return `value` if it is a bool tensor (True = may attend), else raise naming `name`."""
    tensor(name, value)
    if value.dtype != torch.bool:
        raise ValueError(
            f"{name} must be a bool tensor (True = may attend), got dtype {value.dtype} with shape "
            f"{tuple(value.shape)}; for a 0/1 keep-mask (1 = may attend) use {name}.bool(), for an additive "
            f"float mask (0 = may attend, -inf = blocked) use {name} == 0, or build it with utils.masks"
        )
    return value


def mask_forms(scores_shape):
    """The mask shapes accepted for scores (batch, ..., T_q, T_k), as text: shared by the batch or per sentence."""
    *lead, t_q, t_k = scores_shape
    if not lead:
        return f"(T_q, T_k) = {(t_q, t_k)}, (1, T_k) or (T_q, 1)"
    ones = (1,) * (len(lead) - 1)
    how = "utils.masks.padding_mask builds it" if not ones else "utils.masks.padding_mask(...)[:, None] gives"
    return (
        f"{(1, *ones, t_q, t_k)} or {(t_q, t_k)} shared by the batch, {(lead[0], *ones, 1, t_k)} "
        f"per sentence's keys (as {how}), {(lead[0], *ones, t_q, t_k)} per sentence"
    )


def mask(name, value, scores_shape, context="", forms=None):
    """Return `value` if it is a bool tensor (True = may attend) that broadcasts to `scores_shape`
    (batch, ..., T_q, T_k), else raise naming `name`; `context` (e.g. the q and k shapes) ends the message.

    Broadcasting aligns a mask's last dimension with T_k. A mask with fewer dimensions than the scores whose
    first dimension (> 1) equals the batch size but would be aligned with another axis (e.g. (batch, T_k)
    with batch = T_q) is refused as ambiguous. `forms` (text) lists the accepted shapes (default mask_forms)."""
    bool_mask(name, value)
    scores_shape = torch.Size(scores_shape)
    forms = forms or mask_forms(scores_shape)
    context = f" {context}" if context else ""
    try:
        ok = torch.broadcast_shapes(value.shape, scores_shape) == scores_shape
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(
            f"{name} of shape {tuple(value.shape)} must broadcast to the scores' shape "
            f"{tuple(scores_shape)} (..., T_q, T_k){context}; accepted: {forms}"
        )
    m, n = value.dim(), len(scores_shape)
    if n >= 3 and 2 <= m < n and value.shape[0] > 1 and value.shape[0] == scores_shape[0]:
        raise ValueError(
            f"{name} of shape {tuple(value.shape)} is ambiguous for scores of shape {tuple(scores_shape)} "
            f"(batch, ..., T_q, T_k){context}: its first dimension, {value.shape[0]}, is the batch size but "
            f"broadcasting would read it as dimension {n - m} of the scores (size {scores_shape[n - m]}); "
            f"give it every dimension: {forms}"
        )
    return value


def head_weights(name, value):
    """Return `value` as a float numpy array of shape (num_heads, T_q, T_k), else raise naming `name`."""
    try:
        array = np.asarray(value.detach().cpu() if isinstance(value, torch.Tensor) else value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must be an array of numbers (num_heads, T_q, T_k), got {type(value).__name__}"
        ) from None
    if array.ndim != 3:
        raise ValueError(f"{name} must have shape (num_heads, T_q, T_k), got {array.shape}")
    return array


def boolean(name, value):
    """Return `value` if it is a bool (True or False), else raise naming `name`."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool (True or False), got {type(value).__name__} {value!r}")
    return value


def _kind(value):
    """How an error message names what was given: its type and its repr, e.g. "float 1.5"."""
    return f"{type(value).__name__} {value!r}"


def integer(name, value, minimum=None, maximum=None, why=None):
    """Return `value` as an int if it is an int (not a bool) in [minimum, maximum] (each bound optional)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {_kind(value)}")
    too_small = minimum is not None and value < minimum
    too_large = maximum is not None and value > maximum
    if too_small or too_large:
        if minimum is not None and maximum is not None:
            want = f"an int in [{minimum}, {maximum}]"
        else:
            want = f"an int >= {minimum}" if minimum is not None else f"an int <= {maximum}"
        raise ValueError(f"{name} must be {want}{f' ({why})' if why else ''}, got {value!r}")
    return int(value)


def seed(name, value):
    """Return `value` if it is an int usable as a random seed, in [0, 2**63)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {_kind(value)}")
    if not 0 <= value < 2**63:
        raise ValueError(f"{name} must be an int in [0, 2**63) (a random seed), got {value!r}")
    return int(value)


def real(name, value, minimum=None):
    """Return `value` as a float if it is a finite real number (not a bool), >= minimum when given."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_kind(value)}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return float(value)


def probability(name, value, allow_one=False, why=None):
    """Return `value` as a float if it is a number in [0, 1) (a dropout rate), or in [0, 1] with `allow_one` (a
    chance that may be 1, such as a merge's chance to be skipped in BPE-dropout)."""
    interval = "[0, 1]" if allow_one else "[0, 1)"
    what = f"a probability in {interval}" + (f" ({why})" if why else "")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {what}, got {_kind(value)}")
    if not (0 <= value <= 1 if allow_one else 0 <= value < 1):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return float(value)


def choice(name, value, options):
    """Return `value` if it is one of `options` (a wrong type when every option is a str and `value` is not)."""
    options = tuple(options)
    if all(isinstance(o, str) for o in options) and not isinstance(value, str):
        raise TypeError(f"{name} must be one of {options}, got {_kind(value)}")
    try:
        ok = value in options
    except TypeError:  # an unhashable or uncomparable value
        ok = False
    if not ok:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def instance(name, value, types, what=None):
    """Return `value` if it is an instance of `types`; `what` names the expectation (default: the type names)."""
    if not isinstance(value, types):
        if what is None:
            names = [t.__name__ for t in (types if isinstance(types, tuple) else (types,))]
            what = " or ".join(names)
        raise TypeError(f"{name} must be a {what}, got {type(value).__name__}")
    return value


def function(name, value, what="a function"):
    """Return `value` if it is callable; `what` says which function is expected, e.g. "a function n -> module"."""
    if not callable(value):
        raise TypeError(f"{name} must be {what}, got {_kind(value)}")
    return value


def floating_dtype(name, value):
    """Return `value` if it is a floating torch.dtype such as torch.float32."""
    if not (isinstance(value, torch.dtype) and value.is_floating_point):
        raise TypeError(f"{name} must be a floating torch.dtype such as torch.float32, got {value!r}")
    return value


def items(name, value, what="a list"):
    """Return `value` as a list if it is an iterable other than a str (e.g. a list, a tuple, a 1-D tensor)."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be {what}, got the str {value!r}; split a sentence with .split()")
    try:
        return list(value)
    except TypeError:
        raise TypeError(f"{name} must be {what}, got {_kind(value)}") from None


def id_list(name, value):
    """Return `value` as a 1-D long tensor if it is a sequence of int token ids (>= 0); a float or a str is
    refused, not truncated."""
    value = items(name, value, "a list of int token ids")
    if not value:
        return torch.zeros(0, dtype=torch.long)
    try:
        ids = torch.as_tensor(value)  # keeps the ids' own dtype: 2.5 stays a float
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"{name} must be a list of int token ids, got {value!r:.80}") from None
    shape(name, ids, ("T",))
    return token_ids(name, ids).long()


def word_lists(name, value, length=None, length_of=None):
    """Return `value` if it is a non-empty list or tuple of word lists (each a list or tuple of str), of
    `length` items when given (`length_of` names what has that length)."""
    non_empty(name, value, (list, tuple), "list of word lists")
    for i, words in enumerate(value):
        if not isinstance(words, (list, tuple)) or not all(isinstance(w, str) for w in words):
            raise TypeError(f"{name}[{i}] must be a list of words (str), got {_kind(words)[:80]}")
    if length is not None and len(value) != length:
        raise ValueError(f"{name} must have one item per item of {length_of} ({length}), got {len(value)}")
    return value


def non_empty(name, value, types=(list, tuple), what=None):
    """Return `value` if it is a non-empty instance of `types` (e.g. dict, list); `what` describes its items."""
    what = what or " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
    if not isinstance(value, types):
        raise TypeError(f"{name} must be a non-empty {what}, got {type(value).__name__}")
    if len(value) == 0:
        raise ValueError(f"{name} must be a non-empty {what}, got an empty one")
    return value


def _dim_text(d):
    return f"{d[0]}={d[1]}" if isinstance(d, tuple) else str(d)


def shape(name, value, dims):
    """Return `value` (a tensor or array) if its shape matches `dims`, else raise a ValueError naming both.

    Each entry of `dims` is an int (that size), a str (any size, named, e.g. "batch"), or a pair
    (label, size) such as ("d_model", 16); a leading "..." allows any number of leading dimensions.
    """
    got = tuple(value.shape)
    leading = len(dims) > 0 and dims[0] == "..."
    fixed = tuple(dims[1:] if leading else dims)
    ok = len(got) >= len(fixed) if leading else len(got) == len(fixed)
    if ok:
        for g, d in zip(got[len(got) - len(fixed) :], fixed):
            size = d[1] if isinstance(d, tuple) else d
            if not isinstance(size, str) and g != size:
                ok = False
    if not ok:
        want = "(" + ", ".join(_dim_text(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"
        raise ValueError(f"{name} must have shape {want}, got {got}")
    return value


def int_tensor(name, value, min_dim=1):
    """Return `value` if it is a torch.Tensor of an integer dtype (not bool) with at least `min_dim` dimensions."""
    tensor(name, value, min_dim=min_dim)
    if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
        raise ValueError(f"{name} must be an integer tensor, got dtype {value.dtype} with shape {tuple(value.shape)}")
    return value


def token_ids(name, value, vocab_size=None, min_dim=1):
    """Return `value` if it is an integer tensor of token ids (>= 0, and < vocab_size when given)."""
    int_tensor(name, value, min_dim=min_dim)
    if value.numel():
        low, high = int(value.min()), int(value.max())
        if low < 0 or (vocab_size is not None and high >= vocab_size):
            limit = f"[0, vocab_size={vocab_size})" if vocab_size is not None else ">= 0"
            raise ValueError(
                f"{name} must hold token ids {'in ' if vocab_size is not None else ''}{limit}, "
                f"got min {low} and max {high}"
            )
    return value


def token_id(name, value, vocab_size=None):
    """Return `value` if it is one int token id (>= 0, and < vocab_size when given), e.g. a pad or bos id."""
    if vocab_size is None:
        return integer(name, value, minimum=0, why="a token id")
    return integer(name, value, minimum=0, maximum=vocab_size - 1, why=f"a token id of a vocabulary of {vocab_size}")


def max_positions(name, value, max_len, dim=-1):
    """Return `value` if its dimension `dim` (its positions) is at most `max_len`, the size of a position table."""
    n = value.shape[dim]
    if n > max_len:
        raise ValueError(
            f"{name} has {n} positions, more than max_len={max_len} (the positions the table "
            f"covers); build it with max_len >= {n}"
        )
    return value


def divisible(name, value, divisor, divisor_name=None, why=None):
    """Return `value` if it is a multiple of `divisor` (e.g. d_model of num_heads), else raise a ValueError."""
    if value % divisor:
        by = f"{divisor_name}={divisor}" if divisor_name else f"{divisor}"
        raise ValueError(f"{name} must be divisible by {by}{f' ({why})' if why else ''}, got {name}={value}")
    return value
