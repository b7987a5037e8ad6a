"""Choosing and sizing the timing method, without a GPU (the GPU side is in test_gpu.py)."""
import pytest

import kernelgen as kg
from kernelgen.errors import UsageError
from kernelgen.timing import EVENTS_FROM_L2, GRAPH_BELOW_BYTES, MAX_SETS, MIN_LAUNCHES, choose_method, parse_method, rotation, set_bytes

MiB = 1 << 20


@pytest.mark.parametrize("text", ["events", "graph", "auto"])
def test_methods_parse(text):
    assert parse_method(text) == text


@pytest.mark.parametrize("text", ["fast", "", "Graph", "event"])
def test_a_bad_method_names_the_choices(text):
    with pytest.raises(UsageError, match="choose one of events, graph, auto"):
        parse_method(text)


def test_auto_takes_events_only_where_an_l2_of_traffic_is_a_small_share():
    h100 = 50 * MiB
    assert choose_method("auto", 8 * MiB, h100) == "graph"                    # softmax 8192x128
    assert choose_method("auto", 64 * MiB, h100) == "graph"                   # fp16 softmax 4096x4096
    assert choose_method("auto", EVENTS_FROM_L2 * h100 - 1, h100) == "graph"
    assert choose_method("auto", EVENTS_FROM_L2 * h100, h100) == "events"
    assert choose_method("auto", 1 << 30, h100) == "events"                  # reduce_sum over 2^28 floats
    assert choose_method("auto", 400 * MiB, 60 * MiB) == "graph"              # an H200's larger L2
    # compute-bound: events from GRAPH_BELOW_BYTES (cuBLAS captured in a graph by torch runs slower)
    assert choose_method("auto", 96 * MiB, h100, memory_bound=False) == "events"     # fp16 GEMM 4096^3
    assert choose_method("auto", GRAPH_BELOW_BYTES - 1, h100, memory_bound=False) == "graph"
    assert choose_method("events", 1) == "events" and choose_method("graph", 1 << 40) == "graph"


@pytest.mark.parametrize("set_mib, l2_mib, sets", [
    (8, 50, 13),      # softmax 8192x128 on an H100: 13 x 8 MiB = 104 MiB > 2 x 50 MiB
    (100, 50, 1),     # exactly 2x L2: one set is enough
    (128, 50, 1),     # softmax 4096x4096
    (99, 50, 2),
    (1, 60, 120),     # an H200's 60 MiB L2
])
def test_rotation_sets_exceed_twice_the_l2(set_mib, l2_mib, sets):
    got, launches = rotation(set_mib * MiB, l2_mib * MiB)
    assert got == sets
    assert got * set_mib >= 2 * l2_mib
    assert launches % got == 0 and launches >= MIN_LAUNCHES and launches - got < MIN_LAUNCHES


def test_rotation_is_capped_for_tiny_sets():
    sets, launches = rotation(1024, 50 * MiB)
    assert sets == MAX_SETS and launches == MAX_SETS
    assert rotation(0, 50 * MiB)[0] == MAX_SETS


def test_set_bytes_counts_every_input_and_output():
    softmax = kg.get_op("softmax")
    assert set_bytes(softmax, softmax.problem({"rows": 8192, "cols": 128})) == 8 * MiB
    sgemm = kg.get_op("sgemm")
    assert set_bytes(sgemm, sgemm.problem({"M": 256, "N": 128, "K": 64})) == 4 * (256 * 64 + 64 * 128 + 256 * 128)


def test_a_long_kernel_fills_a_graph_replay_with_fewer_launches():
    """Whole rotations covering REPLAY_US (2 ms), never more launches than rotation's."""
    from kernelgen.timing import replay_launches
    assert replay_launches(2, 32, 1.0) == 32 and replay_launches(2, 32, 400.0) == 6
    assert replay_launches(3, 33, 100.0) == 21 and replay_launches(2, 32, 5000.0) == 2
