"""A small English-like source language and its rule-based translation into "Neo", with gold alignments.

Source:  NP VERB NP [PREP NP], NP = DET ADJ* NOUN      e.g. "the big dog sees a red cat near the tree"
Neo:     NP' [NP' POSTP] NP' VERB', NP' = DET' NOUN' ADJ'*   (verb-final, adjectives after the noun)

Neo nouns have a gender (masculine -o / -i, feminine -a / -e for singular / plural); its determiners and
adjectives agree with the noun in gender and number, and its verb agrees with the subject's number.
So a Neo word can depend on a source word far away (the determiner on the noun after the adjectives,
the final verb on the subject), and the word order changes: cross-attention must learn to reorder.
Every Neo word translates exactly one source word: its gold alignment.
"""

# noun: (singular, plural, Neo stem, gender)
NOUNS = [
    ("dog", "dogs", "kan", "m"), ("cat", "cats", "mir", "f"), ("bird", "birds", "pul", "m"),
    ("fox", "foxes", "vulp", "f"), ("horse", "horses", "kaval", "m"), ("tree", "trees", "arbor", "f"),
    ("child", "children", "nin", "m"), ("house", "houses", "kas", "f"), ("river", "rivers", "flum", "m"),
    ("boat", "boats", "nav", "f"), ("wolf", "wolves", "lup", "m"), ("apple", "apples", "pom", "f"),
]
# adjective: (English, Neo stem)
ADJECTIVES = [
    ("big", "grand"), ("small", "pik"), ("red", "rub"), ("old", "vek"), ("young", "jun"),
    ("happy", "fel"), ("black", "nigr"), ("white", "alb"), ("quick", "rap"), ("quiet", "kalm"),
]
# verb: (3rd person singular, plural, Neo stem); Neo adds -at (singular subject) or -ant (plural)
VERBS = [
    ("sees", "see", "vid"), ("likes", "like", "am"), ("follows", "follow", "sekv"), ("finds", "find", "trov"),
    ("hears", "hear", "aud"), ("watches", "watch", "spekt"), ("helps", "help", "help"), ("chases", "chase", "chas"),
]
# preposition: (English, Neo postposition)
PREPOSITIONS = [("near", "pres"), ("behind", "post"), ("under", "sub"), ("with", "kun")]
# determiner -> Neo forms by (gender, number); "a" only takes singular nouns, "some" only plural ones
DETERMINERS = {
    "the": {("m", "sg"): "lo", ("f", "sg"): "la", ("m", "pl"): "li", ("f", "pl"): "le"},
    "a": {("m", "sg"): "uno", ("f", "sg"): "una"},
    "some": {("m", "pl"): "uni", ("f", "pl"): "une"},
}
ENDINGS = {("m", "sg"): "o", ("f", "sg"): "a", ("m", "pl"): "i", ("f", "pl"): "e"}
VERB_ENDINGS = {"sg": "at", "pl": "ant"}

NOUN_INFO = {}  # English noun form -> (lemma, Neo stem, gender, number)
for _sg, _pl, _stem, _g in NOUNS:
    NOUN_INFO[_sg] = (_sg, _stem, _g, "sg")
    NOUN_INFO[_pl] = (_sg, _stem, _g, "pl")
ADJ_INFO = dict(ADJECTIVES)
VERB_INFO = {}  # English verb form -> (lemma, Neo stem, number it agrees with)
for _s, _p, _stem in VERBS:
    VERB_INFO[_s] = (_s, _stem, "sg")
    VERB_INFO[_p] = (_s, _stem, "pl")
PREP_INFO = dict(PREPOSITIONS)


def source_words():
    """Every source-language word, in a fixed order."""
    return (list(DETERMINERS) + [a for a, _ in ADJECTIVES] + [w for n in NOUNS for w in n[:2]]
            + [w for v in VERBS for w in v[:2]] + [p for p, _ in PREPOSITIONS])


def target_words():
    """Every Neo word, in a fixed order."""
    dets = [w for forms in DETERMINERS.values() for w in forms.values()]
    nouns = [stem + ENDINGS[(g, n)] for _, _, stem, g in NOUNS for n in ("sg", "pl")]
    adjs = [stem + e for _, stem in ADJECTIVES for e in ENDINGS.values()]
    verbs = [stem + e for _, _, stem in VERBS for e in VERB_ENDINGS.values()]
    return dets + nouns + adjs + verbs + [p for _, p in PREPOSITIONS]


class GrammarError(ValueError):
    """A source sentence outside the grammar (it has no reference translation)."""


def _parse_np(words, i):
    """Parse DET ADJ* NOUN at words[i]; return (span info, next index)."""
    if i >= len(words) or words[i] not in DETERMINERS:
        got = repr(words[i]) if i < len(words) else "the end of the sentence"
        raise GrammarError(f"word {i}: expected a determiner {sorted(DETERMINERS)}, got {got}")
    det, j, adjs = i, i + 1, []
    while j < len(words) and words[j] in ADJ_INFO:
        adjs.append(j)
        j += 1
    if j >= len(words) or words[j] not in NOUN_INFO:
        got = repr(words[j]) if j < len(words) else "the end of the sentence"
        raise GrammarError(f"word {j}: expected an adjective or a noun, got {got}")
    _, _, gender, number = NOUN_INFO[words[j]]
    if (gender, number) not in DETERMINERS[words[det]]:
        raise GrammarError(f"word {det}: {words[det]!r} cannot go with the "
                           f"{'plural' if number == 'pl' else 'singular'} noun {words[j]!r}")
    return {"det": det, "adjs": adjs, "noun": j, "gender": gender, "number": number}, j + 1


def _np_target(words, np_):
    """The Neo noun phrase DET' NOUN' ADJ'* with the index of the source word each comes from."""
    _, stem, gender, number = NOUN_INFO[words[np_["noun"]]]
    key = (gender, number)
    out = [(DETERMINERS[words[np_["det"]]][key], np_["det"]), (stem + ENDINGS[key], np_["noun"])]
    out += [(ADJ_INFO[words[a]] + ENDINGS[key], a) for a in np_["adjs"]]
    return out


def parse(words):
    """Parse a source sentence (list of words) into its noun phrases, verb and preposition."""
    words = list(words)
    subj, i = _parse_np(words, 0)
    if i >= len(words) or words[i] not in VERB_INFO:
        got = repr(words[i]) if i < len(words) else "the end of the sentence"
        raise GrammarError(f"word {i}: expected a verb, got {got}")
    verb = i
    if VERB_INFO[words[verb]][2] != subj["number"]:
        raise GrammarError(f"word {verb}: the verb {words[verb]!r} does not agree with the "
                           f"{'plural' if subj['number'] == 'pl' else 'singular'} subject")
    obj, i = _parse_np(words, verb + 1)
    prep = pobj = None
    if i < len(words):
        if words[i] not in PREP_INFO:
            raise GrammarError(f"word {i}: expected a preposition {sorted(PREP_INFO)} or the end, "
                               f"got {words[i]!r}")
        prep = i
        pobj, i = _parse_np(words, i + 1)
        if i < len(words):
            raise GrammarError(f"word {i}: expected the end of the sentence, got {words[i]!r}")
    return {"subj": subj, "verb": verb, "obj": obj, "prep": prep, "pobj": pobj}


def reference_translation(words):
    """(Neo words, gold alignment): alignment[j] is the index of the source word Neo word j translates."""
    words = list(words)
    tree = parse(words)
    out = _np_target(words, tree["subj"])
    if tree["prep"] is not None:
        out += _np_target(words, tree["pobj"]) + [(PREP_INFO[words[tree["prep"]]], tree["prep"])]
    out += _np_target(words, tree["obj"])
    _, stem, _ = VERB_INFO[words[tree["verb"]]]
    out.append((stem + VERB_ENDINGS[tree["subj"]["number"]], tree["verb"]))
    return [w for w, _ in out], [a for _, a in out]


def adjective_noun_pairs(words):
    """The (adjective, noun lemma) pairs of a parsed source sentence, e.g. {("big", "dog")}."""
    tree = parse(words)
    pairs = set()
    for np_ in (tree["subj"], tree["obj"], tree["pobj"]):
        if np_ is not None:
            lemma = NOUN_INFO[words[np_["noun"]]][0]
            pairs |= {(words[a], lemma) for a in np_["adjs"]}
    return pairs


def sample_noun_phrase(rng, number=None):
    """Random DET ADJ* NOUN (0, 1 or 2 distinct adjectives) as a list of words, and its number."""
    number = number or ("sg" if rng.random() < 0.5 else "pl")
    noun = NOUNS[rng.integers(len(NOUNS))]
    det = ["the", "a"][rng.integers(2)] if number == "sg" else ["the", "some"][rng.integers(2)]
    n_adj = rng.choice(3, p=[0.35, 0.4, 0.25])
    adjs = [ADJECTIVES[k][0] for k in rng.choice(len(ADJECTIVES), size=n_adj, replace=False)]
    return [det, *adjs, noun[0] if number == "sg" else noun[1]], number


def sample_sentence(rng):
    """A random grammatical source sentence (3 to 15 words) from a numpy Generator."""
    subj, number = sample_noun_phrase(rng)
    verb = VERBS[rng.integers(len(VERBS))]
    obj, _ = sample_noun_phrase(rng)
    words = subj + [verb[0] if number == "sg" else verb[1]] + obj
    if rng.random() < 0.5:
        pobj, _ = sample_noun_phrase(rng)
        words += [PREPOSITIONS[rng.integers(len(PREPOSITIONS))][0]] + pobj
    return words
