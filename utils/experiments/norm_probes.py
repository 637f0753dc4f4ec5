"""Probes of a freshly initialised Encoder: activation scale and gradient norm per layer (lesson 06)."""

import os
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from utils import validation
from utils.blocks import Encoder, EncoderLayer
from utils.experiments.stored import stored_json


def _check_encoder_input(encoder, x):
    validation.instance("encoder", encoder, Encoder, "utils.blocks.Encoder")
    validation.tensor("x", x, min_dim=3, floating=True)
    validation.shape("x", x, ("batch", "T", ("d_model", encoder.layers[0].norm1.normalized_shape[0])))


def activation_rms(encoder, x):
    """RMS of the stream after each layer (array of num_layers) and after the final norm (float)."""
    _check_encoder_input(encoder, x)
    rms = []
    with torch.no_grad():
        for layer in encoder.layers:
            x = layer(x)  # (batch, T, d_model)
            rms.append(x.pow(2).mean().sqrt().item())
        final = encoder.norm(x).pow(2).mean().sqrt().item()
    return np.array(rms), final


def layer_grad_norms(encoder, loss):
    """Norm of the gradient of `loss` with respect to all parameters of each layer (array of num_layers)."""
    validation.instance("encoder", encoder, Encoder, "utils.blocks.Encoder")
    validation.tensor("loss", loss)
    if loss.numel() != 1 or not loss.requires_grad:
        raise ValueError(
            f"loss must be a scalar that requires grad, got shape {tuple(loss.shape)}, "
            f"requires_grad={loss.requires_grad}"
        )
    params = [list(layer.parameters()) for layer in encoder.layers]
    grads = torch.autograd.grad(loss, [p for group in params for p in group], allow_unused=True)
    norms, start = [], 0
    for group in params:
        chunk = [g for g in grads[start : start + len(group)] if g is not None]  # None: not used by loss
        norms.append(sum(g.pow(2).sum().item() for g in chunk) ** 0.5)
        start += len(group)
    return np.array(norms)


def _encoder(d_model, d_ff, num_layers, norm_first, independent_layers):
    """An Encoder (4 heads) whose layers are copies of one layer (as torch.nn.TransformerEncoder builds them),
    or, with independent_layers, each drawn on its own with PyTorch's default nn.Linear init (not the Xavier
    init with which torch.nn.Transformer re-draws its layers)."""
    encoder = Encoder(d_model, 4, d_ff, num_layers, norm_first=norm_first)
    if validation.boolean("independent_layers", independent_layers):
        encoder.layers = nn.ModuleList(EncoderLayer(d_model, 4, d_ff, norm_first=norm_first) for _ in range(num_layers))
    return encoder


def _probe_setup(norm_first, num_layers, d_model, seed, batch, T, num_classes, independent_layers):
    """Check the arguments; with seed `seed`, build the random Encoder, readout, input and classes of a probe."""
    validation.boolean("norm_first", norm_first)
    validation.boolean("independent_layers", independent_layers)
    for name, value in [
        ("num_layers", num_layers),
        ("d_model", d_model),
        ("batch", batch),
        ("T", T),
        ("num_classes", num_classes),
    ]:
        validation.positive_int(name, value)
    validation.divisible("d_model", d_model, 4, "num_heads")
    torch.manual_seed(validation.seed("seed", seed))
    encoder = _encoder(d_model, 4 * d_model, num_layers, norm_first, independent_layers)
    readout = nn.Linear(d_model, num_classes)
    x = torch.randn(batch, T, d_model)  # (batch, T, d_model)
    targets = torch.randint(0, num_classes, (batch, T))  # (batch, T)
    return encoder, readout, x, targets


def probe_at_init(
    norm_first, num_layers=24, d_model=64, seed=0, batch=8, T=10, num_classes=16, independent_layers=False
):
    """Build a random Encoder (4 heads, d_ff = 4 d_model; layers copied from one, or independent) with
    seed `seed`, feed it random input, and return (activation RMS per layer, RMS after the final norm,
    gradient norm per layer) for the cross-entropy of a random linear readout against random classes."""
    encoder, readout, x, targets = _probe_setup(
        norm_first, num_layers, d_model, seed, batch, T, num_classes, independent_layers
    )
    rms, final = activation_rms(encoder, x)
    loss = F.cross_entropy(readout(encoder(x)).flatten(0, 1), targets.flatten())
    return rms, final, layer_grad_norms(encoder, loss)


def last_layer_norm_inputs(
    norm_first, num_layers=24, d_model=64, seed=0, batch=8, T=10, num_classes=16, independent_layers=False
):
    """RMS of the input of the last layer's first and second LayerNorm (array of 2), in the stack and on the
    input that probe_at_init builds with the same arguments."""
    encoder, _, x, _ = _probe_setup(norm_first, num_layers, d_model, seed, batch, T, num_classes, independent_layers)
    last = encoder.layers[-1]
    seen = {}
    hooks = [
        norm.register_forward_pre_hook(lambda module, args, name=name: seen.setdefault(name, args[0]))
        for name, norm in (("norm1", last.norm1), ("norm2", last.norm2))
    ]
    try:
        with torch.no_grad():
            encoder(x)
    finally:
        for hook in hooks:
            hook.remove()
    return np.array([seen[name].pow(2).mean().sqrt().item() for name in ("norm1", "norm2")])


def stream_mean_and_spread(num_layers=24, d_model=64, seed=0, batch=8, T=10, num_classes=16, independent_layers=False):
    """Per-token |mean| and spread σ (arrays of batch * T) of a pre-norm stack's stream before its final
    LayerNorm, on the input that probe_at_init builds with the same arguments."""
    encoder, _, x, _ = _probe_setup(True, num_layers, d_model, seed, batch, T, num_classes, independent_layers)
    with torch.no_grad():
        for layer in encoder.layers:
            x = layer(x)  # (batch, T, d_model)
    return x.mean(-1).abs().flatten().numpy(), x.std(-1, unbiased=False).flatten().numpy()


VARIANTS = {"post-norm": False, "pre-norm": True}  # name -> norm_first


def probe_stacks(depths, seeds, d_model=32, independent_layers=False):
    """probe_at_init for each variant ('post-norm', 'pre-norm'), depth L in `depths` and seed in `seeds`:
    three dicts (variant, L) -> RMS after each layer (seeds, L), after the final norm (seeds,), and
    gradient norm per layer (seeds, L)."""
    depths = [
        validation.positive_int("a depth in depths", L) for L in validation.items("depths", depths, "a list of ints")
    ]
    seeds = [validation.seed("a seed in seeds", s) for s in validation.items("seeds", seeds, "a list of ints")]
    validation.non_empty("depths", depths, list, "list of ints")
    validation.non_empty("seeds", seeds, list, "list of ints")
    runs = {
        (name, L): [
            probe_at_init(norm_first, num_layers=L, d_model=d_model, seed=s, independent_layers=independent_layers)
            for s in seeds
        ]
        for name, norm_first in VARIANTS.items()
        for L in depths
    }
    return tuple({key: np.array([p[i] for p in probes]) for key, probes in runs.items()} for i in range(3))


def depths_of(name, values):
    """Check a dict (variant, L) -> array (seeds, L) holding both variants at every depth; return the depths."""
    validation.non_empty(name, values, dict, "dict of (variant, num_layers) -> array (seeds, num_layers)")
    for key in values:
        if not (isinstance(key, tuple) and len(key) == 2 and key[0] in VARIANTS):
            raise ValueError(f"a key of {name} must be a pair (variant in {tuple(VARIANTS)}, num_layers), got {key!r}")
    depths = sorted({L for _, L in values})
    for L in depths:
        for variant in VARIANTS:
            if (variant, L) not in values:
                raise ValueError(f"{name} must hold both variants at every depth, got no {(variant, L)!r}")
            validation.shape(f"{name}[{(variant, L)!r}]", np.asarray(values[variant, L]), ("seeds", ("num_layers", L)))
    return depths


def gradient_gap(grads, rms):
    """For each depth L: post-norm / pre-norm gradient of the last layer (seeds,), and that ratio divided by
    pre-norm's stream RMS before the final norm (seeds,); two dicts L -> array, from probe_stacks' output."""
    depths = depths_of("grads", grads)
    if depths_of("rms", rms) != depths:
        raise ValueError(f"rms must hold the depths of grads {depths}, got {sorted({L for _, L in rms})}")
    ratio = {L: np.asarray(grads["post-norm", L])[:, -1] / np.asarray(grads["pre-norm", L])[:, -1] for L in depths}
    return ratio, {L: ratio[L] / np.asarray(rms["pre-norm", L])[:, -1] for L in depths}


def gap_findings(ratio, tracks, band=(1 / 1.5, 1.5)):
    """Which of three claims about gradient_gap's output hold (dict claim -> bool): post-norm's last layer gets
    the larger gradient in every stack; the median gap grows with depth; ratio / RMS lies inside `band`
    (by default: within a factor 1.5)."""
    for name, value in (("ratio", ratio), ("tracks", tracks)):
        validation.non_empty(name, value, dict, "dict of num_layers -> array (seeds,)")
    if sorted(ratio) != sorted(tracks):
        raise ValueError(f"tracks must have the depths of ratio {sorted(ratio)}, got {sorted(tracks)}")
    low, high = (validation.real("band", b) for b in band)
    depths = sorted(ratio)
    return {
        "post-norm larger in every stack": all((np.asarray(ratio[L]) > 1).all() for L in depths),
        "grows with depth": all(np.median(ratio[a]) < np.median(ratio[b]) for a, b in zip(depths, depths[1:])),
        "gap / pre-norm's stream RMS inside band": all(
            ((low < np.asarray(t)) & (np.asarray(t) < high)).all() for t in tracks.values()
        ),
    }


def warmup_lr(step, lr, warmup_steps):
    """Learning rate at step `step` (0-based): rises linearly to `lr` over `warmup_steps` steps, then stays.
    warmup_steps=1 means no warm-up (the full rate from the first step)."""
    validation.integer("step", step, minimum=0)
    lr = validation.positive_float("lr", lr)
    warmup_steps = validation.positive_int("warmup_steps", warmup_steps)
    return lr * min(1.0, (step + 1) / warmup_steps)


def copy_task_model(norm_first, num_layers=12, d_model=32, vocab=16, independent_layers=False):
    """train_copy_task's model, freshly initialised from torch's global generator: Embedding -> Encoder
    (4 heads, d_ff = 2 d_model; layers copied from one, or independent) -> Linear. model[1] is the Encoder."""
    validation.boolean("norm_first", norm_first)
    validation.boolean("independent_layers", independent_layers)
    for name, value in [("num_layers", num_layers), ("d_model", d_model), ("vocab", vocab)]:
        validation.positive_int(name, value)
    validation.divisible("d_model", d_model, 4, "num_heads")
    return nn.Sequential(
        nn.Embedding(vocab, d_model),
        _encoder(d_model, 2 * d_model, num_layers, norm_first, independent_layers),
        nn.Linear(d_model, vocab),
    )


def train_copy_task(
    norm_first,
    lr,
    warmup_steps,
    steps=60,
    num_layers=12,
    d_model=32,
    seed=0,
    vocab=16,
    T=8,
    batch=16,
    independent_layers=False,
):
    """Train Embedding -> Encoder (4 heads, d_ff = 2 d_model; layers copied from one, or independent) ->
    Linear with Adam (betas 0.9, 0.98, as in the paper) and `warmup_lr` to output each input token again;
    return the loss of every step."""
    validation.boolean("norm_first", norm_first)
    validation.boolean("independent_layers", independent_layers)
    for name, value in [
        ("steps", steps),
        ("num_layers", num_layers),
        ("d_model", d_model),
        ("vocab", vocab),
        ("T", T),
        ("batch", batch),
    ]:
        validation.positive_int(name, value)
    validation.divisible("d_model", d_model, 4, "num_heads")
    warmup_lr(0, lr, warmup_steps)  # checks lr and warmup_steps
    torch.manual_seed(validation.seed("seed", seed))
    model = copy_task_model(norm_first, num_layers, d_model, vocab, independent_layers)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98))
    data = torch.Generator().manual_seed(1000 + seed)
    losses = []
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = warmup_lr(step, lr, warmup_steps)
        tokens = torch.randint(0, vocab, (batch, T), generator=data)  # (batch, T)
        loss = F.cross_entropy(model(tokens).flatten(0, 1), tokens.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return np.array(losses)


WARMUP_SWEEP = {"norm_first": False, "lr": 0.01, "warmup_steps": 20, "steps": 60, "num_layers": 12, "d_model": 32}
"""train_copy_task's settings in lesson 06's sweep of post-norm with warm-up over more seeds."""
WARMUP_SEEDS = Path(__file__).resolve().parent / "data" / "warmup_seeds.json"  # package data: on Colab too


def load_warmup_seeds(path=WARMUP_SEEDS):
    """The JSON written by benchmarks/warmup_seeds.py: {command, setup, last_steps, seeds, end_loss},
    end_loss[seed] (the mean loss of the run's last `last_steps` steps) keyed by int seed."""
    validation.instance("path", path, (str, os.PathLike), "path (str or pathlib.Path)")
    runs = stored_json(
        path, "OMP_NUM_THREADS=1 python benchmarks/warmup_seeds.py --out utils/experiments/data/warmup_seeds.json"
    )
    missing = [k for k in ("setup", "last_steps", "seeds", "end_loss") if k not in runs]
    if missing:
        raise ValueError(f"{path} is not a file of benchmarks/warmup_seeds.py: it lacks {missing}")
    runs["end_loss"] = {int(seed): value for seed, value in runs["end_loss"].items()}
    if sorted(runs["end_loss"]) != sorted(runs["seeds"]):
        raise ValueError(f"{path}: end_loss has seeds {sorted(runs['end_loss'])}, expected {sorted(runs['seeds'])}")
    return runs
