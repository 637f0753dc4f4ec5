"""Held-out metrics: exact match, token accuracy, BLEU (sacrebleu) and cross-attention alignment accuracy."""

import sacrebleu
import torch

from utils import validation
from utils.translator import grammar
from utils.translator.data import Pair, to_tensors
from utils.translator.decode import greedy_decode
from utils.translator.model import Seq2SeqTransformer, eval_mode
from utils.translator.train import shift_targets


def translate_pairs(model, pairs, src_vocab, tgt_vocab, batch_size=250):
    """Greedy translations (lists of Neo words) of every pair's source sentence."""
    batch_size = validation.positive_int("batch_size", batch_size)
    out = []
    for start in range(0, len(pairs), batch_size):
        src, _ = to_tensors(pairs[start : start + batch_size], src_vocab, tgt_vocab)  # (B, S)
        max_len = tgt_vocab.max_tokens(src.shape[1] + 5)  # a length guard: a few words more than the source
        ids = greedy_decode(model, src, tgt_vocab.bos_id, tgt_vocab.eos_id, max_len=max_len)
        out += [tgt_vocab.decode(row) for row in ids]
    return out


def exact_match(hypotheses, references):
    """Fraction of sentences translated exactly right."""
    _check_pairs(hypotheses, references)
    return sum(list(h) == list(r) for h, r in zip(hypotheses, references, strict=True)) / len(references)


def token_accuracy(hypotheses, references):
    """Fraction of reference words matched at the same position (a missing word counts as wrong)."""
    _check_pairs(hypotheses, references)
    if not any(references):
        raise ValueError("references must hold at least one word, got only empty sentences")
    right = sum(a == b for h, r in zip(hypotheses, references, strict=True) for a, b in zip(h, r))
    return right / sum(len(r) for r in references)


def bleu(hypotheses, references):
    """Corpus BLEU (0-100) from sacrebleu, on the words as they are (tokenize='none')."""
    _check_pairs(hypotheses, references)
    return sacrebleu.corpus_bleu(
        [" ".join(h) for h in hypotheses], [[" ".join(r) for r in references]], tokenize="none"
    ).score


def _pairs(pairs):
    """`pairs` checked: a non-empty list of Pairs."""
    validation.non_empty("pairs", pairs, (list, tuple), "list of Pairs")
    for i, p in enumerate(pairs):
        validation.instance(f"pairs[{i}]", p, Pair)
    return pairs


def _check_pairs(hypotheses, references, references_name="references"):
    """Hypotheses and references: non-empty lists of word lists, one hypothesis per reference."""
    validation.word_lists(references_name, references)
    validation.word_lists("hypotheses", hypotheses, len(references), references_name)


def per_token(pair, values, tgt_vocab):
    """A per-Neo-word list `values` (e.g. pair.alignment) per target token: each word's value once per token of
    it in `tgt_vocab` (once per word at word level; sub-words of a word share its value)."""
    if not values:
        return []
    return [v for w, v in zip(pair.tgt, values, strict=True) for _ in tgt_vocab.encode([w])]


def _gold(pairs, field, shape, tgt_vocab):
    """(B, T) long tensor of pairs' per-token source indices from `field` (-1 where None or past the end)."""
    gold = torch.full(shape, -1, dtype=torch.long)  # (B, T)
    for i, p in enumerate(pairs):
        values = per_token(p, getattr(p, field), tgt_vocab)
        gold[i, : len(values)] = torch.tensor([-1 if a is None else a for a in values])
    return gold


@torch.no_grad()
@torch.no_grad()
def reference_cross_attention(model, pairs, src_vocab, tgt_vocab):
    """Teacher forcing on the references of `pairs`: (labels, weights), labels (B, T-1) the target token each
    decoder query predicts, weights per layer (B, h, T-1, S) the cross-attention of that pass."""
    validation.instance("model", model, Seq2SeqTransformer)
    validation.non_empty("pairs", pairs, (list, tuple), "list of Pairs")
    src, tgt = to_tensors(pairs, src_vocab, tgt_vocab)  # (B, S), (B, T)
    decoder_input, labels = shift_targets(tgt)  # (B, T-1) each: query t predicts target token t
    with eval_mode(model):
        model(src, decoder_input)
    return labels, model.cross_attention()


def argmax_hits(model, pairs, src_vocab, tgt_vocab, field="alignment", roles=None, batch_size=250):
    """(num_layers, num_heads) tensor: how often a head's cross-attention arg-max is the source word that
    `field` names ("alignment": the word translated; "agrees_with": the noun whose gender is taken).

    Teacher forcing on the reference: the query at decoder position t (the one that predicts target token t, a
    piece of Neo word j) counts when field[j] is not None (and role[j] is in `roles`, if given).
    """
    validation.choice("field", field, ("alignment", "agrees_with"))
    batch_size = validation.positive_int("batch_size", batch_size)
    cfg = model.config
    right = torch.zeros(cfg.num_layers, cfg.num_heads)
    total = 0
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start : start + batch_size]
        labels, weights = reference_cross_attention(model, chunk, src_vocab, tgt_vocab)  # (B, T-1), per layer
        gold = _gold(chunk, field, labels.shape, tgt_vocab)  # (B, T-1); -1 where nothing to find
        has_gold = gold >= 0  # (B, T-1)
        if roles is not None:
            wanted = torch.zeros_like(has_gold)
            for i, p in enumerate(chunk):
                role = per_token(p, p.role, tgt_vocab)
                wanted[i, : len(role)] = torch.tensor([r in roles for r in role])
            has_gold &= wanted
        total += int(has_gold.sum())
        for layer, w in enumerate(weights):  # w (B, h, T-1, S)
            hits = (w.argmax(-1) == gold[:, None]) & has_gold[:, None]  # (B, h, T-1)
            right[layer] += hits.sum(dim=(0, 2)).float()
    if total == 0:
        raise ValueError(f"pairs have no Neo word with a {field} (roles {roles}) to measure")
    return right / total


def alignment_accuracy(model, pairs, src_vocab, tgt_vocab, batch_size=250):
    """(num_layers, num_heads) tensor: how often a head's cross-attention arg-max is the gold source word
    (over the Neo words that translate a source word)."""
    return argmax_hits(model, pairs, src_vocab, tgt_vocab, "alignment", batch_size=batch_size)


def agreement_attention(model, pairs, src_vocab, tgt_vocab, roles=("det", "adj", "verb")):
    """{role: (num_layers, num_heads) tensor}: how often, when producing a word of that role, a head's
    cross-attention arg-max is the noun whose gender the word takes."""
    return {role: argmax_hits(model, pairs, src_vocab, tgt_vocab, "agrees_with", roles=(role,)) for role in roles}


def evaluate(model, pairs, src_vocab, tgt_vocab):
    """Exact match, token accuracy, BLEU and per-head alignment accuracy on `pairs`, as a dict."""
    hyps = translate_pairs(model, pairs, src_vocab, tgt_vocab)
    refs = [list(p.tgt) for p in pairs]
    align = alignment_accuracy(model, pairs, src_vocab, tgt_vocab)
    return {
        "exact_match": exact_match(hyps, refs),
        "token_accuracy": token_accuracy(hyps, refs),
        "bleu": bleu(hyps, refs),
        "alignment_accuracy": align,
        "best_head_alignment_accuracy": float(align.max()),
        "hypotheses": hyps,
    }


SUBSTITUTIONS = (
    "the held-out form",
    "same stem with a trained ending",
    "another stem with the needed ending",
    "another word",
    "sentence of another length",
)


def _substitutions(hypotheses, pairs, heldout_forms):
    """Yield (category, written, needed) at each place where a reference needs a held-out form."""
    _check_pairs(hypotheses, [list(p.tgt) for p in _pairs(pairs)], "pairs")
    forms = {f.neo: f for f in heldout_forms}
    for hyp, p in zip(hypotheses, pairs, strict=True):
        for j, word in enumerate(p.tgt):
            if word not in forms:
                continue
            f = forms[word]
            if f.kind == "adjective":
                stem, ending = grammar.ADJ_INFO[f.english], grammar.ENDINGS[(f.gender, f.number)]
                same_kind = {s + ending for s in grammar.ADJ_INFO.values()}  # the adjectives with that ending
            else:
                stem, ending = grammar.VERB_INFO[f.english][1], grammar.VERB_ENDINGS[(f.gender, f.number)]
                same_kind = {info[1] + ending for info in grammar.VERB_INFO.values()}
            if len(hyp) != len(p.tgt):
                yield "sentence of another length", None, word
            elif hyp[j] == word:
                yield "the held-out form", hyp[j], word
            elif hyp[j].startswith(stem):
                yield "same stem with a trained ending", hyp[j], word
            elif hyp[j] in same_kind and hyp[j] not in forms:
                yield "another stem with the needed ending", hyp[j], word
            else:
                yield "another word", hyp[j], word


def heldout_substitutions(hypotheses, pairs, heldout_forms):
    """What the model wrote where the reference needs a held-out form, as counts per category of SUBSTITUTIONS:
    e.g. albo for albi is "same stem with a trained ending"; kalme (another adjective, not held out) for june
    is "another stem with the needed ending"; "another word" includes another held-out form."""
    counts = dict.fromkeys(SUBSTITUTIONS, 0)
    for category, _, _ in _substitutions(hypotheses, pairs, heldout_forms):
        counts[category] += 1
    return counts


def heldout_substitution_examples(hypotheses, pairs, heldout_forms):
    """The first (written, needed) word pair of each category of SUBSTITUTIONS that occurs (None written for a
    sentence of another length), so a lesson can show examples from its own run."""
    examples = {}
    for category, written, needed in _substitutions(hypotheses, pairs, heldout_forms):
        examples.setdefault(category, (written, needed))
    return examples


def all_but_heldout_right(hypotheses, pairs, heldout_forms):
    """Fraction of sentences translated right at every word except the held-out forms (same length)."""
    _check_pairs(hypotheses, [list(p.tgt) for p in _pairs(pairs)], "pairs")
    held = {f.neo for f in heldout_forms}
    good = sum(
        len(h) == len(p.tgt) and all(a == b or b in held for a, b in zip(h, p.tgt))
        for h, p in zip(hypotheses, pairs, strict=True)
    )
    return good / len(pairs)


@torch.no_grad()
def heldout_form_probability(model, pairs, src_vocab, tgt_vocab, heldout_forms):
    """Teacher forcing on the reference: the probability the model gives to the held-out form at every
    place whose reference word is one (a 1-D tensor, one entry per such word; the product of its tokens'
    probabilities when it takes several)."""
    held = {f.neo for f in heldout_forms}
    src, tgt = to_tensors(pairs, src_vocab, tgt_vocab)  # (N, S), (N, T)
    decoder_input, labels = shift_targets(tgt)  # (N, T-1) each
    with eval_mode(model):
        probs = model(src, decoder_input).softmax(-1)  # (N, T-1, vocab)
    token_probs = probs.gather(-1, labels[..., None])[..., 0]  # (N, T-1): the reference token's probability
    out = []
    for i, p in enumerate(pairs):
        start = 0
        for word in p.tgt:
            n = len(tgt_vocab.encode([word]))  # the word's tokens are labels[i, start : start + n]
            if word in held:
                out.append(token_probs[i, start : start + n].prod())
            start += n
    return torch.stack(out) if out else token_probs.new_zeros(0)  # (places,)
