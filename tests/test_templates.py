"""templates/lib/ is a library of pieces: macros only, imported without the includer's context, so
everything a piece uses comes in as an argument (StrictUndefined fails a piece that reads a global)."""
import re
from pathlib import Path

import jinja2
import pytest

from kernelgen.render import environment, templates_dir

LIB = sorted((templates_dir() / "lib").glob("*.j2"))


def test_no_template_imports_with_context():
    for path in templates_dir().rglob("*.j2"):
        assert "with context" not in path.read_text(), f"{path.name}: pieces take arguments, not the includer's context"


@pytest.mark.parametrize("path", LIB, ids=lambda p: p.name)
def test_lib_file_holds_only_macros(path: Path):
    text = re.sub(r"\{#.*?#\}", "", path.read_text(), flags=re.S)                          # comments
    text = re.sub(r"\{%-?\s*macro\b.*?\{%-?\s*endmacro\s*-?%\}", "", text, flags=re.S)   # macros
    text = re.sub(r"\{%-?\s*set\s+\w+\s*=[^%]*%\}", "", text)                              # constant tables
    text = re.sub(r'\{%-?\s*from\s+"lib/[\w.]+"\s+import\s+[\w, ]+%\}', "", text)            # pieces of pieces
    assert not text.strip(), f"{path.name} emits code outside its macros: {text.strip()[:200]!r}"
    environment().get_template(f"lib/{path.name}").module                                # loads on its own


def test_a_piece_cannot_read_the_includers_variables():
    env = jinja2.Environment(loader=jinja2.DictLoader({
        "lib.j2": "{% macro piece(x) %}{{ x }} {{ secret }}{% endmacro %}",
        "op.j2": '{% from "lib.j2" import piece %}{{ piece(1) }}'}), undefined=jinja2.StrictUndefined)
    with pytest.raises(jinja2.UndefinedError):
        env.get_template("op.j2").render(secret=2)
