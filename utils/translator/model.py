"""The encoder-decoder Transformer of the paper, assembled from the `utils` blocks."""

import math

import torch
from torch import nn

from utils import validation
from utils.blocks import Decoder, Encoder
from utils.masks import causal_mask, combine_masks, padding_mask
from utils.positional import sinusoidal_encoding

CONFIG_KEYS = ("src_vocab_size", "tgt_vocab_size", "d_model", "num_heads", "d_ff", "num_layers",
               "dropout", "max_len", "pad_id", "norm_first")


class Seq2SeqTransformer(nn.Module):
    """Embeddings x sqrt(d_model) + sinusoidal PE -> Encoder / Decoder -> linear projection to target logits."""

    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=64, num_heads=4, d_ff=256, num_layers=2,
                 dropout=0.0, max_len=64, pad_id=0, norm_first=False):
        super().__init__()
        for name, value in (("src_vocab_size", src_vocab_size), ("tgt_vocab_size", tgt_vocab_size),
                            ("num_heads", num_heads), ("d_ff", d_ff), ("num_layers", num_layers),
                            ("max_len", max_len)):
            validation.positive_int(name, value)
        validation.even_positive_int("d_model", d_model)
        if d_model % num_heads:
            raise ValueError(f"d_model must be divisible by num_heads, got d_model={d_model}, num_heads={num_heads}")
        if not isinstance(dropout, (int, float)) or isinstance(dropout, bool) or not 0 <= dropout < 1:
            raise ValueError(f"dropout must be a number in [0, 1), got {dropout!r}")
        if isinstance(pad_id, bool) or not isinstance(pad_id, int) or not 0 <= pad_id < min(src_vocab_size, tgt_vocab_size):
            raise ValueError(f"pad_id must be an int id inside both vocabularies, got {pad_id!r}")
        self.config = {"src_vocab_size": src_vocab_size, "tgt_vocab_size": tgt_vocab_size, "d_model": d_model,
                       "num_heads": num_heads, "d_ff": d_ff, "num_layers": num_layers, "dropout": float(dropout),
                       "max_len": max_len, "pad_id": pad_id, "norm_first": bool(norm_first)}
        self.d_model, self.pad_id, self.max_len = d_model, pad_id, max_len
        self.src_embed = nn.Embedding(src_vocab_size, d_model)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, d_model)
        for emb in (self.src_embed, self.tgt_embed):
            # std d_model^-0.5, so that after the x sqrt(d_model) scaling embeddings are about as large as
            # the PE (entries in [-1, 1]); torch's default N(0, 1) would drown the positions 8x at d_model=64.
            nn.init.normal_(emb.weight, std=d_model ** -0.5)
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model), persistent=False)  # (max_len, d_model)
        self.dropout = nn.Dropout(dropout)
        self.encoder = Encoder(d_model, num_heads, d_ff, num_layers, dropout, norm_first)
        self.decoder = Decoder(d_model, num_heads, d_ff, num_layers, dropout, norm_first)
        self.generator = nn.Linear(d_model, tgt_vocab_size)  # d_model -> logits over the Neo vocabulary

    def _check_tokens(self, name, tokens, vocab_size):
        validation.tensor(name, tokens)
        if tokens.dtype not in (torch.long, torch.int, torch.int16, torch.int8, torch.uint8):
            raise ValueError(f"{name} must be an integer tensor of token ids, got dtype {tokens.dtype}")
        if tokens.dim() != 2 or tokens.shape[1] == 0:
            raise ValueError(f"{name} must have shape (batch, seq) with seq >= 1, got {tuple(tokens.shape)}")
        if tokens.shape[1] > self.max_len:
            raise ValueError(f"{name} has {tokens.shape[1]} positions, more than max_len={self.max_len}")
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocab_size):
            raise ValueError(f"{name} ids must be in [0, {vocab_size}), got min {int(tokens.min())} "
                             f"and max {int(tokens.max())}")

    def _embed(self, embedding, tokens):
        x = embedding(tokens) * math.sqrt(self.d_model)  # (batch, T, d_model), scaled as in the paper
        return self.dropout(x + self.pe[:tokens.shape[1]])  # (batch, T, d_model)

    def _need_weights(self, need_weights):
        """None means: keep the attention weights in eval mode (for the maps), train on the fused kernel."""
        return not self.training if need_weights is None else validation.boolean("need_weights", need_weights)

    def encode(self, src, need_weights=None):
        """src (batch, S) ids -> (memory (batch, S, d_model), src_mask (batch, 1, S): True on real tokens)."""
        self._check_tokens("src", src, self.config["src_vocab_size"])
        src_mask = padding_mask(src, self.pad_id)  # (batch, 1, S)
        memory = self.encoder(self._embed(self.src_embed, src), src_mask, self._need_weights(need_weights))
        return memory, src_mask

    def decode(self, tgt, memory, src_mask, need_weights=None):
        """tgt (batch, T) ids seen so far -> logits (batch, T, tgt_vocab): position t predicts token t + 1."""
        self._check_tokens("tgt", tgt, self.config["tgt_vocab_size"])
        T = tgt.shape[1]
        tgt_mask = combine_masks(causal_mask(T, device=tgt.device), padding_mask(tgt, self.pad_id))  # (batch, T, T)
        h = self.decoder(self._embed(self.tgt_embed, tgt), memory, tgt_mask, src_mask,
                         self._need_weights(need_weights))  # (batch, T, d_model)
        return self.generator(h)  # (batch, T, tgt_vocab)

    def forward(self, src, tgt, need_weights=None):
        """Teacher forcing: logits (batch, T, tgt_vocab) for every position of tgt at once.

        need_weights (default: not self.training) keeps every layer's attention weights for
        cross_attention(); without them attention runs torch's fused kernel (same logits, faster).
        """
        memory, src_mask = self.encode(src, need_weights)  # (batch, S, d_model), (batch, 1, S)
        if tgt.shape[0] != src.shape[0]:
            raise ValueError(f"src and tgt must have the same batch size, got {src.shape[0]} and {tgt.shape[0]}")
        return self.decode(tgt, memory, src_mask, need_weights)

    def cross_attention(self):
        """The last forward's cross-attention weights, one (batch, num_heads, T_tgt, T_src) tensor per layer
        (None after a forward without weights, e.g. in training mode)."""
        return [layer.cross_attn_weights for layer in self.decoder.layers]


def parameter_counts(model):
    """Number of parameters per part of the model: embeddings, encoder, decoder, generator."""
    parts = {"source embedding": model.src_embed, "target embedding": model.tgt_embed,
             "encoder": model.encoder, "decoder": model.decoder, "output projection": model.generator}
    return {name: sum(p.numel() for p in part.parameters()) for name, part in parts.items()}
