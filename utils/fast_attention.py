"""Attention at inference and at scale (lesson 09): online softmax, tiled attention without the T x T
matrix (the idea behind FlashAttention), a key-value cache for the translator's decoder, cache sizes for
multi-head, grouped-query and multi-query attention, and a tracker of the memory tensors take."""

import math
import time
import weakref
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from utils import validation
from utils.attention import scaled_dot_product_attention
from utils.multihead import merge_heads, split_heads

# --- online softmax ----------------------------------------------------------------------------------


def online_softmax_update(m, l, x):
    """One new score x for a row with running maximum m and running sum l = sum exp(s - m):
    return (m_new, l_new); the old sum is rescaled by exp(m - m_new) when the maximum grows.
    m and x may be -inf (nothing seen yet, a removed score), never NaN or +inf; l is finite and >= 0."""
    m = validation.real_tensor("m", m, allow_neg_inf=True)
    l = validation.real_tensor("l", l, minimum=0)
    x = validation.real_tensor("x", x, allow_neg_inf=True)
    validation.broadcast_together("m, l and x", m, l, x)
    m_new = torch.maximum(m, x)
    safe = torch.where(torch.isinf(m_new) & (m_new < 0), torch.zeros_like(m_new), m_new)  # -inf: nothing seen yet
    return m_new, l * torch.exp(m - safe) + torch.exp(x - safe)


def online_softmax(scores, mask=None, block_size=1):
    """softmax over the last dimension, reading the scores once (block_size columns at a time) for the
    maximum and the sum together, then writing exp(s - m) / l. A row with no allowed score gives zeros.
    Scores may be -inf (removed), never NaN or +inf: softmax has no finite answer for them."""
    validation.tensor("scores", scores, min_dim=1, floating=True)
    validation.finite("scores", scores, allow_neg_inf=True)
    block_size = validation.positive_int("block_size", block_size)
    if mask is not None:
        validation.mask("mask", mask, scores.shape)
        scores = scores.masked_fill(~mask, float("-inf"))
    m = torch.full(scores.shape[:-1], float("-inf"), dtype=scores.dtype, device=scores.device)  # (...,)
    l = torch.zeros_like(m)  # (...,)
    for j in range(0, scores.shape[-1], block_size):
        block = scores[..., j : j + block_size]  # (..., b)
        m_new = torch.maximum(m, block.amax(-1))  # (...,)
        safe = _finite_or_zero(m_new)
        l = l * torch.exp(m - safe) + torch.exp(block - safe[..., None]).sum(-1)  # rescale, then add the block
        m = m_new
    probs = torch.exp(scores - _finite_or_zero(m)[..., None]) / l.clamp_min(torch.finfo(l.dtype).tiny)[..., None]
    return torch.where((l > 0)[..., None], probs, torch.zeros_like(probs))  # (..., n)


def _finite_or_zero(m):
    """m where it is finite, 0 where it is -inf (a row with nothing allowed yet): exp(-inf - 0) = 0, no NaN."""
    return torch.where(torch.isneginf(m), torch.zeros_like(m), m)


# --- tiled attention ---------------------------------------------------------------------------------


def _check_qkv(q, k, v):
    validation.attention_inputs(q, k, v)
    if not q.shape[:-2] == k.shape[:-2] == v.shape[:-2]:
        raise ValueError(
            f"q, k and v must have the same leading (batch, head) dimensions, got q {tuple(q.shape)}, "
            f"k {tuple(k.shape)} and v {tuple(v.shape)}"
        )
    if k.shape[-2] == 0:
        raise ValueError(f"k must have at least one position, got {tuple(k.shape)}")


def tiled_attention(q, k, v, block_size=64, causal=False, query_block=None, return_stats=False):
    """softmax(q k^T / sqrt(d_k)) v computed query_block queries x block_size keys at a time (query_block
    defaults to block_size): each key block updates a running maximum m, sum l and output with the
    online-softmax rescaling. Per batch and head it holds a few tile-sized matrices of at most
    query_block x block_size numbers at once, never the whole (T_q, T_k) matrix unless one tile covers it:
    the current tile's scores, those scores minus the running maximum and their exponentials, and the
    previous tile's exponentials, kept until the next tile's replace them (also from one query block to the
    next): four at the peak, three when one tile covers the whole matrix. With causal (key j allowed for
    query i when j <= i), tiles entirely above the diagonal are skipped. With return_stats, also
    {"computed": n, "skipped": n}.

    q, k and v must be finite: where torch's kernels return NaN for a NaN or an infinity, which rows get NaN
    depends on the kernel (and here on the tiles skipped), so a non-finite input is refused, not guessed at."""
    _check_qkv(q, k, v)
    for name, t in (("q", q), ("k", k), ("v", v)):
        validation.finite(name, t)
    B = validation.positive_int("block_size", block_size)
    B_q = B if query_block is None else validation.positive_int("query_block", query_block)
    validation.boolean("causal", causal)
    validation.boolean("return_stats", return_stats)
    T_q, T_k, d_k = q.shape[-2], k.shape[-2], q.shape[-1]
    out = q.new_empty((*q.shape[:-1], v.shape[-1]))  # (..., T_q, d_v)
    computed = skipped = 0
    for i0 in range(0, T_q, B_q):
        qi = q[..., i0 : i0 + B_q, :] * (1.0 / math.sqrt(d_k))  # (..., b_q, d_k)
        b_q = qi.shape[-2]
        m = qi.new_full((*qi.shape[:-1], 1), float("-inf"))  # (..., b_q, 1) running maximum
        l = qi.new_zeros((*qi.shape[:-1], 1))  # (..., b_q, 1) running sum of exp(s - m)
        acc = qi.new_zeros((*qi.shape[:-1], v.shape[-1]))  # (..., b_q, d_v) running sum of exp(s - m) v
        for j0 in range(0, T_k, B):
            if causal and j0 > i0 + b_q - 1:  # every key of this tile comes after every query: all masked
                skipped += 1
                continue
            s = qi @ k[..., j0 : j0 + B, :].transpose(-2, -1)  # (..., b_q, b_k)
            if causal and j0 + s.shape[-1] - 1 > i0:  # the tile crosses the diagonal: mask j > i
                rows = torch.arange(i0, i0 + b_q, device=q.device)[:, None]
                cols = torch.arange(j0, j0 + s.shape[-1], device=q.device)[None, :]
                s = s.masked_fill(cols > rows, float("-inf"))
            m_new = torch.maximum(m, s.amax(-1, keepdim=True))  # (..., b_q, 1)
            safe = _finite_or_zero(m_new)
            p = torch.exp(s - safe)  # (..., b_q, b_k)
            alpha = torch.exp(m - safe)  # (..., b_q, 1): rescales what was summed under the old maximum
            l = l * alpha + p.sum(-1, keepdim=True)
            acc = acc * alpha + p @ v[..., j0 : j0 + B, :]  # (..., b_q, d_v)
            m = m_new
            computed += 1
        out[..., i0 : i0 + b_q, :] = torch.where(l > 0, acc / l.clamp_min(torch.finfo(l.dtype).tiny), 0.0)
    if return_stats:
        return out, {"computed": computed, "skipped": skipped}
    return out


def causal_skipped_tiles(T, block_size):
    """Tiles a causal mask lets tiled attention skip for T queries and keys in square tiles (query_block =
    block_size = B): n(n-1)/2 with n = ceil(T / B)."""
    T, B = validation.positive_int("T", T), validation.positive_int("block_size", block_size)
    n = -(-T // B)
    return n * (n - 1) // 2


MAX_TILES = 1024  # tiles a side tile_states lists: an (n, n) object array and n^2 Python steps, for drawing


def tile_states(T, block_size, causal):
    """(n, n) array of tile kinds for T queries and keys in blocks of block_size: "skipped" (every entry masked),
    "partial" (crosses the diagonal) or "full" (every entry computed)."""
    T, B = validation.positive_int("T", T), validation.positive_int("block_size", block_size)
    validation.boolean("causal", causal)
    n = -(-T // B)
    if n > MAX_TILES:
        raise ValueError(
            f"T={T} and block_size={block_size} give {n} tiles a side; tile_states draws at most {MAX_TILES} a "
            f"side (T / block_size <= {MAX_TILES}): use a larger block_size or a smaller T"
        )
    states = np.full((n, n), "full", dtype=object)
    if causal:
        for i in range(n):
            last_query = min((i + 1) * B, T) - 1
            for j in range(n):
                if j * B > last_query:
                    states[i, j] = "skipped"
                elif min((j + 1) * B, T) - 1 > i * B:
                    states[i, j] = "partial"
    return states


# --- grouped-query attention -------------------------------------------------------------------------


def grouped_query_attention(q, k, v, mask=None):
    """Attention with num_heads query heads sharing num_kv_heads key/value heads: q (batch, num_heads, T_q, d_k),
    k and v (batch, num_kv_heads, T_k, d_k); query head i reads key/value head i // (num_heads / num_kv_heads).
    num_kv_heads = num_heads is multi-head attention, num_kv_heads = 1 multi-query attention."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        validation.tensor(name, t, floating=True)
        validation.shape(name, t, ("batch", "heads", "T", "d_k"))
    h, g = q.shape[1], k.shape[1]
    validation.positive_int("q.shape[1] (num_heads)", h)
    validation.positive_int("k.shape[1] (num_kv_heads)", g)
    if v.shape[1] != g or h % g:
        raise ValueError(
            f"k and v must have the same number of heads, dividing q's {h}; got k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    k = k.repeat_interleave(h // g, dim=1)  # (batch, h, T_k, d_k): each key head serves h / g query heads
    v = v.repeat_interleave(h // g, dim=1)
    return scaled_dot_product_attention(q, k, v, mask)[0]  # (batch, h, T_q, d_v)


def kv_cache_bytes(num_layers, num_kv_heads, d_k, length, bytes_per_value=4, batch=1):
    """Bytes of a key-value cache: num_layers x 2 (keys and values) x num_kv_heads x d_k x length
    x bytes_per_value, times batch sentences. length is the positions so far for the self-attention cache,
    the source length for the cross-attention cache; each is counted on its own."""
    args = dict(
        num_layers=num_layers,
        num_kv_heads=num_kv_heads,
        d_k=d_k,
        length=length,
        bytes_per_value=bytes_per_value,
        batch=batch,
    )
    n = [validation.positive_int(name, value) for name, value in args.items()]
    return math.prod(n[:2]) * 2 * math.prod(n[2:])


# --- the key-value cache of the translator's decoder ------------------------------------------------


@dataclass
class KVCache:
    """Per decoder layer: self-attention keys and values of every position so far, (batch, h, t, d_k), each
    step adding one row; cross-attention keys and values of the encoder output, (batch, h, S, d_k), computed
    once. key_mask (batch, t) is True at the target positions that are not padding."""

    self_k: list
    self_v: list
    cross_k: list
    cross_v: list
    src_mask: torch.Tensor  # (batch, 1, 1, S)
    key_mask: torch.Tensor  # (batch, t)

    @property
    def length(self):
        """Number of target positions cached so far."""
        return self.key_mask.shape[1]

    def nbytes(self, part="self"):
        """Bytes held by the self-attention ("self") or cross-attention ("cross") keys and values."""
        validation.choice("part", part, ("self", "cross"))
        tensors = self.self_k + self.self_v if part == "self" else self.cross_k + self.cross_v
        return sum(t.numel() * t.element_size() for t in tensors)


def _check_model(model):
    if not all(hasattr(model, a) for a in ("decoder", "tgt_embed", "generator", "pe", "pad_id")):
        raise TypeError(f"model must be a Seq2SeqTransformer, got {type(model).__name__}")


@torch.no_grad()
def start_cache(model, memory, src_mask):
    """An empty cache for `model`'s decoder holding each layer's cross-attention keys and values of `memory`
    (batch, S, d_model), computed once; src_mask (batch, 1, S) as returned by model.encode."""
    _check_model(model)
    validation.tensor("memory", memory, floating=True)
    validation.tensor("src_mask", src_mask)
    if memory.dim() != 3 or src_mask.shape != (memory.shape[0], 1, memory.shape[1]):
        raise ValueError(
            f"memory must be (batch, S, d_model) and src_mask (batch, 1, S), got {tuple(memory.shape)} "
            f"and {tuple(src_mask.shape)}"
        )
    cache = KVCache([], [], [], [], src_mask[:, None], torch.zeros(memory.shape[0], 0, dtype=torch.bool))
    for layer in model.decoder.layers:
        a = layer.cross_attn
        cache.cross_k.append(split_heads(a.W_k(memory), a.num_heads))  # (batch, h, S, d_k)
        cache.cross_v.append(split_heads(a.W_v(memory), a.num_heads))
        empty = memory.new_zeros(memory.shape[0], a.num_heads, 0, a.d_k)  # (batch, h, 0, d_k)
        cache.self_k.append(empty)
        cache.self_v.append(empty)
    return cache


def _sublayer(x, f, norm, dropout, norm_first):
    """The decoder layer's residual: post-norm LN(x + f(x)) or pre-norm x + f(LN(x))."""
    return x + dropout(f(norm(x))) if norm_first else norm(x + dropout(f(x)))


@torch.no_grad()
def decode_step(model, cache, tokens):
    """Feed one new target token per sentence, tokens (batch,) or (batch, 1) at position cache.length, and
    return the next-token logits (batch, vocab). Only the new position's queries, keys and values are
    computed; the keys and values of earlier positions come from the cache, which grows by one row."""
    _check_model(model)
    if not isinstance(cache, KVCache):
        raise TypeError(f"cache must be a KVCache (from start_cache), got {type(cache).__name__}")
    validation.token_ids("tokens", tokens, model.tgt_embed.num_embeddings)
    tokens = tokens.reshape(-1, 1)  # (batch, 1)
    if tokens.shape[0] != cache.key_mask.shape[0]:
        raise ValueError(f"tokens must hold one id per sentence ({cache.key_mask.shape[0]}), got {tokens.shape[0]}")
    t = cache.length
    if t >= model.max_len:
        raise ValueError(f"the cache already holds {t} positions, the model's max_len")
    x = model.tgt_embed(tokens) * math.sqrt(model.d_model) + model.pe[t]  # (batch, 1, d_model)
    x = model.dropout(x)
    cache.key_mask = torch.cat([cache.key_mask, tokens != model.pad_id], dim=1)  # (batch, t + 1)
    self_mask = cache.key_mask[:, None, None, :]  # (batch, 1, 1, t + 1): padding is never attended to
    for i, layer in enumerate(model.decoder.layers):

        def self_attention(y, a=layer.self_attn, i=i):
            q = split_heads(a.W_q(y), a.num_heads)  # (batch, h, 1, d_k)
            cache.self_k[i] = torch.cat(
                [cache.self_k[i], split_heads(a.W_k(y), a.num_heads)], dim=2
            )  # (batch, h, t+1, d_k)
            cache.self_v[i] = torch.cat([cache.self_v[i], split_heads(a.W_v(y), a.num_heads)], dim=2)
            heads, _ = scaled_dot_product_attention(
                q, cache.self_k[i], cache.self_v[i], self_mask
            )  # (batch, h, 1, d_k)
            return a.W_o(merge_heads(heads))  # (batch, 1, d_model)

        def cross_attention(y, a=layer.cross_attn, i=i):
            q = split_heads(a.W_q(y), a.num_heads)  # (batch, h, 1, d_k)
            heads, _ = scaled_dot_product_attention(q, cache.cross_k[i], cache.cross_v[i], cache.src_mask)
            return a.W_o(merge_heads(heads))  # (batch, 1, d_model)

        x = _sublayer(x, self_attention, layer.norm1, layer.dropout, layer.norm_first)
        x = _sublayer(x, cross_attention, layer.norm2, layer.dropout, layer.norm_first)
        x = _sublayer(x, layer.ff, layer.norm3, layer.dropout, layer.norm_first)  # (batch, 1, d_model)
    return model.generator(model.decoder.norm(x))[:, -1]  # (batch, vocab)


def _check_greedy_args(model, bos_id, steps, use_cache):
    _check_model(model)
    steps = validation.positive_int("steps", steps)
    validation.boolean("use_cache", use_cache)
    validation.token_id("bos_id", bos_id, model.tgt_embed.num_embeddings)
    if steps > model.max_len - 1:
        raise ValueError(
            f"steps must be at most max_len - 1 = {model.max_len - 1} (<bos> takes a position), got {steps}"
        )
    return steps


@torch.no_grad()
def greedy_steps(model, src, bos_id, steps, use_cache=False):
    """Exactly `steps` greedy steps (no stop at <eos>): ids (batch, steps) and each step's logits
    (batch, steps, vocab), with the key-value cache or by re-running the decoder over every position."""
    steps = _check_greedy_args(model, bos_id, steps, use_cache)
    was_training = model.training
    model.eval()
    memory, src_mask = model.encode(src)  # (batch, S, d_model), (batch, 1, S)
    out = _decode_steps(model, memory, src_mask, bos_id, steps, use_cache)
    model.train(was_training)
    return out


@torch.no_grad()
def _decode_steps(model, memory, src_mask, bos_id, steps, use_cache):
    """The decoder's part of greedy_steps, from the encoder's output."""
    ys = torch.full((memory.shape[0], 1), bos_id, dtype=torch.long)  # (batch, 1)
    cache = start_cache(model, memory, src_mask) if use_cache else None
    all_logits = []
    for _ in range(steps):
        if use_cache:
            logits = decode_step(model, cache, ys[:, -1])  # (batch, vocab)
        else:
            logits = model.decode(ys, memory, src_mask)[:, -1]  # (batch, vocab): every position recomputed
        all_logits.append(logits)
        ys = torch.cat([ys, logits.argmax(-1, keepdim=True)], dim=1)  # (batch, t + 1)
    return ys[:, 1:], torch.stack(all_logits, dim=1)  # (batch, steps), (batch, steps, vocab)


@torch.no_grad()
def time_per_token(model, src, bos_id, steps, use_cache, repeats=5):
    """Seconds per generated token of the decoder in greedy_steps(..., steps), one value per repeat; the
    encoder runs before the clock starts (time it with time_encoder)."""
    repeats = validation.positive_int("repeats", repeats)
    steps = _check_greedy_args(model, bos_id, steps, use_cache)
    was_training = model.training
    model.eval()
    out = []
    for _ in range(repeats):
        memory, src_mask = model.encode(src)  # (batch, S, d_model), (batch, 1, S)
        start = time.perf_counter()
        _decode_steps(model, memory, src_mask, bos_id, steps, use_cache)
        out.append((time.perf_counter() - start) / steps)
    model.train(was_training)
    return out


@torch.no_grad()
def time_encoder(model, src, repeats=5):
    """Seconds for one run of the encoder over the batch src, one value per repeat."""
    _check_model(model)
    repeats = validation.positive_int("repeats", repeats)
    was_training = model.training
    model.eval()
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        model.encode(src)
        out.append(time.perf_counter() - start)
    model.train(was_training)
    return out


# --- measuring memory --------------------------------------------------------------------------------


class TensorMemory(TorchDispatchMode):
    """Inside `with TensorMemory() as mem:`, every tensor an operation creates is counted (bytes of its new
    storage) until the last tensor using that storage is freed; mem.peak is the most held at once, mem.current
    what is still held. Tensors made before the block (the inputs) are not counted, nor is the scratch memory a
    kernel allocates inside itself (torch's fused attention kernel's buffers, for instance): only the tensors
    that operations return are seen."""

    def __init__(self):
        super().__init__()
        self.live, self.current, self.peak = {}, 0, 0

    def _release(self, key, nbytes):
        n = self.live.get(key)
        if n is None:
            return
        if n > 1:
            self.live[key] = n - 1
        else:
            del self.live[key]
            self.current -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        inputs = {
            a.untyped_storage().data_ptr() for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)
        }
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                storage = t.untyped_storage()
                key, nbytes = storage.data_ptr(), storage.nbytes()
                if key in self.live:  # a view or an in-place result: no new memory
                    self.live[key] += 1
                elif key in inputs:  # a view of (or in place on) a tensor made before the block
                    continue
                else:
                    self.live[key] = 1
                    self.current += nbytes
                    self.peak = max(self.peak, self.current)
                weakref.finalize(t, self._release, key, nbytes)
        return out


def peak_tensor_bytes(fn, *args, **kwargs):
    """The most bytes of tensors held at once while fn(*args, **kwargs) runs (the inputs not counted)."""
    validation.function("fn", fn)
    with TensorMemory() as mem:
        result = fn(*args, **kwargs)
        del result
    return mem.peak


def loglog_slope(x, y):
    """Slope of the least-squares line through (log x, log y): y grows like x^slope."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 2 or (x <= 0).any() or (y <= 0).any():
        raise ValueError(
            f"x and y must be two equal-length 1-D arrays of >= 2 positive numbers, got shapes {x.shape} and {y.shape}"
        )
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])
