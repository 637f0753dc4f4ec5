"""Argument checks whose errors name the argument, what was expected and what was given."""

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
    """Return `value` as a float if it is a real number > 0, else raise naming `name`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive number, got {type(value).__name__} {value!r}")
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return float(value)


def tensor(name, value, min_dim=0, floating=False):
    """Check that `value` is a torch.Tensor with at least `min_dim` dimensions."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.dim() < min_dim:
        raise ValueError(
            f"{name} must have at least {min_dim} dimensions, got shape {tuple(value.shape)}"
        )
    if floating and not value.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")
    return value


def mask(name, value, scores_shape, context=""):
    """Return `value` if it is a bool tensor (True = may attend) that broadcasts to `scores_shape`
    (..., T_q, T_k), else raise naming `name`; `context` (e.g. the q and k shapes) ends the message."""
    tensor(name, value)
    if value.dtype != torch.bool:
        raise ValueError(
            f"{name} must be a bool tensor (True = may attend), got dtype {value.dtype} with shape "
            f"{tuple(value.shape)}; convert with {name}.bool() or build it with utils.masks"
        )
    scores_shape = torch.Size(scores_shape)
    try:
        ok = torch.broadcast_shapes(value.shape, scores_shape) == scores_shape
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(
            f"{name} of shape {tuple(value.shape)} must broadcast to the scores' shape "
            f"{tuple(scores_shape)} (..., T_q, T_k)" + (f" {context}" if context else "")
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
