"""Byte-pair encoding by hand (Sennrich et al. 2016): learn merges from a corpus, cut text into sub-words, join
them back.

Conventions (those of Hugging Face `tokenizers`: pre_tokenizers.WhitespaceSplit, then models.BPE trained by
trainers.BpeTrainer, both with end_of_word_suffix="</w>"; tests/unit/test_subwords.py checks that the two learn
the same merges in the same order and cut held-out sentences the same way):

- Words: text is split on whitespace; pairs are counted, and merged, only inside a word.
- End of word: a word starts as its characters with END_OF_WORD on the last one, "kano" -> k a n o</w>. So an
  ending ("o</w>") is another symbol than the same letter inside a word, and decode knows where each word stops:
  decode(encode(bpe, text)) == " ".join(text.split()).
- Counting: a pair's frequency is how often its two symbols stand side by side in the corpus's words, a word
  counted as often as it occurs.
- Merging: the most frequent pair becomes one symbol everywhere, left to right without overlap ("a a a" -> "aa a").
- Ties: among equally frequent pairs, the one whose left symbol comes first in the symbol order wins, then the one
  whose right symbol does. The order (BPE.vocabulary): end-of-word characters, then characters (each by code
  point), then each merged symbol when first made. `tokenizers` breaks ties by the same rule on its token ids
  (its trainer's Merge ordering, models/bpe/trainer.rs), whose order is this one when the end-of-word characters
  are given, sorted, as its special tokens (otherwise their ids follow a hash map's order and change between runs).
- Encoding: each word starts as characters again and the learned merges apply in the order learned.
- BPE-dropout (Provilkov et al. 2020): with dropout p > 0, each application of a merge (each place a learned pair
  would be joined) is skipped with probability p, so one word comes out cut in several ways: p = 0 is the plain
  encoding, p = 1 leaves characters. A skipped merge is not tried again later (Hugging Face `tokenizers` retries
  it after the next merge that applies, so its cuts under dropout differ from these; at p = 0 they agree). The
  draws come from the torch.Generator `generator`: one seed per word, then Python's `random` for the draws inside
  the word, so the same generator state gives the same cuts. Every piece a dropout cut makes is in the vocabulary
  (each is a character or the result of a learned merge).
- Unknown symbols: a character (or a character ending a word) that training never saw raises a ValueError naming
  it; there is no <unk> token.
"""

import dataclasses
import random

import torch

from utils import validation

END_OF_WORD = "</w>"


@dataclasses.dataclass(frozen=True)
class BPE:
    """What training learns: the starting symbols (end-of-word characters, then characters, each sorted), the merges
    ((left, right) pairs, in the order learned) and how often each merged pair occurred when it was merged."""

    alphabet: tuple
    merges: tuple
    counts: tuple

    def vocabulary(self):
        """Every symbol, in the tie-break order: the alphabet, then each merged symbol when first made."""
        return list(dict.fromkeys(self.alphabet + tuple(a + b for a, b in self.merges)))


def _text(name, value):
    """`value` if it is a str without the end-of-word marker (which would make decoding ambiguous)."""
    validation.instance(name, value, str)
    if END_OF_WORD in value:
        raise ValueError(f"{name} must not contain the end-of-word marker {END_OF_WORD!r}, got {value[:80]!r}")
    return value


def word_counts(corpus):
    """{word: number of occurrences} over a list of sentences, words split on whitespace, in first-seen order."""
    validation.non_empty("corpus", corpus, (list, tuple), "list of sentences (str)")
    counts = {}
    for i, sentence in enumerate(corpus):
        for word in _text(f"corpus[{i}]", sentence).split():
            counts[word] = counts.get(word, 0) + 1
    if not counts:
        raise ValueError(f"corpus must hold at least one word, got {len(corpus)} blank sentence(s)")
    return counts


def split_word(word):
    """A word as its starting symbols: its characters, the last one marked, e.g. "kano" -> [k, a, n, o</w>]."""
    return list(word[:-1]) + [word[-1] + END_OF_WORD]


def pair_counts(words, counts):
    """{(left, right): frequency} of adjacent symbols in `words` ({word: its symbols}), each word weighted by counts."""
    pairs = {}
    for word, symbols in words.items():
        for pair in zip(symbols, symbols[1:]):
            pairs[pair] = pairs.get(pair, 0) + counts[word]
    return pairs


def merge_pair(symbols, pair, join=None):
    """`symbols` with every occurrence of `pair` joined into one symbol, left to right without overlap; if given,
    `join()` is called at each occurrence and the join is skipped where it returns False (BPE-dropout)."""
    left, right = pair
    out, i, last = [], 0, len(symbols) - 1
    while i <= last:
        if i < last and symbols[i] == left and symbols[i + 1] == right and (join is None or join()):
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def train(corpus, num_merges):
    """Learn up to `num_merges` merges from `corpus` (a list of sentences): count adjacent pairs, merge the most
    frequent (ties as in the module docstring), repeat; fewer when every word has become one symbol."""
    num_merges = validation.integer("num_merges", num_merges, minimum=0)
    counts = word_counts(corpus)
    alphabet = sorted({w[-1] + END_OF_WORD for w in counts}) + sorted({c for w in counts for c in w})
    order = {s: i for i, s in enumerate(alphabet)}  # a symbol's place in the tie-break order
    words = {w: split_word(w) for w in counts}
    merges, merged_counts = [], []
    for _ in range(num_merges):
        pairs = pair_counts(words, counts)
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], order[p[0]], order[p[1]]))  # most frequent, then first in order
        merges.append(best)
        merged_counts.append(pairs[best])
        order.setdefault(best[0] + best[1], len(order))
        words = {w: merge_pair(symbols, best) for w, symbols in words.items()}
    return BPE(tuple(alphabet), tuple(merges), tuple(merged_counts))


def merge_pair_dropout(symbols, pair, dropout, rng):
    """merge_pair, each join skipped with probability `dropout` (one rng.random() draw per place it would apply)."""
    return merge_pair(symbols, pair, join=lambda: rng.random() >= dropout)


def check_dropout(dropout, generator):
    """`dropout` as a float in [0, 1] (TypeError if it is not a number), and `generator`, a torch.Generator,
    required when dropout > 0."""
    dropout = validation.probability("dropout", dropout, True, "a merge's chance to be skipped")
    if generator is not None or dropout > 0:
        what = f"torch.Generator (dropout={dropout!r} > 0 draws from it)" if dropout > 0 else "torch.Generator or None"
        validation.instance("generator", generator, torch.Generator, what)
    return dropout


def encode_word(bpe, word, name="word", dropout=0.0, generator=None):
    """The sub-words of one word: its starting symbols, then every merge in the order learned (`name` names the
    argument the word came from in an error); with `dropout` > 0 each join is skipped with that probability,
    drawn from the torch.Generator `generator` (BPE-dropout, see the module docstring)."""
    dropout = check_dropout(dropout, generator)
    symbols = split_word(word)
    unknown = [s for s in symbols if s not in bpe.alphabet]
    if unknown:
        raise ValueError(
            f"{name} has the word {word!r}, whose symbol {unknown[0]!r} the training corpus never had (an "
            f"end-of-word symbol ends with {END_OF_WORD!r}); known symbols: {' '.join(bpe.alphabet)}"
        )
    if dropout > 0:
        return _dropout_cut(bpe, symbols, dropout, generator)
    for pair in bpe.merges:
        if len(symbols) == 1:
            break
        if pair[0] in symbols:  # (a quick test: most merges do not apply to a given word)
            symbols = merge_pair(symbols, pair)
    return symbols


def _dropout_cut(bpe, symbols, dropout, generator):
    """encode_word's BPE-dropout for a word already checked: its starting `symbols`, `dropout` > 0 and the
    torch.Generator `generator` (one random.Random per word, seeded from it; one draw per place a merge applies)."""
    rng = random.Random(int(torch.randint(2**62, (1,), generator=generator)))  # one seed per word
    for pair in bpe.merges:
        if len(symbols) == 1:
            break
        if pair[0] in symbols:
            symbols = merge_pair_dropout(symbols, pair, dropout, rng)
    return symbols


def encode(bpe, text, dropout=0.0, generator=None):
    """The sub-words of `text` (a str), word after word; the last sub-word of each word ends with END_OF_WORD.
    With `dropout` > 0, BPE-dropout: each join is skipped with that probability, drawn from `generator`."""
    validation.instance("bpe", bpe, BPE)
    dropout = check_dropout(dropout, generator)
    return [s for word in _text("text", text).split() for s in encode_word(bpe, word, "text", dropout, generator)]


def decode(tokens):
    """The text of a list of sub-words: joined, each END_OF_WORD read as the space between two words."""
    tokens = validation.items("tokens", tokens, "a list of sub-words (str)")
    for i, t in enumerate(tokens):
        validation.instance(f"tokens[{i}]", t, str)
        letters = t.removesuffix(END_OF_WORD)
        if not letters or letters != "".join(letters.split()) or END_OF_WORD in letters:
            raise ValueError(
                f"tokens[{i}] must be a sub-word: characters without spaces, {END_OF_WORD!r} only at the end, got {t!r}"
            )
    return "".join(tokens).replace(END_OF_WORD, " ").strip()
