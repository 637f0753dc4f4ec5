"""The same translator built on torch.nn.Transformer, to compare outputs (copied weights) and step times: dropout
in the same places (embeddings + PE, attention weights, feed-forward, residual), so that with copied weights the
two give the same logits in eval mode and, with every rate 1, in training mode too.

nn.Transformer ends its encoder and its decoder stack with one more LayerNorm, also in its post-norm form;
the paper's post-norm model has none after the last sub-layer, so TorchSeq2Seq removes them
(with_final_norms puts them back, to show what they change).
"""

import copy
import math
import warnings

import torch
from torch import nn

from utils import validation
from utils.blocks import DecoderLayer, EncoderLayer
from utils.masks import causal_mask
from utils.translator.model import Seq2SeqTransformer, TranslatorConfig


class TorchSeq2Seq(nn.Module):
    """Embeddings x sqrt(d_model) + sinusoidal PE, dropout -> torch.nn.Transformer (post-norm: no final norms) ->
    linear."""

    def __init__(self, config):
        super().__init__()
        c = self.config = validation.instance("config", config, TranslatorConfig)
        self.d_model, self.pad_id = c.d_model, c.pad_id
        self.src_embed = nn.Embedding(c.src_vocab_size, c.d_model)
        self.tgt_embed = nn.Embedding(c.tgt_vocab_size, c.d_model)
        self.register_buffer("pe", Seq2SeqTransformer(c).pe.clone(), persistent=False)
        self.dropout = nn.Dropout(c.dropout)  # on the sums of embeddings and PE (section 5.4), as in ours
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
        x = self.dropout(self.src_embed(src) * math.sqrt(self.d_model) + self.pe[: src.shape[1]])  # (batch, S, d_model)
        y = self.dropout(self.tgt_embed(tgt) * math.sqrt(self.d_model) + self.pe[: tgt.shape[1]])  # (batch, T, d_model)
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


def _has_final_norms(torch_model):
    return torch_model.transformer.encoder.norm is not None or torch_model.transformer.decoder.norm is not None


def with_final_norms(torch_model):
    """A copy of a post-norm TorchSeq2Seq with nn.Transformer's final LayerNorms put back (gamma = 1, beta = 0,
    as nn.Transformer builds them): what nn.Transformer computes with these weights."""
    validation.instance("torch_model", torch_model, TorchSeq2Seq)
    if torch_model.config.norm_first or _has_final_norms(torch_model):
        raise ValueError(
            "torch_model must be a post-norm TorchSeq2Seq without final norms (norm_first=False), got one with "
            f"norm_first={torch_model.config.norm_first} whose stacks already end with a LayerNorm"
        )
    kept = copy.deepcopy(torch_model)
    eps = torch_model.transformer.encoder.layers[0].norm1.eps
    kept.transformer.encoder.norm = nn.LayerNorm(torch_model.d_model, eps=eps)
    kept.transformer.decoder.norm = nn.LayerNorm(torch_model.d_model, eps=eps)
    return kept


def randomize_layer_norms(model, seed):
    """Set every LayerNorm's gamma to U(0.5, 1.5) and beta to U(-0.5, 0.5), in place, and return the model: away
    from the fresh gamma = 1, beta = 0, as training moves them (a fresh norm after a norm changes little: only eps)."""
    validation.instance("model", model, nn.Module, "torch.nn.Module")
    g = torch.Generator().manual_seed(validation.seed("seed", seed))
    norms = [m for m in model.modules() if isinstance(m, nn.LayerNorm)]
    if not norms:
        raise ValueError(f"model must contain at least one nn.LayerNorm, got a {type(model).__name__} without one")
    with torch.no_grad():
        for norm in norms:
            norm.weight.copy_(torch.rand(norm.weight.shape, generator=g) + 0.5)  # (d_model,)
            if norm.bias is not None:
                norm.bias.copy_(torch.rand(norm.bias.shape, generator=g) - 0.5)  # (d_model,)
    return model


def copy_into_ours(torch_model):
    """A Seq2SeqTransformer with exactly the weights of a TorchSeq2Seq."""
    validation.instance("torch_model", torch_model, TorchSeq2Seq)
    if not torch_model.config.norm_first and _has_final_norms(torch_model):
        raise ValueError(
            "torch_model has nn.Transformer's final norms, which our post-norm model (as in the paper) does not "
            "have: copy a TorchSeq2Seq without them, not one from with_final_norms"
        )
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
