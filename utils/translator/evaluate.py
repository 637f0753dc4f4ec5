"""Held-out metrics: exact match, token accuracy, BLEU (sacrebleu) and cross-attention alignment accuracy."""

import sacrebleu
import torch

from utils.translator.data import to_tensors
from utils.translator.decode import greedy_decode
from utils.translator.train import shift_targets


def translate_pairs(model, pairs, src_vocab, tgt_vocab, batch_size=250):
    """Greedy translations (lists of Neo words) of every pair's source sentence."""
    out = []
    for start in range(0, len(pairs), batch_size):
        src, _ = to_tensors(pairs[start:start + batch_size], src_vocab, tgt_vocab)  # (B, S)
        ids = greedy_decode(model, src, tgt_vocab.bos_id, tgt_vocab.eos_id, max_len=src.shape[1] + 5)
        out += [tgt_vocab.decode(row) for row in ids]
    return out


def exact_match(hypotheses, references):
    """Fraction of sentences translated exactly right."""
    return sum(list(h) == list(r) for h, r in zip(hypotheses, references, strict=True)) / len(references)


def token_accuracy(hypotheses, references):
    """Fraction of reference words matched at the same position (a missing word counts as wrong)."""
    right = sum(a == b for h, r in zip(hypotheses, references, strict=True) for a, b in zip(h, r))
    return right / sum(len(r) for r in references)


def bleu(hypotheses, references):
    """Corpus BLEU (0-100) from sacrebleu, on the words as they are (tokenize='none')."""
    return sacrebleu.corpus_bleu([" ".join(h) for h in hypotheses], [[" ".join(r) for r in references]],
                                 tokenize="none").score


@torch.no_grad()
def alignment_accuracy(model, pairs, src_vocab, tgt_vocab, batch_size=250):
    """(num_layers, num_heads) tensor: how often a head's cross-attention arg-max is the gold source word.

    Teacher forcing on the reference: the query at decoder position j (the one that predicts Neo word j)
    counts as right when its largest weight falls on source word alignment[j].
    """
    model.eval()
    cfg = model.config
    right = torch.zeros(cfg["num_layers"], cfg["num_heads"])
    total = 0
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start:start + batch_size]
        src, tgt = to_tensors(chunk, src_vocab, tgt_vocab)  # (B, S), (B, T)
        decoder_input, _ = shift_targets(tgt)  # (B, T-1)
        model(src, decoder_input)
        gold = torch.full(decoder_input.shape, -1, dtype=torch.long)  # (B, T-1); -1 where no Neo word
        for i, p in enumerate(chunk):
            gold[i, :len(p.alignment)] = torch.tensor(p.alignment)
        has_gold = gold >= 0  # (B, T-1)
        total += int(has_gold.sum())
        for layer, w in enumerate(model.cross_attention()):  # w (B, h, T-1, S)
            hits = (w.argmax(-1) == gold[:, None]) & has_gold[:, None]  # (B, h, T-1)
            right[layer] += hits.sum(dim=(0, 2)).float()
    return right / total


def evaluate(model, pairs, src_vocab, tgt_vocab):
    """Exact match, token accuracy, BLEU and per-head alignment accuracy on `pairs`, as a dict."""
    hyps = translate_pairs(model, pairs, src_vocab, tgt_vocab)
    refs = [list(p.tgt) for p in pairs]
    align = alignment_accuracy(model, pairs, src_vocab, tgt_vocab)
    return {"exact_match": exact_match(hyps, refs), "token_accuracy": token_accuracy(hyps, refs),
            "bleu": bleu(hyps, refs), "alignment_accuracy": align,
            "best_head_alignment_accuracy": float(align.max()), "hypotheses": hyps}
