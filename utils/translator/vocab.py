"""A vocabulary: words <-> integer ids, with the four special tokens pad, begin, end and unknown."""

from utils import validation

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)  # ids 0, 1, 2, 3 in every vocabulary


class Vocab:
    """Ids 0-3 are <pad>, <bos>, <eos>, <unk>; the words follow in the order given."""

    def __init__(self, words):
        words = validation.items("words", words, "a list of words")
        bad = [w for w in words if not isinstance(w, str) or not w or " " in w or w in SPECIALS]
        if bad:
            raise ValueError(
                f"words must be non-empty strings without spaces and not a special token {SPECIALS}, got {bad[:5]}"
            )
        if len(set(words)) != len(words):
            dup = sorted({w for w in words if words.count(w) > 1})
            raise ValueError(f"words must be distinct, got duplicates {dup[:5]}")
        self.itos = list(SPECIALS) + words
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        self.pad_id, self.bos_id, self.eos_id, self.unk_id = range(4)

    def __len__(self):
        return len(self.itos)

    def __contains__(self, word):
        return word in self.stoi and word not in SPECIALS

    def __eq__(self, other):
        return isinstance(other, Vocab) and self.itos == other.itos

    def __repr__(self):
        return f"Vocab({len(self)} tokens: {self.itos[4:9]} ...)"

    def words(self):
        """The ordinary words (no special tokens), in id order."""
        return self.itos[len(SPECIALS) :]

    def unknown(self, words):
        """The words not in this vocabulary, in order, without repeats."""
        return list(dict.fromkeys(w for w in words if w not in self))

    def encode(self, words, bos=False, eos=False):
        """List of ids for a list of words (unknown words -> <unk>), optionally framed by <bos> / <eos>."""
        words = validation.items("words", words, "a list of words")
        validation.boolean("bos", bos)
        validation.boolean("eos", eos)
        ids = [self.stoi.get(w, self.unk_id) if w not in SPECIALS else self.unk_id for w in words]
        return [self.bos_id] * bos + ids + [self.eos_id] * eos

    def decode(self, ids):
        """Words for a sequence of ids, stopping at <eos> and skipping <pad> and <bos>."""
        out = []
        for i in validation.items("ids", ids, "a sequence of token ids"):
            i = validation.token_id("ids", i.item() if hasattr(i, "item") else i, len(self))  # a tensor or numpy item
            if i == self.eos_id:
                break
            if i not in (self.pad_id, self.bos_id):
                out.append(self.itos[i])
        return out
