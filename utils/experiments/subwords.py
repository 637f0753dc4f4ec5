"""Lesson 10's experiment: lesson 07's translator recipe (utils.translator.recipe) trained with word-level targets
and with sub-word targets (byte-pair encoding, utils.subwords), plain or with BPE-dropout (Provilkov et al. 2020),
measured on the in-distribution test split and on the split that needs a held-out Neo word form; and the helpers
that diagnose which held-out forms get written.

Sub-words on the target side only (benchmarks/subwords.py says why). The merges are learned on the training
translations only. With dropout > 0, every time training draws a sentence its target is cut afresh
(data.DropoutTargets): each merge application is skipped with probability `dropout`; testing and decoding use the
plain cut. The stored runs (benchmarks/subwords_seeds.py) are in data/subwords_seeds.json.
"""

import dataclasses
import functools
from pathlib import Path

import torch

from utils import subwords, validation
from utils.experiments.stored import stored_json
from utils.translator import grammar, recipe
from utils.translator.data import DropoutTargets, make_dataset, to_tensors, with_subword_targets
from utils.translator.evaluate import exact_match, heldout_substitutions, token_accuracy, translate_pairs
from utils.translator.model import Seq2SeqTransformer
from utils.translator.train import train
from utils.translator.vocab import SubwordVocab

# name -> {"merges": byte-pair merges (None: word level), "dropout": BPE-dropout rate}; in the order the stored runs
# were made. At 0 merges every word is its characters, and dropout has nothing to skip.
SETTINGS = {
    "word": {"merges": None, "dropout": 0.0},
    "dropout30": {"merges": 30, "dropout": 0.1},
    "bpe100": {"merges": 100, "dropout": 0.0},
    "characters": {"merges": 0, "dropout": 0.0},
    "dropout100": {"merges": 100, "dropout": 0.1},
    "dropout60": {"merges": 60, "dropout": 0.1},
    "dropout150": {"merges": 150, "dropout": 0.1},
}
SWEEP = ("characters", "dropout30", "dropout60", "dropout100", "dropout150")  # merges 0, 30, 60, 100, 150
SEED_RUNS = Path(__file__).resolve().parent / "data" / "subwords_seeds.json"  # package data: on Colab too
ATTENTION_SEED_RUNS = SEED_RUNS.with_name("subword_attention_seeds.json")
_MADE_BY = {
    SEED_RUNS.name: "benchmarks/subwords_seeds.py",
    ATTENTION_SEED_RUNS.name: "benchmarks/subword_attention_seeds.py",
}


def setting(name_or_settings):
    """{"merges": int or None, "dropout": float} for a name in SETTINGS or such a dict (checked)."""
    if isinstance(name_or_settings, str):
        validation.choice("name_or_settings", name_or_settings, SETTINGS)
        return dict(SETTINGS[name_or_settings])
    validation.instance("name_or_settings", name_or_settings, dict, f"name in {tuple(SETTINGS)} or a dict")
    if set(name_or_settings) != {"merges", "dropout"}:
        raise ValueError(f"name_or_settings must have the keys merges and dropout, got {sorted(name_or_settings)}")
    merges = name_or_settings["merges"]
    if merges is not None:
        merges = validation.integer("name_or_settings['merges']", merges, minimum=0)
    dropout = validation.probability("name_or_settings['dropout']", name_or_settings["dropout"], True)
    if merges is None and dropout > 0:
        raise ValueError(f"name_or_settings: dropout needs sub-words (merges an int), got merges=None, {dropout=}")
    return {"merges": merges, "dropout": dropout}


@functools.lru_cache(maxsize=4)
def _dataset(items):
    return make_dataset(**dict(items))


def dataset(name_or_settings, data_config=None):
    """Lesson 07's data set (recipe.DATA, or `data_config`) with the setting's target vocabulary."""
    s = setting(name_or_settings)
    ds = _dataset(tuple(sorted((data_config or recipe.DATA).items())))
    return ds if s["merges"] is None else with_subword_targets(ds, s["merges"])


def fit_config(config, data, dropout=0.0):
    """`config` resized to the data set's vocabularies, its position table long enough for the longest training
    target (with dropout, the longest a cut can be: one token per letter)."""
    _, tgt = to_tensors(data.train, data.src_vocab, data.tgt_vocab)  # (N, T)
    longest = DropoutTargets(data.train, data.tgt_vocab, dropout).shape[1] if dropout > 0 else tgt.shape[1]
    return dataclasses.replace(
        config,
        src_vocab_size=len(data.src_vocab),
        tgt_vocab_size=len(data.tgt_vocab),
        max_len=max(config.max_len, longest),
    )


def train_setting(name_or_settings, seed, steps=None, progress=False, *, data_config=None, model_config=None):
    """Train lesson 07's recipe in one setting: initial weights from torch.manual_seed(seed), the BPE-dropout cuts
    from a generator seeded with `seed`, recipe.TRAIN (its `steps` replaced when given). Returns (model, data,
    history); a test run trains once per call (translator.train is wrapped by train_cache.cached).
    `data_config` / `model_config` replace recipe.DATA / recipe.MODEL (small sizes for quick checks)."""
    s = setting(name_or_settings)
    validation.seed("seed", seed)
    steps = recipe.TRAIN["steps"] if steps is None else validation.positive_int("steps", steps)
    data = dataset(s, data_config)
    config = fit_config(model_config or recipe.MODEL, data, s["dropout"])
    src, tgt = to_tensors(data.train, data.src_vocab, data.tgt_vocab)  # (N, S), (N, T)
    if s["dropout"] > 0:
        tgt = DropoutTargets(data.train, data.tgt_vocab, s["dropout"], seed)
    torch.manual_seed(seed)
    model = Seq2SeqTransformer(config)
    history = train(model, src, tgt, progress=progress, **dict(recipe.TRAIN, steps=steps))
    return model, data, history


def mean_target_length(data):
    """Target tokens per training sentence (plain cut, no <bos> / <eos>)."""
    _, tgt = to_tensors(data.train, data.src_vocab, data.tgt_vocab)  # (N, T)
    return float((tgt > data.tgt_vocab.eos_id).sum(1).float().mean())


def measure(model, data):
    """The measures of benchmarks/subwords.py's run on the two test splits, plus per held-out form the counts of
    what was written where it was needed (evaluate.SUBSTITUTIONS)."""
    refs = [list(p.tgt) for p in data.test]
    hyps = translate_pairs(model, data.test, data.src_vocab, data.tgt_vocab)
    unseen = translate_pairs(model, data.test_unseen, data.src_vocab, data.tgt_vocab)
    written = heldout_substitutions(unseen, data.test_unseen, data.heldout_forms)
    by_form = {f.neo: heldout_substitutions(unseen, data.test_unseen, [f]) for f in data.heldout_forms}
    return {
        "in_distribution_exact_match": round(exact_match(hyps, refs), 4),
        "unseen_form_exact_match": round(exact_match(unseen, [list(p.tgt) for p in data.test_unseen]), 4),
        "token_accuracy": round(token_accuracy(hyps, refs), 4),
        "heldout_forms_written": f"{written['the held-out form']}/{sum(written.values())}",
        "heldout_forms_written_by_form": {w: f"{c['the held-out form']}/{sum(c.values())}" for w, c in by_form.items()},
        "heldout_form_counts": by_form,
    }


def load_seed_runs(path=SEED_RUNS):
    """The stored runs of benchmarks/subwords_seeds.py, or of the script named in _MADE_BY (a dict; see the script)."""
    return stored_json(path, f"python {_MADE_BY.get(Path(path).name, 'benchmarks/subwords_seeds.py')}")


# ---- diagnosis: which held-out forms get written ----


def stem_and_ending(form):
    """(stem, ending) of a data.HeldoutForm (or any form with .kind, .english, .gender, .number)."""
    key = (form.gender, form.number)
    if form.kind == "adjective":
        return grammar.ADJ_INFO[form.english], grammar.ENDINGS[key]
    return grammar.VERB_INFO[form.english][1], grammar.VERB_ENDINGS[key]


def siblings(form):
    """The form's three other forms (same adjective or verb, the other genders and numbers), the ones training
    has: {neo word: its ending}."""
    stem, _ = stem_and_ending(form)
    endings = grammar.ENDINGS if form.kind == "adjective" else grammar.VERB_ENDINGS
    return {stem + e: e for key, e in endings.items() if key != (form.gender, form.number)}


def carries_ending(tgt_vocab, word, ending):
    """True if the plain cut of `word` ends with `ending` as a token of its own (e.g. alb|o</w> for ending o)."""
    validation.instance("tgt_vocab", tgt_vocab, SubwordVocab)
    return tgt_vocab.itos[tgt_vocab.encode([word])[-1]] == ending + subwords.END_OF_WORD


def splits_at(tokens, position):
    """True if a token boundary falls `position` letters into the word the `tokens` spell (e.g. after its stem)."""
    lengths = [len(t.removesuffix(subwords.END_OF_WORD)) for t in tokens]
    return position in {sum(lengths[:i]) for i in range(1, len(lengths))}


def ending_token_rate(tgt_vocab, word_endings, dropout, samples=200, seed=0):
    """Over `samples` BPE-dropout cuts of each word of `word_endings` ({word: its ending}), the fraction whose last
    token is the ending alone: how often training shows the ending as a token of its own (the plain cut: 0 or 1)."""
    validation.instance("tgt_vocab", tgt_vocab, SubwordVocab)
    samples = validation.positive_int("samples", samples)
    generator = torch.Generator().manual_seed(validation.seed("seed", seed))
    hits = 0
    for word, ending in word_endings.items():
        for _ in range(samples):
            ids = tgt_vocab.encode([word], dropout=dropout, generator=generator if dropout > 0 else None)
            hits += tgt_vocab.itos[ids[-1]] == ending + subwords.END_OF_WORD
    return hits / (samples * len(word_endings))


def form_cuts(data, dropout=0.0):
    """Per held-out form: its plain cut and its siblings' cuts; siblings_carry_ending, how many siblings (of 3) end
    with their ending as a token of its own; siblings_split_at_stem, how many have a token boundary between stem
    and ending; the same two for the form itself; prefix_cut_differs, whether the form's tokens before its last
    one differ from every sibling's; and, with dropout > 0, siblings_ending_token_rate: how often a dropout cut of a
    sibling ends with its ending alone (ending_token_rate). None at word level."""
    out = {}
    for f in data.heldout_forms:
        stem, ending = stem_and_ending(f)
        if not isinstance(data.tgt_vocab, SubwordVocab):
            out[f.neo] = {"tokens": f.neo, "siblings": dict.fromkeys(siblings(f)), "siblings_carry_ending": None}
            continue
        v, family = data.tgt_vocab, siblings(f)
        toks = [v.itos[i] for i in v.encode([f.neo])]
        sib = {w: [v.itos[i] for i in v.encode([w])] for w in family}
        out[f.neo] = {
            "tokens": " ".join(toks),
            "siblings": {w: " ".join(t) for w, t in sib.items()},
            "siblings_carry_ending": sum(carries_ending(v, w, e) for w, e in family.items()),
            "siblings_split_at_stem": sum(splits_at(t, len(stem)) for t in sib.values()),
            "carries_ending": carries_ending(v, f.neo, ending),
            "split_at_stem": splits_at(toks, len(stem)),
            "prefix_cut_differs": all(toks[:-1] != t[:-1] for t in sib.values()),
        }
        if dropout > 0:
            out[f.neo]["siblings_ending_token_rate"] = round(ending_token_rate(v, family, dropout), 4)
    return out


def ratio(text):
    """(written, needed) from a stored "a/b" string."""
    a, b = text.split("/")
    return int(a), int(b)


def written_rates(runs):
    """{form: {"per_seed": [rate or None], "written": a, "needed": b, "rate": a / b}} from stored per-seed runs
    ({seed: run measures}), pooled over the seeds."""
    forms = {}
    for seed in sorted(runs, key=int):
        for form, text in runs[seed]["heldout_forms_written_by_form"].items():
            a, b = ratio(text)
            entry = forms.setdefault(form, {"per_seed": [], "written": 0, "needed": 0})
            entry["per_seed"].append(round(a / b, 4) if b else None)
            entry["written"] += a
            entry["needed"] += b
    for entry in forms.values():
        entry["rate"] = round(entry["written"] / entry["needed"], 4) if entry["needed"] else None
    return forms


def diagnosis(runs, cuts):
    """Per held-out form its written rate over the seeds next to its cuts (form_cuts), and the rates pooled by
    whether every sibling carries its ending as a token of its own, whether every sibling is cut between stem and
    ending, and whether the form's cut before its last token differs from every sibling's."""
    rates = written_rates(runs)
    forms = {f: {**rates[f], **cuts[f]} for f in rates}
    groups = {}
    for key, test in (
        ("all siblings carry their ending", lambda c: c["siblings_carry_ending"] == 3),
        ("not all siblings carry their ending", lambda c: c["siblings_carry_ending"] not in (None, 3)),
        ("all siblings split at the stem", lambda c: c.get("siblings_split_at_stem") == 3),
        ("not all siblings split at the stem", lambda c: c.get("siblings_split_at_stem") not in (None, 3)),
        ("prefix cut differs from every sibling's", lambda c: c.get("prefix_cut_differs") is True),
        ("prefix cut as in a sibling", lambda c: c.get("prefix_cut_differs") is False),
    ):
        chosen = [f for f in forms if test(forms[f])]
        a = sum(forms[f]["written"] for f in chosen)
        b = sum(forms[f]["needed"] for f in chosen)
        groups[key] = {"forms": chosen, "written": a, "needed": b, "rate": round(a / b, 4) if b else None}
    return {"forms": forms, "groups": groups}
