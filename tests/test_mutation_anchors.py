"""bench/mutations.py's table stays in step with the templates: every mutation's text occurs exactly once in
its template (a template edit that moves an anchor fails here, in CI, not in the next mutation run)."""
import importlib.util
from pathlib import Path

import pytest

from kernelgen.render import templates_dir

ROOT = Path(__file__).resolve().parent.parent


def table():
    spec = importlib.util.spec_from_file_location("kg_mutations", ROOT / "bench" / "mutations.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.MUTATIONS


@pytest.mark.parametrize("name, mutation", [(m[0], m[3]) for m in table()], ids=lambda x: x if isinstance(x, str) else "")
def test_each_mutation_applies_to_its_template_once(name, mutation):
    text = (templates_dir() / mutation.template).read_text()
    assert text.count(mutation.old) == 1, f"{name}: {mutation.old!r} occurs {text.count(mutation.old)} times in {mutation.template}"
    assert mutation.apply(text) != text
