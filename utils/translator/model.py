"""The encoder-decoder Transformer of the paper, assembled from the `utils` blocks."""

import contextlib
import math

from torch import nn

from utils import validation
from utils.blocks import Decoder, Encoder
from utils.masks import causal_mask, combine_masks, padding_mask
from utils.positional import sinusoidal_encoding
from utils.translator.config import TranslatorConfig


class Seq2SeqTransformer(nn.Module):
    """Embeddings x sqrt(d_model) + sinusoidal PE -> Encoder / Decoder -> linear projection to target logits."""

    def __init__(self, config):
        super().__init__()
        c = self.config = validation.instance("config", config, TranslatorConfig)
        d_model = c.d_model
        self.d_model, self.pad_id, self.max_len = d_model, c.pad_id, c.max_len
        self.src_embed = nn.Embedding(c.src_vocab_size, d_model)
        self.tgt_embed = nn.Embedding(c.tgt_vocab_size, d_model)
        for emb in (self.src_embed, self.tgt_embed):
            # std d_model^-0.5, so that after the x sqrt(d_model) scaling embeddings have std 1, the same order as
            # the PE's entries (which lie in [-1, 1]); torch's default N(0, 1) would make them sqrt(d_model) times
            # larger (8x at d_model=64).
            nn.init.normal_(emb.weight, std=d_model**-0.5)
        self.register_buffer("pe", sinusoidal_encoding(c.max_len, d_model), persistent=False)  # (max_len, d_model)
        self.dropout = nn.Dropout(c.dropout)
        self.encoder = Encoder(d_model, c.num_heads, c.d_ff, c.num_layers, c.dropout, c.norm_first)
        self.decoder = Decoder(d_model, c.num_heads, c.d_ff, c.num_layers, c.dropout, c.norm_first)
        self.generator = nn.Linear(d_model, c.tgt_vocab_size)  # d_model -> logits over the Neo vocabulary

    def _check_tokens(self, name, tokens, vocab_size):
        validation.token_ids(name, tokens, vocab_size)
        validation.shape(name, tokens, ("batch", "seq"))
        validation.positive_int(f"{name}.shape[1] (seq)", tokens.shape[1])
        validation.max_positions(name, tokens, self.max_len)

    def _embed(self, embedding, tokens):
        x = embedding(tokens) * math.sqrt(self.d_model)  # (batch, T, d_model), scaled as in the paper
        return self.dropout(x + self.pe[: tokens.shape[1]])  # (batch, T, d_model)

    def _need_weights(self, need_weights):
        """None means: keep the attention weights in eval mode (for the maps), train on the fused kernel."""
        return not self.training if need_weights is None else validation.boolean("need_weights", need_weights)

    def encode(self, src, need_weights=None):
        """src (batch, S) ids -> (memory (batch, S, d_model), src_mask (batch, 1, S): True on real tokens)."""
        self._check_tokens("src", src, self.config.src_vocab_size)
        src_mask = padding_mask(src, self.pad_id)  # (batch, 1, S)
        memory = self.encoder(self._embed(self.src_embed, src), src_mask, self._need_weights(need_weights))
        return memory, src_mask

    def decode(self, tgt, memory, src_mask, need_weights=None):
        """tgt (batch, T) ids seen so far -> logits (batch, T, tgt_vocab): position t predicts token t + 1."""
        self._check_tokens("tgt", tgt, self.config.tgt_vocab_size)
        T = tgt.shape[1]
        tgt_mask = combine_masks(causal_mask(T, device=tgt.device), padding_mask(tgt, self.pad_id))  # (batch, T, T)
        h = self.decoder(
            self._embed(self.tgt_embed, tgt), memory, tgt_mask, src_mask, self._need_weights(need_weights)
        )  # (batch, T, d_model)
        return self.generator(h)  # (batch, T, tgt_vocab)

    def forward(self, src, tgt, need_weights=None):
        """Teacher forcing: logits (batch, T, tgt_vocab) for every position of tgt at once.

        need_weights (default: not self.training) keeps every layer's attention weights for
        cross_attention(); without them attention runs torch's fused kernel (same logits, faster).
        """
        memory, src_mask = self.encode(src, need_weights)  # (batch, S, d_model), (batch, 1, S)
        validation.tensor("tgt", tgt, min_dim=1)
        validation.shape("tgt", tgt, (("batch of src", src.shape[0]), "T"))
        return self.decode(tgt, memory, src_mask, need_weights)

    def cross_attention(self):
        """The last forward's cross-attention weights, one (batch, num_heads, T_tgt, T_src) tensor per layer
        (None after a forward without weights, e.g. in training mode)."""
        return [layer.cross_attn_weights for layer in self.decoder.layers]


def parameter_counts(model):
    """Number of parameters per part of the model: embeddings, encoder, decoder, generator."""
    validation.instance("model", model, Seq2SeqTransformer)
    parts = {
        "source embedding": model.src_embed,
        "target embedding": model.tgt_embed,
        "encoder": model.encoder,
        "decoder": model.decoder,
        "output projection": model.generator,
    }
    return {name: sum(p.numel() for p in part.parameters()) for name, part in parts.items()}


@contextlib.contextmanager
def eval_mode(model):
    """Inside the block `model` is in eval mode (no dropout); afterwards every submodule gets back the mode it
    had, even when the block raises."""
    validation.instance("model", model, nn.Module, "torch.nn.Module")
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        yield model
    finally:
        for m, training in modes:
            m.training = training
