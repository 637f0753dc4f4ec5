"""The same translator built on torch.nn.Transformer, to compare outputs (copied weights) and step times."""

import math
import warnings

from torch import nn

from utils import validation
from utils.blocks import DecoderLayer, EncoderLayer
from utils.masks import causal_mask
from utils.translator.model import Seq2SeqTransformer, TranslatorConfig


class TorchSeq2Seq(nn.Module):
    """Embeddings x sqrt(d_model) + sinusoidal PE -> torch.nn.Transformer (post-norm: no final norms) -> linear."""

    def __init__(self, config):
        super().__init__()
        c = self.config = validation.instance("config", config, TranslatorConfig)
        self.d_model, self.pad_id = c.d_model, c.pad_id
        self.src_embed = nn.Embedding(c.src_vocab_size, c.d_model)
        self.tgt_embed = nn.Embedding(c.tgt_vocab_size, c.d_model)
        self.register_buffer("pe", Seq2SeqTransformer(c).pe.clone(), persistent=False)
        with warnings.catch_warnings():  # norm_first: torch warns that its nested-tensor fast path is off
            warnings.simplefilter("ignore", UserWarning)
            self.transformer = nn.Transformer(
                c.d_model,
                c.num_heads,
                c.num_layers,
                c.num_layers,
                c.d_ff,
                c.dropout,
                batch_first=True,
                norm_first=c.norm_first,
            )
        if not c.norm_first:  # our post-norm stacks (as in the paper) end without nn.Transformer's final norms
            self.transformer.encoder.norm = None
            self.transformer.decoder.norm = None
        self.generator = nn.Linear(c.d_model, c.tgt_vocab_size)

    def forward(self, src, tgt):
        """Logits (batch, T, tgt_vocab); torch's masks use True = NOT allowed, the opposite of ours."""
        c = self.config
        for name, tokens, size in (("src", src, c.src_vocab_size), ("tgt", tgt, c.tgt_vocab_size)):
            validation.token_ids(name, tokens, size)
            validation.shape(name, tokens, ("batch", "seq"))
            validation.max_positions(name, tokens, c.max_len)
        validation.shape("tgt", tgt, (("batch of src", src.shape[0]), "T"))
        x = self.src_embed(src) * math.sqrt(self.d_model) + self.pe[: src.shape[1]]  # (batch, S, d_model)
        y = self.tgt_embed(tgt) * math.sqrt(self.d_model) + self.pe[: tgt.shape[1]]  # (batch, T, d_model)
        src_pad = src == self.pad_id  # (batch, S): True = ignore
        h = self.transformer(
            x,
            y,
            tgt_mask=~causal_mask(tgt.shape[1]),
            src_key_padding_mask=src_pad,
            tgt_key_padding_mask=tgt == self.pad_id,
            memory_key_padding_mask=src_pad,
        )
        return self.generator(h)  # (batch, T, tgt_vocab)


def copy_into_ours(torch_model):
    """A Seq2SeqTransformer with exactly the weights of a TorchSeq2Seq."""
    validation.instance("torch_model", torch_model, TorchSeq2Seq)
    ours = Seq2SeqTransformer(torch_model.config)
    for name in ("src_embed", "tgt_embed", "generator"):
        getattr(ours, name).load_state_dict(getattr(torch_model, name).state_dict())
    for i, layer in enumerate(torch_model.transformer.encoder.layers):
        ours.encoder.layers[i] = EncoderLayer.from_torch(layer)
    for i, layer in enumerate(torch_model.transformer.decoder.layers):
        ours.decoder.layers[i] = DecoderLayer.from_torch(layer)
    if torch_model.config.norm_first:
        ours.encoder.norm.load_state_dict(torch_model.transformer.encoder.norm.state_dict())
        ours.decoder.norm.load_state_dict(torch_model.transformer.decoder.norm.state_dict())
    return ours.train(torch_model.training)
