"""Save and load a trained translator: config + weights + both vocabularies + their SHA-256, read with
weights_only=True. Loading checks the digest, the vocabulary sizes and the config, and turns every failure
into one ValueError naming the file and what is wrong with it."""

import dataclasses
import hashlib
import json
import pickle
import zipfile
from pathlib import Path

import torch

from utils import validation
from utils.translator.config import TranslatorConfig
from utils.translator.model import Seq2SeqTransformer
from utils.translator.vocab import Vocab

FORMAT = "attention-by-hand translator v3"  # v2: the config is a TranslatorConfig's fields; v3: + "sha256"
KEYS = ("format", "config", "state_dict", "src_vocab", "tgt_vocab", "sha256")


def content_digest(ckpt):
    """SHA-256 (hex) of a checkpoint dict's config, weights (name, dtype, shape and bytes of each tensor, in
    name order) and both vocabularies: any changed byte of them changes it."""
    h = hashlib.sha256()
    h.update(json.dumps([ckpt["config"], ckpt["src_vocab"], ckpt["tgt_vocab"]], sort_keys=True).encode())
    for name in sorted(ckpt["state_dict"]):
        t = ckpt["state_dict"][name].detach().cpu().contiguous()
        h.update(json.dumps([name, str(t.dtype), list(t.shape)]).encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def save_checkpoint(path, model, src_vocab, tgt_vocab):
    """Write the model's config, its weights, both vocabularies and their SHA-256 to `path` (plain data)."""
    validation.instance("model", model, Seq2SeqTransformer)
    for name, vocab, size in (
        ("src_vocab", src_vocab, model.config.src_vocab_size),
        ("tgt_vocab", tgt_vocab, model.config.tgt_vocab_size),
    ):
        validation.instance(name, vocab, Vocab)
        if type(vocab) is not Vocab:  # a file holds words: a SubwordVocab would load back as a word-level one
            raise TypeError(
                f"{name} must be a word-level Vocab (a checkpoint stores words), got {type(vocab).__name__}"
            )
        if len(vocab) != size:
            raise ValueError(f"{name} has {len(vocab)} tokens but the model was built for {size}")
    ckpt = {
        "format": FORMAT,
        "config": dataclasses.asdict(model.config),
        "state_dict": {k: v.detach().clone() for k, v in model.state_dict().items()},
        "src_vocab": src_vocab.words(),
        "tgt_vocab": tgt_vocab.words(),
    }
    ckpt["sha256"] = content_digest(ckpt)
    torch.save(ckpt, Path(path))


class _Bad(Exception):
    """What is wrong with a checkpoint file, said once as a ValueError naming the file."""


def _read(path):
    """The dict stored at `path`, or _Bad saying why it cannot be read."""
    size = path.stat().st_size
    if size == 0:
        raise _Bad("is empty (0 bytes)")
    with path.open("rb") as f:
        head = f.read(4)
    if head != b"PK\x03\x04":  # torch.save writes a zip archive
        kind = "a text file" if _looks_like_text(path) else "not a zip archive"
        raise _Bad(f"is not a checkpoint written by torch.save: it is {kind} (it starts with {head!r})")
    try:
        ckpt = torch.load(path, weights_only=True)
    except pickle.UnpicklingError as err:  # weights_only refuses anything but tensors and plain data
        raise _Bad(
            f"is corrupt or holds objects a checkpoint never has (refused by weights_only=True: {_first_line(err)})"
        ) from None
    except (RuntimeError, OSError, EOFError, zipfile.BadZipFile, ValueError, KeyError, IndexError) as err:
        how = "truncated" if _truncated(path) else "corrupt"
        raise _Bad(f"is {how}: torch.load cannot read it ({type(err).__name__}: {_first_line(err)})") from None
    if not isinstance(ckpt, dict) or "format" not in ckpt:
        raise _Bad(f"is not a translator checkpoint written by save_checkpoint ({FORMAT})")
    if ckpt["format"] != FORMAT:
        raise _Bad(
            f"is a checkpoint of another version, {ckpt['format']!r}; this code reads {FORMAT!r} (it stores a "
            f"SHA-256 of the weights and vocabularies): save the model again with save_checkpoint"
        )
    missing = [k for k in KEYS if k not in ckpt]
    if missing:
        raise _Bad(f"is corrupt: it lacks {missing}")
    try:
        digest = content_digest(ckpt)
    except (TypeError, AttributeError, KeyError, RuntimeError):
        raise _Bad("is corrupt: its weights or vocabularies are not tensors and lists of words") from None
    if digest != ckpt["sha256"]:
        raise _Bad(
            "is corrupt: the SHA-256 of its config, weights and vocabularies does not match the one stored "
            "when it was saved (a changed byte)"
        )
    return ckpt


def _looks_like_text(path):
    with path.open("rb") as f:
        start = f.read(512)
    try:
        start.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _truncated(path):
    """True when the file lacks the end-of-central-directory record every complete zip archive ends with."""
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - 65_557))
        return b"PK\x05\x06" not in f.read()


def _first_line(err):
    return (str(err).splitlines() or [""])[0][:200]


def _contents(ckpt):
    """(config, src_vocab, tgt_vocab) of a checked checkpoint dict, or _Bad when they do not fit together."""
    try:
        config = TranslatorConfig(**ckpt["config"])
    except (TypeError, ValueError) as err:
        raise _Bad(f"holds another config than this code's TranslatorConfig ({_first_line(err)})") from None
    vocabs = []
    for name, size in (("src_vocab", config.src_vocab_size), ("tgt_vocab", config.tgt_vocab_size)):
        try:
            vocab = Vocab(ckpt[name])
        except (TypeError, ValueError) as err:
            raise _Bad(f"holds a {name} that is not a vocabulary ({_first_line(err)})") from None
        if len(vocab) != size:
            raise _Bad(f"holds a {name} of {len(vocab)} tokens but its config says {name}_size={size}")
        vocabs.append(vocab)
    return config, *vocabs


def load_checkpoint(path, model=None):
    """(model, src_vocab, tgt_vocab) from `path`; with `model`, load into it after checking its config matches.

    The model is returned in eval mode, ready to translate. A file that is empty, truncated, corrupt (its
    SHA-256 differs), not a checkpoint, of another version or whose parts do not fit its config raises a
    ValueError naming the file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path {str(path)!r} is not a checkpoint file (it does not exist)")
    if model is not None:
        validation.instance("model", model, Seq2SeqTransformer, "Seq2SeqTransformer or None")
    try:
        ckpt = _read(path)
        config, src_vocab, tgt_vocab = _contents(ckpt)
    except _Bad as bad:
        raise ValueError(f"checkpoint {str(path)!r} {bad}") from None
    if model is None:
        model = Seq2SeqTransformer(config)
    else:
        diff = config.differences(model.config)
        if diff:  # the file is sound; the model given is not the one it was saved from
            lines = ", ".join(f"{k}: checkpoint {a!r} vs model {b!r}" for k, (a, b) in diff.items())
            raise ValueError(
                f"model does not match the config of checkpoint {path.name!r} ({lines}); build it with "
                f"Seq2SeqTransformer(the checkpoint's config) or pass model=None"
            )
    try:
        model.load_state_dict(ckpt["state_dict"])
    except RuntimeError as err:
        raise ValueError(
            f"checkpoint {str(path)!r} holds weights that do not fit its config ({_first_line(err)})"
        ) from None
    model.eval()
    return model, src_vocab, tgt_vocab
