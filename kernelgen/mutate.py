"""One-line mutations of the templates, for checking that the emulator and the tests catch them.

>>> from kernelgen.mutate import Mutation
>>> m = Mutation("lib/reduce.j2", "  __syncthreads();\\n{% endif %}\\n{% endif %}", "{% endif %}\\n{% endif %}")
>>> m.template
'lib/reduce.j2'

`render_mutant(kernel, mutation)` renders a kernel with one template's text replaced (the Jinja
environment's loader is swapped for the call, so included and imported pieces mutate too); the
result goes to `validate(..., backend="emulate", mutate=lambda _: text)`.
"""
from __future__ import annotations

from dataclasses import dataclass

import jinja2

from .ops.base import Kernel
from .render import environment, render, templates_dir


@dataclass(frozen=True)
class Mutation:
    template: str      # path under templates/
    old: str           # text that must occur in it exactly once
    new: str

    def apply(self, text: str) -> str:
        n = text.count(self.old)
        if n != 1:
            raise ValueError(f"mutation of {self.template}: {self.old!r} occurs {n} times (want exactly 1)")
        return text.replace(self.old, self.new)


def render_mutant(kernel: Kernel, mutation: Mutation) -> str:
    """The source of `kernel` rendered from the templates with `mutation` applied."""
    text = mutation.apply((templates_dir() / mutation.template).read_text())
    env = environment()
    saved = env.loader
    env.loader = jinja2.ChoiceLoader([jinja2.DictLoader({mutation.template: text}), saved])
    env.cache.clear()
    try:
        return render(kernel)
    finally:
        env.loader = saved
        env.cache.clear()
