"""Frozen values that serve as cache keys hash once.

>>> from dataclasses import dataclass
>>> from kernelgen.frozen import hash_once
>>> @hash_once
... @dataclass(frozen=True)
... class Key:
...     parts: tuple
>>> k = Key(tuple(range(100)))
>>> hash(k) == hash(Key(tuple(range(100)))) and "_hash" in vars(k)
True

A dataclass's generated `__hash__` rehashes every field on every call, and a Schedule's fields are
a tuple of Steps, each hashed by Python code: a 25-step sgemm schedule cost ~30 hash calls per
`kg.launch` only to find the cached Prepared. With `hash_once` the first hash is kept on the
instance (the value is frozen, so it cannot go stale) and left out of pickles, because str hashes
differ between processes (the tuner's spawned workers).
"""
from __future__ import annotations

import dataclasses


def hash_once(cls):
    """Class decorator, above `@dataclass(frozen=True)`: the same hash as the dataclass's, computed once."""
    names = tuple(f.name for f in dataclasses.fields(cls) if (f.compare if f.hash is None else f.hash))

    def __hash__(self) -> int:
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash(tuple(getattr(self, n) for n in names))
            object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    cls.__hash__, cls.__getstate__ = __hash__, __getstate__
    return cls
