"""K-vector fragments of sgemm: a shared tile whose rows run along K (A's mk, B's nk) read 4 values of K at a
time by a warp's lanes on adjacent rows (run_m / run_n = 1). The schedule that says so, its refusals, the
128-bit loads without bank conflicts, and the products at awkward sizes in every operand layout on the
emulator."""
import pytest

from kernelgen import get_op, render
from kernelgen.compile import compile_cuda
from kernelgen.emulate.traffic import profile
from kernelgen.errors import KernelgenError, ScheduleError
from kernelgen.inspect import facts_of, hot_loops
from kernelgen.target import default_target
from kernelgen.validate import validate

op = get_op("sgemm")
BOTH = dict(a_layout="mk", b_layout="nk", run_m=1, run_n=1, vec_c=1, pad_b=4)     # NT: both operands along K
CONFIGS = {
    "both along K, cp.async (NT's x . W^T)": dict(bm=64, bn=64, wm=32, wn=32, tm=4, tn=8, copy="cp_async",
                                                   stages=3, **BOTH),
    "A along K, B held a step at a time": dict(bm=64, bn=64, wm=32, wn=32, tm=8, tn=4, a_layout="mk", run_m=1),
    "B streamed (tn > tm), A along K held": dict(bm=64, bn=128, wm=32, wn=64, tm=4, tn=16, **BOTH),
    "both along K, bk 16, 3 slices in a workspace": dict(bm=64, bn=64, wm=32, wn=32, tm=4, tn=8, bk=16, split_k=3,
                                                        reduce_k="workspace", **BOTH),
}
AWKWARD = [(1, 1, 1), (17, 33, 1000), (67, 131, 37), (130, 70, 64)]


def sched(**knobs):
    return op.schedule(**knobs)


def test_a_run_of_one_is_a_split_factor_and_names_the_kernel():
    s = sched(bm=128, **BOTH)
    text = s.to_python()
    assert 'split("i", 128, 64, 4, 1)' in text and 'split("j", 128, 64, 8, 1)' in text
    assert 'annotate("B.shared", "nk")' in text
    k = op.knobs_from_schedule(s)
    assert (k["run_m"], k["run_n"], k["b_layout"], k["tm"], k["tn"]) == (1, 1, "nk", 16, 8)
    name = op.kernel(s, layout="NT").name
    assert "_bnk_rm1_rn1_" in name
    # the runs of 4 and B's kn tile every kernel had before keep their names
    default = op.kernel(op.default_schedule()).name
    assert "_rm" not in default and "_rn" not in default and "_bkn" not in default


def test_k_vectors_need_the_warp_layout_a_tile_along_k_and_whole_vectors():
    assert op.k_vectors(dict(op.default_knobs(), **BOTH)) == (True, True)
    assert op.k_vectors(dict(op.default_knobs(), run_m=1)) == (False, False)         # A's km tile: vectors along M
    assert op.k_vectors(dict(op.default_knobs(), **dict(BOTH, pad_a=1))) == (False, True)   # rows of 9 floats
    p, _, _ = op.template_params(dict(op.default_knobs(), **BOTH), op.types(), default_target(), "NT")
    assert (p["kvec_a"], p["kvec_b"], p["stream"]) == (True, True, "a")     # tm 16 >= tn 8: B's 4 x 8 held


@pytest.mark.parametrize("change, message", [
    (dict(copy="cp_async", stages=3, a_layout="mk", b_layout="nk"), "B as stored in layout NN (rows along N)"),
    (dict(copy="cp_async", stages=3, a_layout="mk"), "B stored transposed (layout NT)"),
    (dict(run_n=1), "a vector of C lies in a run of 1 adjacent columns"),
])
def test_what_cannot_be_copied_or_stored_is_refused_by_name(change, message):
    layout = "NN" if change.get("b_layout") == "nk" else "NT"
    with pytest.raises(ScheduleError, match=message.replace("(", r"\(").replace(")", r"\)")):
        op.kernel(sched(**change), layout=layout)


def test_a_split_with_another_run_is_refused_with_the_runs_allowed():
    s = sched(**BOTH).to_python().replace('split("i", 256, 64, 4, 1)', 'split("i", 256, 64, 8, 2)')
    with pytest.raises(KernelgenError, match="4 or 1"):
        op.knobs_from_schedule(eval(s, {"schedule": __import__("kernelgen").schedule}))


@pytest.mark.nvrtc
def test_the_loop_reads_the_same_128_bit_loads_as_the_transposed_tiles_without_spills():
    # tm + tn floats a step of K: (16 + 8) / 4 LDS.128 a step, 8 steps a tile, as the km / kn tiles read
    k = op.kernel(sched(bm=128, copy="cp_async", stages=3, **BOTH), layout="NT")
    compiled = compile_cuda(render(k), "sm_90", k.name)
    main = next(f for f in facts_of(compiled) if f.symbol == k.name)
    assert main.spill_bytes == 0 and main.local_bytes == 0, main
    loops = hot_loops(compiled.cubin)[k.name]          # blocks inside C and on its edges
    assert len(loops) == 2
    for loop in loops:
        assert sum(o.startswith("FFMA") for o in loop) == 128 * 8
        assert sum(o == "LDS.128" for o in loop) == (16 + 8) * 8 // 4


@pytest.mark.emulate
def test_lanes_on_adjacent_rows_read_k_vectors_without_bank_conflicts():
    s = sched(**CONFIGS["both along K, cp.async (NT's x . W^T)"])
    t = profile(op, s, op.problem({"M": 128, "N": 128, "K": 64}, layout="NT"))
    loads = [st for st in t.stats if st.space == "shared" and st.access == "load"]
    assert loads and all(st.ways == 1 for st in loads), t.lines()
    # runs of 4 rows read along K put 4 lanes' rows in one bank group: 2-way at least
    s4 = sched(**dict(CONFIGS["both along K, cp.async (NT's x . W^T)"], run_m=4, run_n=4, vec_c=4))
    t4 = profile(op, s4, op.problem({"M": 128, "N": 128, "K": 64}, layout="NT"))
    assert max(st.ways for st in t4.stats if st.space == "shared" and st.access == "load") >= 2, t4.lines()


@pytest.mark.emulate
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_k_vector_products_at_awkward_sizes_on_the_emulator(name, layout):
    knobs = CONFIGS[name]
    try:
        op.kernel(sched(**knobs), layout=layout)
    except ScheduleError:           # cp.async cannot transpose this layout's operand: copied through registers
        knobs = dict(knobs, copy="sync", stages=2)
    for m, n, k in AWKWARD:
        p = op.problem({"M": m, "N": n, "K": k}, layout=layout)
        v = validate(op, sched(**knobs), p, backend="emulate", order="random", check=True)
        assert v.ok, (name, layout, (m, n, k), v.summary())
