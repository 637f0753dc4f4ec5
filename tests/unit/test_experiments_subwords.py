"""utils.experiments.subwords: settings, training one setting (quick sizes), measures, the stored runs and the
diagnosis helpers (siblings of a held-out form, whether they carry their ending as a token, written rates)."""

import dataclasses

import pytest
import torch

from utils.experiments import subwords as E
from utils.translator import recipe
from utils.translator.data import HeldoutForm

QUICK_DATA = {"seed": 0, "n_train": 300, "n_val": 20, "n_test": 30, "n_test_unseen": 30}
QUICK_MODEL = dataclasses.replace(recipe.MODEL, d_model=16, num_heads=2, d_ff=32, num_layers=1)


def test_settings_cover_word_plain_dropout_and_a_sweep_of_at_least_four_merge_counts():
    assert E.SETTINGS["word"] == {"merges": None, "dropout": 0.0}
    assert E.SETTINGS["bpe100"] == {"merges": 100, "dropout": 0.0}
    assert E.SETTINGS["dropout30"] == {"merges": 30, "dropout": 0.1}
    merges = [E.SETTINGS[n]["merges"] for n in E.SWEEP]
    assert merges == sorted(merges) and len(set(merges)) >= 4 and merges[0] == 0
    assert all(E.SETTINGS[n]["dropout"] == 0.1 for n in E.SWEEP if E.SETTINGS[n]["merges"] > 0)
    assert E.setting("word") == E.SETTINGS["word"] and E.setting({"merges": 5, "dropout": 0.2}) == {
        "merges": 5,
        "dropout": 0.2,
    }


@pytest.mark.parametrize(
    "value, error, match",
    [
        ("words", ValueError, "name_or_settings must be one of"),
        (3, TypeError, "name_or_settings must be a name in"),
        ([1], TypeError, "name_or_settings must be a name in"),
        ({"merges": 5}, ValueError, "name_or_settings must have the keys merges and dropout"),
        ({"merges": -1, "dropout": 0.0}, ValueError, r"name_or_settings\['merges'\] must be an int >= 0"),
        ({"merges": 5, "dropout": 1.5}, ValueError, r"name_or_settings\['dropout'\] must be a probability in \[0, 1\]"),
        ({"merges": None, "dropout": 0.1}, ValueError, "dropout needs sub-words"),
    ],
)
def test_bad_settings_are_named(value, error, match):
    with pytest.raises(error, match=match):
        E.setting(value)


@pytest.fixture(scope="module")
def quick_runs():
    return {
        name: E.train_setting(name, 0, steps=5, data_config=QUICK_DATA, model_config=QUICK_MODEL)
        for name in ("word", "dropout30")
    }


def test_train_setting_trains_the_recipe_in_each_setting(quick_runs):
    model, data, history = quick_runs["word"]
    assert len(history["loss"]) == 5 and model.config.tgt_vocab_size == len(data.tgt_vocab)
    assert model.config.max_len == recipe.MODEL.max_len and not model.training
    model, data, history = quick_runs["dropout30"]
    assert len(data.tgt_vocab.bpe.merges) == 30 and model.config.tgt_vocab_size == len(data.tgt_vocab)
    assert model.config.max_len >= max(sum(map(len, p.tgt)) for p in data.train) + 2, "no room for characters"
    # the same call trains the same weights (the cuts are seeded by the model seed)
    again, _, h2 = E.train_setting("dropout30", 0, steps=5, data_config=QUICK_DATA, model_config=QUICK_MODEL)
    assert h2["loss"] == history["loss"] and all(
        torch.equal(a, b) for a, b in zip(model.parameters(), again.parameters())
    )
    _, _, h3 = E.train_setting("dropout30", 1, steps=5, data_config=QUICK_DATA, model_config=QUICK_MODEL)
    assert h3["loss"] != history["loss"]


def test_full_size_word_level_is_lesson_07s_model():
    data = E.dataset("word")
    assert E.fit_config(recipe.MODEL, data) == recipe.MODEL


def test_measure_has_the_benchmarks_keys_and_per_form_counts(quick_runs):
    model, data, _ = quick_runs["dropout30"]
    m = E.measure(model, data)
    for key in ("in_distribution_exact_match", "unseen_form_exact_match", "token_accuracy"):
        assert 0 <= m[key] <= 1
    assert (
        set(m["heldout_forms_written_by_form"]) == set(m["heldout_form_counts"]) == {f.neo for f in data.heldout_forms}
    )
    for form, text in m["heldout_forms_written_by_form"].items():
        counts = m["heldout_form_counts"][form]
        assert text == f"{counts['the held-out form']}/{sum(counts.values())}"
    written, needed = E.ratio(m["heldout_forms_written"])
    assert needed == sum(sum(c.values()) for c in m["heldout_form_counts"].values()) and 0 <= written <= needed


def test_siblings_and_endings():
    form = HeldoutForm("adjective", "white", "m", "pl", "albi")
    assert E.stem_and_ending(form) == ("alb", "i")
    assert E.siblings(form) == {"albo": "o", "alba": "a", "albe": "e"}
    verb = HeldoutForm("verb", "sees", "f", "pl", "vidant")
    assert E.stem_and_ending(verb) == ("vid", "ant") and E.siblings(verb) == {
        "vidos": "os",
        "vidas": "as",
        "vidont": "ont",
    }


def test_form_cuts_and_carries_ending():
    data = E.dataset("dropout30", QUICK_DATA)
    cuts = E.form_cuts(data)
    v = data.tgt_vocab
    for f in data.heldout_forms:
        c = cuts[f.neo]
        tokens = [v.itos[i] for i in v.encode([f.neo])]
        assert c["tokens"] == " ".join(tokens) and set(c["siblings"]) == set(E.siblings(f))
        carry = sum(c["siblings"][w].split()[-1] == e + "</w>" for w, e in E.siblings(f).items())
        assert c["siblings_carry_ending"] == carry
        assert E.carries_ending(v, f.neo, E.stem_and_ending(f)[1]) == (tokens[-1] == E.stem_and_ending(f)[1] + "</w>")
        assert c["split_at_stem"] == E.splits_at(tokens, len(E.stem_and_ending(f)[0]))
    # characters: every ending of one letter is its own token, a two- or three-letter one is not; every cut splits
    chars_data = E.dataset("characters", QUICK_DATA)
    chars = chars_data.tgt_vocab
    assert E.carries_ending(chars, "albo", "o") and not E.carries_ending(chars, "vidos", "os")
    assert all(c["siblings_split_at_stem"] == 3 and c["split_at_stem"] for c in E.form_cuts(chars_data).values())
    assert (
        E.splits_at(["alb", "o</w>"], 3) and not E.splits_at(["al", "bo</w>"], 3) and not E.splits_at(["albo</w>"], 4)
    )
    # under dropout, a sibling's ending shows alone in some cuts even when its plain cut fuses it
    with_rate = E.form_cuts(data, 0.1)
    for f in data.heldout_forms:
        rate = with_rate[f.neo]["siblings_ending_token_rate"]
        assert 0 <= rate <= 1
        if rate == 1:  # every sampled cut shows the ending alone: so does every plain cut
            assert cuts[f.neo]["siblings_carry_ending"] == 3
        if cuts[f.neo]["siblings_carry_ending"] == 0:
            assert rate < 0.5
    assert "siblings_ending_token_rate" not in cuts[data.heldout_forms[0].neo]
    assert E.ending_token_rate(v, {"albo": "o"}, 0.0) in (0.0, 1.0)
    with pytest.raises(TypeError, match="tgt_vocab must be a SubwordVocab"):
        E.carries_ending(E.dataset("word", QUICK_DATA).tgt_vocab, "albo", "o")


def test_written_rates_pool_the_seeds_and_the_diagnosis_groups_forms():
    runs = {
        "0": {"heldout_forms_written_by_form": {"albi": "3/4", "vidant": "0/5"}},
        "1": {"heldout_forms_written_by_form": {"albi": "1/4", "vidant": "5/5"}},
        "2": {"heldout_forms_written_by_form": {"albi": "0/0", "vidant": "1/5"}},
    }
    rates = E.written_rates(runs)
    assert rates["albi"] == {"per_seed": [0.75, 0.25, None], "written": 4, "needed": 8, "rate": 0.5}
    assert rates["vidant"]["rate"] == round(6 / 15, 4)
    cuts = {
        "albi": {"siblings_carry_ending": 3, "siblings_split_at_stem": 3, "prefix_cut_differs": False},
        "vidant": {"siblings_carry_ending": 1, "siblings_split_at_stem": 2, "prefix_cut_differs": True},
    }
    d = E.diagnosis(runs, cuts)
    assert d["forms"]["albi"]["rate"] == 0.5 and d["forms"]["vidant"]["siblings_carry_ending"] == 1
    assert d["groups"]["all siblings carry their ending"] == {"forms": ["albi"], "written": 4, "needed": 8, "rate": 0.5}
    assert d["groups"]["not all siblings carry their ending"]["forms"] == ["vidant"]
    assert d["groups"]["prefix cut differs from every sibling's"]["forms"] == ["vidant"]
    assert d["groups"]["all siblings split at the stem"]["forms"] == ["albi"]
    assert d["groups"]["not all siblings split at the stem"]["forms"] == ["vidant"]


# Stored with three seeds each: the recipe's 1300 steps in every setting, and the shorter live candidates at
# 30 merges with dropout
COMPLETE = (
    *E.SETTINGS,
    "dropout30@500steps",
    "dropout30@650steps",
)


def test_stored_runs_have_three_seeds_per_setting_and_the_diagnosis():
    stored = E.load_seed_runs()
    assert stored["quick"] is False and stored["train"] == recipe.TRAIN and stored["data_config"] == recipe.DATA
    assert stored["model"] == dataclasses.asdict(recipe.MODEL)
    for key in COMPLETE:
        assert sorted(stored["runs"][key]) == ["0", "1", "2"], key
    for key, runs in stored["runs"].items():
        assert key.split("@")[0] in stored["data"] and key in stored["diagnosis"]
        forms = stored["diagnosis"][key]["forms"]
        assert set(forms) == set(next(iter(runs.values()))["heldout_forms_written_by_form"])
        assert all(len(f["per_seed"]) == len(runs) for f in forms.values())
    # word level writes no held-out form in any seed (the failure lesson 07 ends on)
    assert all(r["heldout_forms_written"].startswith("0/") for r in stored["runs"]["word"].values())


def test_missing_stored_runs_say_how_to_make_them(tmp_path):
    with pytest.raises(FileNotFoundError, match="python benchmarks/subwords_seeds.py"):
        E.load_seed_runs(tmp_path / "none.json")
    with pytest.raises(FileNotFoundError, match="python benchmarks/subword_attention_seeds.py"):
        E.load_seed_runs(tmp_path / E.ATTENTION_SEED_RUNS.name)
