"""Save and load a trained translator: config + weights + both vocabularies, read with weights_only=True."""

from pathlib import Path

import torch

from utils.translator.model import CONFIG_KEYS, Seq2SeqTransformer
from utils.translator.vocab import Vocab

FORMAT = "attention-by-hand translator v1"


def save_checkpoint(path, model, src_vocab, tgt_vocab):
    """Write the model's config, its weights and both vocabularies to `path` (plain tensors and lists)."""
    if not isinstance(model, Seq2SeqTransformer):
        raise TypeError(f"model must be a Seq2SeqTransformer, got {type(model).__name__}")
    for name, vocab, size in (("src_vocab", src_vocab, model.config["src_vocab_size"]),
                              ("tgt_vocab", tgt_vocab, model.config["tgt_vocab_size"])):
        if not isinstance(vocab, Vocab):
            raise TypeError(f"{name} must be a Vocab, got {type(vocab).__name__}")
        if len(vocab) != size:
            raise ValueError(f"{name} has {len(vocab)} tokens but the model was built for {size}")
    torch.save({"format": FORMAT, "config": dict(model.config), "state_dict": model.state_dict(),
                "src_vocab": src_vocab.words(), "tgt_vocab": tgt_vocab.words()}, Path(path))


def load_checkpoint(path, model=None):
    """(model, src_vocab, tgt_vocab) from `path`; with `model`, load into it after checking its config matches."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path {str(path)!r} is not a checkpoint file (it does not exist)")
    ckpt = torch.load(path, weights_only=True)
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT:
        raise ValueError(f"path {str(path)!r} is not a translator checkpoint written by save_checkpoint")
    config = ckpt["config"]
    if model is None:
        model = Seq2SeqTransformer(**{k: config[k] for k in CONFIG_KEYS})
    elif not isinstance(model, Seq2SeqTransformer):
        raise TypeError(f"model must be a Seq2SeqTransformer or None, got {type(model).__name__}")
    else:
        diff = {k: (config[k], model.config[k]) for k in CONFIG_KEYS if config[k] != model.config[k]}
        if diff:
            lines = ", ".join(f"{k}: checkpoint {a!r} vs model {b!r}" for k, (a, b) in diff.items())
            raise ValueError(f"model does not match the checkpoint's config ({lines}); build it with "
                             f"Seq2SeqTransformer(**checkpoint config) or pass model=None")
    model.load_state_dict(ckpt["state_dict"])
    model.eval()
    return model, Vocab(ckpt["src_vocab"]), Vocab(ckpt["tgt_vocab"])
