"""Cross-attention of one translated sentence, with its gold alignment when the sentence is grammatical."""

import torch

from utils.translator import grammar
from utils.translator.decode import check_sentence, greedy_decode
from utils.translator.model import eval_mode


@torch.no_grad()
def cross_attention_map(model, sentence, src_vocab, tgt_vocab):
    """Translate `sentence` greedily, then return its cross-attention per layer and the gold alignment.

    Returns a dict: "src" (source words + <eos>), "tgt" (predicted Neo words + <eos>, one per decoder
    query), "weights" (list over layers of (num_heads, T_tgt, T_src) numpy arrays), "reference" (the
    rule-based translation or None if the sentence is outside the grammar) and "gold" (alignment[j] for
    each predicted word when the prediction equals the reference, else None).
    """
    words = check_sentence(sentence, src_vocab)
    src = torch.tensor([src_vocab.encode(words, eos=True)])  # (1, S)
    ids = greedy_decode(model, src, tgt_vocab.bos_id, tgt_vocab.eos_id, max_len=len(words) + 5)[0]
    decoder_input = torch.tensor([[tgt_vocab.bos_id] + ids])  # (1, T): query j predicts output word j
    with eval_mode(model):
        logits = model(src, decoder_input)  # (1, T, vocab)
    last = "<eos>" if int(logits[0, -1].argmax()) == tgt_vocab.eos_id else "(cut by the length guard)"
    weights = [w[0].numpy() for w in model.cross_attention()]  # each (num_heads, T, S)
    predicted = tgt_vocab.decode(ids)
    try:
        reference, alignment = grammar.reference_translation(words)
    except grammar.GrammarError:
        reference, alignment = None, None
    gold = list(alignment) if reference is not None and predicted == reference else None
    shown = [tgt_vocab.itos[i] for i in ids]  # one label per query row, special tokens included
    return {"src": words + ["<eos>"], "tgt": shown + [last], "weights": weights, "reference": reference, "gold": gold}
