"""Exercises of lesson 07 (toy translator): the teacher-forcing shift, greedy decoding, alignment accuracy."""

import numpy as np
import torch

from utils.exercises import compare_arrays, exercise
from utils.translator.decode import greedy_decode as _greedy_reference
from utils.translator.model import Seq2SeqTransformer, TranslatorConfig

BOS, EOS, PAD = 1, 2, 0


# --- 1. the teacher-forcing shift -------------------------------------------------------------


def _shift_reference(tgt):
    return tgt[:, :-1], tgt[:, 1:]


@exercise(
    hint="""
    tgt holds <bos> y_1 ... y_n <eos> (then padding). The decoder reads every token except the last,
    and at each position must predict the NEXT token: input = tgt[:, :-1], labels = tgt[:, 1:].
    """,
    reference=_shift_reference,
    wrong=[lambda tgt: (tgt[:, 1:], tgt[:, :-1]), lambda tgt: (tgt, tgt), lambda tgt: (tgt[:, :-1], tgt[:, :-1])],
)
def teacher_forcing_shift(shift):
    """shift(tgt (batch, T)) -> (decoder_input (batch, T-1), labels (batch, T-1))."""
    tgt = torch.tensor([[BOS, 7, 8, 9, EOS], [BOS, 5, EOS, PAD, PAD]])  # (2, 5)
    out = shift(tgt.clone())
    if not isinstance(out, tuple) or len(out) != 2:
        return f"return a pair (decoder_input, labels), got {type(out).__name__}"
    for what, got, expected in zip(("decoder_input", "labels"), out, _shift_reference(tgt)):
        msg = compare_arrays(got, expected, what)
        if msg:
            return msg + "  (the first row is <bos>=1 7 8 9 <eos>=2)"
    return None


# --- 2. greedy decoding ---------------------------------------------------------------------


class _ScriptedModel(Seq2SeqTransformer):
    """Row b of the batch says script[b] one token per step, then <eos>, then 9 forever."""

    scripts = [[5, 6, 7], [8], [4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4]]

    def decode(self, tgt, memory, src_mask):
        logits = torch.zeros(tgt.shape[0], tgt.shape[1], self.config.tgt_vocab_size)  # (batch, T, vocab)
        for b in range(tgt.shape[0]):
            script = self.scripts[b] + [EOS] + [9] * 50
            for t in range(tgt.shape[1]):
                logits[b, t, script[t]] = 1.0 + 0.1 * t
        return logits


def _greedy_stub_reference(model, src, bos_id, eos_id, max_len):
    """Greedy decoding: feed the best token back in until every sentence has said <eos> or max_len is hit."""
    memory, src_mask = model.encode(src)  # (batch, S, d_model), (batch, 1, S)
    ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)  # (batch, 1): start at <bos>
    for _ in range(max_len):
        next_id = model.decode(ys, memory, src_mask)[:, -1].argmax(-1)  # (batch,)
        ys = torch.cat([ys, next_id[:, None]], dim=1)  # (batch, t + 1)
        if (ys == eos_id).any(dim=1).all():
            break
    out = []
    for row in ys[:, 1:].tolist():
        out.append(row[:row.index(eos_id)] if eos_id in row else row)
    return out


def _greedy_no_stop(model, src, bos_id, eos_id, max_len):
    memory, src_mask = model.encode(src)
    ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
    for _ in range(max_len):
        ys = torch.cat([ys, model.decode(ys, memory, src_mask)[:, -1].argmax(-1)[:, None]], dim=1)
    return ys[:, 1:].tolist()


def _greedy_no_guard(model, src, bos_id, eos_id, max_len):
    return _greedy_stub_reference(model, src, bos_id, eos_id, 40)


def _greedy_first_token_only(model, src, bos_id, eos_id, max_len):
    memory, src_mask = model.encode(src)
    ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
    return [[int(i)] for i in model.decode(ys, memory, src_mask)[:, -1].argmax(-1)]


@exercise(
    hint="""
    Encode once: memory, src_mask = model.encode(src). Start every row with [<bos>]. Repeat at most
    max_len times: logits = model.decode(ys, memory, src_mask); take the arg-max of the LAST position,
    append it to ys. Stop once every row has produced <eos>; return each row without <bos>, cut before <eos>.
    """,
    reference=_greedy_stub_reference,
    wrong=[_greedy_no_stop, _greedy_no_guard, _greedy_first_token_only],
)
def greedy_decoding(decode):
    """decode(model, src, bos_id, eos_id, max_len) -> one list of token ids per source sentence."""
    torch.manual_seed(0)
    scripted = _ScriptedModel(TranslatorConfig(12, 12, 8, 2, 16, 1)).eval()
    src = torch.tensor([[4, 5, 2], [6, 2, 0], [7, 8, 2]])  # (3, 3)
    for max_len, expected in ((20, [[5, 6, 7], [8], [4] * 12]), (6, [[5, 6, 7], [8], [4] * 6])):
        with torch.no_grad():
            got = decode(scripted, src, BOS, EOS, max_len)
        got = [list(map(int, row)) for row in got]
        for b, (g, e) in enumerate(zip(got, expected)):
            if g != e:
                return (f"with max_len={max_len}, sentence {b}: expected {e}, got {g} (a model that says "
                        f"{_ScriptedModel.scripts[b]} then <eos>=2 then 9s)")
        if len(got) != len(expected):
            return f"expected {len(expected)} translations (one per row of src), got {len(got)}"
    random_model = Seq2SeqTransformer(TranslatorConfig(12, 12, 16, 2, 32, 1)).eval()
    with torch.no_grad():
        got = [list(map(int, row)) for row in decode(random_model, src, BOS, EOS, 7)]
    expected = _greedy_reference(random_model, src, BOS, EOS, 7)
    if got != expected:
        return f"on a randomly initialised model with max_len=7: expected {expected}, got {got}"
    return None


# --- 3. alignment accuracy of one head ----------------------------------------------------


def _alignment_reference(weights, gold):
    weights = np.asarray(weights)
    hits = [int(np.argmax(weights[j])) == g for j, g in enumerate(gold)]
    return sum(hits) / len(gold)


@exercise(
    hint="""
    Row j of weights is what Neo word j looked at. Take its arg-max over the source (axis -1) and compare
    it with gold[j]; only the len(gold) rows with a gold word count (the final <eos> row has none).
    """,
    reference=_alignment_reference,
    wrong=[
        lambda w, g: sum(int(np.argmax(np.asarray(w)[:, j])) == s for j, s in enumerate(g)) / len(g),
        lambda w, g: sum(int(np.argmax(row)) == s for row, s in zip(np.asarray(w), list(g) + [0])) / (len(g) + 1),
        lambda w, g: float(np.mean([np.asarray(w)[j, s] for j, s in enumerate(g)])),
    ],
)
def alignment_accuracy(accuracy):
    """accuracy(weights (T_tgt, T_src), gold list of len <= T_tgt) -> fraction of arg-max hits."""
    rng = np.random.default_rng(7)
    for T_tgt, T_src in ((6, 6), (4, 7), (9, 9)):
        weights = rng.dirichlet(np.ones(T_src) * 0.5, size=T_tgt)  # (T_tgt, T_src), rows sum to 1
        gold = rng.permutation(T_src)[:T_tgt - 1].tolist() if T_tgt <= T_src else list(range(T_tgt - 1))
        gold = [g % T_src for g in gold]
        weights[0, gold[0]] = 5.0  # at least one hit
        got = accuracy(weights.copy(), list(gold))
        expected = _alignment_reference(weights, gold)
        if not isinstance(got, (float, int, np.floating)) or abs(float(got) - expected) > 1e-9:
            return (f"weights of shape {weights.shape} and gold {gold}: expected {expected:.4f}, got {got!r}"
                    " (arg-max over the source, one row per gold word)")
    return None
