"""Schedules as values: frozen, hashable, printable as Python, JSON round trip, strict reading."""
import json

import pytest

from kernelgen import ScheduleError, get_op, schedule
from kernelgen.schedule import Schedule, ScheduleReader


def test_builders_return_new_frozen_values():
    a = schedule("sgemm")
    b = a.split("i", 128, 8)
    assert a.steps == () and len(b.steps) == 1
    with pytest.raises(Exception):
        b.op = "x"
    assert hash(b) == hash(schedule("sgemm").split("i", 128, 8))


def test_python_and_json_round_trip_every_primitive():
    s = (schedule("x").split("i", 64, 4).tile("i.0", "j", 2, 8).reorder("j", "i").fuse("i.1", "j.1")
         .bind("i.0", "blockIdx.x").cache_read("A", "shared").cache_write("C", "register")
         .storage_align("A", 1).vectorize("A", 4).unroll("k", 0).double_buffer("A", 2)
         .reduction("k", "shuffle").swizzle(8).annotate("algo", "implicit_gemm").annotate("flag", True))
    assert Schedule.from_json(s.to_json()) == s
    assert eval(s.to_python(), {"schedule": schedule}) == s
    assert json.loads(s.to_json())["steps"][0] == {"prim": "split", "loop": "i", "factors": [64, 4]}


def test_unknown_primitive_in_json_names_the_choices():
    with pytest.raises(ScheduleError, match="allowed: split, reorder"):
        Schedule.from_json('{"op": "x", "steps": [{"prim": "compute_inline"}]}')
    with pytest.raises(ScheduleError, match="not JSON"):
        Schedule.from_json("{nope")


def test_reader_rejects_steps_the_op_does_not_use():
    op = get_op("reduce_sum")
    s = op.default_schedule().double_buffer("x", 2)
    with pytest.raises(ScheduleError, match=r"double_buffer\(x\).*has no use for this step"):
        op.knobs_from_schedule(s)
    # storage_align(x) pads prefetch's shared slots: without them it is refused, naming the knob it needs
    with pytest.raises(ScheduleError, match=r"storage_align\(x\).*applies only with prefetch_scope shared"):
        op.knobs_from_schedule(op.default_schedule().storage_align("x", 1))


def test_reader_rejects_duplicates_and_bad_values():
    r = ScheduleReader(schedule("x").vectorize("A", 4).vectorize("A", 2), ("i",), ("A",))
    with pytest.raises(ScheduleError, match="given twice"):
        r.read("vectorize", "A")
    r = ScheduleReader(schedule("x").vectorize("A", 8), ("i",), ("A",))
    with pytest.raises(ScheduleError, match=r"vectorize\(A\): 8 is illegal \(allowed: 1, 2, 4\)"):
        r.read("vectorize", "A", 1, (1, 2, 4))
    r = ScheduleReader(schedule("x").annotate("k", True), ("i",), ("A",))
    with pytest.raises(ScheduleError, match=r"annotate\(k\): True is illegal \(allowed: 0, 1\)"):
        r.read("annotate", "k", 0, (0, 1))       # a bool is not the int 1


def test_schedule_for_another_op_is_rejected():
    with pytest.raises(ScheduleError, match="allowed: reduce_sum"):
        get_op("reduce_sum").knobs_from_schedule(schedule("sgemm"))


def test_reduce_example_ladder_matches_the_op_ladder():
    import runpy
    from pathlib import Path
    ex = runpy.run_path(str(Path(__file__).resolve().parent.parent / "examples" / "reduce_ladder.py"))
    assert list(ex["LADDER"].values()) == [s.schedule for s in get_op("reduce_sum").ladder()]
