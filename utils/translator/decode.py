"""Greedy decoding (one token at a time, stopping at <eos> or a length guard) and translate()."""

import torch

from utils import validation
from utils.fast_attention import decode_step, start_cache
from utils.translator.model import Seq2SeqTransformer, eval_mode
from utils.translator.vocab import Vocab


def _decoding_args(model, bos_id, eos_id, max_len):
    """Check the arguments both decoders share; return max_len capped by the model's PE table."""
    validation.instance("model", model, Seq2SeqTransformer)
    validation.token_id("bos_id", bos_id, model.config.tgt_vocab_size)
    validation.token_id("eos_id", eos_id, model.config.tgt_vocab_size)
    max_len = validation.positive_int("max_len", max_len if max_len is not None else model.max_len - 1)
    return min(max_len, model.max_len - 1)  # the <bos> takes one position of the PE table


@torch.no_grad()
def greedy_decode(model, src, bos_id, eos_id, max_len=None, use_cache=False):
    """Translate a batch src (batch, S): list of id lists, each ending before <eos> (or cut at max_len).
    With use_cache, each step computes only the new position, reading earlier keys and values from a
    key-value cache (utils.fast_attention); the logits agree up to rounding, so the tokens are the same
    except where the two best logits nearly tie."""
    validation.boolean("use_cache", use_cache)
    max_len = _decoding_args(model, bos_id, eos_id, max_len)
    with eval_mode(model):
        memory, src_mask = model.encode(src)  # (batch, S, d_model), (batch, 1, S)
        ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)  # (batch, 1): every target starts at <bos>
        done = torch.zeros(src.shape[0], dtype=torch.bool)  # (batch,)
        cache = start_cache(model, memory, src_mask) if use_cache else None
        for _ in range(max_len):
            if use_cache:
                last = decode_step(model, cache, ys[:, -1])  # (batch, vocab): only the new position computed
            else:
                last = model.decode(ys, memory, src_mask)[:, -1]  # (batch, vocab): every position recomputed
            next_id = last.argmax(-1)  # (batch,): the most likely next token
            next_id = next_id.masked_fill(done, model.pad_id)  # finished sentences only get padding
            ys = torch.cat([ys, next_id[:, None]], dim=1)  # (batch, t + 1)
            done |= next_id == eos_id
            if done.all():
                break
    out = []
    for row in ys[:, 1:].tolist():
        out.append(row[: row.index(eos_id)] if eos_id in row else row)
    return out


def check_sentence(sentence, src_vocab):
    """The words of `sentence`; a ValueError for empty input or unknown words (listing some known ones)."""
    validation.instance("sentence", sentence, str)
    validation.instance("src_vocab", src_vocab, Vocab)
    words = sentence.lower().split()
    if not words:
        raise ValueError("sentence is empty: type a few words, e.g. 'the big dog sees a cat'")
    unknown = src_vocab.unknown(words)
    if unknown:
        known = ", ".join(src_vocab.words()[:12])
        raise ValueError(f"sentence has words the model never saw: {unknown}; known words include: {known}, ...")
    return words


def translate(model, sentence, src_vocab, tgt_vocab, max_len=None):
    """Greedy translation of one sentence (a str of space-separated words) into a str."""
    words = check_sentence(sentence, src_vocab)
    validation.instance("model", model, Seq2SeqTransformer)
    validation.instance("tgt_vocab", tgt_vocab, Vocab)
    if len(words) + 1 > model.max_len:
        raise ValueError(f"sentence has {len(words)} words; this model takes at most {model.max_len - 1}")
    src = torch.tensor([src_vocab.encode(words, eos=True)])  # (1, S)
    ids = greedy_decode(model, src, tgt_vocab.bos_id, tgt_vocab.eos_id, max_len)[0]
    return " ".join(tgt_vocab.decode(ids))


@torch.no_grad()
def beam_search(model, src, bos_id, eos_id, beam_size=4, max_len=None):
    """Ids of the most probable translation of one sentence src (1, S), keeping the `beam_size` most probable
    extensions at each step (sum of log-probabilities); those ending in eos_id leave the beam as finished
    translations, so fewer than `beam_size` may be extended at the next step. beam_size=1 is greedy decoding."""
    beam_size = validation.positive_int("beam_size", beam_size)
    validation.tensor("src", src)
    validation.shape("src", src, (1, "S"))  # one sentence
    max_len = _decoding_args(model, bos_id, eos_id, max_len)
    with eval_mode(model):
        return _beam_search(model, src, bos_id, eos_id, beam_size, max_len)


def _beam_search(model, src, bos_id, eos_id, beam_size, max_len):
    """beam_search's loop, on checked arguments and a model in eval mode."""
    memory, src_mask = model.encode(src)  # (1, S, d_model), (1, 1, S)
    beams, finished = [([bos_id], 0.0)], []  # (ids so far, log-probability)
    for _ in range(max_len):
        k = len(beams)
        ys = torch.tensor([ids for ids, _ in beams])  # (k, t)
        logp = model.decode(ys, memory.expand(k, -1, -1), src_mask.expand(k, -1, -1))[:, -1].log_softmax(-1)  # (k, V)
        total = torch.tensor([score for _, score in beams])[:, None] + logp  # (k, V)
        top = total.flatten().topk(min(beam_size, total.numel()))
        vocab = total.shape[1]  # flat index i = (beam i // vocab) extended by token (i % vocab)
        beams = [
            (ys[i // vocab].tolist() + [i % vocab], score)
            for score, i in zip(top.values.tolist(), top.indices.tolist())
        ]
        finished += [(ids[1:-1], score) for ids, score in beams if ids[-1] == eos_id]
        beams = [(ids, score) for ids, score in beams if ids[-1] != eos_id]
        # log-probabilities are <= 0, so a live beam can only lose score: stop once none can win
        if not beams or (finished and max(s for _, s in finished) >= beams[0][1]):
            break
    if not finished:  # the length guard stopped every beam
        finished = [(ids[1:], score) for ids, score in beams]
    return max(finished, key=lambda f: f[1])[0]
