"""Lesson 08's length-extrapolation experiment: two tasks (delayed copy, absolute copy), a small encoder whose
positional encoding is one of PE_KINDS, a training loop of a fixed number of steps, accuracy per test length;
its figures are in utils.figures.extrapolation."""

import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from utils import validation
from utils.blocks import Encoder
from utils.experiments.stored import stored_json
from utils.masks import padding_mask
from utils.multihead import MultiHeadAttention, split_heads
from utils.positional import LearnedPositionalEncoding, PositionalEncoding, apply_rotary, sinusoidal_encoding

PE_KINDS = ("sinusoidal", "learned", "none", "rope", "sinusoidal+offsets")
TASKS = ("copy", "absolute")  # y_t = x_{t - k} (relative) or y_t = x_k (absolute), k = `shift`
PAD = 0  # token id 0 pads; symbols are 1 .. vocab_size - 1
IGNORE = -100  # target id that the loss and the accuracy skip (padding and the first `shift` positions)


def delayed_copy_batch(batch_size, lengths, vocab_size, shift, generator):
    """Random symbols and their targets y_t = x_{t - shift}: (tokens, targets), both (batch, max(lengths)).

    `lengths` is one int (every row that long) or a (batch,) int tensor; rows are padded with PAD.
    """
    batch_size = validation.positive_int("batch_size", batch_size)
    vocab_size = validation.positive_int("vocab_size", vocab_size)
    shift = validation.positive_int("shift", shift)
    validation.integer("vocab_size", vocab_size, minimum=3, why="PAD and at least two symbols")
    if isinstance(lengths, int):
        lengths = torch.full((batch_size,), validation.positive_int("lengths", lengths))
    validation.int_tensor("lengths", lengths)
    validation.shape("lengths", lengths, (("batch_size", batch_size),))
    if lengths.min() <= shift:  # every row needs a target
        raise ValueError(f"lengths must be {batch_size} ints > shift={shift}, got {lengths.tolist()}")
    T = int(lengths.max())
    tokens = torch.randint(1, vocab_size, (batch_size, T), generator=generator)  # (batch, T)
    real = torch.arange(T)[None, :] < lengths[:, None]  # (batch, T) True on real tokens
    tokens = tokens.masked_fill(~real, PAD)  # (batch, T)
    targets = torch.full_like(tokens, IGNORE)  # (batch, T)
    targets[:, shift:] = tokens[:, :-shift]  # y_t = x_{t - shift}
    targets = targets.masked_fill(~real, IGNORE)  # no target on padding
    return tokens, targets


def absolute_copy_batch(batch_size, lengths, vocab_size, anchor, generator):
    """Random symbols and targets y_t = x_anchor at every position t != anchor: (tokens, targets), (batch, T).

    The answer sits at a fixed *absolute* index, so a model must know where position `anchor` is.
    """
    tokens, _ = delayed_copy_batch(batch_size, lengths, vocab_size, anchor, generator)  # (batch, T)
    real = tokens != PAD  # (batch, T)
    targets = tokens[:, anchor : anchor + 1].expand_as(tokens).clone()  # (batch, T): x_anchor everywhere
    targets[:, anchor] = IGNORE  # copying itself is not the task
    return tokens, targets.masked_fill(~real, IGNORE)


def task_batch(task, batch_size, lengths, vocab_size, shift, generator):
    """A batch of `task` ("copy": y_t = x_{t - shift}; "absolute": y_t = x_shift): (tokens, targets)."""
    validation.choice("task", task, TASKS)
    make = delayed_copy_batch if task == "copy" else absolute_copy_batch
    return make(batch_size, lengths, vocab_size, shift, generator)


class RotarySelfAttention(MultiHeadAttention):
    """Multi-head self-attention whose per-head q and k are rotated by their positions (RoPE)."""

    def forward(self, query, key, value, mask=None, need_weights=True):
        """Same interface as MultiHeadAttention; positions are 0 .. T-1 for both q and k."""
        self._check_inputs(query, key, value)
        validation.boolean("need_weights", need_weights)
        mask = self._head_mask(mask, query, key)  # (batch, 1 or h, T_q or 1, T_k)
        q = apply_rotary(split_heads(self.W_q(query), self.num_heads))  # (batch, h, T_q, d_k)
        k = apply_rotary(split_heads(self.W_k(key), self.num_heads))  # (batch, h, T_k, d_k)
        v = split_heads(self.W_v(value), self.num_heads)  # (batch, h, T_k, d_k): values are not rotated
        heads, weights = self._attention(q, k, v, mask, need_weights)  # (batch, T_q, d_model)
        return self.W_o(heads), weights  # (batch, T_q, d_model), (batch, h, T_q, T_k) or None


class LengthModel(nn.Module):
    """Embedding -> positional encoding of kind `pe_kind` -> pre-norm Encoder (lesson 06) -> a linear read-out per position.

    pe_kind: "sinusoidal" (added table), "learned" (added nn.Embedding of train_len rows), "none",
    "rope" (nothing added; q and k rotated inside every attention layer), or "sinusoidal+offsets" (the
    sinusoidal table read from a start position per sequence, `offsets` in forward; 0 by default).
    """

    def __init__(self, vocab_size, pe_kind, train_len, d_model=64, num_heads=4, d_ff=128, num_layers=2, table_len=1024):
        super().__init__()
        self.pe_kind = validation.choice("pe_kind", pe_kind, PE_KINDS)
        self.train_len = validation.positive_int("train_len", train_len)
        self.vocab_size = validation.positive_int("vocab_size", vocab_size)
        self.embed = nn.Embedding(vocab_size, d_model)  # entries ~ N(0, 1), the order of PE's (RMS 1/sqrt(2))
        # self.pe: the positional-encoding module, when the kind has one
        if pe_kind == "sinusoidal":
            self.pe = PositionalEncoding(d_model, max_len=table_len)  # defined at every position
        elif pe_kind == "sinusoidal+offsets":
            self.pe = None
            self.register_buffer("table", sinusoidal_encoding(table_len, d_model), persistent=False)
        elif pe_kind == "learned":
            self.pe = LearnedPositionalEncoding(train_len, d_model)  # a vector for 0 .. train_len-1 only
        else:
            self.pe = None
        self.encoder = Encoder(d_model, num_heads, d_ff, num_layers, norm_first=True)
        if pe_kind == "rope":
            for layer in self.encoder.layers:
                layer.self_attn = RotarySelfAttention(d_model, num_heads)
        self.readout = nn.Linear(d_model, vocab_size)

    def forward(self, tokens, clamp=False, offsets=None):
        """Logits (batch, T, vocab_size); clamp=True lets learned PE reuse its last vector past train_len.

        offsets (batch,) ints: for "sinusoidal+offsets", sequence b is encoded at positions offsets[b] + t.
        """
        validation.token_ids("tokens", tokens, self.vocab_size, min_dim=2)
        validation.boolean("clamp", clamp)
        x = self.embed(tokens)  # (batch, T, d_model)
        if offsets is not None and self.pe_kind != "sinusoidal+offsets":
            raise ValueError(
                f"offsets apply to pe_kind='sinusoidal+offsets' only, this model has pe_kind={self.pe_kind!r}"
            )
        if self.pe_kind == "sinusoidal+offsets":
            T = tokens.shape[1]
            start = torch.zeros(len(tokens), dtype=torch.long) if offsets is None else offsets  # (batch,)
            validation.int_tensor("offsets", start)
            validation.shape("offsets", start, (("batch", len(tokens)),))
            if start.min() < 0 or start.max() + T > len(self.table):  # the table must cover every position
                raise ValueError(
                    f"offsets must be {len(tokens)} ints in [0, {len(self.table) - T}], got {start.tolist()}"
                )
            x = x + self.table[start[:, None] + torch.arange(T)]  # (batch, T, d_model)
        elif self.pe_kind == "learned":
            x = self.pe(x, clamp=clamp)  # (batch, T, d_model)
        elif self.pe is not None:
            x = self.pe(x)  # (batch, T, d_model)
        h = self.encoder(x, padding_mask(tokens, PAD))  # (batch, T, d_model)
        return self.readout(h)  # (batch, T, vocab_size)

    def attention_maps(self):
        """The last forward's self-attention weights, one (batch, h, T, T) tensor per layer."""
        return [layer.self_attn_weights for layer in self.encoder.layers]


def train(
    pe_kind,
    steps,
    train_len=16,
    vocab_size=16,
    shift=2,
    batch_size=64,
    lr=3e-3,
    seed=0,
    task="copy",
    max_position=None,
    **model_kw,
):
    """Train a LengthModel for exactly `steps` Adam steps on lengths shift+1 .. train_len; return (model, losses).

    For pe_kind="sinusoidal+offsets" each sequence starts at a random position, so that positions up to
    max_position - 1 (default 3 * train_len) are seen in training; every other variant starts at 0.
    """
    steps = validation.positive_int("steps", steps)
    train_len = validation.positive_int("train_len", train_len)
    max_position = validation.integer(
        "max_position",
        3 * train_len if max_position is None else max_position,
        minimum=train_len,
        why=f"train_len={train_len}",
    )
    validation.choice("task", task, TASKS)
    seed = validation.seed("seed", seed)
    lr = validation.positive_float("lr", lr)
    torch.manual_seed(seed)
    model = LengthModel(vocab_size, pe_kind, train_len, **model_kw)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed + 1)
    losses = []
    model.train()
    for _ in range(steps):
        lengths = torch.randint(shift + 1, train_len + 1, (batch_size,), generator=gen)  # (batch,)
        tokens, targets = task_batch(task, batch_size, lengths, vocab_size, shift, gen)  # (batch, T)
        offsets = None
        if pe_kind == "sinusoidal+offsets":  # start anywhere in 0 .. max_position - length
            offsets = (torch.rand(batch_size, generator=gen) * (max_position - lengths + 1)).long()  # (batch,)
        logits = model(tokens, offsets=offsets)  # (batch, T, vocab_size)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model.eval(), losses


@torch.no_grad()
def evaluate(model, lengths, vocab_size=16, shift=2, batch_size=128, seed=1234, clamp=False, task="copy"):
    """{length: token accuracy on a fixed random batch}; NaN where the model has no encoding for a position."""
    out = {}
    for n in lengths:
        gen = torch.Generator().manual_seed(seed + n)
        tokens, targets = task_batch(task, batch_size, n, vocab_size, shift, gen)  # (batch, n)
        if model.pe_kind == "learned" and n > model.train_len and not clamp:
            out[n] = math.nan  # no vector for positions >= train_len: the model cannot run at this length
            continue
        pred = model(tokens, clamp=clamp).argmax(-1)  # (batch, n)
        keep = targets != IGNORE  # (batch, n)
        out[n] = (pred[keep] == targets[keep]).float().mean().item()
    return out


@torch.no_grad()
def accuracy_by_position(model, length, vocab_size=16, shift=2, batch_size=256, seed=4321, clamp=False, task="copy"):
    """(length,) accuracy at each position t of sequences `length` long (NaN where t has no target)."""
    gen = torch.Generator().manual_seed(seed)
    tokens, targets = task_batch(task, batch_size, length, vocab_size, shift, gen)  # (batch, length)
    pred = model(tokens, clamp=clamp).argmax(-1)  # (batch, length)
    acc = (pred == targets).float().mean(0)  # (length,)
    acc[(targets == IGNORE).all(0)] = math.nan
    return acc


@torch.no_grad()
def attention_on_source(model, length, vocab_size=16, shift=2, batch_size=64, seed=99, clamp=False):
    """(layers, heads, length): mean weight that query t puts on key t - shift, the token it must copy."""
    gen = torch.Generator().manual_seed(seed)
    tokens, _ = delayed_copy_batch(batch_size, length, vocab_size, shift, gen)  # (batch, length)
    model(tokens, clamp=clamp)
    maps = torch.stack(model.attention_maps(), dim=1)  # (batch, layers, heads, length, length)
    t = torch.arange(shift, length)
    on_source = torch.full(maps.shape[1:4], math.nan)  # (layers, heads, length)
    on_source[..., shift:] = maps[..., t, t - shift].mean(0)  # (layers, heads, length - shift)
    return on_source


@torch.no_grad()
def copy_head(model, length, train_len, vocab_size=16, shift=2, clamp=False):
    """Find the head that best puts query t's weight on key t - shift at t < train_len, and measure it at `length`.

    Returns {layer, head, seen, unseen, at_train_len, lost, far}: mean weight on key t - shift at positions
    shift..train_len-1 and train_len..length-1 of length-`length` sequences, the same at length train_len,
    the weight not on key t - shift, and the weight on keys at offsets |n - m| >= train_len (never seen).
    """
    w = attention_on_source(model, length, vocab_size, shift, clamp=clamp)  # (layers, heads, length)
    in_range = w[..., shift:train_len].mean(-1)  # (layers, heads)
    layer, head = divmod(int(in_range.argmax()), in_range.shape[1])
    A = model.attention_maps()[layer][:, head].mean(0)  # (length, length): the same batch, averaged
    offset = (torch.arange(length)[None, :] - torch.arange(length)[:, None]).abs()  # (length, length)
    far = (A * (offset >= train_len)).sum(-1)[shift:]  # (length - shift,)
    short = attention_on_source(model, train_len, vocab_size, shift, clamp=clamp)[layer, head, shift:]
    row = w[layer, head]  # (length,)
    return {
        "layer": layer,
        "head": head,
        "seen": row[shift:train_len].mean().item(),
        "unseen": row[train_len:].mean().item(),
        "at_train_len": short.mean().item(),
        "lost": 1 - row[shift:].mean().item(),
        "far": far.mean().item(),
    }


# --- the stored seeds (benchmarks/extrapolation_seeds.py) and the experiment's figures ---

SEED_RUNS = Path(__file__).resolve().parent / "data" / "extrapolation_seeds.json"  # package data: on Colab too


def load_seed_runs(path=SEED_RUNS):
    """The JSON written by benchmarks/extrapolation_seeds.py: {command, setup, seeds, runs[task][pe][seed]}."""
    return stored_json(
        path,
        "python benchmarks/extrapolation_seeds.py --seeds 0 1 2 3 4 --out utils/experiments/data/extrapolation_seeds.json",
    )


def seed_range(values):
    """(mean, min, max) of a list of numbers, the summary every table and error bar of lesson 08 uses."""
    values = validation.non_empty("values", [float(v) for v in values], list, "list of numbers")
    return sum(values) / len(values), min(values), max(values)


def accuracy_ranges(runs, task, names):
    """{name: {test length: (mean, min, max) over seeds}}; "learned (clamped)" reads the learned runs."""
    out = {}
    for name in names:
        by_seed = runs["runs"][task][name.replace(" (clamped)", "")]
        lengths = next(iter(by_seed.values()))["accuracy"]
        out[name] = {int(n): seed_range([r["accuracy"][n] for r in by_seed.values()]) for n in lengths}
    return out


def largest_change(runs, rerun, field="accuracy"):
    """Largest |difference| of one summary between two stored experiments, over the runs both hold.

    field: "accuracy" (per test length), "by_position" (per range of positions) or "copy_head" (its weights;
    which head and layer it picked are labels, not compared).
    """
    validation.choice("field", field, ("accuracy", "by_position", "copy_head"))
    diffs = [
        abs(a - runs["runs"][task][pe_kind][seed][field][key])
        for task, by_pe in rerun["runs"].items()
        for pe_kind, by_seed in by_pe.items()
        for seed, r in by_seed.items()
        if seed in runs["runs"][task][pe_kind] and field in r
        for key, a in r[field].items()
        if key not in ("head", "layer")
    ]
    if not diffs:
        raise ValueError(f"runs and rerun share no (task, variant, seed) with {field!r}: nothing to compare")
    return max(diffs)


def in_range(value, stored, tol):
    """True when value lies in [min - tol, max + tol] of the (mean, min, max) triple `stored`."""
    return stored[1] - tol <= value <= stored[2] + tol
