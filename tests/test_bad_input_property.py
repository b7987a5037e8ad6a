"""Property tests: whatever a user types as a schedule (JSON), a size string or a knob string, the
answer is a value or a KernelgenError, never another exception (a traceback)."""
import json

from hypothesis import HealthCheck, given, settings, strategies as st

from kernelgen.cli import parse_size
from kernelgen.errors import KernelgenError
from kernelgen.ops import OPS, get_op
from kernelgen.schedule import PRIMITIVES, Schedule

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

OP_NAMES = sorted(OPS)
NAMES = st.sampled_from(["i", "j", "k", "i.0", "i.1", "i.2", "i.3", "j.0", "j.2", "j.3", "k.1", "q.1", "A", "B", "C",
                         "x", "y", "out", "ij", "ij.1", "i.0.j.0", "nkpq", "threadIdx.x", "blockIdx.y", "warp", "lane",
                         "shared", "register", "shuffle", "expr", "split_k", "min_blocks", "softmax", ""])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 2 ** 40), st.floats(allow_nan=False, allow_infinity=False),
                    NAMES, st.text(max_size=5))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                      max_leaves=8)
SMALL_INTS = st.sampled_from([0, 1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 1024, -1])
FIELD = {"loop": NAMES, "loops": st.lists(NAMES, max_size=4), "factors": st.lists(SMALL_INTS, max_size=5),
         "axis": NAMES, "buffer": NAMES, "scope": NAMES, "pad": SMALL_INTS, "target_name": NAMES, "width": SMALL_INTS,
         "factor": SMALL_INTS, "stages": SMALL_INTS, "strategy": NAMES, "key": NAMES,
         "value": st.one_of(NAMES, SMALL_INTS, st.booleans())}


@st.composite
def steps(draw):
    """Mostly well-formed steps with plausible names and values, sometimes a field mistyped or extra."""
    prim = draw(st.sampled_from(sorted(PRIMITIVES)))
    import dataclasses
    step = {"prim": prim}
    for f in dataclasses.fields(PRIMITIVES[prim]):
        if draw(st.integers(0, 19)) == 0:
            continue                                   # a missing field
        step[f.name] = draw(VALUES if draw(st.integers(0, 9)) == 0 else FIELD.get(f.name, VALUES))
    if draw(st.integers(0, 19)) == 0:
        step[draw(st.text(max_size=5))] = draw(VALUES)
    return step


@st.composite
def schedule_json(draw):
    if draw(st.integers(0, 9)) == 0:
        return draw(VALUES)
    return {"op": draw(st.sampled_from(OP_NAMES)), "steps": draw(st.lists(steps(), max_size=8))}


def _only_kernelgen_errors(fn):
    try:
        return fn()
    except KernelgenError as e:
        assert "\n" not in str(e), str(e)
        return None


@FAST
@given(schedule_json())
def test_any_schedule_json_is_a_kernel_or_a_kernelgen_error(data):
    def go():
        sched = Schedule.from_json(json.dumps(data))
        op = get_op(sched.op)
        return op.for_schedule(sched).kernel(sched)
    _only_kernelgen_errors(go)


SIZE_TEXT = st.text(alphabet="0123456789x,=MNKnrowscl: -+._", max_size=24)


@FAST
@given(st.sampled_from(OP_NAMES), st.one_of(SIZE_TEXT, st.text(max_size=12)))
def test_any_size_string_is_a_problem_or_a_kernelgen_error(op_name, text):
    problem = _only_kernelgen_errors(lambda: parse_size(get_op(op_name), text, small=True))
    if problem is not None:
        assert all(1 <= v <= 2 ** 31 - 1 for _, v in problem.sizes)


@FAST
@given(st.sampled_from(OP_NAMES), st.lists(st.one_of(
    st.builds(lambda k, v: f"{k}={v}", st.sampled_from(sorted({k.name for o in OPS.values() for k in o.knobs})),
              st.one_of(st.sampled_from(["0", "1", "4", "256", "true", "no", "warp", "1e3", "-8", "  64 ", "64.0"]),
                        st.text(max_size=6))),
    st.text(max_size=10)), max_size=3))
def test_any_knob_strings_are_a_kernel_or_a_kernelgen_error(op_name, texts):
    op = get_op(op_name)

    def go():
        knobs = dict(op.parse_knob(t) for t in texts)
        for name, value in knobs.items():   # a parsed value is one of the knob's choices, of its type
            assert value in op.knob(name).choices or op.knob(name).kind() in (int, float) or name == "expr"
        sched = op.schedule(**knobs)
        return op.for_schedule(sched).kernel(sched)
    _only_kernelgen_errors(go)
