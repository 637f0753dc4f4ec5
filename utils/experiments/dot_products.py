"""Dot products of random vectors and of positional encodings, measured over seeds (lesson 02).

The lesson states each statistic in general; these helpers draw the seeded samples it measures, so a
lesson cell can repeat a measurement over several seeds in a line and print the spread.
"""

import statistics

import torch

from utils import validation
from utils.positional import sinusoidal_encoding


def spread(values):
    """(min, median, max) of a non-empty sequence of numbers: the spread over seeds a lesson prints."""
    values = validation.non_empty("values", [float(v) for v in values], list, "sequence of numbers")
    return min(values), statistics.median(values), max(values)


def random_pairs(n, d, seed):
    """Two (n, d) float64 tensors of independent N(0, 1) entries, drawn from one generator seeded with `seed`."""
    n, d = validation.positive_int("n", n), validation.positive_int("d", d)
    gen = torch.Generator().manual_seed(validation.seed("seed", seed))
    a = torch.randn(n, d, generator=gen, dtype=torch.float64)  # (n, d)
    b = torch.randn(n, d, generator=gen, dtype=torch.float64)  # (n, d)
    return a, b


def random_scores(n_queries, n_keys, d_k, seed):
    """Unscaled scores q . k, (n_queries, n_keys) float64: each query against its own keys, all entries N(0, 1)."""
    n_queries = validation.positive_int("n_queries", n_queries)
    n_keys, d_k = validation.positive_int("n_keys", n_keys), validation.positive_int("d_k", d_k)
    gen = torch.Generator().manual_seed(validation.seed("seed", seed))
    q = torch.randn(n_queries, d_k, generator=gen, dtype=torch.float64)  # (n_queries, d_k)
    k = torch.randn(n_queries, n_keys, d_k, generator=gen, dtype=torch.float64)  # (n_queries, n_keys, d_k)
    return torch.einsum("nd,ntd->nt", q, k)  # (n_queries, n_keys)


def soft_argmax_gradient(x, temperature):
    """Gradient with respect to x of the soft arg-max sum_i i * softmax(x / T)_i (autograd, x's dtype)."""
    x = validation.tensor("x", x, min_dim=1, floating=True)
    validation.shape("x", x, ("n",))  # one score per position
    temperature = validation.positive_float("temperature", temperature)
    xg = x.detach().clone().requires_grad_(True)  # (n,)
    index = torch.arange(len(x), dtype=x.dtype)  # (n,)
    (index * torch.softmax(xg / temperature, dim=-1)).sum().backward()
    return xg.grad  # (n,)


def word_recovery(d, seed, vocab_size=1000, max_len=64, n_tokens=2000):
    """Share of tokens decoded right, as argmax_v x . e_v, from x = e_w + PE_t and from the bare e_w.

    Random N(0, 1) word vectors e (vocab_size, d), random words and positions t < max_len. The bare
    share is also what the concatenation [e_w; PE_t] gives, since its PE half is orthogonal to [e_v; 0].
    """
    d = validation.even_positive_int("d", d)
    vocab_size = validation.positive_int("vocab_size", vocab_size)
    max_len, n_tokens = validation.positive_int("max_len", max_len), validation.positive_int("n_tokens", n_tokens)
    gen = torch.Generator().manual_seed(validation.seed("seed", seed))
    emb = torch.randn(vocab_size, d, generator=gen, dtype=torch.float64)  # (vocab_size, d)
    pe = sinusoidal_encoding(max_len, d, dtype=torch.float64)  # (max_len, d)
    words = torch.randint(0, vocab_size, (n_tokens,), generator=gen)  # (n_tokens,)
    pos = torch.randint(0, max_len, (n_tokens,), generator=gen)  # (n_tokens,)
    added = ((emb[words] + pe[pos]) @ emb.T).argmax(1) == words  # (n_tokens,)
    bare = (emb[words] @ emb.T).argmax(1) == words  # (n_tokens,)
    return added.double().mean().item(), bare.double().mean().item()


def pe_variance_share(max_len, d_model, base=10000.0):
    """Cumulative share (d_model,) of the PE table's variance over positions 0 .. max_len-1, column by column."""
    validation.integer("max_len", max_len, minimum=2, why="one position has no variance")
    pe = sinusoidal_encoding(max_len, d_model, base, dtype=torch.float64)  # (max_len, d_model)
    var = pe.var(dim=0, correction=0)  # (d_model,) variance of each column over positions
    return var.cumsum(0) / var.sum()  # (d_model,)
