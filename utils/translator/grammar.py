"""A small English-like source language and its rule-based translation into "Neo", with gold alignments.

Source:  NP VERB NP [PREP NP], NP = DET ADJ* NOUN      e.g. "the big dog sees a red cat near the tree"
Neo:     NP' [NP' POSTP] NP' ke VERB', NP' = [DET'] NOUN' ADJ'*   (verb-final, adjectives after the noun)

Neo nouns have a gender (masculine -o / -i, feminine -a / -e for singular / plural). Its determiners and
adjectives agree with the noun in gender and number, and its verb agrees with the subject in gender and
number (-os -as -ont -ant). English marks the number on the verb (finds / find) but never the gender, so
the gender of a Neo determiner, adjective or verb must come from a noun elsewhere in the sentence.

The pair is not word for word: Neo has no indefinite singular article ("a" translates to nothing),
marks the object with the particle "ke" (a Neo word with no English source), and says "behind" with
two words ("na post"). alignment[j] is the index of the English word Neo word j translates, or None
for "ke".
"""

import numpy as np

from utils import validation

# noun: (singular, plural, Neo stem, gender)
NOUNS = [
    ("dog", "dogs", "kan", "m"),
    ("cat", "cats", "mir", "f"),
    ("bird", "birds", "pul", "m"),
    ("fox", "foxes", "vulp", "f"),
    ("horse", "horses", "kaval", "m"),
    ("tree", "trees", "arbor", "f"),
    ("child", "children", "nin", "m"),
    ("house", "houses", "kas", "f"),
    ("river", "rivers", "flum", "m"),
    ("boat", "boats", "nav", "f"),
    ("wolf", "wolves", "lup", "m"),
    ("apple", "apples", "pom", "f"),
]
# adjective: (English, Neo stem)
ADJECTIVES = [
    ("big", "grand"),
    ("small", "pik"),
    ("red", "rub"),
    ("old", "vek"),
    ("young", "jun"),
    ("happy", "fel"),
    ("black", "nigr"),
    ("white", "alb"),
    ("quick", "rap"),
    ("quiet", "kalm"),
]
# verb: (3rd person singular, plural, Neo stem); Neo adds an ending for the subject's gender and number
VERBS = [
    ("sees", "see", "vid"),
    ("likes", "like", "am"),
    ("follows", "follow", "sekv"),
    ("finds", "find", "trov"),
    ("hears", "hear", "aud"),
    ("watches", "watch", "spekt"),
    ("helps", "help", "help"),
    ("chases", "chase", "chas"),
]
# preposition: (English, Neo postposition as a tuple of words: "behind" takes two)
PREPOSITIONS = [("near", ("pres",)), ("behind", ("na", "post")), ("under", ("sub",)), ("with", ("kun",))]
# determiner -> Neo forms by (gender, number); "a" only takes singular nouns and has no Neo word,
# "some" only takes plural nouns
DETERMINERS = {
    "the": {("m", "sg"): "lo", ("f", "sg"): "la", ("m", "pl"): "li", ("f", "pl"): "le"},
    "a": {("m", "sg"): None, ("f", "sg"): None},
    "some": {("m", "pl"): "uni", ("f", "pl"): "une"},
}
ENDINGS = {("m", "sg"): "o", ("f", "sg"): "a", ("m", "pl"): "i", ("f", "pl"): "e"}
VERB_ENDINGS = {("m", "sg"): "os", ("f", "sg"): "as", ("m", "pl"): "ont", ("f", "pl"): "ant"}
OBJECT_PARTICLE = "ke"
GENDER_NUMBER = tuple(ENDINGS)  # the four (gender, number) combinations

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


def adjective_form(adjective, gender, number):
    """The Neo form of an English adjective for a noun of this gender and number, e.g. ("big", "m", "sg") -> grando."""
    validation.choice("adjective", adjective, ADJ_INFO)
    _gender_number(gender, number)
    return ADJ_INFO[adjective] + ENDINGS[(gender, number)]


def verb_form(verb, gender, number):
    """The Neo form of an English verb (either form) for a subject of this gender and number."""
    validation.choice("verb", verb, VERB_INFO)
    _gender_number(gender, number)
    return VERB_INFO[verb][1] + VERB_ENDINGS[(gender, number)]


def _gender_number(gender, number):
    validation.choice("gender", gender, ("m", "f"))
    validation.choice("number", number, ("sg", "pl"))


def source_words():
    """Every source-language word, in a fixed order."""
    return (
        list(DETERMINERS)
        + [a for a, _ in ADJECTIVES]
        + [w for n in NOUNS for w in n[:2]]
        + [w for v in VERBS for w in v[:2]]
        + [p for p, _ in PREPOSITIONS]
    )


def target_words():
    """Every Neo word, in a fixed order."""
    dets = [w for forms in DETERMINERS.values() for w in forms.values() if w is not None]
    nouns = [stem + ENDINGS[(g, n)] for _, _, stem, g in NOUNS for n in ("sg", "pl")]
    adjs = [stem + e for _, stem in ADJECTIVES for e in ENDINGS.values()]
    verbs = [stem + e for _, _, stem in VERBS for e in VERB_ENDINGS.values()]
    return dets + nouns + adjs + verbs + [w for _, ws in PREPOSITIONS for w in ws] + [OBJECT_PARTICLE]


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
        raise GrammarError(
            f"word {det}: {words[det]!r} cannot go with the "
            f"{'plural' if number == 'pl' else 'singular'} noun {words[j]!r}"
        )
    return {"det": det, "adjs": adjs, "noun": j, "gender": gender, "number": number}, j + 1


def _np_target(words, np_):
    """The Neo noun phrase [DET'] NOUN' ADJ'* as (word, source index, role, index of the noun it agrees with)."""
    _, stem, gender, number = NOUN_INFO[words[np_["noun"]]]
    key, noun = (gender, number), np_["noun"]
    det = DETERMINERS[words[np_["det"]]][key]
    out = [] if det is None else [(det, np_["det"], "det", noun)]
    out.append((stem + ENDINGS[key], noun, "noun", None))
    out += [(adjective_form(words[a], gender, number), a, "adj", noun) for a in np_["adjs"]]
    return out


def parse(words):
    """Parse a source sentence (list of words) into its noun phrases, verb and preposition."""
    words = validation.items("words", words, "a list of words")
    subj, i = _parse_np(words, 0)
    if i >= len(words) or words[i] not in VERB_INFO:
        got = repr(words[i]) if i < len(words) else "the end of the sentence"
        raise GrammarError(f"word {i}: expected a verb, got {got}")
    verb = i
    if VERB_INFO[words[verb]][2] != subj["number"]:
        raise GrammarError(
            f"word {verb}: the verb {words[verb]!r} does not agree with the "
            f"{'plural' if subj['number'] == 'pl' else 'singular'} subject"
        )
    obj, i = _parse_np(words, verb + 1)
    prep = pobj = None
    if i < len(words):
        if words[i] not in PREP_INFO:
            raise GrammarError(f"word {i}: expected a preposition {sorted(PREP_INFO)} or the end, got {words[i]!r}")
        prep = i
        pobj, i = _parse_np(words, i + 1)
        if i < len(words):
            raise GrammarError(f"word {i}: expected the end of the sentence, got {words[i]!r}")
    return {"subj": subj, "verb": verb, "obj": obj, "prep": prep, "pobj": pobj}


def analyse(words):
    """The Neo translation word by word: a list of (Neo word, source index or None, role, agrees_with).

    role is one of det, noun, adj, postp, particle, verb; agrees_with is the source index of the noun
    whose gender the word takes (determiners, adjectives, the verb), else None.
    """
    words = validation.items("words", words, "a list of words")
    tree = parse(words)
    out = _np_target(words, tree["subj"])
    if tree["prep"] is not None:
        out += _np_target(words, tree["pobj"])
        out += [(w, tree["prep"], "postp", None) for w in PREP_INFO[words[tree["prep"]]]]
    out += _np_target(words, tree["obj"]) + [(OBJECT_PARTICLE, None, "particle", None)]
    subj = tree["subj"]
    out.append((verb_form(words[tree["verb"]], subj["gender"], subj["number"]), tree["verb"], "verb", subj["noun"]))
    return out


def reference_translation(words):
    """(Neo words, gold alignment): alignment[j] is the index of the source word Neo word j translates
    (None for the particle "ke", which translates no English word)."""
    out = analyse(words)
    return [w for w, *_ in out], [a for _, a, *_ in out]


def sample_noun_phrase(rng, number=None):
    """Random DET ADJ* NOUN (0, 1 or 2 distinct adjectives) as a list of words, and its number."""
    validation.instance("rng", rng, np.random.Generator, "numpy Generator (np.random.default_rng(seed))")
    if number is not None:
        validation.choice("number", number, ("sg", "pl"))
    number = number or ("sg" if rng.random() < 0.5 else "pl")
    noun = NOUNS[rng.integers(len(NOUNS))]
    det = ["the", "a"][rng.integers(2)] if number == "sg" else ["the", "some"][rng.integers(2)]
    n_adj = rng.choice(3, p=[0.35, 0.4, 0.25])
    adjs = [ADJECTIVES[k][0] for k in rng.choice(len(ADJECTIVES), size=n_adj, replace=False)]
    return [det, *adjs, noun[0] if number == "sg" else noun[1]], number


def sample_sentence(rng):
    """A random grammatical source sentence from a numpy Generator: 2-4 words per noun phrase, so
    5 (NP VERB NP) to 14 (NP VERB NP PREP NP) words."""
    subj, number = sample_noun_phrase(rng)
    verb = VERBS[rng.integers(len(VERBS))]
    obj, _ = sample_noun_phrase(rng)
    words = subj + [verb[0] if number == "sg" else verb[1]] + obj
    if rng.random() < 0.5:
        pobj, _ = sample_noun_phrase(rng)
        words += [PREPOSITIONS[rng.integers(len(PREPOSITIONS))][0]] + pobj
    return words
