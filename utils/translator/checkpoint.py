"""Save and load a trained translator: config + weights + both vocabularies, read with weights_only=True."""

import dataclasses
from pathlib import Path

import torch

from utils import validation
from utils.translator.config import TranslatorConfig
from utils.translator.model import Seq2SeqTransformer
from utils.translator.vocab import Vocab

FORMAT = "attention-by-hand translator v2"  # v2: the config is a TranslatorConfig's fields


def save_checkpoint(path, model, src_vocab, tgt_vocab):
    """Write the model's config, its weights and both vocabularies to `path` (plain tensors and lists)."""
    validation.instance("model", model, Seq2SeqTransformer)
    for name, vocab, size in (
        ("src_vocab", src_vocab, model.config.src_vocab_size),
        ("tgt_vocab", tgt_vocab, model.config.tgt_vocab_size),
    ):
        validation.instance(name, vocab, Vocab)
        if len(vocab) != size:
            raise ValueError(f"{name} has {len(vocab)} tokens but the model was built for {size}")
    torch.save(
        {
            "format": FORMAT,
            "config": dataclasses.asdict(model.config),
            "state_dict": model.state_dict(),
            "src_vocab": src_vocab.words(),
            "tgt_vocab": tgt_vocab.words(),
        },
        Path(path),
    )


def load_checkpoint(path, model=None):
    """(model, src_vocab, tgt_vocab) from `path`; with `model`, load into it after checking its config matches.

    The model is returned in eval mode, ready to translate."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path {str(path)!r} is not a checkpoint file (it does not exist)")
    ckpt = torch.load(path, weights_only=True)
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT:
        raise ValueError(f"path {str(path)!r} is not a translator checkpoint written by save_checkpoint ({FORMAT})")
    config = TranslatorConfig(**ckpt["config"])
    if model is None:
        model = Seq2SeqTransformer(config)
    else:
        validation.instance("model", model, Seq2SeqTransformer, "Seq2SeqTransformer or None")
        diff = config.differences(model.config)
        if diff:
            lines = ", ".join(f"{k}: checkpoint {a!r} vs model {b!r}" for k, (a, b) in diff.items())
            raise ValueError(
                f"model does not match the checkpoint's config ({lines}); build it with "
                f"Seq2SeqTransformer(the checkpoint's config) or pass model=None"
            )
    model.load_state_dict(ckpt["state_dict"])
    model.eval()
    return model, Vocab(ckpt["src_vocab"]), Vocab(ckpt["tgt_vocab"])
