"""Lesson 10's attention measurement: while the decoder writes the token that ends an adjective or a verb (its
last token: often the ending alone, e.g. a</w> of rub a</w>, which carries an adjective's gender and number; a
verb's s</w> or nt</w> carries its number only), which source word does each cross-attention
head look at most: the noun whose gender the word takes, the word it translates, or a neighbour of that word?

The neighbours are the control. In this lesson's English (lesson 07's grammar) a verb always comes right after
its subject noun, and an adjective right before its noun unless a second adjective stands between them, so a
head that simply looks one word back or ahead would also "find the noun" there. Only tokens whose noun is two or
more words away from the word translated (`apart=True`) can tell the noun from a neighbour.
"""

import torch

from utils import validation
from utils.translator.data import Pair
from utils.translator.evaluate import reference_cross_attention
from utils.translator.model import Seq2SeqTransformer
from utils.translator.vocab import Vocab

TARGETS = ("agreeing noun", "word translated", "previous word", "next word")


def ending_tokens(pair, tgt_vocab, roles=("adj", "verb")):
    """[(t, role, a, n)] for the last token of each Neo word of `pair` whose role is in `roles`: its position t
    among the target tokens (no <bos>), the source index a of the word it translates and the source index n of
    the noun whose gender it takes."""
    validation.instance("pair", pair, Pair)
    validation.instance("tgt_vocab", tgt_vocab, Vocab)
    if not pair.role or not pair.agrees_with:
        raise ValueError("pair must carry role and agrees_with (a Pair made by make_dataset)")
    out, t = [], 0
    for word, role, a, n in zip(pair.tgt, pair.role, pair.alignment, pair.agrees_with, strict=True):
        t += len(tgt_vocab.encode([word]))
        if role in roles and a is not None and n is not None:
            out.append((t - 1, role, a, n))
    return out


def _source_index(target, a, n):
    return {"agreeing noun": n, "word translated": a, "previous word": a - 1, "next word": a + 1}[target]


@torch.no_grad()
def ending_attention(model, pairs, src_vocab, tgt_vocab, roles=("adj", "verb"), apart=False, batch_size=250):
    """{"rates": {target: (num_layers, num_heads) tensor}, "count": tokens measured}: over the ending tokens of
    `pairs` (teacher forcing on the reference), how often each head's cross-attention arg-max is each target of
    TARGETS. apart=True keeps only the tokens whose noun is neither the word translated nor one of its two
    neighbours, so that the four targets are four different source words."""
    validation.instance("model", model, Seq2SeqTransformer)
    validation.non_empty("pairs", pairs, (list, tuple), "list of Pairs")
    validation.boolean("apart", apart)
    batch_size = validation.positive_int("batch_size", batch_size)
    cfg = model.config
    hits = {name: torch.zeros(cfg.num_layers, cfg.num_heads) for name in TARGETS}
    count = 0
    for start in range(0, len(pairs), batch_size):
        chunk = list(pairs[start : start + batch_size])
        _, weights = reference_cross_attention(model, chunk, src_vocab, tgt_vocab)  # per layer (B, h, T-1, S)
        for i, p in enumerate(chunk):
            for t, _, a, n in ending_tokens(p, tgt_vocab, roles):
                if apart and abs(n - a) < 2:
                    continue
                count += 1
                for layer, w in enumerate(weights):
                    top = w[i, :, t].argmax(-1)  # (h,): each head's most attended source position
                    for name in TARGETS:
                        hits[name][layer] += (top == _source_index(name, a, n)).float()
    if count == 0:
        raise ValueError(f"pairs have no ending token of roles {roles} to measure (apart={apart})")
    return {"rates": {name: h / count for name, h in hits.items()}, "count": count}


@torch.no_grad()
def token_attention_map(model, pair, src_vocab, tgt_vocab):
    """The cross-attention of one pair under teacher forcing on its reference: {"src": source words + <eos>,
    "tgt": one label per query (the target token it predicts, then <eos>), "weights": per layer a (num_heads,
    T_tgt, T_src) numpy array, "endings": ending_tokens(pair, tgt_vocab)}."""
    validation.instance("model", model, Seq2SeqTransformer)
    validation.instance("pair", pair, Pair)
    labels, weights = reference_cross_attention(model, [pair], src_vocab, tgt_vocab)  # (1, T-1), per layer
    return {
        "src": list(pair.src) + ["<eos>"],
        "tgt": [tgt_vocab.itos[i] for i in labels[0].tolist()],
        "weights": [w[0].numpy() for w in weights],
        "endings": ending_tokens(pair, tgt_vocab),
    }


def noun_head(model, data, maps=False):
    """The head whose arg-max is most often on an adjective's noun while the adjective's last token is written
    (in-distribution test), and where it looks at the unseen-forms test's adjectives whose noun is two or more
    words on: {"layer", "head", "chosen_rate", "count", "rates": {target: rate}} (and "maps": every head's rates,
    with maps=True). `data`: a data set of utils.experiments.subwords.dataset."""
    validation.instance("model", model, Seq2SeqTransformer)
    validation.boolean("maps", maps)
    vocabs = (data.src_vocab, data.tgt_vocab)
    chosen = ending_attention(model, data.test, *vocabs, roles=("adj",))["rates"]["agreeing noun"]  # (L, h)
    layer, head = divmod(int(chosen.argmax()), model.config.num_heads)
    apart = ending_attention(model, data.test_unseen, *vocabs, roles=("adj",), apart=True)
    out = {
        "layer": layer,
        "head": head,
        "chosen_rate": round(float(chosen[layer, head]), 4),
        "count": apart["count"],
        "rates": {t: round(float(apart["rates"][t][layer, head]), 4) for t in TARGETS},
    }
    return dict(out, maps=apart["rates"]) if maps else out
