"""Exercises of lesson 07 (toy translator): a prediction about unseen word forms, the paper's warm-up
learning rate, label-smoothed cross-entropy and its lowest value, the length penalty's break-even alpha, and
greedy decoding."""

import contextlib
import math
import numbers

import torch
import torch.nn.functional as F

from utils.course.exercises import exercise, fresh_seed, mistake
from utils.translator.decode import greedy_decode as _greedy_reference
from utils.translator.model import Seq2SeqTransformer, TranslatorConfig

BOS, EOS, PAD = 1, 2, 0


@contextlib.contextmanager
def _one_thread():
    """Small tensors run fastest on one thread, above all on a busy computer; the learner's setting comes back."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _number_problem(got, what):
    """A message when `got` is not a real number, else None."""
    if isinstance(got, torch.Tensor) and got.numel() == 1:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, numbers.Real) or math.isnan(got):
        return f"{what}: return a number, got {got!r}"
    return None


def _as_float(got):
    return float(got.item() if isinstance(got, torch.Tensor) else got)


def _compare_numbers(cases, answer, reference, wrong, rel=1e-7):
    """Run `answer` on each (args, label) case; the first miss, named after a known mistake if it is one."""
    for args, label in cases:
        got = answer(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
        problem = _number_problem(got, label)
        if problem:
            return problem
        got, expected = _as_float(got), _as_float(reference(*args))
        if math.isclose(got, expected, rel_tol=rel, abs_tol=1e-12):
            continue
        for m in wrong:
            if math.isclose(got, _as_float(m.answer(*args)), rel_tol=rel, abs_tol=1e-12):
                return f"{label}: you get {got:.6g}, which is what you get if you {m.name}"
        return f"{label}: expected {expected:.6g}, got {got:.6g}"
    return None


# --- 1. Prediction: exact match on the unseen-forms test ------------------------------------------


@exercise(
    hint="""
    Every sentence of the unseen-forms test needs at least one word form that was never a training label. The
    output layer has one row (one logit) per whole Neo word. How often can the model choose a word it was
    never asked to produce? Exact match counts a sentence only if every word is right.
    """,
    reference=0.0,
    kind="prediction",
    wrong=[
        mistake("expect it to do as well as on new sentences", 1.0, says="never a training label"),
        mistake(
            "expect it to combine a known stem with a known ending about half the time",
            0.5,
            says="one logit per whole word",
        ),
        mistake("expect it to guess the form now and then", 0.25, says="never the label"),
        mistake("expect it to get about one sentence in ten right", 0.1, says="not one in ten"),
    ],
    explain="""
    About 0: the model gets at most 2 % of those sentences right, however well it learnt the rest. Its
    output layer has one logit per whole Neo word, and a held-out form was never a training label, so
    nothing in training teaches the model to choose it: it never writes it. In most of those places it
    keeps the stem or the ending (the same adjective or verb with a trained ending, or another one with
    the needed ending), and in most of those sentences every other word is right. The cause is the word-level vocabulary, not the choice of loss.
    """,
)
def predict_unseen_exact_match(answer):
    """answer: the fraction (0 to 1) of unseen-forms test sentences translated exactly right."""
    if isinstance(answer, bool) or not isinstance(answer, (int, float)) or not 0 <= answer <= 1:
        return f"write a fraction between 0 and 1 (0.5 for half), got {answer!r}"
    if answer > 0.9:
        return (
            "these sentences are not like the new ones: each needs a word form that was never a training "
            "label, and the model has no reason to put probability on it"
        )
    if answer >= 0.4:
        return (
            "the model has learnt the stems and the endings, but its output layer has one logit per whole "
            "word, and the held-out word was never the label, so nothing taught the model to choose it"
        )
    if answer > 0.05 and answer <= 0.15:
        return (
            "not one in ten either: the held-out word is never the label, so nothing makes the model "
            "choose it over the form with a trained ending, and exact match needs every word right"
        )
    if answer > 0.05:
        return (
            "the model does not guess it now and then: the held-out word is never the label, so training "
            "never makes it more likely than the form with a trained ending"
        )
    return None


# --- 2. The paper's warm-up learning rate ------------------------------------------------------------


def _lrate_solution(step, d_model, warmup):
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


_LRATE_MISTAKES = [
    mistake(
        "take the larger of the two terms (max) instead of the smaller (min)",
        lambda step, d_model, warmup: d_model**-0.5 * max(step**-0.5, step * warmup**-1.5),
        says="smaller (min)",
    ),
    mistake(
        "leave out the factor d_model^-0.5",
        lambda step, d_model, warmup: min(step**-0.5, step * warmup**-1.5),
        says="d_model^-0.5",
    ),
    mistake(
        "write warmup^-0.5 where the formula has warmup^-1.5",
        lambda step, d_model, warmup: d_model**-0.5 * min(step**-0.5, step * warmup**-0.5),
        says="warmup^-1.5",
    ),
    mistake(
        "count steps from 0 (the paper's step_num starts at 1)",
        lambda step, d_model, warmup: d_model**-0.5 * min(max(step - 1, 1e-12) ** -0.5, (step - 1) * warmup**-1.5),
        says="starts at 1",
    ),
]
_PEAK = _lrate_solution(4000, 512, 4000)


@exercise(
    hint="""
    Two terms: step ** -0.5 (the decay) and step * warmup ** -1.5 (the linear ramp); take the smaller
    with min(...), and multiply by d_model ** -0.5. The two terms are equal at step = warmup.
    """,
    reference=_lrate_solution,
    kind="practice",
    wrong=_LRATE_MISTAKES,
    explain=f"""
    With the paper's d_model = 512 and warmup = 4000 the rate climbs to {_PEAK:.3g} at step 4000 and
    then falls as 1/sqrt(step): {_lrate_solution(16000, 512, 4000):.3g} at step 16000, half the peak.
    """,
)
def warmup_learning_rate(answer):
    """answer(step, d_model, warmup) -> d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), step >= 1."""
    cases = [
        ((step, d_model, warmup), f"step={step}, d_model={d_model}, warmup={warmup}")
        for step, d_model, warmup in (
            (1, 512, 4000),
            (2000, 512, 4000),
            (4000, 512, 4000),
            (100000, 512, 4000),
            (10, 64, 400),
            (1300, 64, 400),
        )
    ]
    return _compare_numbers(cases, answer, _lrate_solution, _LRATE_MISTAKES)


# --- 3. Label-smoothed cross-entropy -----------------------------------------------------------------


def _smoothed_solution(logits, labels, epsilon, pad_id):
    log_p = logits.log_softmax(-1)  # (N, V)
    nll = -log_p.gather(-1, labels[:, None])[:, 0]  # (N,): -log p of the label
    uniform = -log_p.mean(-1)  # (N,): -log p averaged over all V classes, the label included
    loss = (1 - epsilon) * nll + epsilon * uniform  # (N,)
    real = labels != pad_id  # (N,)
    return loss[real].mean()


def _smoothed_over_others(logits, labels, epsilon, pad_id):
    log_p = logits.log_softmax(-1)
    nll = -log_p.gather(-1, labels[:, None])[:, 0]
    others = (-log_p.sum(-1) - nll) / (logits.shape[-1] - 1)  # epsilon spread over the V - 1 other classes
    real = labels != pad_id
    return ((1 - epsilon) * nll + epsilon * others)[real].mean()


def _smoothed_with_padding(logits, labels, epsilon, pad_id):
    log_p = logits.log_softmax(-1)
    nll = -log_p.gather(-1, labels[:, None])[:, 0]
    return ((1 - epsilon) * nll + epsilon * -log_p.mean(-1)).mean()  # padding positions counted too


def _smoothed_not_divided(logits, labels, epsilon, pad_id):
    log_p = logits.log_softmax(-1)
    nll = -log_p.gather(-1, labels[:, None])[:, 0]
    real = labels != pad_id
    return ((1 - epsilon) * nll + epsilon * -log_p.sum(-1))[real].mean()  # sum, not mean, over classes


def _smoothed_without_uniform(logits, labels, epsilon, pad_id):
    log_p = logits.log_softmax(-1)
    nll = -log_p.gather(-1, labels[:, None])[:, 0]
    real = labels != pad_id
    return ((1 - epsilon) * nll)[real].mean()


_SMOOTH_MISTAKES = [
    mistake(
        "spread epsilon over the V - 1 other classes (torch spreads it over all V classes, the label included)",
        _smoothed_over_others,
        says="all V classes, the label included",
    ),
    mistake("average over every position, padding included", _smoothed_with_padding, says="padding included"),
    mistake("sum -log p over the classes without dividing by V", _smoothed_not_divided, says="dividing by V"),
    mistake(
        "scale the usual loss by (1 - epsilon) and forget the uniform part",
        _smoothed_without_uniform,
        says="forget the uniform part",
    ),
]


def _smooth_cases():
    g = torch.Generator().manual_seed(fresh_seed())  # inputs drawn anew on every check
    cases = []
    for N, V, epsilon, pad_id in ((6, 5, 0.1, 0), (8, 7, 0.3, 0), (5, 4, 0.1, 3)):
        logits = 2.0 * torch.randn(N, V, generator=g, dtype=torch.float64)  # (N, V)
        labels = torch.randint(0, V, (N,), generator=g)  # (N,)
        labels[labels == pad_id] = (pad_id + 1) % V
        labels[-2:] = pad_id  # the last two positions are padding
        cases.append(
            (
                (logits, labels, epsilon, pad_id),
                f"{N} positions (2 of them padding, id {pad_id}), V={V}, epsilon={epsilon}",
            )
        )
    return cases


@exercise(
    hint="""
    Per position: log_p = logits.log_softmax(-1); the usual loss is -log_p[label]; the smoothed target puts
    1 - epsilon on the label and epsilon / V on every class (the label too), so the loss is
    (1 - epsilon) * (-log_p[label]) + epsilon * (-log_p).mean(-1). Then average over the positions whose
    label is not pad_id.
    """,
    reference=_smoothed_solution,
    kind="practice",
    wrong=_SMOOTH_MISTAKES,
)
def label_smoothed_loss(answer):
    """answer(logits (N, V), labels (N,), epsilon, pad_id) -> F.cross_entropy(..., label_smoothing=epsilon)."""
    with _one_thread(), torch.no_grad():
        cases = _smooth_cases()
        for (logits, labels, epsilon, pad_id), _ in cases:  # the reference is torch's own loss
            torch_loss = F.cross_entropy(logits, labels, ignore_index=pad_id, label_smoothing=epsilon)
            assert torch.allclose(torch_loss, _smoothed_solution(logits, labels, epsilon, pad_id))
        return _compare_numbers(cases, answer, _smoothed_solution, _SMOOTH_MISTAKES, rel=1e-6)


# --- 3b. The lowest label-smoothed loss (transfer) -----------------------------------------------------------


def _floor_solution(epsilon, V):
    right = 1 - epsilon + epsilon / V  # q on the right word: its 1 - epsilon and its share epsilon / V
    other = epsilon / V  # q on each of the V - 1 other words
    return -right * math.log(right) - (V - 1) * other * math.log(other)  # the entropy of q, in nats


_FLOOR_MISTAKES = [
    mistake(
        "spread epsilon over the V - 1 other words (torch spreads it over all V words, the right one included)",
        lambda epsilon, V: -(1 - epsilon) * math.log(1 - epsilon) - epsilon * math.log(epsilon / (V - 1)),
        says="all V words, the right one included",
    ),
    mistake(
        "give the right word 1 - epsilon, without its own share epsilon / V",
        lambda epsilon, V: -(1 - epsilon) * math.log(1 - epsilon) - (V - 1) * epsilon / V * math.log(epsilon / V),
        says="without its own share",
    ),
    mistake("answer 0, the floor of plain cross-entropy", lambda epsilon, V: 0.0, says="floor of plain"),
    mistake(
        "use log base 2 (bits) instead of the natural log (nats, as torch's loss)",
        lambda epsilon, V: _floor_solution(epsilon, V) / math.log(2),
        says="log base 2",
    ),
]


@exercise(
    hint="""
    The best prediction is p = q, and the loss there is q's entropy, -sum_k q_k log q_k. q has two kinds of
    entries: the right word's 1 - epsilon + epsilon / V, and epsilon / V on each of the V - 1 others. Use
    math.log (nats).
    """,
    reference=_floor_solution,
    kind="transfer",
    wrong=_FLOOR_MISTAKES,
    explain=f"""
    With epsilon = 0.1 the floor is {_floor_solution(0.1, 112):.3f} nats for our 112 tokens (section 3's best
    prediction) and {_floor_solution(0.1, 37000):.2f} for the paper's English-German vocabulary of about 37,000:
    the V - 1 small entries contribute about epsilon * ln(V / epsilon), so the floor grows with ln V. torch's
    smoothed loss cannot approach 0, whatever the model learns: with epsilon = 0.1, section 3's loss, almost
    zero without smoothing, could not have fallen below {_floor_solution(0.1, 112):.3f} nats per target word. The
    paper's code (tensor2tensor) subtracts the floor of its own target (the V - 1 form) from the loss it
    reports, so that loss can reach 0.
    """,
)
def label_smoothing_floor(answer):
    """answer(epsilon, V) -> the smallest label-smoothed cross-entropy over all predictions: q's entropy."""
    cases = [
        ((epsilon, V), f"epsilon={epsilon}, V={V}")
        for epsilon, V in ((0.1, 112), (0.1, 37000), (0.2, 4), (0.5, 1000), (0.01, 50))
    ]
    return _compare_numbers(cases, answer, _floor_solution, _FLOOR_MISTAKES)


# --- 4. How strong a length penalty? (transfer) -----------------------------------------------------------------


def _break_even_alpha_solution(short_sum, short_len, long_sum, long_len):
    # long_sum / lp(long) = short_sum / lp(short), lp(Y) = ((5 + |Y|) / 6) ** alpha: the 6 cancels
    return math.log(long_sum / short_sum) / math.log((5 + long_len) / (5 + short_len))


_ALPHA_MISTAKES = [
    mistake(
        "compare |Y| instead of Wu et al.'s 5 + |Y|",
        lambda ss, sl, ls, ll: math.log(ls / ss) / math.log(ll / sl),
        says="5 + |Y|",
    ),
    mistake(
        "turn one ratio upside down (or multiply by the length penalty instead of dividing): a negative alpha",
        lambda ss, sl, ls, ll: math.log(ss / ls) / math.log((5 + ll) / (5 + sl)),
        says="negative alpha",
    ),
    mistake(
        "divide only the long hypothesis's sum by its length penalty (both hypotheses get one)",
        lambda ss, sl, ls, ll: math.log(ls / ss) / math.log((5 + ll) / 6),
        says="both hypotheses",
    ),
]


@exercise(
    hint="""
    Write both scores, sum / ((5 + |Y|) / 6) ** alpha, and set them equal. The 6 cancels; move the sums to
    one side and the length penalties to the other, then take logarithms. Both sums are negative, so their
    ratio is positive.
    """,
    reference=_break_even_alpha_solution,
    kind="transfer",
    wrong=_ALPHA_MISTAKES,
    explain=f"""
    long_sum / short_sum = ((5 + long_len) / (5 + short_len)) ** alpha, so alpha = ln(long_sum / short_sum) /
    ln((5 + long_len) / (5 + short_len)). With alpha = 0 (plain sums, our beam search) the short one always
    wins. A hypothesis 2 tokens longer than a 5-token one, with a sum 1.25 times as negative, needs alpha above
    {_break_even_alpha_solution(-1.2, 5, -1.5, 7):.2f}: the paper's 0.6 still ranks the short one first. The
    penalty grows only slowly with length, so it tips close calls, not large gaps in probability.
    """,
)
def length_penalty_alpha(answer):
    """answer(short_sum, short_len, long_sum, long_len) -> the alpha at which both hypotheses score the same."""
    cases = [
        ((ss, sl, ls, ll), f"short_sum={ss}, short_len={sl}, long_sum={ls}, long_len={ll}")
        for ss, sl, ls, ll in ((-1.2, 5, -1.5, 7), (-0.5, 3, -2.0, 12), (-3.0, 10, -3.3, 11), (-0.1, 1, -0.4, 20))
    ]
    return _compare_numbers(cases, answer, _break_even_alpha_solution, _ALPHA_MISTAKES)


# --- 5. Greedy decoding (practice) ---------------------------------------------------------------------


class _ScriptedModel(Seq2SeqTransformer):
    """Row b of the batch says script[b] one token per step, then <eos>, then 9 forever."""

    scripts = [[5, 6, 7], [8], [4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4]]

    def decode(self, tgt, memory, src_mask):
        logits = torch.zeros(tgt.shape[0], tgt.shape[1], self.config.tgt_vocab_size)  # (batch, T, vocab)
        for b in range(tgt.shape[0]):
            script = self.scripts[b] + [EOS] + [9] * 50
            for t in range(tgt.shape[1]):
                logits[b, t, script[t]] = 1.0 + 0.1 * t
        return logits


def _greedy_stub_reference(model, src, bos_id, eos_id, max_len):
    """Greedy decoding: feed the best token back in until every sentence has said <eos> or max_len is hit."""
    memory, src_mask = model.encode(src)  # (batch, S, d_model), (batch, 1, S)
    ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)  # (batch, 1): start at <bos>
    for _ in range(max_len):
        next_id = model.decode(ys, memory, src_mask)[:, -1].argmax(-1)  # (batch,)
        ys = torch.cat([ys, next_id[:, None]], dim=1)  # (batch, t + 1)
        if (ys == eos_id).any(dim=1).all():
            break
    out = []
    for row in ys[:, 1:].tolist():
        out.append(row[: row.index(eos_id)] if eos_id in row else row)
    return out


def _greedy_no_stop(model, src, bos_id, eos_id, max_len):
    memory, src_mask = model.encode(src)
    ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
    for _ in range(max_len):
        ys = torch.cat([ys, model.decode(ys, memory, src_mask)[:, -1].argmax(-1)[:, None]], dim=1)
    return ys[:, 1:].tolist()


def _greedy_no_guard(model, src, bos_id, eos_id, max_len):
    return _greedy_stub_reference(model, src, bos_id, eos_id, 40)


def _greedy_first_token_only(model, src, bos_id, eos_id, max_len):
    memory, src_mask = model.encode(src)
    ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
    return [[int(i)] for i in model.decode(ys, memory, src_mask)[:, -1].argmax(-1)]


def _greedy_first_position(model, src, bos_id, eos_id, max_len):
    memory, src_mask = model.encode(src)
    ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
    for _ in range(max_len):
        next_id = model.decode(ys, memory, src_mask)[:, 0].argmax(-1)  # the first position: wrong
        ys = torch.cat([ys, next_id[:, None]], dim=1)
        if (ys == eos_id).any(dim=1).all():
            break
    return [row[: row.index(eos_id)] if eos_id in row else row for row in ys[:, 1:].tolist()]


def _greedy_row_problem(got, expected, script, max_len):
    """What is wrong with one decoded row, in the learner's terms."""
    if EOS in got:
        return "your output still holds <eos> and what follows it: stop at <eos> and cut the row there"
    if len(got) > max_len:
        return f"your output has {len(got)} tokens, more than max_len={max_len}: stop after max_len steps"
    if len(got) == 1 and len(expected) > 1:
        return "your output has one token: feed each chosen token back in and repeat"
    if len(got) > 1 and len(set(got)) == 1 and got[0] == script[0] and len(set(script)) > 1:
        return (
            "your output repeats the first token: take the arg-max at the last position, "
            "model.decode(...)[:, -1], the prediction of the next token"
        )
    return None


@exercise(
    hint="""
    Encode once: memory, src_mask = model.encode(src). Start every row with [<bos>]. Repeat at most
    max_len times: logits = model.decode(ys, memory, src_mask); take the arg-max of the LAST position,
    append it to ys. Stop once every row has produced <eos>; return each row without <bos>, cut before <eos>.
    """,
    reference=_greedy_stub_reference,
    kind="practice",
    wrong=[
        mistake("keep decoding after <eos>", _greedy_no_stop, says="stop at <eos>"),
        mistake("ignore max_len", _greedy_no_guard, says="more than max_len"),
        mistake("decode one step only", _greedy_first_token_only, says="feed each chosen token back in"),
        mistake("read the first position's logits", _greedy_first_position, says="arg-max at the last position"),
    ],
)
def greedy_decoding(decode):
    """decode(model, src, bos_id, eos_id, max_len) -> one list of token ids per source sentence."""
    with _one_thread():
        return _check_greedy(decode)


def _check_greedy(decode):
    torch.manual_seed(0)
    scripted = _ScriptedModel(TranslatorConfig(12, 12, 8, 2, 16, 1)).eval()
    src = torch.tensor([[4, 5, 2], [6, 2, 0], [7, 8, 2]])  # (3, 3)
    for max_len, expected in ((20, [[5, 6, 7], [8], [4] * 12]), (6, [[5, 6, 7], [8], [4] * 6])):
        with torch.no_grad():
            got = decode(scripted, src, BOS, EOS, max_len)
        got = [list(map(int, row)) for row in got]
        if len(got) != len(expected):
            return f"expected {len(expected)} translations (one per row of src), got {len(got)}"
        for b, (g, e) in enumerate(zip(got, expected)):
            if g != e:
                problem = _greedy_row_problem(g, e, _ScriptedModel.scripts[b], max_len)
                return (
                    f"with max_len={max_len}, sentence {b}: expected {e}, got {g} (a model that says "
                    f"{_ScriptedModel.scripts[b]} then <eos>=2 then 9s)" + (f"; {problem}" if problem else "")
                )
    torch.manual_seed(1)
    random_model = Seq2SeqTransformer(TranslatorConfig(12, 12, 16, 2, 32, 1)).eval()
    with torch.no_grad():
        got = [list(map(int, row)) for row in decode(random_model, src, BOS, EOS, 3)]
        expected = _greedy_reference(random_model, src, BOS, EOS, 3)
    if got != expected:
        return f"on a randomly initialised model with max_len=3: expected {expected}, got {got}"
    return None


# --- Predictions in sections 1, 2, 3 and 5 -----------------------------------------------------------


def _fraction(answer):
    """The answer as a fraction in [0, 1], or None."""
    if isinstance(answer, bool) or not isinstance(answer, (int, float)) or not 0 <= answer <= 1:
        return None
    return float(answer)


@exercise(
    hint="""
    Look at the word-order rules: where does the Neo verb go, and where was it in English? Does any
    sentence come without a verb?
    """,
    reference=0.0,
    kind="prediction",
    wrong=[
        mistake("expect short sentences to keep their order", 0.5, says="every sentence has a verb"),
        mistake("expect most sentences to keep their order", 0.9, says="to the end"),
        mistake("expect a few sentences to keep their order by chance", 0.05, says="never"),
    ],
    explain="""
    None (0). Every sentence is NP VERB NP ..., and the Neo verb always goes to the end, after the object,
    so in every pair some Neo word points back at an earlier English word than the one before it.
    """,
)
def predict_same_word_order(answer):
    """answer: the fraction (0 to 1) of training pairs whose alignment keeps the English word order."""
    f = _fraction(answer)
    if f is None:
        return f"write a fraction between 0 and 1, got {answer!r}"
    if f >= 0.8:
        return "the Neo verb goes to the end, after the object, while the English verb sits in the middle"
    if f >= 0.2:
        return (
            "short or long, every sentence has a verb, and it always moves to the end: no length escapes the reordering"
        )
    if f > 0:
        return "not even by chance: the verb's move to the end is a rule, so the order is never kept"
    return None


def _tied_reference():
    from utils.translator import recipe

    return recipe.MODEL.tgt_vocab_size * recipe.MODEL.d_model


def _tied_mistakes():
    """(the Neo vocabulary size, the source embedding's parameter count): the numbers two mistakes give."""
    from utils.translator import recipe

    return recipe.MODEL.tgt_vocab_size, recipe.MODEL.src_vocab_size * recipe.MODEL.d_model


@exercise(
    hint="""
    Tying makes two parameters one: the output projection's weight becomes the Neo embedding matrix.
    How many numbers has that matrix (one row per Neo word, d_model numbers per row)? Does the projection
    have anything else?
    """,
    reference=_tied_reference(),
    kind="prediction",
    wrong=[
        mistake("count the projection's bias too", _tied_reference() + _tied_mistakes()[0], says="bias"),
        mistake("count both matrices", 2 * _tied_reference(), says="one of the two"),
        mistake("count the source embedding", _tied_mistakes()[1], says="Neo"),
    ],
    explain="""
    One (Neo vocabulary × d_model) matrix: 112 tokens × 64 = 7,168 parameters. The output projection keeps its
    bias, one number per Neo word, and the source embedding cannot join in, since the English vocabulary
    differs.
    """,
)
def predict_tied_saving(answer):
    """answer: how many parameters tying the Neo embedding and the output projection saves."""
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        return f"write a number of parameters, got {answer!r}"
    ref = _tied_reference()
    if answer == ref:
        return None
    bias, source = _tied_mistakes()
    if answer == ref + bias:
        return "the output projection's bias is a separate vector: tying shares the weight matrix only"
    if answer == 2 * ref:
        return "the tied model keeps one of the two matrices: only the other is saved"
    if answer == source:
        return "that is the source embedding; the tie is between the Neo embedding and the output projection"
    return f"{answer} parameters: count the numbers in one (Neo vocabulary, d_model) matrix"


def _smoothed_reference():
    from utils.translator import recipe

    return 0.9 + 0.1 / recipe.MODEL.tgt_vocab_size


@exercise(
    hint="""
    The smoothed target is (1 - eps) on the right word plus eps spread evenly over all V tokens. The
    right word is one of those V tokens.
    """,
    reference=_smoothed_reference(),
    kind="prediction",
    wrong=[
        mistake("forget the right word's share of eps", 0.9, says="its share"),
        mistake("think smoothing leaves the right word at 1", 1.0, says="takes eps"),
        mistake("give the right word eps", 0.1, says="1 - eps"),
    ],
    explain="""
    0.9 + 0.1/V, about 0.9009 for our V = 112 Neo tokens (108 words and 4 special tokens): the target keeps 1 - eps = 0.9 and spreads
    eps = 0.1 over all V tokens, the right one included. The best prediction (the target itself) has a loss
    of the target's entropy, not 0.
    """,
)
def predict_smoothed_target(answer):
    """answer: the probability the smoothed target (eps = 0.1, V = 112) gives the right word."""
    if isinstance(answer, bool) or not isinstance(answer, (int, float)) or not 0 <= answer <= 1:
        return f"write a probability between 0 and 1, got {answer!r}"
    if abs(answer - _smoothed_reference()) < 2e-4:
        return None
    if abs(answer - 0.9) < 2e-4:
        return "close: eps is spread over the whole vocabulary, the right word included, so it gets its share too"
    if answer > 0.95:
        return "label smoothing takes eps = 0.1 away from the right word and spreads it over the vocabulary"
    if answer < 0.5:
        return "the right word keeps most of the target: 1 - eps, plus its share of eps"
    return f"{answer}: the right word gets 1 - eps plus eps / V"


_NOUN_WORDS = {
    "determiner": "determiner",
    "determiners": "determiner",
    "det": "determiner",
    "adjective": "adjective",
    "adjectives": "adjective",
    "adj": "adjective",
    "both": "both",
    "neither": "neither",
    "none": "neither",
}


@exercise(
    hint="""
    Where is the noun's gender available when the decoder writes each word? A determiner comes before its
    noun in Neo, an adjective after it — and the decoder's self-attention can read what it already wrote.
    """,
    reference="determiner",
    kind="prediction",
    wrong=[
        mistake("expect a head for both", "both", says="already written"),
        mistake("expect the adjective, which follows its noun, to need the source", "adjective", says="before"),
        mistake("expect no head to specialise", "neither", says="has to come through cross-attention"),
    ],
    explain="""
    The determiner, in this run. It comes before its noun in Neo, so when the decoder writes it, the gender
    is usually in nothing the decoder has written yet (unless the same noun came earlier in the sentence): it
    has to come through cross-attention. Reading the English noun is one way (the encoder could also have
    copied the gender to another English word), and it is what this model's heads do. An adjective follows
    its noun: the noun is already written, so the decoder's self-attention could supply the gender and no
    cross-attention head is needed. Needed is not the same as absent: a verb's subject is also already
    written, yet over the runs the recipe notes the best head reads the English subject anywhere from rarely
    to always.
    """,
)
def predict_head_on_noun(answer):
    """answer: "determiner", "adjective", "both" or "neither"."""
    if not isinstance(answer, str) or answer.strip().lower() not in _NOUN_WORDS:
        return f'write "determiner", "adjective", "both" or "neither", got {answer!r}'
    choice = _NOUN_WORDS[answer.strip().lower()]
    if choice == "both":
        return (
            "an adjective follows its noun in Neo: the noun is already written, so the decoder's own "
            "self-attention could read its gender and no cross-attention head is needed (needed, not "
            "forbidden: in this run, when an adjective is written, no head looks at the noun often)"
        )
    if choice == "adjective":
        return (
            "the other way round: the determiner comes before its noun, so its gender has to come from the "
            "source; the adjective's noun is already written"
        )
    if choice == "neither":
        return (
            "when the decoder writes a determiner, its noun is not written yet: the gender has to come through "
            "cross-attention, and in this run a head does it by looking right at the English noun"
        )
    return None
