"""What self-attention matrices look like: the properties every one has without position information (no PE,
no causal mask) and without attention dropout, the map under query/key projections W_q, W_k, and a tiny task that trains them (each adjective
must find its sentence's noun)."""

import math

import torch

from utils import validation
from utils.attention import attend
from utils.experiments.attention_map import as_tokens, token_embeddings

NOUNS = ("CAT", "DOG", "BIRD", "FISH", "HORSE", "MOUSE")
ADJECTIVES = ("LOVELY", "BIG", "SMALL", "RED", "OLD", "HAPPY")
FILLERS = ("YOUR", "IS", "A", "THE", "MY", "SEES", "HAS", "AND")
VOCAB = NOUNS + ADJECTIVES + FILLERS


def _matrix(name, W, d_model):
    """Check that W is a floating (d_model, d_k) tensor."""
    validation.tensor(name, W, min_dim=2, floating=True)
    return validation.shape(name, W, (("d_model", d_model), "d_k"))


def random_projections(d_model=512, d_k=64, seed=0):
    """(W_q, W_k), each (d_model, d_k) with N(0, 1/d_model) entries, so X W has unit-variance entries
    when X has unit-variance entries (rows with |x|² ≈ d_model)."""
    d_model = validation.positive_int("d_model", d_model)
    d_k = validation.positive_int("d_k", d_k)
    seed = validation.seed("seed", seed)
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(d_model, d_k, generator=gen) / math.sqrt(d_model) for _ in range(2))


def projected_weights(X, W_q, W_k):
    """Attention weights softmax((X W_q)(X W_k)^T / sqrt(d_k)), shape (..., T, T), for X (..., T, d_model)."""
    validation.tensor("X", X, min_dim=2, floating=True)
    _matrix("W_q", W_q, X.shape[-1])
    _matrix("W_k", W_k, X.shape[-1])
    validation.shape("W_k", W_k, (("d_model", W_q.shape[0]), ("d_k of W_q", W_q.shape[1])))
    Q, K = X @ W_q.to(X.dtype), X @ W_k.to(X.dtype)  # (..., T, d_k) each
    return attend(Q, K, K)[1]  # (..., T, T): softmax(Q K^T / sqrt(d_k)), the weights of utils.attention


def sentence_map(sentence, W_q, W_k, d_model=512):
    """The (T, T) attention weights of a sentence's seeded embeddings (no PE) under W_q, W_k."""
    X = token_embeddings(as_tokens(sentence), d_model)  # (T, d_model) float64
    return projected_weights(X, W_q, W_k)


def adjective_noun_batch(batch_size, generator, seq=6):
    """Random sentences of `seq` words: one noun (once or twice), one or two adjectives, filler words.

    Returns (ids (batch, seq) into VOCAB, is_adjective (batch, seq) bool, noun (batch,) index into NOUNS).
    """
    batch_size = validation.positive_int("batch_size", batch_size)
    seq = validation.integer("seq", seq, minimum=4, why="two nouns, two adjectives fit")
    validation.instance("generator", generator, torch.Generator, "torch.Generator")
    ids, is_adj, noun = [], [], []
    for _ in range(batch_size):
        n = int(torch.randint(len(NOUNS), (1,), generator=generator))
        copies, adjs = (1 + int(torch.randint(2, (1,), generator=generator)) for _ in range(2))
        words = [n] * copies
        words += [len(NOUNS) + int(a) for a in torch.randint(len(ADJECTIVES), (adjs,), generator=generator)]
        fill = torch.randint(len(FILLERS), (seq - copies - adjs,), generator=generator)
        words += [len(NOUNS) + len(ADJECTIVES) + int(f) for f in fill]
        order = torch.randperm(seq, generator=generator)  # (seq,) without PE the order does not matter
        row = torch.tensor(words)[order]  # (seq,)
        ids.append(row)
        is_adj.append((row >= len(NOUNS)) & (row < len(NOUNS) + len(ADJECTIVES)))
        noun.append(n)
    return torch.stack(ids), torch.stack(is_adj), torch.tensor(noun)


def adjective_noun_loss(ids, is_adjective, noun, W_q, W_k, E):
    """Cross-entropy of naming the sentence's noun from each adjective's attention output (A X)_i.

    The values are the embeddings themselves (W_v = I), read out against the noun embeddings; only
    W_q and W_k can change where an adjective looks.
    """
    X = E[ids]  # (batch, seq, d_model)
    A = projected_weights(X, W_q, W_k)  # (batch, seq, seq)
    out = A @ X  # (batch, seq, d_model)
    logits = out[is_adjective] @ E[: len(NOUNS)].T / math.sqrt(E.shape[1])  # (n_adjectives, n_nouns)
    targets = noun[:, None].expand_as(ids)[is_adjective]  # (n_adjectives,)
    return torch.nn.functional.cross_entropy(logits, targets)


def train_adjective_noun(seed=0, d_model=512, d_k=64, steps=50, batch_size=32, lr=0.003):
    """Train W_q, W_k (started from random_projections(d_model, d_k, seed)) on the adjective-noun task.

    Returns (W_q, W_k, losses): the trained matrices and the loss of every step. Runs on one thread.
    """
    steps = validation.positive_int("steps", steps)
    lr = validation.positive_float("lr", lr)
    W_q, W_k = (W.clone().requires_grad_() for W in random_projections(d_model, d_k, seed))
    E = token_embeddings(list(VOCAB), d_model).float()  # (vocab, d_model) the lesson's embeddings
    gen = torch.Generator().manual_seed(10_000 + seed)
    opt = torch.optim.Adam([W_q, W_k], lr=lr)
    losses = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for _ in range(steps):
            loss = adjective_noun_loss(*adjective_noun_batch(batch_size, gen), W_q, W_k, E)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    finally:
        torch.set_num_threads(threads)
    return W_q.detach(), W_k.detach(), losses


PROPERTIES = (
    "no weight is negative",
    "every row sums to 1",
    "identical tokens get identical rows",
    "identical tokens get identical columns",
)


def attention_properties(A, tokens, atol=1e-6):
    """Which of PROPERTIES hold for A, within atol.

    All four are true of every self-attention matrix without position information (no PE, RoPE or
    ALiBi-style position bias, no position-dependent mask such as a causal or local window), without
    attention dropout, and with no row that a mask blocks entirely (utils.attention gives it zero weights)."""
    tokens = as_tokens(tokens)
    validation.tensor("A", A, min_dim=2)
    validation.shape("A", A, (("T", len(tokens)), ("T", len(tokens))))
    atol = validation.positive_float("atol", atol)
    A = A.double()
    pairs = [(i, j) for i in range(len(tokens)) for j in range(i + 1, len(tokens)) if tokens[i] == tokens[j]]
    return dict(
        zip(
            PROPERTIES,
            (
                bool((A >= 0).all()),
                bool(((A.sum(dim=-1) - 1).abs() <= atol).all()),
                all(bool(((A[i] - A[j]).abs() <= atol).all()) for i, j in pairs),
                all(bool(((A[:, i] - A[:, j]).abs() <= atol).all()) for i, j in pairs),
            ),
        )
    )


def weight_on(A, tokens, query, keys):
    """Total weight that each row of `query` word puts on the words in `keys`: a list, one per occurrence."""
    tokens = as_tokens(tokens)
    validation.tensor("A", A, min_dim=2)
    validation.shape("A", A, ("...", ("T", len(tokens)), ("T", len(tokens))))
    keys = {keys} if isinstance(keys, str) else set(keys)
    rows = [i for i, t in enumerate(tokens) if t == query]
    if not rows:
        validation.choice("query", query, tokens)
    cols = [j for j, t in enumerate(tokens) if t in keys]
    return [float(A[i, cols].sum()) for i in rows]
