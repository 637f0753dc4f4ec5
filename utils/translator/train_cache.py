"""Train once per test run: a training function wrapped by `cached` stores its result in the folder named by
the environment variable ATTENTION_BY_HAND_TRAIN_CACHE and, called again with the same model, data and
settings, loads it instead of training again. Unset (always, for a learner), it only trains.

The test configuration sets the variable to a folder that lives for one run, so a lesson that the tests
execute twice (once compared cell by cell, once in a real browser) trains its model once. The key covers
the initial weights, the data, every argument, the torch version and the float-path settings, and a
stored run restores what training leaves behind: the weights, eval mode, the thread count and torch's
random state, so every later cell computes exactly what it would after training. Two processes making the
same call at once train once: the second waits for the first (a file lock, where the system has one).
"""

import contextlib
import functools
import hashlib
import os
from pathlib import Path

import torch

ENV = "ATTENTION_BY_HAND_TRAIN_CACHE"
FLOAT_PATH = ("MKL_CBWR", "ATEN_CPU_CAPABILITY", "OMP_NUM_THREADS")


def _digest(model, args, kwargs, name):
    """A hex key for one training call: initial weights, tensors and other arguments, torch and float path."""
    h = hashlib.sha256(f"{name}|{torch.__version__}|{[os.environ.get(v) for v in FLOAT_PATH]}".encode())
    for key, value in model.state_dict().items():
        h.update(key.encode())
        h.update(value.detach().cpu().contiguous().numpy().tobytes())
    for value in (*args, *sorted(kwargs.items())):
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, torch.Tensor):
                h.update(f"{item.dtype}{tuple(item.shape)}".encode())
                h.update(item.detach().cpu().contiguous().numpy().tobytes())
            else:
                h.update(repr(item).encode())
    return h.hexdigest()[:32]


def cached(train):
    """Wrap `train(model, *args, **kwargs) -> history` (trains `model` in place) to reuse a stored run."""

    @functools.wraps(train)
    def wrapper(model, *args, **kwargs):
        folder = os.environ.get(ENV)
        if not folder:
            return train(model, *args, **kwargs)
        path = Path(folder) / f"{train.__module__}.{train.__name__}-{_digest(model, args, kwargs, train.__name__)}.pt"
        path.parent.mkdir(parents=True, exist_ok=True)
        with _locked(path.with_suffix(".lock")):
            if path.exists():
                saved = torch.load(path, weights_only=True)
                model.load_state_dict(saved["weights"])
                model.train(saved["training"])
                torch.set_num_threads(saved["threads"])
                torch.set_rng_state(saved["rng"])
                return saved["history"]
            history = train(model, *args, **kwargs)
            saved = {
                "weights": model.state_dict(),
                "training": model.training,
                "threads": torch.get_num_threads(),
                "rng": torch.get_rng_state(),
                "history": history,
            }
            partial = path.with_suffix(f".{os.getpid()}.partial")
            torch.save(saved, partial)
            partial.replace(path)  # atomic: a reader sees the whole file or none
            return history

    return wrapper


@contextlib.contextmanager
def _locked(path):
    """Hold an exclusive lock on `path` (POSIX); elsewhere, no lock (a concurrent twin then trains too)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
