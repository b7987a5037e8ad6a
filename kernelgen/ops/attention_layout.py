"""How attention's Q, K, V and O lie in memory: a problem's `layout` word, the (batch, head, seq)
strides it gives each tensor (head_dim always contiguous), and the buffers that hold them.

>>> s = strides("packed", 2, 12, 100, 100, 64)
>>> s["Q"], s["O"]
(Strides(batch=230400, head=64, seq=2304), Strides(batch=76800, head=64, seq=768))
>>> stored_shapes("packed", 2, 12, 100, 100, 64)["K"], stored_shapes("bshd", 2, 12, 100, 100, 64)["O"]
((459264,), (2, 100, 12, 64))
>>> layout_of((2, 12, 100, 64), (230400, 64, 2304, 1), 100)
'packed'

The kernels take the strides as run-time arguments, so one compiled kernel serves every layout; the
word only says, for the plan, the validator and the torch wrapper, which strides a problem has:

- `bhsd` (the default, printed as nothing): Q, K, V and O each a contiguous (batch, heads, seq, head_dim).
- `bshd`: each a contiguous (batch, seq, heads, head_dim), FlashAttention's own layout; O so stored
  is `o.transpose(1, 2)` of the (batch, heads, seq, head_dim) result, so merging the heads is a view.
- `packed`: Q, K and V are the three thirds of one packed QKV projection (batch, seq, 3, heads,
  head_dim), as a (batch, seq, 3 * d_model) linear layer writes it, and O is (batch, seq, heads,
  head_dim). seq_q = seq_k.

A tensor whose rows are not one contiguous block is passed as its span: the flat run of elements
from its first to its last (a buffer of `span` elements), so Q, K and V of the packed layout are
three overlapping windows onto one projection and no copy is made.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

LAYOUTS = ("bhsd", "bshd", "packed")
BUFFERS = ("Q", "K", "V", "O")


@dataclass(frozen=True)
class Strides:
    """One tensor's strides in elements between batches, heads and rows (seq); head_dim is contiguous."""
    batch: int
    head: int
    seq: int

    def span(self, b: int, h: int, s: int, d: int) -> int:
        """Elements from the tensor's first element to its last, inclusive."""
        return (b - 1) * self.batch + (h - 1) * self.head + (s - 1) * self.seq + d

    def aligned(self, vec: int) -> bool:
        """Every row starts a multiple of `vec` elements after the tensor's first element."""
        return self.batch % vec == 0 and self.head % vec == 0 and self.seq % vec == 0


def strides(layout: str | None, b: int, h: int, sq: int, sk: int, d: int) -> dict[str, Strides]:
    """The (batch, head, seq) strides of Q, K, V and O in `layout` (None: bhsd)."""
    if layout in (None, "bhsd"):
        q, kv = Strides(h * sq * d, sq * d, d), Strides(h * sk * d, sk * d, d)
        return {"Q": q, "K": kv, "V": kv, "O": q}
    if layout == "bshd":
        q, kv = Strides(sq * h * d, d, h * d), Strides(sk * h * d, d, h * d)
        return {"Q": q, "K": kv, "V": kv, "O": q}
    if layout == "packed":
        qkv = Strides(sq * 3 * h * d, d, 3 * h * d)
        return {"Q": qkv, "K": qkv, "V": qkv, "O": Strides(sq * h * d, d, h * d)}
    raise ValueError(layout)


def stored_shapes(layout: str | None, b: int, h: int, sq: int, sk: int, d: int) -> dict[str, tuple[int, ...]]:
    """The shape of each buffer: the tensor itself where its layout is one contiguous block, else its span."""
    seq = {"Q": sq, "K": sk, "V": sk, "O": sq}
    if layout in (None, "bhsd"):
        return {n: (b, h, seq[n], d) for n in BUFFERS}
    if layout == "bshd":
        return {n: (b, seq[n], h, d) for n in BUFFERS}
    st = strides(layout, b, h, sq, sk, d)
    return dict({n: (st[n].span(b, h, seq[n], d),) for n in "QKV"}, O=(b, sq, h, d))


def logical(buffer, st: Strides, shape: tuple[int, int, int, int], xp):
    """A (batch, heads, seq, head_dim) view of `buffer` (a NumPy or CuPy array of any shape) with strides `st`."""
    flat = buffer.reshape(-1)
    size = flat.itemsize
    return xp.lib.stride_tricks.as_strided(flat, shape, (st.batch * size, st.head * size, st.seq * size, size))


def store(tensors: dict, layout: str | None, xp) -> dict:
    """Q, K, V given as (batch, heads, seq, head_dim) arrays, laid out as `layout`'s buffers: the packed
    layout's three windows are cut from one projection (each holds the others' values between its rows,
    as the real projection does)."""
    if layout in (None, "bhsd"):
        return dict(tensors)
    if layout == "bshd":
        return {n: xp.ascontiguousarray(t.transpose(0, 2, 1, 3)) for n, t in tensors.items()}
    b, h, s, d = tensors["Q"].shape
    flat = xp.stack([tensors[n].transpose(0, 2, 1, 3) for n in "QKV"], axis=2).reshape(-1)   # (b, s, 3, h, d)
    n = strides(layout, b, h, s, s, d)["Q"].span(b, h, s, d)
    return {name: flat[i * h * d:i * h * d + n].copy() for i, name in enumerate("QKV")}


@functools.lru_cache(maxsize=1024)
def layout_of(shape: tuple[int, ...], stride: tuple[int, ...], seq_q: int) -> str | None:
    """The layout word of a (batch, heads, seq, head_dim) tensor's strides (a dim of size 1 matches any
    stride, as torch's is_contiguous has it), or None where none has them. `seq_q` is Q's seq (the packed
    layout's batch stride is seq_q rows of the projection, for K and V too)."""
    b, h, s, d = shape
    for layout in LAYOUTS:
        if layout == "packed" and s != seq_q:
            continue
        st = strides(layout, b, h, seq_q, s, d)["K" if s != seq_q else "Q"]
        want = (st.batch, st.head, st.seq, 1)
        if all(n == 1 or got == w for n, got, w in zip(shape, stride, want)):
            return layout
    return None
