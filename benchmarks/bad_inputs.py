"""Bad inputs tried on every public helper of the model modules, each answer classified, counts as JSON.

clear: a ValueError or TypeError whose message names the argument (as a whole word); obscure: any other
exception, or a message that does not name the argument; silent: no exception at all;
memory: a MemoryError (the process runs under an address-space limit, so a helper that tries to build a
huge object fails fast instead of filling the machine).

Usage: python benchmarks/bad_inputs.py               # counts as JSON
       python benchmarks/bad_inputs.py --list        # one line per case
       PYTHONPATH=DIR python benchmarks/bad_inputs.py   # the utils of another checkout (e.g. an older commit)
"""

import argparse
import json
import math
import re
import resource
import tempfile
from pathlib import Path

KINDS = ("clear", "obscure", "silent", "memory")


def cases(tmp):
    """(helper, what is wrong, thunk, names): names are the argument names a clear message mentions."""
    import numpy as np
    import torch
    from torch import nn

    from utils import attention, blocks, fast_attention, masks, multihead, positional, subwords
    from utils.figures import translator as figures
    from utils.translator import (
        checkpoint,
        config,
        data,
        decode,
        evaluate,
        grammar,
        model,
        torch_reference,
        train,
        vocab,
    )
    from utils.translator.attention_maps import cross_attention_map

    torch.manual_seed(0)
    r = torch.randn
    nan, inf = math.nan, math.inf
    b = torch.ones(3, 3, dtype=torch.bool)
    src_v, tgt_v = vocab.Vocab(grammar.source_words()), vocab.Vocab(grammar.target_words())
    bpe = subwords.train([" ".join(grammar.target_words())], 20)
    sub_v = vocab.SubwordVocab(bpe)
    tiny_ds = data.make_dataset(seed=0, n_train=5, n_val=1, n_test=1, n_test_unseen=1)
    sub_tiny = data.with_subword_targets(tiny_ds, 5)
    drop_tiny = data.DropoutTargets(tiny_ds.train, sub_tiny.tgt_vocab, 0.1)
    gen = torch.Generator().manual_seed(0)
    cfg = config.TranslatorConfig(len(src_v), len(tgt_v), d_model=8, num_heads=2, d_ff=16, num_layers=1, max_len=16)
    tm = model.Seq2SeqTransformer(cfg).eval()
    src = torch.tensor([src_v.encode("the dog sees a cat".split(), eos=True)])  # (1, S)
    memory, src_mask = tm.encode(src)
    cache = fast_attention.start_cache(tm, memory, src_mask)
    ds_pairs = [data.make_pair("the dog sees a cat".split())]
    mha = multihead.MultiHeadAttention(8, 2).eval()
    enc = blocks.EncoderLayer(8, 2, 16).eval()
    dec = blocks.DecoderLayer(8, 2, 16).eval()
    ff = blocks.FeedForward(8, 16)

    def with_nan(shape, where):
        t = r(*shape)
        t[where] = nan
        return t

    def with_inf(shape, where):
        t = r(*shape)
        t[where] = inf
        return t

    # checkpoint files: a good one, then each kind of damage
    good = Path(tmp) / "good.pt"
    checkpoint.save_checkpoint(good, tm, src_v, tgt_v)
    raw = good.read_bytes()
    files = {}
    files["empty"] = b""
    files["text"] = b"this is a text file, not a checkpoint\n"
    files["truncated"] = raw[: len(raw) // 2]
    weight = tm.generator.bias.detach().numpy().tobytes()
    at = raw.find(weight) + len(weight) // 2
    files["flipped"] = raw[:at] + bytes([raw[at] ^ 0x01]) + raw[at + 1 :]
    stored = torch.load(good, weights_only=True)
    short = dict(stored, src_vocab=stored["src_vocab"][:-1])
    if hasattr(checkpoint, "content_digest"):
        short["sha256"] = checkpoint.content_digest(short)
    old = dict(stored, format="attention-by-hand translator v1")
    for name, content in files.items():
        (Path(tmp) / f"{name}.pt").write_bytes(content)
    torch.save(short, Path(tmp) / "short.pt")
    torch.save(old, Path(tmp) / "old.pt")

    def load(name):
        return lambda: checkpoint.load_checkpoint(Path(tmp) / f"{name}.pt")

    return [
        # --- positional ---
        ("angular_frequencies", "odd d_model", lambda: positional.angular_frequencies(7), ["d_model"]),
        ("angular_frequencies", "base=inf", lambda: positional.angular_frequencies(8, base=inf), ["base"]),
        ("angular_frequencies", "base=0.5", lambda: positional.angular_frequencies(8, base=0.5), ["base"]),
        ("angular_frequencies", "base=nan", lambda: positional.angular_frequencies(8, base=nan), ["base"]),
        ("angular_frequencies", "d_model='8'", lambda: positional.angular_frequencies("8"), ["d_model"]),
        ("sinusoidal_encoding", "max_len=0", lambda: positional.sinusoidal_encoding(0, 8), ["max_len"]),
        ("sinusoidal_encoding", "base=inf", lambda: positional.sinusoidal_encoding(10, 8, base=inf), ["base"]),
        ("sinusoidal_encoding", "base=-2", lambda: positional.sinusoidal_encoding(10, 8, base=-2), ["base"]),
        ("sinusoidal_encoding", "10**7 x 512", lambda: positional.sinusoidal_encoding(10**7, 512), ["max_len"]),
        (
            "sinusoidal_encoding",
            "int dtype",
            lambda: positional.sinusoidal_encoding(4, 8, dtype=torch.int64),
            ["dtype"],
        ),
        ("PositionalEncoding", "max_len=0", lambda: positional.PositionalEncoding(8, max_len=0), ["max_len"]),
        ("PositionalEncoding", "dropout=1.5", lambda: positional.PositionalEncoding(8, dropout=1.5), ["dropout"]),
        ("PositionalEncoding", "base=inf", lambda: positional.PositionalEncoding(8, base=inf), ["base"]),
        ("PositionalEncoding", "x of d 6", lambda: positional.PositionalEncoding(8)(r(2, 5, 6)), ["x"]),
        ("PositionalEncoding", "x too long", lambda: positional.PositionalEncoding(8, 4)(r(1, 5, 8)), ["x"]),
        ("PositionalEncoding", "int x", lambda: positional.PositionalEncoding(8)(torch.ones(2, 5, 8).long()), ["x"]),
        ("relative_rotation", "k=inf", lambda: positional.relative_rotation(inf, 8), ["k"]),
        ("relative_rotation", "odd d_model", lambda: positional.relative_rotation(1, 7), ["d_model"]),
        ("relative_rotation", "d_model=10**6", lambda: positional.relative_rotation(1, 10**6), ["d_model"]),
        ("LearnedPositionalEncoding", "max_len=0", lambda: positional.LearnedPositionalEncoding(0, 8), ["max_len"]),
        (
            "LearnedPositionalEncoding",
            "10**9 x 512",
            lambda: positional.LearnedPositionalEncoding(10**9, 512),
            ["max_len"],
        ),
        (
            "LearnedPositionalEncoding",
            "x too long",
            lambda: positional.LearnedPositionalEncoding(4, 8)(r(1, 6, 8)),
            ["x"],
        ),
        (
            "LearnedPositionalEncoding",
            "clamp='no'",
            lambda: positional.LearnedPositionalEncoding(4, 8)(r(1, 3, 8), "no"),
            ["clamp"],
        ),
        ("rotary_angles", "NaN position", lambda: positional.rotary_angles([0, nan], 8), ["positions"]),
        ("rotary_angles", "2-D positions", lambda: positional.rotary_angles([[0, 1]], 8), ["positions"]),
        ("apply_rotary", "odd last dim", lambda: positional.apply_rotary(r(4, 7)), ["x"]),
        ("apply_rotary", "positions of length 2", lambda: positional.apply_rotary(r(4, 8), [0, 1]), ["positions"]),
        ("apply_rotary", "base=0", lambda: positional.apply_rotary(r(4, 8), base=0), ["base"]),
        ("apply_rotary", "1-D x", lambda: positional.apply_rotary(r(8)), ["x"]),
        ("sinusoidal_encoding_2d", "d_model=6", lambda: positional.sinusoidal_encoding_2d(2, 2, 6), ["d_model"]),
        ("sinusoidal_encoding_2d", "height=0", lambda: positional.sinusoidal_encoding_2d(0, 2, 8), ["height"]),
        (
            "sinusoidal_encoding_2d",
            "10**5 x 10**5",
            lambda: positional.sinusoidal_encoding_2d(10**5, 10**5, 8),
            ["height", "width"],
        ),
        # --- masks ---
        ("causal_mask", "n=0", lambda: masks.causal_mask(0), ["n"]),
        ("causal_mask", "n=2.5", lambda: masks.causal_mask(2.5), ["n"]),
        ("causal_mask", "n=10**6", lambda: masks.causal_mask(10**6), ["n"]),
        ("padding_mask", "float tokens", lambda: masks.padding_mask(torch.tensor([[1.0, 0.0]]), 0), ["tokens"]),
        ("padding_mask", "pad_id=-1", lambda: masks.padding_mask(torch.tensor([[1, 0]]), -1), ["pad_id"]),
        ("padding_mask", "list tokens", lambda: masks.padding_mask([[1, 0]], 0), ["tokens"]),
        ("combine_masks", "shapes (3,3), (4,4)", lambda: masks.combine_masks(b, torch.ones(4, 4).bool()), ["masks"]),
        ("combine_masks", "float mask", lambda: masks.combine_masks(b, torch.ones(3, 3)), ["masks"]),
        ("combine_masks", "a str", lambda: masks.combine_masks("a"), ["masks"]),
        # --- attention ---
        (
            "scaled_dot_product_attention",
            "d_k mismatch",
            lambda: attention.scaled_dot_product_attention(r(3, 4), r(3, 5), r(3, 5)),
            ["q", "k"],
        ),
        (
            "scaled_dot_product_attention",
            "T_k mismatch",
            lambda: attention.scaled_dot_product_attention(r(3, 4), r(3, 4), r(2, 4)),
            ["k", "v"],
        ),
        (
            "scaled_dot_product_attention",
            "int q",
            lambda: attention.scaled_dot_product_attention(*(torch.ones(3, 4).long(),) * 3),
            ["q"],
        ),
        (
            "scaled_dot_product_attention",
            "dropout_p=1.5",
            lambda: attention.scaled_dot_product_attention(r(3, 4), r(3, 4), r(3, 4), dropout_p=1.5),
            ["dropout_p"],
        ),
        (
            "scaled_dot_product_attention",
            "float mask",
            lambda: attention.scaled_dot_product_attention(r(3, 4), r(3, 4), r(3, 4), torch.ones(3, 3)),
            ["mask"],
        ),
        (
            "scaled_dot_product_attention",
            "mask (2, 3) for (3, 3)",
            lambda: attention.scaled_dot_product_attention(r(3, 4), r(3, 4), r(3, 4), torch.ones(2, 3).bool()),
            ["mask"],
        ),
        (
            "scaled_dot_product_attention",
            "(batch, T_k) mask, batch = T_q",
            lambda: attention.scaled_dot_product_attention(r(3, 3, 4), r(3, 5, 4), r(3, 5, 4), torch.ones(3, 5).bool()),
            ["mask"],
        ),
        (
            "scaled_dot_product_attention",
            "(batch, 1, T_k) mask on 4-D q, batch = heads",
            lambda: attention.scaled_dot_product_attention(
                r(2, 2, 3, 4), r(2, 2, 5, 4), r(2, 2, 5, 4), torch.ones(2, 1, 5).bool()
            ),
            ["mask"],
        ),
        (
            "scaled_dot_product_attention",
            "float64 q, float32 k",
            lambda: attention.scaled_dot_product_attention(r(3, 4).double(), r(3, 4), r(3, 4)),
            ["q", "k"],
        ),
        (
            "scaled_dot_product_attention",
            "q a list",
            lambda: attention.scaled_dot_product_attention([[1.0]], r(1, 1), r(1, 1)),
            ["q"],
        ),
        # --- multihead ---
        ("split_heads", "d_model 7, 2 heads", lambda: multihead.split_heads(r(2, 3, 7), 2), ["num_heads", "x"]),
        ("split_heads", "2-D x", lambda: multihead.split_heads(r(3, 8), 2), ["x"]),
        ("split_heads", "num_heads=0", lambda: multihead.split_heads(r(2, 3, 8), 0), ["num_heads"]),
        ("split_heads", "x a str", lambda: multihead.split_heads("x", 2), ["x"]),
        ("merge_heads", "3-D x", lambda: multihead.merge_heads(r(2, 3, 4)), ["x"]),
        ("MultiHeadAttention", "8 not divisible by 3", lambda: multihead.MultiHeadAttention(8, 3), ["d_model"]),
        ("MultiHeadAttention", "dropout=2.0", lambda: multihead.MultiHeadAttention(8, 2, dropout=2.0), ["dropout"]),
        ("MultiHeadAttention", "dropout=-0.5", lambda: multihead.MultiHeadAttention(8, 2, dropout=-0.5), ["dropout"]),
        ("MultiHeadAttention", "bias='yes'", lambda: multihead.MultiHeadAttention(8, 2, bias="yes"), ["bias"]),
        ("MultiHeadAttention", "d_model=10**6", lambda: multihead.MultiHeadAttention(10**6, 1), ["d_model"]),
        ("MultiHeadAttention", "float64 input", lambda: mha(*(r(2, 3, 8).double(),) * 3), ["query"]),
        ("MultiHeadAttention", "2-D input", lambda: mha(*(r(3, 8),) * 3), ["query"]),
        (
            "MultiHeadAttention",
            "(batch, T_k) mask, batch = T_q",
            lambda: mha(r(3, 3, 8), r(3, 5, 8), r(3, 5, 8), torch.ones(3, 5).bool()),
            ["mask"],
        ),
        (
            "MultiHeadAttention",
            "need_weights='no'",
            lambda: mha(*(r(1, 3, 8),) * 3, need_weights="no"),
            ["need_weights"],
        ),
        ("MultiHeadAttention.from_torch", "a str", lambda: multihead.MultiHeadAttention.from_torch("m"), ["m"]),
        # --- blocks ---
        ("FeedForward", "d_ff=0", lambda: blocks.FeedForward(8, 0), ["d_ff"]),
        ("FeedForward", "d_model=0", lambda: blocks.FeedForward(0, 8), ["d_model"]),
        ("FeedForward", "dropout=2", lambda: blocks.FeedForward(8, 16, dropout=2), ["dropout"]),
        ("FeedForward", "d_model='8'", lambda: blocks.FeedForward("8", 16), ["d_model"]),
        ("FeedForward", "d_model=10**6, d_ff=10**6", lambda: blocks.FeedForward(10**6, 10**6), ["d_model", "d_ff"]),
        ("FeedForward", "x of d 7", lambda: ff(r(2, 3, 7)), ["x"]),
        ("FeedForward", "float64 x", lambda: ff(r(2, 3, 8).double()), ["x"]),
        ("EncoderLayer", "eps=-1", lambda: blocks.EncoderLayer(8, 2, 16, eps=-1)(r(1, 3, 8)), ["eps"]),
        ("EncoderLayer", "eps=0", lambda: blocks.EncoderLayer(8, 2, 16, eps=0), ["eps"]),
        ("EncoderLayer", "norm_first='yes'", lambda: blocks.EncoderLayer(8, 2, 16, norm_first="yes"), ["norm_first"]),
        ("EncoderLayer", "dropout=2", lambda: blocks.EncoderLayer(8, 2, 16, dropout=2), ["dropout"]),
        (
            "EncoderLayer",
            "pre-norm, x of d 7",
            lambda: blocks.EncoderLayer(8, 2, 16, norm_first=True)(r(2, 3, 7)),
            ["x"],
        ),
        ("EncoderLayer", "float mask", lambda: enc(r(2, 3, 8), torch.ones(3, 3)), ["mask"]),
        ("EncoderLayer", "need_weights=1", lambda: enc(r(2, 3, 8), None, 1), ["need_weights"]),
        ("DecoderLayer", "eps=nan", lambda: blocks.DecoderLayer(8, 2, 16, eps=nan), ["eps"]),
        ("DecoderLayer", "memory of d 6", lambda: dec(r(1, 3, 8), r(1, 4, 6)), ["memory"]),
        ("DecoderLayer", "memory of another batch", lambda: dec(r(2, 3, 8), r(3, 4, 8)), ["memory"]),
        ("Encoder", "num_layers=0", lambda: blocks.Encoder(8, 2, 16, 0), ["num_layers"]),
        ("Encoder", "num_layers=-1", lambda: blocks.Encoder(8, 2, 16, -1), ["num_layers"]),
        ("Encoder", "num_layers=2.5", lambda: blocks.Encoder(8, 2, 16, 2.5), ["num_layers"]),
        ("Decoder", "num_layers=0", lambda: blocks.Decoder(8, 2, 16, 0), ["num_layers"]),
        ("Decoder", "norm_first=None", lambda: blocks.Decoder(8, 2, 16, 1, norm_first=None), ["norm_first"]),
        ("Encoder", "x of d 7", lambda: blocks.Encoder(8, 2, 16, 1)(r(1, 3, 7)), ["x"]),
        ("EncoderLayer.from_torch", "a str", lambda: blocks.EncoderLayer.from_torch("layer"), ["layer"]),
        ("Encoder.from_torch", "a Linear", lambda: blocks.Encoder.from_torch(nn.Linear(2, 2)), ["stack"]),
        # --- fast_attention ---
        (
            "online_softmax",
            "[1, inf, 0]",
            lambda: fast_attention.online_softmax(torch.tensor([1.0, inf, 0.0])),
            ["scores"],
        ),
        ("online_softmax", "[1, nan]", lambda: fast_attention.online_softmax(torch.tensor([1.0, nan])), ["scores"]),
        ("online_softmax", "block_size=0", lambda: fast_attention.online_softmax(r(3), block_size=0), ["block_size"]),
        ("online_softmax", "int scores", lambda: fast_attention.online_softmax(torch.ones(3).long()), ["scores"]),
        (
            "online_softmax",
            "mask (2, 3) for scores (3, 3)",
            lambda: fast_attention.online_softmax(r(3, 3), torch.ones(2, 3).bool()),
            ["mask"],
        ),
        ("online_softmax_update", "m='a'", lambda: fast_attention.online_softmax_update("a", 0.0, 1.0), ["m"]),
        ("online_softmax_update", "l=-1", lambda: fast_attention.online_softmax_update(0.0, -1.0, 1.0), ["l"]),
        ("online_softmax_update", "x=nan", lambda: fast_attention.online_softmax_update(0.0, 1.0, nan), ["x"]),
        ("online_softmax_update", "x=+inf", lambda: fast_attention.online_softmax_update(0.0, 1.0, inf), ["x"]),
        (
            "online_softmax_update",
            "shapes (2,) and (3,)",
            lambda: fast_attention.online_softmax_update(torch.zeros(2), 1.0, torch.zeros(3)),
            ["m", "x"],
        ),
        (
            "tiled_attention",
            "NaN in q",
            lambda: fast_attention.tiled_attention(with_nan((4, 8), (1, 0)), r(4, 8), r(4, 8), 2),
            ["q"],
        ),
        (
            "tiled_attention",
            "NaN in k",
            lambda: fast_attention.tiled_attention(r(4, 8), with_nan((4, 8), (2, 0)), r(4, 8), 2),
            ["k"],
        ),
        (
            "tiled_attention",
            "inf in q",
            lambda: fast_attention.tiled_attention(with_inf((4, 8), (1, 0)), r(4, 8), r(4, 8), 2),
            ["q"],
        ),
        (
            "tiled_attention",
            "block_size=0",
            lambda: fast_attention.tiled_attention(r(4, 8), r(4, 8), r(4, 8), 0),
            ["block_size"],
        ),
        (
            "tiled_attention",
            "causal='yes'",
            lambda: fast_attention.tiled_attention(r(4, 8), r(4, 8), r(4, 8), causal="yes"),
            ["causal"],
        ),
        (
            "tiled_attention",
            "batch dims differ",
            lambda: fast_attention.tiled_attention(r(2, 4, 8), r(4, 8), r(4, 8)),
            ["q", "k"],
        ),
        ("tiled_attention", "no key", lambda: fast_attention.tiled_attention(r(4, 8), r(0, 8), r(0, 8)), ["k"]),
        ("causal_skipped_tiles", "T=0", lambda: fast_attention.causal_skipped_tiles(0, 4), ["T"]),
        ("tile_states", "20000 tiles a side", lambda: fast_attention.tile_states(20000, 1, True), ["T", "block_size"]),
        ("tile_states", "block_size=0", lambda: fast_attention.tile_states(8, 0, True), ["block_size"]),
        (
            "grouped_query_attention",
            "0 key/value heads",
            lambda: fast_attention.grouped_query_attention(r(1, 4, 3, 8), r(1, 0, 3, 8), r(1, 0, 3, 8)),
            ["k"],
        ),
        (
            "grouped_query_attention",
            "3 kv heads for 4",
            lambda: fast_attention.grouped_query_attention(r(1, 4, 3, 8), r(1, 3, 3, 8), r(1, 3, 3, 8)),
            ["k"],
        ),
        (
            "grouped_query_attention",
            "3-D q",
            lambda: fast_attention.grouped_query_attention(r(4, 3, 8), r(1, 1, 3, 8), r(1, 1, 3, 8)),
            ["q"],
        ),
        ("kv_cache_bytes", "num_layers=0", lambda: fast_attention.kv_cache_bytes(0, 1, 8, 10), ["num_layers"]),
        ("KVCache.nbytes", "part='both'", lambda: cache.nbytes("both"), ["part"]),
        ("start_cache", "model a str", lambda: fast_attention.start_cache("model", memory, src_mask), ["model"]),
        ("start_cache", "2-D memory", lambda: fast_attention.start_cache(tm, memory[0], src_mask), ["memory"]),
        ("decode_step", "cache a str", lambda: fast_attention.decode_step(tm, "cache", torch.tensor([1])), ["cache"]),
        (
            "decode_step",
            "token id 999",
            lambda: fast_attention.decode_step(
                tm, fast_attention.start_cache(tm, memory, src_mask), torch.tensor([999])
            ),
            ["tokens"],
        ),
        ("greedy_steps", "bos_id=-1", lambda: fast_attention.greedy_steps(tm, src, -1, 2), ["bos_id"]),
        ("greedy_steps", "steps=0", lambda: fast_attention.greedy_steps(tm, src, 1, 0), ["steps"]),
        ("greedy_steps", "steps=100", lambda: fast_attention.greedy_steps(tm, src, 1, 100), ["steps"]),
        ("greedy_steps", "float src", lambda: fast_attention.greedy_steps(tm, src.float(), 1, 2), ["src"]),
        (
            "time_per_token",
            "repeats=0",
            lambda: fast_attention.time_per_token(tm, src, 1, 2, False, repeats=0),
            ["repeats"],
        ),
        ("peak_tensor_bytes", "fn=5", lambda: fast_attention.peak_tensor_bytes(5), ["fn"]),
        ("loglog_slope", "negative y", lambda: fast_attention.loglog_slope([1, 2], [1, -1]), ["y"]),
        # --- sub-words ---
        ("subwords.train", "corpus a str", lambda: subwords.train("lo kano", 3), ["corpus"]),
        ("subwords.train", "empty corpus", lambda: subwords.train([], 3), ["corpus"]),
        ("subwords.train", "blank corpus", lambda: subwords.train([" "], 3), ["corpus"]),
        ("subwords.train", "a sentence with </w>", lambda: subwords.train(["lo</w>"], 3), ["corpus"]),
        ("subwords.train", "num_merges=-1", lambda: subwords.train(["lo"], -1), ["num_merges"]),
        ("subwords.train", "num_merges=1.5", lambda: subwords.train(["lo"], 1.5), ["num_merges"]),
        ("subwords.encode", "bpe a list", lambda: subwords.encode([], "lo"), ["bpe"]),
        ("subwords.encode", "text a list", lambda: subwords.encode(bpe, ["lo"]), ["text"]),
        ("subwords.encode", "a symbol never seen", lambda: subwords.encode(bpe, "lo kanoz"), ["text"]),
        ("subwords.encode", "dropout=1.5", lambda: subwords.encode(bpe, "lo", 1.5, gen), ["dropout"]),
        ("subwords.encode", "dropout='0.1'", lambda: subwords.encode(bpe, "lo", "0.1", gen), ["dropout"]),
        ("subwords.encode", "dropout without a generator", lambda: subwords.encode(bpe, "lo", 0.1), ["generator"]),
        ("subwords.encode", "generator=0", lambda: subwords.encode(bpe, "lo", 0.1, 0), ["generator"]),
        ("subwords.encode_word", "dropout=nan", lambda: subwords.encode_word(bpe, "lo", "w", nan, gen), ["dropout"]),
        (
            "subwords.encode_word",
            "dropout, no generator",
            lambda: subwords.encode_word(bpe, "lo", "w", 0.5),
            ["generator"],
        ),
        ("subwords.decode", "tokens a str", lambda: subwords.decode("lo</w>"), ["tokens"]),
        ("subwords.decode", "a token with a space", lambda: subwords.decode(["l o</w>"]), ["tokens"]),
        ("subwords.word_counts", "corpus=None", lambda: subwords.word_counts(None), ["corpus"]),
        # --- translator ---
        ("TranslatorConfig", "src_vocab_size=0", lambda: config.TranslatorConfig(0, 10), ["src_vocab_size"]),
        (
            "TranslatorConfig",
            "10 not divisible by 3",
            lambda: config.TranslatorConfig(10, 10, d_model=10, num_heads=3),
            ["d_model"],
        ),
        ("TranslatorConfig", "dropout=1.0", lambda: config.TranslatorConfig(10, 10, dropout=1.0), ["dropout"]),
        ("Vocab", "words=5", lambda: vocab.Vocab(5), ["words"]),
        ("Vocab", "duplicates", lambda: vocab.Vocab(["a", "a"]), ["words"]),
        ("Vocab.encode", "a str", lambda: src_v.encode("the cat"), ["words"]),
        ("Vocab.encode", "words=5", lambda: src_v.encode(5), ["words"]),
        ("Vocab.encode", "bos='yes'", lambda: src_v.encode(["the"], bos="yes"), ["bos"]),
        ("Vocab.decode", "id 999", lambda: src_v.decode([999]), ["ids"]),
        ("Vocab.decode", "ids=5", lambda: src_v.decode(5), ["ids"]),
        ("SubwordVocab", "bpe a list", lambda: vocab.SubwordVocab(["lo"]), ["bpe"]),
        ("SubwordVocab.encode", "a str", lambda: sub_v.encode("lo kano"), ["words"]),
        ("SubwordVocab.encode", "two words in one", lambda: sub_v.encode(["lo kano"]), ["words"]),
        ("SubwordVocab.encode", "a symbol never seen", lambda: sub_v.encode(["loz"]), ["words"]),
        ("SubwordVocab.encode", "dropout=-0.1", lambda: sub_v.encode(["lo"], dropout=-0.1, generator=gen), ["dropout"]),
        ("SubwordVocab.encode", "dropout, no generator", lambda: sub_v.encode(["lo"], dropout=0.1), ["generator"]),
        ("SubwordVocab.decode", "id 999", lambda: sub_v.decode([999]), ["ids"]),
        ("DropoutTargets", "pairs empty", lambda: data.DropoutTargets([], sub_tiny.tgt_vocab, 0.1), ["pairs"]),
        ("DropoutTargets", "a word-level vocab", lambda: data.DropoutTargets(tiny_ds.train, tgt_v, 0.1), ["tgt_vocab"]),
        ("DropoutTargets", "dropout=2", lambda: data.DropoutTargets(tiny_ds.train, sub_tiny.tgt_vocab, 2), ["dropout"]),
        (
            "DropoutTargets",
            "seed=-1",
            lambda: data.DropoutTargets(tiny_ds.train, sub_tiny.tgt_vocab, 0.1, -1),
            ["seed"],
        ),
        (
            "batches",
            "DropoutTargets of another length",
            lambda: next(data.batches(torch.ones(3, 2, dtype=torch.long), drop_tiny, 1, 0)),
            ["tgt"],
        ),
        ("batches", "tgt a list", lambda: next(data.batches(torch.ones(3, 2, dtype=torch.long), [[1]], 1, 0)), ["tgt"]),
        ("with_subword_targets", "ds a list", lambda: data.with_subword_targets([], 3), ["ds"]),
        ("with_subword_targets", "num_merges=-1", lambda: data.with_subword_targets(tiny_ds, -1), ["num_merges"]),
        ("make_pair", "not a sentence", lambda: data.make_pair(["cat", "the"]), ["word"]),
        ("make_pair", "a str", lambda: data.make_pair("the dog sees a cat"), ["words"]),
        ("make_dataset", "seed=-1", lambda: data.make_dataset(seed=-1), ["seed"]),
        ("make_dataset", "n_train=0", lambda: data.make_dataset(n_train=0), ["n_train"]),
        ("pad_sequences", "empty", lambda: data.pad_sequences([], 0), ["seqs"]),
        ("pad_sequences", "a str id", lambda: data.pad_sequences([[1, "a"]], 0), ["seqs"]),
        ("to_tensors", "empty pairs", lambda: data.to_tensors([], src_v, tgt_v), ["pairs"]),
        ("to_tensors", "pairs of str", lambda: data.to_tensors(["the dog"], src_v, tgt_v), ["pairs"]),
        ("batches", "batch_size=0", lambda: next(data.batches(src, src, 0, 0)), ["batch_size"]),
        ("Seq2SeqTransformer", "config a dict", lambda: model.Seq2SeqTransformer({}), ["config"]),
        ("Seq2SeqTransformer.encode", "float src", lambda: tm.encode(src.float()), ["src"]),
        ("Seq2SeqTransformer.encode", "id >= vocab", lambda: tm.encode(src + 1000), ["src"]),
        ("Seq2SeqTransformer", "tgt of another batch", lambda: tm(src, torch.ones(2, 3).long()), ["tgt"]),
        (
            "Seq2SeqTransformer.decode",
            "memory of d 6",
            lambda: tm.decode(torch.ones(1, 2).long(), r(1, 6, 6), src_mask),
            ["memory"],
        ),
        ("parameter_counts", "model a str", lambda: model.parameter_counts("model"), ["model"]),
        ("eval_mode", "model a str", lambda: model.eval_mode("model").__enter__(), ["model"]),
        ("greedy_decode", "bos_id=999", lambda: decode.greedy_decode(tm, src, 999, 2), ["bos_id"]),
        ("greedy_decode", "src a str", lambda: decode.greedy_decode(tm, "src", 1, 2), ["src"]),
        ("check_sentence", "empty", lambda: decode.check_sentence("", src_v), ["sentence"]),
        ("translate", "unknown word", lambda: decode.translate(tm, "the zzz", src_v, tgt_v), ["sentence"]),
        ("beam_search", "two sentences", lambda: decode.beam_search(tm, torch.cat([src, src]), 1, 2), ["src"]),
        ("beam_search", "beam_size=0", lambda: decode.beam_search(tm, src, 1, 2, beam_size=0), ["beam_size"]),
        ("exact_match", "lengths differ", lambda: evaluate.exact_match([["a"]], []), ["hypotheses", "references"]),
        ("exact_match", "empty", lambda: evaluate.exact_match([], []), ["references"]),
        ("token_accuracy", "empty references", lambda: evaluate.token_accuracy([["a"]], [[]]), ["references"]),
        ("bleu", "a str hypothesis", lambda: evaluate.bleu("abc", [["a", "b", "c"]]), ["hypotheses"]),
        (
            "translate_pairs",
            "batch_size=0",
            lambda: evaluate.translate_pairs(tm, ds_pairs, src_v, tgt_v, 0),
            ["batch_size"],
        ),
        ("argmax_hits", "field='x'", lambda: evaluate.argmax_hits(tm, ds_pairs, src_v, tgt_v, field="x"), ["field"]),
        (
            "reference_cross_attention",
            "model a str",
            lambda: evaluate.reference_cross_attention("model", ds_pairs, src_v, tgt_v),
            ["model"],
        ),
        (
            "reference_cross_attention",
            "no pairs",
            lambda: evaluate.reference_cross_attention(tm, [], src_v, tgt_v),
            ["pairs"],
        ),
        (
            "heldout_substitutions",
            "lengths differ",
            lambda: evaluate.heldout_substitutions([["a"]], [], []),
            ["hypotheses", "pairs"],
        ),
        ("shift_targets", "T=1", lambda: train.shift_targets(torch.ones(2, 1).long()), ["tgt"]),
        ("noam_lr", "step=0", lambda: train.noam_lr(0, 512, 4000), ["step"]),
        ("noam_lr", "factor=inf", lambda: train.noam_lr(1, 512, 4000, factor=inf), ["factor"]),
        ("make_optimizer", "warmup=0", lambda: train.make_optimizer(tm, warmup=0), ["warmup"]),
        (
            "loss_fn",
            "labels of another shape",
            lambda: train.loss_fn(r(1, 3, 5), torch.ones(1, 4).long(), 0),
            ["labels"],
        ),
        (
            "loss_fn",
            "label_smoothing=2",
            lambda: train.loss_fn(r(1, 3, 5), torch.ones(1, 3).long(), 0, 2.0),
            ["label_smoothing"],
        ),
        ("ProgressLine", "total=0", lambda: train.ProgressLine(0), ["total"]),
        ("train", "steps=0", lambda: train.train.__wrapped__(tm, src, src, 0), ["steps"]),
        (
            "plot_decoding_steps",
            "probs of another width",
            lambda: figures.plot_decoding_steps(np.ones((2, 3)), ["a"], [0, 0]),
            ["probs"],
        ),
        ("cross_attention_map", "unknown word", lambda: cross_attention_map(tm, "the zzz", src_v, tgt_v), ["sentence"]),
        ("TorchSeq2Seq", "config a dict", lambda: torch_reference.TorchSeq2Seq({}), ["config"]),
        ("TorchSeq2Seq", "float src", lambda: torch_reference.TorchSeq2Seq(cfg)(src.float(), src), ["src"]),
        ("copy_into_ours", "a str", lambda: torch_reference.copy_into_ours("m"), ["torch_model"]),
        ("adjective_form", "gender 'x'", lambda: grammar.adjective_form("big", "x", "sg"), ["gender"]),
        ("verb_form", "unknown verb", lambda: grammar.verb_form("zzz", "m", "sg"), ["verb"]),
        ("analyse", "a str", lambda: grammar.analyse("the dog sees a cat"), ["words"]),
        ("sample_sentence", "rng=5", lambda: grammar.sample_sentence(5), ["rng"]),
        (
            "save_checkpoint",
            "model a str",
            lambda: checkpoint.save_checkpoint(Path(tmp) / "x.pt", "m", src_v, tgt_v),
            ["model"],
        ),
        ("load_checkpoint", "empty file", load("empty"), ["empty.pt"]),
        ("load_checkpoint", "text file", load("text"), ["text.pt"]),
        ("load_checkpoint", "truncated", load("truncated"), ["truncated.pt"]),
        ("load_checkpoint", "one flipped byte in a weight", load("flipped"), ["flipped.pt"]),
        ("load_checkpoint", "src_vocab shorter than the config", load("short"), ["short.pt"]),
        ("load_checkpoint", "another format version", load("old"), ["old.pt"]),
    ]


def classify(thunk, names):
    """(kind, the exception's type and first line) for one bad input."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            thunk()
    except MemoryError as err:
        return "memory", f"MemoryError: {err}"[:160]
    except Exception as err:  # noqa: BLE001 - every kind of failure is what is being counted
        text = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:200]
        named = any(re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", str(err)) for n in names)
        clear = isinstance(err, (ValueError, TypeError)) and named
        return ("clear" if clear else "obscure"), text
    return "silent", "no error"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print one line per case")
    parser.add_argument("--limit-gib", type=float, default=2.5, help="address-space limit of this process")
    args = parser.parse_args(argv)
    limit = int(args.limit_gib * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    import torch

    torch.set_num_threads(1)
    counts = dict.fromkeys(KINDS, 0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for helper, what, thunk, names in cases(tmp):
            kind, text = classify(thunk, names)
            counts[kind] += 1
            rows.append({"helper": helper, "input": what, "kind": kind, "answer": text})
    if args.list:
        for row in rows:
            print(f"{row['kind']:8} {row['helper']}({row['input']}): {row['answer']}")
    print(json.dumps({"tried": len(rows), **counts}))
    return rows


if __name__ == "__main__":
    main()
