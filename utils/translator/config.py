"""The translator's configuration: one dataclass, used by the model, the recipe, the checkpoint and the benchmark."""

import dataclasses

from utils import validation


@dataclasses.dataclass(frozen=True)
class TranslatorConfig:
    """Sizes of a Seq2SeqTransformer; the fields are checked when the config is made."""

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 64
    num_heads: int = 4
    d_ff: int = 256
    num_layers: int = 2
    dropout: float = 0.0
    max_len: int = 64
    pad_id: int = 0
    norm_first: bool = False

    def __post_init__(self):
        for name in ("src_vocab_size", "tgt_vocab_size", "num_heads", "d_ff", "num_layers", "max_len"):
            validation.positive_int(name, getattr(self, name))
        validation.even_positive_int("d_model", self.d_model)
        validation.divisible("d_model", self.d_model, self.num_heads, "num_heads")
        # frozen: object.__setattr__ stores the normalised value (a float dropout, e.g. 0 -> 0.0)
        object.__setattr__(self, "dropout", validation.probability("dropout", self.dropout))
        validation.token_id("pad_id", self.pad_id, min(self.src_vocab_size, self.tgt_vocab_size))
        validation.boolean("norm_first", self.norm_first)

    def differences(self, other):
        """{field: (self's value, other's value)} for every field where the two configs differ."""
        validation.instance("other", other, TranslatorConfig)
        return {
            f.name: (getattr(self, f.name), getattr(other, f.name))
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != getattr(other, f.name)
        }
