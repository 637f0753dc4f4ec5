"""Training (the loss falls in a few seconds), the warm-up schedule, checkpoints, evaluation and bad input."""

import dataclasses
import datetime

import pytest
import torch

from utils.translator.checkpoint import load_checkpoint, save_checkpoint
from utils.translator.data import make_dataset, to_tensors, with_subword_targets
from utils.translator.decode import translate
from utils.translator.evaluate import (
    agreement_attention,
    alignment_accuracy,
    all_but_heldout_right,
    bleu,
    evaluate,
    exact_match,
    heldout_form_probability,
    heldout_substitution_examples,
    heldout_substitutions,
    per_token,
    token_accuracy,
)
from utils.translator.model import Seq2SeqTransformer, TranslatorConfig
from utils.translator.train import ProgressLine, loss_fn, noam_lr, shift_targets, train


@pytest.fixture(scope="module")
def ds():
    return make_dataset(seed=1, n_train=600, n_val=50, n_test=40, n_test_unseen=40)


@pytest.fixture(scope="module")
def trained(ds):
    """A tiny model after 60 steps: enough for the loss to fall, not to translate."""
    torch.manual_seed(0)
    model = Seq2SeqTransformer(
        TranslatorConfig(len(ds.src_vocab), len(ds.tgt_vocab), d_model=32, num_heads=2, d_ff=64, num_layers=1)
    )
    src, tgt = to_tensors(ds.train, ds.src_vocab, ds.tgt_vocab)
    history = train(model, src, tgt, steps=60, batch_size=32, warmup=20, seed=0, num_threads=1, progress=False)
    return model, history


def test_loss_falls(trained):
    _, history = trained
    losses = history["loss"]
    assert len(losses) == 60 and len(history["lr"]) == 60 and history["seconds"] > 0
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert last < 0.7 * first, f"loss went from {first:.3f} to {last:.3f}"
    assert all(t > 0 for t in history["tokens"])
    assert history["adam"] == {"betas": (0.9, 0.98), "eps": 1e-9}  # the paper's, section 5.3


def test_training_is_deterministic(ds):
    src, tgt = to_tensors(ds.train[:200], ds.src_vocab, ds.tgt_vocab)
    runs = []
    for _ in range(2):
        torch.manual_seed(5)
        model = Seq2SeqTransformer(TranslatorConfig(len(ds.src_vocab), len(ds.tgt_vocab), 16, 2, 32, 1))
        runs.append(train(model, src, tgt, steps=5, batch_size=16, seed=2, num_threads=1, progress=False)["loss"])
    assert runs[0] == runs[1]


def test_teacher_forcing_shift():
    tgt = torch.tensor([[1, 7, 8, 2, 0], [1, 9, 2, 0, 0]])  # <bos> ... <eos> <pad>
    decoder_input, labels = shift_targets(tgt)
    assert decoder_input.tolist() == [[1, 7, 8, 2], [1, 9, 2, 0]]
    assert labels.tolist() == [[7, 8, 2, 0], [9, 2, 0, 0]]


def test_loss_ignores_padding():
    logits = torch.randn(1, 3, 5)
    labels = torch.tensor([[2, 4, 0]])
    other = logits.clone()
    other[0, 2] = torch.randn(5)  # the padded position's logits do not matter
    assert torch.equal(loss_fn(logits, labels, pad_id=0), loss_fn(other, labels, pad_id=0))
    assert loss_fn(logits, labels, 0, label_smoothing=0.1) != loss_fn(logits, labels, 0)


def test_warmup_schedule():
    d_model, warmup = 512, 4000  # the paper's values: the peak lr is d_model^-0.5 * warmup^-0.5
    lrs = [noam_lr(s, d_model, warmup) for s in range(1, 20001)]
    peak = max(range(len(lrs)), key=lrs.__getitem__) + 1
    assert peak == warmup
    assert lrs[warmup - 1] == pytest.approx(512**-0.5 * 4000**-0.5)
    assert lrs[0] < lrs[99] < lrs[warmup - 1] > lrs[-1]


def test_checkpoint_round_trip(trained, ds, tmp_path):
    model, _ = trained
    path = tmp_path / "translator.pt"
    save_checkpoint(path, model, ds.src_vocab, ds.tgt_vocab)
    loaded, src_vocab, tgt_vocab = load_checkpoint(path)
    assert src_vocab == ds.src_vocab and tgt_vocab == ds.tgt_vocab and loaded.config == model.config
    for p in ds.test[:5]:
        sentence = " ".join(p.src)
        assert translate(loaded, sentence, src_vocab, tgt_vocab) == translate(
            model, sentence, ds.src_vocab, ds.tgt_vocab
        )
    fresh = Seq2SeqTransformer(model.config)
    load_checkpoint(path, model=fresh)
    for a, b in zip(fresh.state_dict().values(), model.state_dict().values()):
        assert torch.equal(a, b)


def test_checkpoint_bad_input(trained, ds, tmp_path):
    model, _ = trained
    path = tmp_path / "translator.pt"
    save_checkpoint(path, model, ds.src_vocab, ds.tgt_vocab)
    other = Seq2SeqTransformer(dataclasses.replace(model.config, d_model=64, num_layers=2))
    with pytest.raises(ValueError, match="d_model: checkpoint 32 vs model 64, num_layers: checkpoint 1 vs model 2"):
        load_checkpoint(path, model=other)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_checkpoint(tmp_path / "missing.pt")
    torch.save({"something": torch.zeros(1)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a translator checkpoint"):
        load_checkpoint(tmp_path / "other.pt")
    with pytest.raises(TypeError, match="model must be a Seq2SeqTransformer or None, got Linear"):
        load_checkpoint(path, model=torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="model must be a Seq2SeqTransformer, got str"):
        save_checkpoint(path, "model", ds.src_vocab, ds.tgt_vocab)
    with pytest.raises(ValueError, match="tgt_vocab has 61 tokens but the model was built for 112"):
        save_checkpoint(path, model, ds.src_vocab, ds.src_vocab)
    with pytest.raises(TypeError, match="src_vocab must be a Vocab, got list"):
        save_checkpoint(path, model, ["a"], ds.tgt_vocab)


def test_metrics_on_hand_made_examples():
    refs = [["a", "b", "c"], ["d", "e"]]
    hyps = [["a", "b", "c"], ["d", "x", "y"]]
    assert exact_match(hyps, refs) == 0.5
    assert token_accuracy(hyps, refs) == pytest.approx(4 / 5)
    long_refs = [list("abcdef"), list("ghijk")]
    assert bleu(long_refs, long_refs) == pytest.approx(100.0)
    assert 0 < bleu([list("abcdef"), list("ghijx")], long_refs) < 100
    with pytest.raises(ValueError):
        exact_match(hyps, refs[:1])


def test_evaluate_and_alignment_accuracy_shapes(trained, ds):
    model, _ = trained
    result = evaluate(model, ds.test[:20], ds.src_vocab, ds.tgt_vocab)
    assert 0 <= result["exact_match"] <= 1 and 0 <= result["token_accuracy"] <= 1 and 0 <= result["bleu"] <= 100
    assert result["alignment_accuracy"].shape == (1, 2)
    assert result["best_head_alignment_accuracy"] == float(result["alignment_accuracy"].max())


@pytest.mark.parametrize("merges", [None, 40])
def test_alignment_accuracy_of_a_model_that_attends_to_the_gold_word(ds, merges):
    """Force every head to put its weight on the gold source word: accuracy 1; on another word: 0. With sub-word
    targets (`merges` merges), at every token of the Neo word."""
    tgt_vocab = ds.tgt_vocab if merges is None else with_subword_targets(ds, merges).tgt_vocab
    model = Seq2SeqTransformer(TranslatorConfig(len(ds.src_vocab), len(tgt_vocab), 16, 2, 32, 1))
    pairs = ds.test[:8]
    gold = [per_token(p, p.alignment, tgt_vocab) for p in pairs]  # one entry per target token
    assert (gold == [list(p.alignment) for p in pairs]) == (merges is None)

    def fake_cross(shift):
        def hook(module, args, output):
            out, w = output
            w = torch.zeros_like(w)  # (B, h, T, S)
            for b, g in enumerate(gold):
                for j, s in enumerate(g):
                    if s is not None:  # "ke" translates no source word: it is not counted
                        w[b, :, j, (s + shift) % len(pairs[b].src)] = 1.0
            return out, w

        return hook

    for shift, expected in ((0, 1.0), (1, 0.0)):
        handle = model.decoder.layers[0].cross_attn.register_forward_hook(fake_cross(shift))
        acc = alignment_accuracy(model, pairs, ds.src_vocab, tgt_vocab)
        handle.remove()
        assert torch.equal(acc, torch.full((1, 2), expected))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"steps": 0}, ValueError, "steps must be a positive int"),
        ({"label_smoothing": 1.5}, ValueError, r"label_smoothing must be a probability in \[0, 1\), got 1.5"),
        ({"label_smoothing": None}, TypeError, r"label_smoothing must be a probability in \[0, 1\), got NoneType"),
        ({"seed": -1}, ValueError, r"seed must be an int in \[0, 2\*\*63\)"),
        ({"num_threads": 0}, ValueError, "num_threads must be a positive int"),
        ({"batch_size": 0}, ValueError, "batch_size must be a positive int"),
    ],
)
def test_train_bad_input(trained, ds, kwargs, error, match):
    model, _ = trained
    src, tgt = to_tensors(ds.train[:50], ds.src_vocab, ds.tgt_vocab)
    args = {"steps": 1, "progress": False, "num_threads": 1, **kwargs}
    with pytest.raises(error, match=match):
        train(Seq2SeqTransformer(model.config), src, tgt, **args)


def test_schedule_and_shift_bad_input():
    with pytest.raises(ValueError, match="step must be a positive int"):
        noam_lr(0, 64, 100)
    with pytest.raises(ValueError, match=r"tgt.shape\[1\] \(T\) must be an int >= 2 \(<bos> ... <eos>\), got 1"):
        shift_targets(torch.tensor([[1]]))
    with pytest.raises(ValueError, match=r"tgt must have shape \(batch, T\), got \(3,\)"):
        shift_targets(torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="factor must be a finite number > 0, got 0"):
        noam_lr(1, 64, 100, factor=0)


def test_agreement_attention_counts_the_noun_whose_gender_is_taken(ds):
    """Force every head onto the noun a word agrees with: 1 for det, adj and verb; onto the word itself: 0."""
    model = Seq2SeqTransformer(TranslatorConfig(len(ds.src_vocab), len(ds.tgt_vocab), 16, 2, 32, 1))
    pairs = [p for p in ds.test if "det" in p.role and "adj" in p.role][:8]
    assert len(pairs) == 8

    def fake_cross(field):
        def hook(module, args, output):
            out, w = output
            w = torch.zeros_like(w)  # (B, h, T, S)
            for b, p in enumerate(pairs):
                for j, s in enumerate(getattr(p, field)):
                    w[b, :, j, 0 if s is None else s] = 1.0
            return out, w

        return hook

    for field, expected in (("agrees_with", 1.0), ("alignment", 0.0)):
        handle = model.decoder.layers[0].cross_attn.register_forward_hook(fake_cross(field))
        scores = agreement_attention(model, pairs, ds.src_vocab, ds.tgt_vocab)
        handle.remove()
        assert set(scores) == {"det", "adj", "verb"}
        for role, a in scores.items():
            assert torch.equal(a, torch.full((1, 2), expected)), (field, role)
    with pytest.raises(ValueError, match="no Neo word with a agrees_with"):
        agreement_attention(model, pairs, ds.src_vocab, ds.tgt_vocab, roles=("postp",))


def test_heldout_substitutions_and_rest_right():
    from utils.translator.data import HeldoutForm, make_pair

    forms = [HeldoutForm("adjective", "white", "m", "pl", "albi"), HeldoutForm("verb", "sees", "f", "sg", "vidas")]
    p = make_pair("the white dogs see a cat".split())  # li kani albi mira ke vidont
    q = make_pair("the cat sees the white dogs".split())  # la mira li kani albi ke vidas
    assert "albi" in p.tgt and "albi" in q.tgt and "vidas" in q.tgt
    hyps = [list(p.tgt), ["la", "mira", "li", "kani", "albo", "ke", "amas"]]
    counts = heldout_substitutions(hyps, [p, q], forms)
    assert counts == {
        "the held-out form": 1,
        "same stem with a trained ending": 1,
        "another stem with the needed ending": 1,  # amas: another verb, with vidas's ending
        "another word": 0,
        "sentence of another length": 0,
    }
    other = [list(p.tgt), ["la", "mira", "li", "kani", "albe", "ke", "amos"]]  # amos: another verb, another ending
    assert list(heldout_substitutions(other, [p, q], forms).values()) == [1, 1, 0, 1, 0]
    nouns = [["li", "kani", "kani", "mira", "ke", "vidont"], ["la", "mira", "li", "kani", "kani", "ke", "kani"]]
    assert heldout_substitutions(nouns, [p, q], forms)["another word"] == 3  # kani ends in -i but is a noun
    nigri = HeldoutForm("adjective", "black", "m", "pl", "nigri")  # held out too: never a trained form
    counts = heldout_substitutions(
        [["li", "kani", "nigri", "mira", "ke", "vidont"], list(q.tgt)], [p, q], [*forms, nigri]
    )
    assert counts["another stem with the needed ending"] == 0 and counts["another word"] == 1
    assert heldout_substitutions([["x"], ["y"]], [p, q], forms)["sentence of another length"] == 3
    assert heldout_substitution_examples(hyps, [p, q], forms) == {
        "the held-out form": ("albi", "albi"),
        "same stem with a trained ending": ("albo", "albi"),
        "another stem with the needed ending": ("amas", "vidas"),
    }
    assert heldout_substitution_examples([["x"], ["y"]], [p, q], forms) == {
        "sentence of another length": (None, "albi")
    }
    assert all_but_heldout_right(hyps, [p, q], forms) == 1.0
    assert all_but_heldout_right([list(p.tgt), ["la"] * len(q.tgt)], [p, q], forms) == 0.5


def test_heldout_form_probability_is_one_value_per_needed_position(trained, ds):
    from utils.translator.data import HeldoutForm

    model, _ = trained
    forms = [HeldoutForm("adjective", "white", "m", "pl", "albi")]
    pairs = [p for p in ds.train + ds.val if "albi" in p.tgt][:5]
    probs = heldout_form_probability(model, pairs, ds.src_vocab, ds.tgt_vocab, forms)
    assert probs.shape == (sum(p.tgt.count("albi") for p in pairs),)
    assert ((probs > 0) & (probs < 1)).all()


def test_progress_line_ends_as_the_finished_bar():
    bar = ProgressLine(40, desc="training")
    assert "0/40" in bar.text(0, None)
    final = bar.text(40, 0.0123)
    assert "100%" in final and "40/40" in final and "loss=0.012" in final
    bar.close(40, 0.0123)
    with pytest.raises(ValueError, match="total must be a positive int"):
        ProgressLine(0)


def test_recipe_is_a_translator_config_that_fits_the_dataset(ds):
    from utils.translator import recipe

    assert isinstance(recipe.MODEL, TranslatorConfig)
    assert (recipe.MODEL.src_vocab_size, recipe.MODEL.tgt_vocab_size) == (len(ds.src_vocab), len(ds.tgt_vocab))


def test_checkpoint_stores_the_config_as_a_plain_dict(trained, ds, tmp_path):
    model, _ = trained
    path = tmp_path / "translator.pt"
    save_checkpoint(path, model, ds.src_vocab, ds.tgt_vocab)
    stored = torch.load(path, weights_only=True)["config"]
    assert stored == dataclasses.asdict(model.config) and TranslatorConfig(**stored) == model.config


@pytest.mark.parametrize("training", [True, False])
def test_evaluation_restores_the_model_mode(trained, ds, training):
    from utils.translator.attention_maps import cross_attention_map

    model, _ = trained
    model.train(training)
    try:
        alignment_accuracy(model, ds.test[:5], ds.src_vocab, ds.tgt_vocab)
        heldout_form_probability(model, ds.test_unseen[:5], ds.src_vocab, ds.tgt_vocab, ds.heldout_forms)
        cross_attention_map(model, " ".join(ds.test[0].src), ds.src_vocab, ds.tgt_vocab)
        assert model.training is training
    finally:
        model.eval()


# --- damaged checkpoints: one ValueError naming the file and what is wrong ---------------------------


@pytest.fixture
def saved(trained, ds, tmp_path):
    model, _ = trained
    path = tmp_path / "translator.pt"
    save_checkpoint(path, model, ds.src_vocab, ds.tgt_vocab)
    return model, path


def _write(path, content):
    path.write_bytes(content)
    return path


def test_checkpoint_stores_a_sha256_of_what_it_holds(saved):
    from utils.translator.checkpoint import FORMAT, content_digest

    _, path = saved
    stored = torch.load(path, weights_only=True)
    assert stored["format"] == FORMAT and stored["sha256"] == content_digest(stored)
    changed = dict(stored, state_dict=dict(stored["state_dict"]))
    name = next(iter(changed["state_dict"]))
    changed["state_dict"][name] = changed["state_dict"][name].clone()
    changed["state_dict"][name].view(-1)[0] += 1e-6  # one weight, slightly
    assert content_digest(changed) != stored["sha256"]
    assert content_digest(dict(stored, tgt_vocab=stored["tgt_vocab"][::-1])) != stored["sha256"]


def test_checkpoint_with_one_flipped_byte_in_a_weight_is_refused(saved):
    model, path = saved
    raw = path.read_bytes()
    weight = model.generator.bias.detach().numpy().tobytes()
    at = raw.index(weight) + len(weight) // 2  # a byte inside the stored output-layer bias
    bad = _write(path.with_name("flipped.pt"), raw[:at] + bytes([raw[at] ^ 0x01]) + raw[at + 1 :])
    with pytest.raises(ValueError, match=r"checkpoint '.*flipped.pt' is corrupt: the SHA-256 .* does not match"):
        load_checkpoint(bad)


def test_checkpoint_with_a_flipped_byte_anywhere_never_loads_silently(saved):
    _, path = saved
    raw = path.read_bytes()
    for at in range(0, len(raw), max(1, len(raw) // 40)):  # 40 positions over the whole file
        bad = _write(path.with_name("damaged.pt"), raw[:at] + bytes([raw[at] ^ 0x10]) + raw[at + 1 :])
        try:
            _, src_vocab, tgt_vocab = load_checkpoint(bad)
        except ValueError as err:
            assert "damaged.pt" in str(err)
            continue
        # a flip in zip metadata torch does not read (e.g. a timestamp) leaves every weight and word intact
        stored, again = torch.load(path, weights_only=True), torch.load(bad, weights_only=True)
        assert stored["sha256"] == again["sha256"] and src_vocab.words() == stored["src_vocab"], at


@pytest.mark.parametrize(
    "name, content, match",
    [
        ("empty.pt", lambda raw: b"", r"is empty \(0 bytes\)"),
        ("notes.pt", lambda raw: b"a text file\n", r"is not a checkpoint written by torch.save: it is a text file"),
        ("half.pt", lambda raw: raw[: len(raw) // 2], r"is truncated: torch.load cannot read it"),
        ("cut.pt", lambda raw: raw[:-30], r"is truncated: torch.load cannot read it"),
        ("noise.pt", lambda raw: bytes(range(256)) * 4, r"is not a checkpoint written by torch.save: it is not a zip"),
    ],
)
def test_unreadable_checkpoint_files(saved, name, content, match):
    _, path = saved
    bad = _write(path.with_name(name), content(path.read_bytes()))
    with pytest.raises(ValueError, match=rf"^checkpoint '.*{name}' {match}"):
        load_checkpoint(bad)


def _resave(path, name, **changes):
    """The checkpoint at `path` with some entries changed, its digest recomputed: a sound file of other content."""
    from utils.translator.checkpoint import content_digest

    ckpt = dict(torch.load(path, weights_only=True), **changes)
    ckpt["sha256"] = content_digest(ckpt)
    torch.save(ckpt, path.with_name(name))
    return path.with_name(name)


def test_checkpoint_whose_vocabulary_is_shorter_than_its_config(saved):
    _, path = saved
    words = torch.load(path, weights_only=True)["tgt_vocab"]
    bad = _resave(path, "short.pt", tgt_vocab=words[:-1])
    with pytest.raises(
        ValueError, match=r"'.*short.pt' holds a tgt_vocab of 111 tokens but its config says tgt_vocab_size=112"
    ):
        load_checkpoint(bad)


def test_checkpoint_of_another_config_or_version(saved):
    _, path = saved
    stored = torch.load(path, weights_only=True)
    bad = _resave(path, "renamed.pt", config={**stored["config"], "layers": 1})
    with pytest.raises(ValueError, match=r"'.*renamed.pt' holds another config than this code's TranslatorConfig"):
        load_checkpoint(bad)
    bad = _resave(path, "wider.pt", config={**stored["config"], "d_ff": 128})
    with pytest.raises(ValueError, match=r"'.*wider.pt' holds weights that do not fit its config"):
        load_checkpoint(bad)
    old = dict(stored, format="attention-by-hand translator v2")
    del old["sha256"]
    torch.save(old, path.with_name("v2.pt"))
    with pytest.raises(
        ValueError, match=r"'.*v2.pt' is a checkpoint of another version, 'attention-by-hand translator v2'"
    ):
        load_checkpoint(path.with_name("v2.pt"))


def test_checkpoint_holding_code_is_refused(tmp_path):
    # a date stands for any object: weights_only=True refuses to rebuild classes it does not know
    torch.save({"format": "x", "f": datetime.date(2024, 1, 1)}, tmp_path / "code.pt")
    with pytest.raises(
        ValueError, match=r"'.*code.pt' is corrupt or holds objects a checkpoint never has \(refused by weights_only"
    ):
        load_checkpoint(tmp_path / "code.pt")


def test_model_mismatch_names_the_checkpoint(saved):
    model, path = saved
    other = Seq2SeqTransformer(dataclasses.replace(model.config, d_model=64))
    with pytest.raises(ValueError, match=r"^model does not match the config of checkpoint 'translator.pt' \(d_model"):
        load_checkpoint(path, model=other)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: exact_match([["a"]], []), ValueError, "references must be a non-empty list of word lists"),
        (
            lambda: exact_match([["a"]], [["a"], ["b"]]),
            ValueError,
            r"hypotheses must have one item per item of references \(2\), got 1",
        ),
        (lambda: token_accuracy([["a"]], [[]]), ValueError, "references must hold at least one word"),
        (
            lambda: bleu("abc", [["a", "b", "c"]]),
            TypeError,
            r"hypotheses must be a non-empty list of word lists, got str",
        ),
        (
            lambda: bleu([["a"], "b"], [["a"], ["b"]]),
            TypeError,
            r"hypotheses\[1\] must be a list of words \(str\), got str 'b'",
        ),
        (lambda: heldout_substitutions([["a"]], [], []), ValueError, "pairs must be a non-empty list of Pairs"),
        (lambda: heldout_substitution_examples([["a"]], [], []), ValueError, "pairs must be a non-empty list of Pairs"),
        (lambda: all_but_heldout_right([["a"]], ["p"], []), TypeError, r"pairs\[0\] must be a Pair, got str"),
    ],
)
def test_metrics_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_loss_fn_bad_input():
    logits, labels = torch.randn(2, 3, 5), torch.tensor([[1, 2, 0], [4, 0, 0]])
    assert loss_fn(logits, labels, 0) > 0
    with pytest.raises(ValueError, match=r"labels must have shape \(batch=2, T=3\), got \(2, 4\)"):
        loss_fn(logits, torch.ones(2, 4, dtype=torch.long), 0)
    with pytest.raises(ValueError, match=r"labels must hold token ids in \[0, vocab_size=5\), got min 0 and max 7"):
        loss_fn(logits, torch.tensor([[1, 7, 0], [4, 0, 0]]), 0)
    with pytest.raises(ValueError, match=r"label_smoothing must be a probability in \[0, 1\), got 2.0"):
        loss_fn(logits, labels, 0, 2.0)
    with pytest.raises(ValueError, match=r"logits must have shape \(batch, T, vocab\), got \(6, 5\)"):
        loss_fn(logits.reshape(6, 5), labels, 0)
    with pytest.raises(ValueError, match="pad_id must be an int in"):
        loss_fn(logits, labels, 5)
