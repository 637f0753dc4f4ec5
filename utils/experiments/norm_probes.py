"""Probes of a freshly initialised Encoder: activation scale and gradient norm per layer (lesson 06)."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from utils import validation
from utils.blocks import Encoder, EncoderLayer


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
    """An Encoder (4 heads) whose layers are copies of one layer (as torch.nn.TransformerEncoder builds
    them), or, with independent_layers, each initialised on its own (as torch.nn.Transformer's end up)."""
    encoder = Encoder(d_model, 4, d_ff, num_layers, norm_first=norm_first)
    if validation.boolean("independent_layers", independent_layers):
        encoder.layers = nn.ModuleList(EncoderLayer(d_model, 4, d_ff, norm_first=norm_first) for _ in range(num_layers))
    return encoder


def probe_at_init(
    norm_first, num_layers=24, d_model=64, seed=0, batch=8, T=10, num_classes=16, independent_layers=False
):
    """Build a random Encoder (4 heads, d_ff = 4 d_model; layers copied from one, or independent) with
    seed `seed`, feed it random input, and return (activation RMS per layer, RMS after the final norm,
    gradient norm per layer) for the cross-entropy of a random linear readout against random classes."""
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
    rms, final = activation_rms(encoder, x)
    loss = F.cross_entropy(readout(encoder(x)).flatten(0, 1), targets.flatten())
    return rms, final, layer_grad_norms(encoder, loss)


def warmup_lr(step, lr, warmup_steps):
    """Learning rate at step `step` (0-based): rises linearly to `lr` over `warmup_steps` steps, then stays.
    warmup_steps=1 means no warm-up (the full rate from the first step)."""
    validation.integer("step", step, minimum=0)
    lr = validation.positive_float("lr", lr)
    warmup_steps = validation.positive_int("warmup_steps", warmup_steps)
    return lr * min(1.0, (step + 1) / warmup_steps)


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
    model = nn.Sequential(
        nn.Embedding(vocab, d_model),
        _encoder(d_model, 2 * d_model, num_layers, norm_first, independent_layers),
        nn.Linear(d_model, vocab),
    )
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
