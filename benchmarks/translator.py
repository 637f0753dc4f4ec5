"""Train lesson 07's translator from scratch (its exact recipe) and print JSON: accuracy, time, memory, and
the step time of our model vs the same sizes built from torch.nn.Transformer, timed side by side.

"heldout_exact_match" is on new sentences drawn like the training ones (in-distribution);
"heldout_unseen_combinations_exact_match" on sentences that need an adjective or verb form (a word x gender x
number combination) that no training sentence contains.

Usage: python benchmarks/translator.py [--steps N] [--ratio-steps N] [--model-seed N]
"""

import argparse
import dataclasses
import json
import os
import resource
import statistics
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads OpenMP: idle threads sleep, not spin

import torch  # noqa: E402

from utils.translator import recipe  # noqa: E402
from utils.translator.data import batches, make_dataset, to_tensors
from utils.translator.evaluate import agreement_attention, all_but_heldout_right, evaluate
from utils.translator.model import Seq2SeqTransformer
from utils.translator.torch_reference import TorchSeq2Seq
from utils.translator.train import loss_fn, make_optimizer, shift_targets, train


def step_time_ratio(config, src, tgt, steps, batch_size, seed=0):
    """Median time of one training step (forward, backward, Adam) of ours / torch.nn.Transformer's, interleaved."""
    torch.manual_seed(seed)
    models = {"ours": Seq2SeqTransformer(config), "torch": TorchSeq2Seq(config)}
    opts = {k: make_optimizer(m)[0] for k, m in models.items()}
    times = {"ours": [], "torch": []}
    data = batches(src, tgt, batch_size, seed)
    for i in range(steps + 5):
        s, t = next(data)  # the same batch for both models
        decoder_input, labels = shift_targets(t)
        for name in ("ours", "torch") if i % 2 else ("torch", "ours"):  # alternate who goes first
            model, opt = models[name], opts[name]
            model.train()
            start = time.perf_counter()
            loss = loss_fn(model(s, decoder_input), labels, config.pad_id)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if i >= 5:  # skip warm-up steps
                times[name].append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in times.items()}
    return med["ours"] / med["torch"], med


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=recipe.TRAIN["steps"])
    parser.add_argument("--ratio-steps", type=int, default=100)
    parser.add_argument("--model-seed", type=int, default=recipe.MODEL_SEED)
    args = parser.parse_args()
    cfg = dict(recipe.TRAIN, steps=args.steps)
    torch.set_num_threads(cfg["num_threads"])
    ds = make_dataset(**recipe.DATA)
    src, tgt = to_tensors(ds.train, ds.src_vocab, ds.tgt_vocab)
    torch.manual_seed(args.model_seed)
    assert (recipe.MODEL.src_vocab_size, recipe.MODEL.tgt_vocab_size) == (len(ds.src_vocab), len(ds.tgt_vocab))
    model = Seq2SeqTransformer(recipe.MODEL)
    cpu0 = time.process_time()
    history = train(model, src, tgt, progress=False, **cfg)
    cpu_train = time.process_time() - cpu0
    result = evaluate(model, ds.test, ds.src_vocab, ds.tgt_vocab)
    unseen = evaluate(model, ds.test_unseen, ds.src_vocab, ds.tgt_vocab)
    agree = agreement_attention(model, ds.test, ds.src_vocab, ds.tgt_vocab)
    ratio, med = step_time_ratio(model.config, src, tgt, args.ratio_steps, cfg["batch_size"])
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    print(
        json.dumps(
            {
                "train_seconds": round(history["seconds"], 2),
                "train_cpu_seconds": round(cpu_train, 2),
                "steps": cfg["steps"],
                "steps_per_second": round(cfg["steps"] / history["seconds"], 2),
                "model_seed": args.model_seed,
                "heldout_exact_match": round(result["exact_match"], 4),
                "token_accuracy": round(result["token_accuracy"], 4),
                "bleu": round(result["bleu"], 2),
                "heldout_unseen_combinations_exact_match": round(unseen["exact_match"], 4),
                "heldout_unseen_combinations_token_accuracy": round(unseen["token_accuracy"], 4),
                "heldout_unseen_combinations_all_but_heldout_right": round(
                    all_but_heldout_right(unseen["hypotheses"], ds.test_unseen, ds.heldout_forms), 4
                ),
                "best_head_on_agreeing_noun": {role: round(float(a.max()), 3) for role, a in agree.items()},
                "best_head_alignment_accuracy": round(result["best_head_alignment_accuracy"], 4),
                "alignment_accuracy_per_layer_head": [
                    [round(x, 3) for x in row] for row in result["alignment_accuracy"].tolist()
                ],
                "peak_rss_mb": round(peak_rss_mb, 1),
                "step_time_ratio": round(ratio, 3),
                "step_ms_ours": round(med["ours"] * 1000, 2),
                "step_ms_torch": round(med["torch"] * 1000, 2),
                "torch_threads": torch.get_num_threads(),
                "cpu_count": os.cpu_count(),
                "load_average_1min": round(os.getloadavg()[0], 2),
                "model": dataclasses.asdict(model.config),
                "train": cfg,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
