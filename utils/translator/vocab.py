"""A vocabulary: words <-> integer ids, with the four special tokens pad, begin, end and unknown; and a sub-word
vocabulary with the same interface, whose ids are byte-pair-encoded pieces of the words (utils.subwords)."""

from utils import subwords, validation

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
        return self.tokens(ids)

    def tokens(self, ids):
        """The tokens of a sequence of ids, stopping at <eos> and skipping <pad> and <bos>."""
        out = []
        for i in validation.items("ids", ids, "a sequence of token ids"):
            i = validation.token_id("ids", i.item() if hasattr(i, "item") else i, len(self))  # a tensor or numpy item
            if i == self.eos_id:
                break
            if i not in (self.pad_id, self.bos_id):
                out.append(self.itos[i])
        return out

    def max_tokens(self, n_words):
        """How many tokens a decoder may write for about `n_words` words: one per word."""
        return n_words


class SubwordVocab(Vocab):
    """A Vocab whose tokens are the sub-words of a byte-pair encoding (utils.subwords.BPE), in its vocabulary order:
    encode takes words and gives the ids of their sub-words, decode gives words back. A word with a symbol the
    encoding never saw raises a ValueError (no <unk>)."""

    def __init__(self, bpe):
        validation.instance("bpe", bpe, subwords.BPE)
        super().__init__(bpe.vocabulary())
        self.bpe = bpe
        self._ids = {}  # word -> ids of its sub-words, filled as words are met

    def __eq__(self, other):
        return isinstance(other, SubwordVocab) and self.bpe == other.bpe

    def __repr__(self):
        return f"SubwordVocab({len(self)} tokens, {len(self.bpe.merges)} merges: {self.itos[4:9]} ...)"

    def word_ids(self, word, name="word"):
        """The ids of one word's sub-words (`name` names the word in an error)."""
        if not isinstance(word, str) or word not in self._ids:
            validation.instance(name, word, str)
            if len(word.split()) != 1 or word != word.strip():
                raise ValueError(f"{name} must be one word (no spaces), got {word!r}")
            self._ids[word] = [self.stoi[s] for s in subwords.encode_word(self.bpe, word, name)]
        return self._ids[word]

    def encode(self, words, bos=False, eos=False, dropout=0.0, generator=None):
        """List of ids of the words' sub-words, optionally framed by <bos> / <eos>. With `dropout` > 0 each word is
        cut afresh with BPE-dropout (utils.subwords.encode_word), drawing from the torch.Generator `generator`."""
        words = validation.items("words", words, "a list of words")
        validation.boolean("bos", bos)
        validation.boolean("eos", eos)
        dropout = subwords.check_dropout(dropout, generator)
        if dropout == 0:
            ids = [i for j, w in enumerate(words) for i in self.word_ids(w, f"words[{j}]")]
        else:
            ids = []
            for j, w in enumerate(words):
                self.word_ids(w, f"words[{j}]")  # checks the word (and caches its plain cut)
                ids += [
                    self.stoi[s] for s in subwords._dropout_cut(self.bpe, subwords.split_word(w), dropout, generator)
                ]
        return [self.bos_id] * bos + ids + [self.eos_id] * eos

    def decode(self, ids):
        """Words for a sequence of sub-word ids (stopping at <eos>, skipping <pad> and <bos>); a word left
        unfinished at the end (no end-of-word marker) is kept as it is."""
        return subwords.decode(self.tokens(ids)).split()

    def max_tokens(self, n_words):
        """None: any number of sub-words (the model's position table bounds a decoder)."""
        return None
