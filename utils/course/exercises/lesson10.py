"""Exercises of lesson 10: predictions (Neo's first merge, how the held-out `june` is cut, and the lesson's
measurements), BPE merges by hand, a greedy longest-match cut (WordPiece-style), the attention cost of a padded
batch, and a byte-level BPE cut."""

import random
from collections import Counter

from utils import subwords
from utils.course.exercises import (
    band_mistakes,
    exercise,
    fresh_seed,
    matching_mistake,
    mistake,
    prediction_in_band,
    prediction_number,
)

# --- predictions -------------------------------------------------------------------------------------------


def _symbols(answer):
    """A written cut or pair as a tuple of symbols ("k e</w>", ["k", "e</w>"], ("k", "e</w>")), or None."""
    if isinstance(answer, str):
        return tuple(answer.split())
    if isinstance(answer, (list, tuple)) and all(isinstance(s, str) for s in answer):
        return tuple(s.strip() for s in answer)
    return None


@exercise(
    hint="""
    A pair's count is how often its two symbols stand side by side, summed over every word of every sentence.
    Which short word occurs in every Neo sentence? Its last letter carries the end-of-word marker.
    """,
    reference="k e</w>",
    kind="prediction",
    wrong=[
        mistake("expect a pair inside a frequent stem", "k a", says="every training sentence"),
        mistake("forget that a word's last letter carries the marker", "k e", says="end-of-word"),
        mistake("expect a verb ending to come first", "o s</w>", says="verb"),
    ],
    explain="""
    k + e</w>: the object marker ke stands once in every Neo sentence (and the pair ends pike too), more often
    than any pair inside the nouns, adjectives and verbs.
    """,
)
def predict_first_merge(answer):
    """answer: the first pair BPE merges on Neo's training translations, e.g. "k a" (two symbols)."""
    got = _symbols(answer)
    if got is None or len(got) != 2:
        return f"write two symbols separated by a space, e.g. 'k a' or 'o s</w>', got {answer!r}"
    if got == ("k", "e</w>"):
        return None
    if got == ("k", "e"):
        return (
            "right letters, but the e ends the word ke, so it is the end-of-word symbol e</w>, another symbol "
            "than an e inside a word"
        )
    if got[1] in ("s</w>", "nt</w>") or "".join(got).removesuffix("</w>") in ("os", "as", "ont", "ant"):
        return (
            "a verb ending is in one word per sentence, shared among eight verbs' forms; the object marker ke "
            "is in every training sentence"
        )
    return "count how often each pair occurs: the object marker ke stands in every training sentence"


@exercise(
    hint="""
    BPE cuts a word by applying the merges in the order learned, whatever the word means. Which pieces are
    frequent in Neo? The determiners of a feminine plural noun are le and une; of a masculine plural, li and uni.
    """,
    reference="j une</w>",
    kind="prediction",
    wrong=[
        mistake("expect the stem and the ending, as in juna and juno", "jun e</w>", says="une"),
        mistake("expect june to become one token", "june</w>", says="never in training"),
        mistake("expect no merge to apply to an unseen word", "j u n e</w>", says="merges apply"),
    ],
    explain="""
    j une</w>. The determiner une (some, feminine plural) is a frequent word, so u n, un e</w> are merged early,
    and they apply to june before j + un could: BPE follows frequency, not grammar. The seen sibling juni is cut
    j uni</w> for the same reason (uni is a determiner too), while juna and juno are jun a</w>, jun o</w>.
    """,
)
def predict_june_cut(answer):
    """answer: how 100 merges cut the held-out june: 'jun e</w>', 'j une</w>', 'june</w>' or 'j u n e</w>'."""
    got = _symbols(answer)
    if got is None or "".join(got).replace("</w>", "") != "june":
        return f"write a cut of june with spaces between the tokens, e.g. 'jun e</w>', got {answer!r}"
    if not got[-1].endswith("</w>"):
        return "the last token of a word carries the end-of-word marker </w>: write it, e.g. 'jun e</w>'"
    if got == ("j", "une</w>"):
        return None
    if got == ("jun", "e</w>"):
        return (
            "jun + e</w> is how a linguist would cut it, but the determiner une is frequent: u n and un e</w> are "
            "merged early and apply before j + un"
        )
    if got == ("june</w>",):
        return "june is never in training, so no merge ever joined all of it"
    if got == ("j", "u", "n", "e</w>"):
        return "the merges apply to any word spelled with known letters, seen or not: u n and un e</w> apply here"
    return "apply the merges in order: the determiner une is a frequent word, so its pieces are merged early"


UNSEEN_BPE100 = 0.63  # the mean unseen-forms exact match of the stored plain-BPE runs (the lesson asserts it)
UNSEEN_BPE_MISSES = [
    ("expect word level's failure to stay", 0.0, (0.0, 0.1), "every seed writes some unseen-forms sentences right"),
    (
        "expect only a few",
        0.25,
        (0.1, UNSEEN_BPE100 - 0.15),
        "more of them: a held-out form whose siblings are all cut right after the stem (rub o</w>) is often written",
    ),
    (
        "expect sub-words to solve it",
        1.0,
        (UNSEEN_BPE100 + 0.15, 1.0),
        "a held-out form whose siblings are not all cut right after the stem (fe la</w>, nig ra</w>) is often not written",
    ),
]


@exercise(
    hint="""
    Lesson 07's word-level model wrote none of these sentences right. Sub-words make every held-out form
    spellable; section 2 showed that some have siblings not cut right after the stem (fe la</w>, nig ra</w>).
    """,
    reference=UNSEEN_BPE100,
    kind="prediction",
    wrong=band_mistakes(UNSEEN_BPE_MISSES),
    explain="""
    Between the two: every stored seed writes many unseen-forms sentences exactly right, where word level wrote
    none, but far from all, and the seeds differ. Which forms get written goes with how their siblings are cut
    (next cells).
    """,
)
def predict_unseen_bpe(answer):
    """answer: the mean unseen-forms exact match (0 to 1) of plain BPE, 100 merges, over the stored seeds."""
    value = prediction_number(answer)
    if not 0 <= value <= 1:
        return f"you wrote {value:g}: write a fraction between 0 and 1"
    ref = predict_unseen_bpe.reference
    return prediction_in_band(value, ref, (ref - 0.15, ref + 0.15), UNSEEN_BPE_MISSES, "the mean over the seeds")


_LOOKS_AT = {
    "noun": "noun",
    "agreeingnoun": "noun",
    "wordtranslated": "word translated",
    "adjective": "word translated",
    "previousword": "previous word",
    "previous": "previous word",
    "nextword": "next word",
    "next": "next word",
}


@exercise(
    hint="""
    The head was chosen for looking at the noun on all adjectives, where the noun is often the next word. On
    first adjectives of two, the next word is the other adjective. What would a head that only counted
    positions look at there?
    """,
    reference="noun",
    kind="prediction",
    wrong=[
        mistake("expect a head that just looks one word ahead", "next word", says="two words on"),
        mistake("expect it to look at the adjective it writes", "word translated", says="gender"),
        mistake("expect it to look one word back", "previous word", says="determiner"),
    ],
    explain="""
    The noun, two words on: the head does not just look one word ahead, it finds the noun whose gender and
    number the ending carries (in this run; lesson 07 found no such head at word level).
    """,
)
def predict_ending_looks_at(answer):
    """answer: 'noun', 'word translated', 'previous word' or 'next word'."""
    choice = (
        _LOOKS_AT.get(answer.strip().lower().replace(" ", "").replace("_", "")) if isinstance(answer, str) else None
    )
    if choice is None:
        return f"write 'noun', 'word translated', 'previous word' or 'next word', got {answer!r}"
    if choice == "next word":
        return "the next word is the other adjective here, and the noun is two words on: the head is on the noun"
    if choice == "word translated":
        return "the English adjective carries no gender: the ending's gender and number are in the noun"
    if choice == "previous word":
        return "the word before a first adjective is its determiner; the head looks at the noun"
    return None


CHARACTER_COST = 12.83  # mean (T + 1)^2 at 0 merges / at word level, over lesson 07's training translations
CHARACTER_COST_MISSES = [
    (
        "scale the cost with the length, not its square",
        3.6,
        (2.0, 6.0),
        "characters make the decoder read about 3.6 times as many positions, and the scores grow with T^2, not T",
    ),
    ("expect about the same cost", 1.0, (0.0, 2.0), "a word has several letters: targets get several times longer"),
    (
        "overshoot",
        40.0,
        (16.0, 1e9),
        "the decoder reads about 3.6 times as many positions, so about 3.6^2 times the scores",
    ),
]


@exercise(
    hint="""
    Section 2 printed the mean tokens per sentence at 0 merges and at word level; the decoder adds <bos>. The
    scores per sentence are T x T.
    """,
    reference=CHARACTER_COST,
    kind="prediction",
    wrong=band_mistakes(CHARACTER_COST_MISSES),
    explain="""
    About 13 times: the decoder reads 35.24 / 9.88 = about 3.57 times as many positions (tokens plus <bos>), and
    self-attention scores grow with the square. (A little more than 3.57 squared, about 12.7, because
    character-level lengths vary more, relative to their mean, than words'.)
    """,
)
def predict_character_cost(answer):
    """answer: how many times the word-level decoder self-attention scores a character-level target needs."""
    return prediction_in_band(answer, CHARACTER_COST, (10.0, 16.0), CHARACTER_COST_MISSES, "the ratio")


# --- 1. BPE merges by hand (practice) -----------------------------------------------------------------------


def _merges_solution(corpus, num_merges):
    """BPE's merges, in order: count adjacent pairs (a word as often as it occurs), merge the most frequent."""

    def merge(symbols, pair):
        out, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
                out.append(symbols[i] + symbols[i + 1])
                i += 2
            else:
                out.append(symbols[i])
                i += 1
        return out

    freq = Counter(w for sentence in corpus for w in sentence.split())
    words = {w: list(w[:-1]) + [w[-1] + "</w>"] for w in freq}
    alphabet = sorted({s[-1] for s in words.values()}) + sorted({c for w in freq for c in w})
    order = {s: i for i, s in enumerate(alphabet)}  # ties: left symbol first in this order, then the right one
    merges = []
    for _ in range(num_merges):
        pairs = Counter()
        for w, symbols in words.items():
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += freq[w]
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], order[p[0]], order[p[1]]))
        merges.append(best)
        order.setdefault(best[0] + best[1], len(order))
        words = {w: merge(symbols, best) for w, symbols in words.items()}
    return merges


def _merges_generic(corpus, num_merges, spell, weigh=lambda n: n, first_counted=False):
    """A BPE with one piece changed: how words are spelled, how a word is weighted, or how ties are broken."""
    freq = Counter(w for sentence in corpus for w in sentence.split())
    words = {w: spell(w) for w in freq}
    symbols = {s for ss in words.values() for s in ss}
    alphabet = sorted(s for s in symbols if s.endswith("</w>")) + sorted(s for s in symbols if not s.endswith("</w>"))
    order = {s: i for i, s in enumerate(alphabet)}
    merges = []
    for _ in range(num_merges):
        pairs = Counter()
        for w, ss in words.items():
            for pair in zip(ss, ss[1:]):
                pairs[pair] += weigh(freq[w])
        if not pairs:
            break
        if first_counted:
            best = pairs.most_common(1)[0][0]
        else:
            best = min(pairs, key=lambda p: (-pairs[p], order[p[0]], order[p[1]]))
        merges.append(best)
        order.setdefault(best[0] + best[1], len(order))
        words = {w: subwords.merge_pair(ss, best) for w, ss in words.items()}
    return merges


def _marked(w):
    return list(w[:-1]) + [w[-1] + "</w>"]


def _merges_no_marker(corpus, num_merges):
    return _merges_generic(corpus, num_merges, list)


def _merges_word_types(corpus, num_merges):
    return _merges_generic(corpus, num_merges, _marked, weigh=lambda n: 1)


def _merges_first_counted(corpus, num_merges):
    return _merges_generic(corpus, num_merges, _marked, first_counted=True)


def _merges_across_words(corpus, num_merges):
    """Each sentence spelled as one string of symbols: pairs cross the space between words."""
    sentences = [" ".join(s.split()) for s in corpus]
    spelled = {s: [t for w in s.split() for t in _marked(w)] for s in sentences}
    return _merges_generic(["_".join(s.split()) for s in sentences], num_merges, lambda w: spelled[w.replace("_", " ")])


_MERGE_MISTAKES = [
    mistake(
        "spell words without the end-of-word marker on the last letter",
        _merges_no_marker,
        says="end-of-word marker",
    ),
    mistake("count each different word once, not as often as it occurs", _merges_word_types, says="as often as"),
    mistake(
        "break ties by whichever pair was counted first",
        _merges_first_counted,
        says="tie",
    ),
    mistake("count pairs across the space between two words", _merges_across_words, says="across"),
]
_MERGE_MESSAGES = {
    _MERGE_MISTAKES[0].name: "spell each word with the end-of-word marker on its last letter (kano -> k a n o</w>)",
    _MERGE_MISTAKES[1].name: "weigh each word's pairs by how often the word occurs: count a word as often as it occurs",
    _MERGE_MISTAKES[2].name: "among equally frequent pairs (a tie), take the one whose left symbol comes first in "
    "the order: end-of-word characters, then characters (each sorted), then merged symbols as made; then the right",
    _MERGE_MISTAKES[3].name: "pairs never cross the space between two words: count them inside each word, not across",
}
_MERGE_CASES = [
    (["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3, 10),
    (["lo kano ke vidos", "la mira ke vidas", "li kani ke vidont", "le mire ke vidant"], 12),
    (["ab ba", "ab ab ba", "ba ba"], 6),  # ties everywhere
    (["aaa aa", "aaa"], 4),  # a a a: merged left to right, without overlap
    (["anna banana", "ban nab", "nab nab ban"], 8),
]


def _random_corpus(rng):
    words = ["".join(rng.choice("abnot") for _ in range(rng.randint(1, 5))) for _ in range(rng.randint(3, 8))]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(3, 10))]


@exercise(
    hint="""
    Spell each word as its characters with "</w>" on the last one; count each word's adjacent pairs, weighted by
    how often the word occurs; take the most frequent pair (ties: the left symbol first in the order end-of-word
    characters, characters, then merged symbols as made; then the right one); join it everywhere, left to
    right; repeat. Section 1's learn_merges does all of it.
    """,
    reference=_merges_solution,
    kind="practice",
    wrong=_MERGE_MISTAKES,
)
def bpe_merges(answer):
    """answer(corpus, num_merges) -> the list of merged pairs (left, right), in the order learned."""
    rng = random.Random(fresh_seed())  # a corpus drawn anew on every check, after the fixed ones
    cases = _MERGE_CASES + [(_random_corpus(rng), rng.randint(1, 12))]
    got_all = []
    for corpus, n in cases:
        got = answer(list(corpus), n)
        if not isinstance(got, (list, tuple)) or not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in got):
            return f"return a list of (left, right) pairs, got {got!r:.80}"
        got_all.append([tuple(p) for p in got])
    for (corpus, n), got in zip(cases, got_all):
        expected = [tuple(p) for p in subwords.train(list(corpus), n).merges]
        if got != expected:
            m = matching_mistake(got_all, cases, _MERGE_MISTAKES, lambda a, b: a == [tuple(p) for p in b])
            k = next((i for i, (g, e) in enumerate(zip(got, expected)) if g != e), min(len(got), len(expected)))
            where = (
                f"on the corpus {corpus[:4]}{' ...' if len(corpus) > 4 else ''} with {n} merges, merge {k + 1} "
                f"is {got[k] if k < len(got) else 'missing'}, expected {expected[k] if k < len(expected) else 'none'}"
            )
            return f"{where}: {_MERGE_MESSAGES[m.name]}" if m else where
    return None


# --- 2. A greedy longest-match cut (transfer) ---------------------------------------------------------------


def _longest_match_solution(word, vocab):
    """WordPiece-style: from the left, take the longest vocabulary piece that starts at the first free letter
    (the word's last letter carries "</w>"); None when some position has no piece."""
    tokens, complete = _longest_pieces(word, vocab)
    return tokens if complete else None


def _longest_pieces(word, vocab):
    """(the pieces the longest-match cut finds from the left, whether they cover the whole word)."""
    units = list(word[:-1]) + [word[-1] + "</w>"]  # kano -> k a n o</w>
    tokens, i = [], 0
    while i < len(units):
        for j in range(len(units), i, -1):  # the longest piece first
            if "".join(units[i:j]) in vocab:
                tokens.append("".join(units[i:j]))
                i = j
                break
        else:
            return tokens, False
    return tokens, True


def _longest_shortest_first(word, vocab):
    units = list(word[:-1]) + [word[-1] + "</w>"]
    tokens, i = [], 0
    while i < len(units):
        for j in range(i + 1, len(units) + 1):
            if "".join(units[i:j]) in vocab:
                tokens.append("".join(units[i:j]))
                i = j
                break
        else:
            return None
    return tokens


def _longest_without_marker(word, vocab):
    plain = {t.removesuffix("</w>") for t in vocab}
    tokens, i = [], 0
    while i < len(word):
        for j in range(len(word), i, -1):
            if word[i:j] in plain:
                tokens.append(word[i:j])
                i = j
                break
        else:
            return None
    return tokens


def _longest_from_the_right(word, vocab):
    units = list(word[:-1]) + [word[-1] + "</w>"]
    tokens, j = [], len(units)
    while j > 0:
        for i in range(j):  # the longest piece that ends here
            if "".join(units[i:j]) in vocab:
                tokens.insert(0, "".join(units[i:j]))
                j = i
                break
        else:
            return None
    return tokens


def _longest_partial_cut(word, vocab):
    return _longest_pieces(word, vocab)[0]  # the pieces found so far, not None


_LONGEST_MISTAKES = [
    mistake("take the shortest token that fits instead of the longest", _longest_shortest_first, says="longest"),
    mistake("drop the end-of-word marker", _longest_without_marker, says="</w>"),
    mistake("match from the right end of the word", _longest_from_the_right, says="from the left"),
    mistake("return the partial cut instead of None", _longest_partial_cut, says="None"),
]
_LONGEST_VOCAB = set(
    """k a n o i e l p u j m r s t v d o</w> a</w> i</w> e</w> s</w> t</w> n</w> ka kan kano</w> no</w> un une</w> jun
    lo</w> os</w> vid vi ont</w> nt</w> ant</w> pu pul pulo</w> ul lo ke</w>""".split()
)
# pul and kanl have no cut: no piece is l</w> (a letter training saw, but never at a word's end)
_LONGEST_CASES = ["kano", "june", "pulo", "vidos", "kani", "ke", "vidont", "pulkano", "no", "pulos", "aa", "junont"]
_LONGEST_CASES += ["pul", "kanl"]


@exercise(
    hint="""
    Spell the word as units, its last letter with "</w>": kano -> k a n o</w>. At unit i, try the longest piece
    "".join(units[i:j]) first (j from the end down to i + 1) and take the first one in the vocabulary; move i to
    j and repeat. If no piece starts at some i, return None.
    """,
    reference=_longest_match_solution,
    kind="transfer",
    wrong=_LONGEST_MISTAKES,
)
def longest_match(answer):
    """answer(word, vocab) -> the word's tokens by greedy longest match from the left (WordPiece-style), the last
    ending in "</w>"; None if no cut exists."""
    rng = random.Random(fresh_seed())  # a word drawn anew on every check, after the fixed ones
    drawn = "".join(rng.choice("kanoiejulpvd") for _ in range(rng.randint(1, 7)))
    cases = [(w, _LONGEST_VOCAB) for w in _LONGEST_CASES + [drawn]]
    got_all = [answer(w, set(v)) for w, v in cases]
    for (w, v), got in zip(cases, got_all):
        expected = _longest_match_solution(w, v)
        if (list(got) if isinstance(got, (list, tuple)) else got) != expected:
            m = matching_mistake(got_all, cases, _LONGEST_MISTAKES, lambda a, b: a == b)
            where = f"{w!r} is cut {got!r}, expected {expected!r}"
            return f"{where}: {_LONGEST_MESSAGES[m.name]}" if m else where
    return None


_LONGEST_MESSAGES = {
    _LONGEST_MISTAKES[0].name: "at each position take the longest vocabulary piece that fits, not the shortest",
    _LONGEST_MISTAKES[1].name: "the last piece must carry the end-of-word marker </w> (pulo -> pulo</w>, not pulo)",
    _LONGEST_MISTAKES[2].name: "match from the left, as WordPiece does: the longest piece that starts at the "
    "word's first letter, then at the next free position",
    _LONGEST_MISTAKES[3].name: "when no vocabulary piece starts at some position, the word has no cut: return None, "
    "not the pieces found before it",
}


# --- 3. The attention cost of a padded batch (transfer) --------------------------------------------------------


def _padded_cost_solution(lengths):
    """Score entries of one self-attention layer's head over a batch padded to its longest sequence."""
    return len(lengths) * max(lengths) ** 2


def _cost_unpadded(lengths):
    return sum(t * t for t in lengths)


def _cost_mean_squared(lengths):
    return len(lengths) * (sum(lengths) / len(lengths)) ** 2


def _cost_one_long_sequence(lengths):
    return sum(lengths) ** 2


def _cost_linear(lengths):
    return len(lengths) * max(lengths)


_COST_MISTAKES = [
    mistake("leave out the padding", _cost_unpadded, says="padded"),
    mistake("square the mean length", _cost_mean_squared, says="longest"),
    mistake("treat the batch as one long sequence", _cost_one_long_sequence, says="own"),
    mistake("count one score per position", _cost_linear, says="every key"),
]
_COST_MESSAGES = {
    _COST_MISTAKES[0].name: "the batch is padded: every sequence is as long as the longest, padding included",
    _COST_MISTAKES[1].name: "padding makes every sequence as long as the longest one, not the mean",
    _COST_MISTAKES[2].name: "each sentence attends within its own sequence: B matrices of T x T, not one of (B T)^2",
    _COST_MISTAKES[3].name: "each query position scores every key position: T x T per sequence",
}


@exercise(
    hint="""
    Padding brings every sequence of the batch to the longest length T; each then has a T x T score matrix
    (per head and layer). Multiply by the number of sequences.
    """,
    reference=_padded_cost_solution,
    kind="transfer",
    wrong=_COST_MISTAKES,
)
def padded_attention_cost(answer):
    """answer(lengths) -> the number of attention scores one head of one layer computes for a batch padded to
    its longest sequence (lengths: tokens per sequence)."""
    rng = random.Random(fresh_seed())  # a batch drawn anew on every check, after the fixed ones
    cases = [[9], [9, 9], [8, 12, 10], [34, 9, 15, 9], [3, 1, 2, 7]]
    cases.append([rng.randint(1, 40) for _ in range(rng.randint(2, 8))])
    got_all = [answer(list(c)) for c in cases]
    for c, got in zip(cases, got_all):
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            return f"return a number, got {got!r}"
        if got != _padded_cost_solution(c):
            m = matching_mistake(
                [[g] for g in got_all], [(c,) for c in cases], _COST_MISTAKES, lambda a, b: abs(a[0] - b) < 1e-6
            )
            where = f"for lengths {c} you give {got}, expected {_padded_cost_solution(c)}"
            return f"{where}: {_COST_MESSAGES[m.name]}" if m else where
    return None


# --- 4. A byte-level BPE cut (transfer) ---------------------------------------------------------------------


def _byte_cut_solution(word, merges):
    """Byte-level BPE (GPT-2 style): start from the word's UTF-8 bytes, one symbol each (256 possible, so no
    unknown symbol), then apply each merge in the order learned, everywhere in the word, left to right."""
    return _apply_merges(_utf8_bytes(word), merges)


def _utf8_bytes(word):
    """Byte-level BPE's starting symbols: one bytes object per UTF-8 byte of `word`."""
    return [bytes([b]) for b in word.encode("utf-8")]


def _byte_cut_characters(word, merges):
    """Starts from characters (each as its UTF-8 bytes) instead of single bytes."""
    return _apply_merges([c.encode("utf-8") for c in word], merges)


def _apply_merges(symbols, merges):
    """`symbols` with each merge applied in order, everywhere, left to right (utils.subwords.merge_pair)."""
    for pair in merges:
        symbols = subwords.merge_pair(symbols, tuple(pair))
    return symbols


def _byte_cut_first_only(word, merges):
    """Applies each merge only where its pair first occurs."""
    symbols = _utf8_bytes(word)
    for left, right in merges:
        pairs = list(zip(symbols, symbols[1:]))
        if (left, right) in pairs:
            i = pairs.index((left, right))
            symbols = symbols[:i] + [left + right] + symbols[i + 2 :]
    return symbols


def _byte_cut_from_the_right(word, merges):
    """Joins overlapping pairs from the right end (a a a -> a aa instead of aa a)."""
    symbols = _utf8_bytes(word)
    for left, right in merges:
        out, i = [], len(symbols) - 1
        while i >= 0:
            if i >= 1 and (symbols[i - 1], symbols[i]) == (left, right):
                out.insert(0, left + right)
                i -= 2
            else:
                out.insert(0, symbols[i])
                i -= 1
        symbols = out
    return symbols


def _byte_cut_any_merge(word, merges):
    """Sweeps the word left to right, joining any pair that is some merge, whatever the merges' order."""
    symbols, known, changed = _utf8_bytes(word), set(merges), True
    while changed:
        changed, out, i = False, [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) in known:
                out.append(symbols[i] + symbols[i + 1])
                i, changed = i + 2, True
            else:
                out.append(symbols[i])
                i += 1
        symbols = out
    return symbols


_BYTE_MISTAKES = [
    mistake("start from characters, not bytes", _byte_cut_characters, says="three bytes"),
    mistake("apply a merge only where its pair first occurs", _byte_cut_first_only, says="everywhere"),
    mistake("join overlapping pairs from the right", _byte_cut_from_the_right, says="left to right"),
    mistake("join any pair that is a merge, ignoring the merges' order", _byte_cut_any_merge, says="order learned"),
]
_BYTE_MESSAGES = {
    _BYTE_MISTAKES[0].name: "start from single bytes: 日 is three bytes and é two, separate symbols until a merge "
    "joins them; that is why no symbol is ever unknown",
    _BYTE_MISTAKES[1].name: "apply each merge everywhere in the word, not only where its pair first occurs",
    _BYTE_MISTAKES[2].name: "join a merge's pairs left to right, as section 1's merge does: a a a with a + a gives "
    "aa a",
    _BYTE_MISTAKES[3].name: "apply the merges one after the other, in the order learned: an earlier merge wins "
    "where two could apply",
}
_BYTE_MERGES = [
    (b"a", b"n"),
    (b"\xc3", b"\xa9"),
    (b"k", b"a"),
    (b"a", b"a"),
    (b"k", b"an"),
    (b"o", b"s"),
    (b"c", b"a"),
    (b"ca", b"f"),
    (b"caf", b"\xc3\xa9"),
]
_BYTE_CASES = ["kano", "café", "kaka", "aaa", "kanos", "日本", "naïve", "akan", "aaaa"]


@exercise(
    hint="""
    Start from [bytes([b]) for b in word.encode("utf-8")]: one symbol per byte. Then, for each merge (left, right)
    in the order given, sweep the symbols left to right and join every left followed by right into left + right
    (section 1's merge does the same on strings).
    """,
    reference=_byte_cut_solution,
    kind="transfer",
    wrong=_BYTE_MISTAKES,
)
def byte_cut(answer):
    """answer(word, merges) -> the word's byte-level BPE tokens, as bytes objects: its UTF-8 bytes, then each
    merge (left, right), pairs of bytes objects, applied in the order given."""
    rng = random.Random(fresh_seed())  # a word drawn anew on every check, after the fixed ones
    drawn = "".join(rng.choice("kanosé日ñ") for _ in range(rng.randint(1, 8)))
    cases = [(w, _BYTE_MERGES) for w in _BYTE_CASES + [drawn]]
    got_all = [answer(w, list(m)) for w, m in cases]
    for (w, m), got in zip(cases, got_all):
        if not isinstance(got, (list, tuple)) or not all(isinstance(t, bytes) for t in got):
            return f"return a list of bytes objects (b'ka', b'n', ...), got {got!r:.60}"
        expected = _byte_cut_solution(w, m)
        if list(got) != expected:
            mis = matching_mistake(
                [list(g) if isinstance(g, (list, tuple)) else g for g in got_all],
                cases,
                _BYTE_MISTAKES,
                lambda a, b: a == b,
            )
            where = f"{w!r} is cut {list(got)}, expected {expected}"
            return f"{where}: {_BYTE_MESSAGES[mis.name]}" if mis else where
    return None
