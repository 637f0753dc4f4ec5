"""Training with teacher forcing: cross-entropy over every target position, Adam with the paper's warm-up."""

import time

import torch
import torch.nn.functional as F
from tqdm import tqdm

from utils import validation
from utils.translator.data import batches
from utils.translator.train_cache import cached


def shift_targets(tgt):
    """tgt (batch, T) = <bos> y_1 .. y_n <eos> -> decoder input tgt[:, :-1] and labels tgt[:, 1:]."""
    validation.tensor("tgt", tgt)
    validation.shape("tgt", tgt, ("batch", "T"))
    validation.integer("tgt.shape[1] (T)", tgt.shape[1], minimum=2, why="<bos> ... <eos>")
    return tgt[:, :-1], tgt[:, 1:]  # (batch, T-1) each: input t predicts label t


def noam_lr(step, d_model, warmup, factor=1.0):
    """lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5) (paper, section 5.3); step >= 1."""
    step = validation.positive_int("step", step)
    validation.positive_int("d_model", d_model)
    validation.positive_int("warmup", warmup)
    validation.positive_float("factor", factor)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def make_optimizer(model, warmup=400, factor=1.0):
    """Adam(beta1=0.9, beta2=0.98, eps=1e-9) and a LambdaLR scheduler following noam_lr."""
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    d_model = model.config.d_model
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: noam_lr(i + 1, d_model, warmup, factor))
    return opt, sched


def loss_fn(logits, labels, pad_id, label_smoothing=0.0):
    """Mean cross-entropy over the non-padding labels; logits (batch, T, vocab), labels (batch, T)."""
    validation.tensor("logits", logits, floating=True)
    validation.shape("logits", logits, ("batch", "T", "vocab"))
    batch, T, vocab = logits.shape
    validation.token_id("pad_id", pad_id, vocab)
    labels = validation.token_ids("labels", labels)
    validation.shape("labels", labels, (("batch", batch), ("T", T)))
    if int((labels.masked_fill(labels == pad_id, 0)).max()) >= vocab:
        validation.token_ids("labels", labels, vocab)  # an id past the vocabulary that is not padding
    label_smoothing = validation.probability("label_smoothing", label_smoothing)
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=pad_id, label_smoothing=label_smoothing
    )


class ProgressLine:
    """One progress bar line, redrawn in place: a tqdm bar on stderr. A subclass that shows the same `text`
    elsewhere overrides `start_bar` and `show` (utils.figures.progress shows it in a notebook)."""

    def __init__(self, total, desc="training", interval=0.5):
        self.total, self.desc, self.interval = validation.positive_int("total", total), desc, interval
        self.start = self.last = time.perf_counter()
        self.bar = self.start_bar()

    def start_bar(self):
        """The tqdm bar that `show` redraws (None when a subclass draws elsewhere)."""
        return tqdm(total=self.total, desc=self.desc, mininterval=self.interval)

    def text(self, n, loss):
        """The bar as a line of text, e.g. 'training: 100%|##########| 1300/1300 [00:45<00:00, ...]'."""
        postfix = None if loss is None else f"loss={loss:.3f}"
        return tqdm.format_meter(
            n, self.total, time.perf_counter() - self.start, prefix=self.desc, postfix=postfix, ascii=True, ncols=100
        )

    def update(self, n, loss=None, force=False):
        """Show that n of total steps are done (at most once per `interval` seconds unless `force`)."""
        now = time.perf_counter()
        if not force and now - self.last < self.interval:
            return
        self.last = now
        self.show(n, loss)

    def show(self, n, loss):
        """Redraw the bar at n steps done."""
        self.bar.update(n - self.bar.n)
        if loss is not None:
            self.bar.set_postfix(loss=f"{loss:.3f}", refresh=False)

    def close(self, n, loss=None):
        """Draw the final state: the finished bar stays as the output."""
        self.update(n, loss, force=True)
        if self.bar is not None:
            self.bar.close()


@cached  # a test run that executes the lesson twice trains once (unset for learners: trains)
def train(
    model,
    src,
    tgt,
    steps,
    batch_size=64,
    warmup=400,
    factor=1.0,
    label_smoothing=0.0,
    seed=0,
    num_threads=2,
    progress=True,
):
    """Train `model` in place for `steps` steps on padded tensors src (N, S), tgt (N, T); return the history.
    tgt may instead be a data.DropoutTargets: each batch's targets are then cut afresh (BPE-dropout).

    The history holds per-step "loss", "lr" and "tokens" (target positions trained on), "seconds", and "adam":
    the betas and eps of the Adam optimizer it trained with.
    With `progress` (True: a ProgressLine; or a ProgressLine subclass), a progress bar ends as the finished bar
    with the mean loss of the last 50 steps.
    """
    steps = validation.positive_int("steps", steps)
    label_smoothing = validation.probability("label_smoothing", label_smoothing)
    validation.seed("seed", seed)
    validation.instance("progress", progress, (bool, type), "bool or a ProgressLine class")
    if isinstance(progress, type) and not issubclass(progress, ProgressLine):
        raise TypeError(f"progress must be a bool or a ProgressLine class, got class {progress.__name__}")
    line = ProgressLine if progress is True else progress
    torch.set_num_threads(validation.positive_int("num_threads", num_threads))
    torch.manual_seed(seed)
    pad_id = model.config.pad_id
    opt, sched = make_optimizer(model, warmup, factor)
    data = batches(src, tgt, batch_size, seed, pad_id)
    history = {"loss": [], "lr": [], "tokens": []}
    history["adam"] = {key: opt.param_groups[0][key] for key in ("betas", "eps")}
    model.train()
    start = time.perf_counter()
    bar = line(steps) if progress else None
    for step in range(1, steps + 1):
        s, t = next(data)  # (B, S), (B, T)
        decoder_input, labels = shift_targets(t)  # (B, T-1) each
        logits = model(s, decoder_input)  # (B, T-1, vocab)
        loss = loss_fn(logits, labels, pad_id, label_smoothing)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        history["lr"].append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
        history["loss"].append(loss.item())
        history["tokens"].append(int((labels != pad_id).sum()))
        if bar is not None:
            bar.update(step, history["loss"][-1])
    history["seconds"] = time.perf_counter() - start
    if bar is not None:
        bar.close(steps, sum(history["loss"][-50:]) / len(history["loss"][-50:]))
    model.eval()
    return history
