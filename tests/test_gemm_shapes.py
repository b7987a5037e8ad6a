"""The tensor-core gemm at shapes its plain tiles serve badly: K in slices summed by a second kernel
(split_k, shared with sgemm through ops/splitk.py and lib/splitk.j2), operands TMA cannot read copied
into padded rows first (ops/pitch.py), C stored at any N by wgmma, and the cost model that picks among
them (ops/gemm_cost.py). Plain Python, NVRTC, the CPU emulator (mma.sync; wgmma is refused there by
name) and the GPU."""
import numpy as np
import pytest

from kernelgen import get_op, render
from kernelgen.compile import compile_cuda
from kernelgen.errors import ScheduleError
from kernelgen.inspect import facts_of
from kernelgen.ops import gemm_cost
from kernelgen.ops.base import Kernel, Launch, Plan, Problem, Scalar
from kernelgen.ops.gemm import WGMMA_HEURISTIC
from kernelgen.schedule import Schedule
from kernelgen.target import target
from kernelgen.validate import validate

op = get_op("gemm")
H100 = target("sm_90a")
WG64 = dict(WGMMA_HEURISTIC, bm=64, bn=128, wn=128)
LAYOUTS = ("NN", "NT", "TN", "TT")
# K of 1, K shorter than the slices, a split that does not divide K, odd N and M, a block inside C
AWKWARD = ({"M": 1, "N": 1, "K": 1}, {"M": 33, "N": 17, "K": 40}, {"M": 70, "N": 136, "K": 100},
           {"M": 130, "N": 72, "K": 96}, {"M": 17, "N": 131, "K": 333})


# -- knobs, names, plans ----------------------------------------------------------------------------
def test_split_k_is_a_knob_named_only_where_it_slices():
    assert op.kernel(op.default_schedule()).name.endswith("_sw1")           # names from before split_k
    s = op.schedule(split_k=4)
    assert 'annotate("split_k", 4)' in s.to_python() and op.knobs_from_schedule(s)["split_k"] == 4
    assert Schedule.from_json(s.to_json()) == s
    assert op.kernel(s).name.endswith("_sw1_sk4")
    assert op.kernel(op.schedule_from_knobs(**dict(WGMMA_HEURISTIC, split_k=3)), H100).name.endswith("_sw8_sk3")
    batched = op.for_problem(op.problem({"M": 8, "N": 8, "K": 64}, batch=2))
    with pytest.raises(ScheduleError, match="split_k.*batched product runs its products on blockIdx.z"):
        batched.kernel(batched.schedule(split_k=2))


@pytest.mark.parametrize("instr", ["mma", "wgmma"])
def test_sliced_plans_store_partials_and_reduce_them_once(instr):
    ep = op.for_problem(op.problem(epilogue="gelu(acc + bias) + res"))
    knobs = dict(WGMMA_HEURISTIC, split_k=3) if instr == "wgmma" else dict(split_k=3)
    kernel = ep.kernel(ep.schedule_from_knobs(**knobs), H100)
    p = ep.plan(kernel, ep.problem({"M": 100, "N": 264, "K": 1000}, epilogue="gelu(acc + bias) + res"))
    main, red = p.launches
    assert main.grid[2] == 3 and main.args[-4:] == ("partials", "M", "N", "K")     # no epilogue in the slices
    assert red.symbol == kernel.name + "_reduce" and red.args == ("partials", "C", "MN", "K", "N", "bias", "res")
    (ws,) = p.workspaces
    assert (ws.name, ws.dtype, ws.count) == ("partials", "float32", 3 * 100 * 264)
    assert dict(p.alignment)["C"] == 8                   # the reduction stores C 4 halves at a time
    src = render(kernel)
    assert f"{kernel.name}_reduce(const float* __restrict__ P, __half* __restrict__ C" in src
    assert src.count(f"{kernel.name}_ep(") >= 2          # declared once, applied in the reduction


def test_wgmma_plans_pad_only_the_operands_whose_rows_tma_cannot_read():
    for layout, sizes, padded in (("NN", {"M": 7, "N": 5124, "K": 1760}, ("B",)), ("NT", {"M": 64, "N": 5124, "K": 64}, ()),
                                  ("TN", {"M": 7133, "N": 64, "K": 64}, ("A",)), ("TT", {"M": 9, "N": 64, "K": 7}, ("A", "B"))):
        kernel = op.kernel(op.schedule_from_knobs(**WGMMA_HEURISTIC), H100, None, layout)
        p = op.plan(kernel, op.problem(sizes, layout=layout))
        pads = [l for l in p.launches if l.symbol.endswith("_pad")]
        assert tuple(l.args[0] for l in pads) == padded, layout
        assert p.launches[len(pads)].symbol == kernel.name
        for t in p.tensor_maps:
            assert (t.buffer == t.name[2] + "_pitched") == (t.name[2] in padded)
            assert t.pitch == (-(-t.cols // 8) * 8 if t.name[2] in padded else 0)


# -- the cost model ---------------------------------------------------------------------------------
def test_the_cost_model_slices_k_where_few_tiles_stream_a_long_k():
    long_k = gemm_cost.choose(op, op.problem({"M": 16, "N": 512, "K": 500000}), H100)
    assert long_k.family.startswith("wgmma") and long_k.split_k >= 16
    skinny = gemm_cost.choose(op, op.problem({"M": 16, "N": 1760, "K": 1760}), H100)
    assert skinny.family.startswith("wgmma 64x") and skinny.split_k > 1
    big = gemm_cost.choose(op, op.problem({"M": 8192, "N": 8192, "K": 8192}), H100)
    assert " coop" in big.family and big.split_k == 1             # persistent: 0.98-1.02x cuBLAS, one-tile 0.90x
    gpt2 = gemm_cost.choose(op, op.problem({"M": 8192, "N": 768, "K": 768}, layout="NT"), H100)
    assert gpt2.family.startswith("wgmma 128x192 coop")             # 256 tiles fill 132 SMs twice (128x256: 1.45x)
    ragged = gemm_cost.choose(op, op.problem({"M": 9124, "N": 5124, "K": 1760}), H100)
    assert ragged.family.startswith("wgmma")                        # B padded beats element-wise mma.sync
    sm90 = gemm_cost.choose(op, op.problem({"M": 16, "N": 512, "K": 500000}), target("sm_90"))
    assert sm90.family.startswith("mma") and sm90.split_k >= 16


def test_the_estimates_grow_with_the_work_and_rank_the_candidates():
    small = op.problem({"M": 512, "N": 512, "K": 512})
    ranked = gemm_cost.candidates(op, small, H100)
    assert [c.seconds for c in ranked] == sorted(c.seconds for c in ranked) and len({c.family for c in ranked}) >= 6
    fam = {f.name: f for f in gemm_cost.families(op, H100)}["wgmma 128x256"]
    t = [gemm_cost.estimate(fam, 1, op.problem({"M": 4096, "N": 4096, "K": k}), H100) for k in (1024, 2048, 4096)]
    assert t[0] < t[1] < t[2]
    for c in ranked[:5]:                                 # every candidate is a legal kernel with a plan
        op.plan(op.kernel(op.schedule_from_knobs(**dict(c.knobs)), H100), small)


def test_schedule_for_is_legal_at_awkward_sizes_and_layouts():
    for layout in LAYOUTS:
        for sizes in AWKWARD + ({"M": 7133, "N": 1760, "K": 1760}, {"M": 16, "N": 512, "K": 500000}):
            for tgt in (H100, target("sm_80")):
                p = op.problem(sizes, layout=layout)
                op.plan(op.kernel(op.schedule_for(p, tgt), tgt, None, layout), p)


# -- NVRTC ------------------------------------------------------------------------------------------
@pytest.mark.nvrtc
@pytest.mark.parametrize("knobs,dtype,out", [
    (dict(WGMMA_HEURISTIC, split_k=4), "float16", None), (dict(WG64, split_k=8), "bfloat16", "float32"),
    (dict(WG64, epilogue="direct", split_k=2), "float16", None), (dict(split_k=3), "bfloat16", None)])
def test_sliced_kernels_compile_without_spills(knobs, dtype, out):
    kernel = op.kernel(op.schedule_from_knobs(**knobs), H100, op.types(dtype, out))
    facts = {f.symbol: f for f in facts_of(compile_cuda(render(kernel), kernel.arch, kernel.name))}
    assert kernel.name + "_reduce" in facts
    for sym, f in facts.items():
        assert f.spill_bytes == 0 and f.local_ops == 0, (sym, f)
    if knobs.get("instr") == "wgmma":
        assert facts[kernel.name].hgmma > 0 and facts[kernel.name].tma > 0 and kernel.name + "_pad" in facts


# -- the CPU emulator (mma.sync; the padded copy on its own) ------------------------------------------
@pytest.mark.emulate
@pytest.mark.parametrize("layout", LAYOUTS)
def test_sliced_mma_on_the_emulator_in_every_layout(layout):
    for knobs in (dict(split_k=3), dict(split_k=4, bm=64, bn=64, wm=32, wn=32, bk=16, stages=2)):
        # 35 x 17: M*N % 4 == 3, so a reduction float4 past the last whole one would cross C's end
        for sizes in AWKWARD[:4] + ({"M": 35, "N": 17, "K": 72},):
            v = validate(op, op.schedule(**knobs), op.problem(sizes, layout=layout), backend="emulate", check=True,
                         order="random")
            assert v.ok, (knobs, sizes, v.summary())


@pytest.mark.emulate
@pytest.mark.parametrize("dtype,out", [("bfloat16", "float32"), ("float16", None)])
def test_sliced_mma_with_a_fused_epilogue_on_the_emulator(dtype, out):
    for ep in ("gelu(acc + bias) + res", "relu(acc) * 2"):
        for sizes in ({"M": 33, "N": 17, "K": 40}, {"M": 70, "N": 136, "K": 100}):
            p = op.problem(sizes, dtype=dtype, out_dtype=out, epilogue=ep)
            v = validate(op.for_problem(p), op.schedule(split_k=3), p, backend="emulate", check=True)
            assert v.ok, (ep, sizes, v.summary())


PAD = '''{% from "lib/pitch.j2" import pad_kernel %}
{{ pad_kernel("t", "unsigned short") }}'''


@pytest.mark.emulate
@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 5124 % 64 + 7), (5, 16), (7, 13)])
def test_the_padded_copy_on_the_emulator(rows, cols):
    """Each row lands at its padded pitch (the padding zeros), reading rows that start 2 bytes apart."""
    from kernelgen.emulate import execute
    from kernelgen.render import environment
    pitch = -(-cols // 8) * 8
    x = np.arange(1, rows * cols + 1, dtype=np.uint16)
    y = np.full(rows * pitch, 0xFFFF, np.uint16)
    plan = Plan(Kernel("demo", "t_pad", Schedule("demo"), (), "", ()), Problem((("rows", rows),)),
                (Launch("t_pad", (2, 1, 1), (256, 1, 1), ("X", "Y", "rows", "cols")),),
                scalars=(Scalar("rows", "int", rows), Scalar("cols", "int", cols)),
                alignment=(("Y", 16),))        # a workspace in the gemm's plans (256-byte aligned); 16-byte stores
    execute(plan, environment().from_string(PAD).render(), {"X": x, "Y": y}, check=True)
    padded = y.reshape(rows, pitch)
    assert np.array_equal(padded[:, :cols], x.reshape(rows, cols)) and not padded[:, cols:].any()


# -- GPU --------------------------------------------------------------------------------------------
def _hopper():
    from kernelgen import gpu
    if not gpu.device().has("wgmma"):
        pytest.skip(f"{gpu.device().arch} has no wgmma")
    return gpu.device()


@pytest.mark.gpu
@pytest.mark.parametrize("layout", LAYOUTS)
def test_sliced_and_padded_wgmma_on_the_gpu(layout):
    _hopper()
    sizes = AWKWARD + ({"M": 300, "N": 5124, "K": 1000}, {"M": 7133, "N": 72, "K": 520}, {"M": 16, "N": 512, "K": 20000},
                       {"M": 256, "N": 512, "K": 512})
    every = (WGMMA_HEURISTIC, dict(WGMMA_HEURISTIC, split_k=3), dict(WG64, split_k=8),
             dict(WG64, epilogue="direct", split_k=2), dict(WG64, epilogue="direct"))
    # every variant and both output types in NN; in the other layouts (what they change: the maps, which
    # operand is padded, the slices' coordinates) one sliced variant of each epilogue, fp16
    types = (("float16", None), ("bfloat16", "float32")) if layout == "NN" else (("float16", None),)
    for knobs in every if layout == "NN" else every[1::2]:
        for s in sizes:
            for dtype, out in types:
                p = op.problem(s, dtype=dtype, out_dtype=out, layout=layout)
                v = validate(op, op.schedule_from_knobs(**knobs), p, backend="gpu")
                assert v.ok, (knobs, s, dtype, v.summary())


@pytest.mark.gpu
def test_sliced_wgmma_with_a_fused_epilogue_on_the_gpu():
    _hopper()
    for ep in ("gelu(acc + bias) + res", "relu(acc) * 2"):
        for s in ({"M": 33, "N": 17, "K": 40}, {"M": 130, "N": 264, "K": 1000}, {"M": 64, "N": 5124, "K": 777}):
            p = op.problem(s, epilogue=ep, layout="NT")
            for knobs in (dict(WGMMA_HEURISTIC, split_k=4), dict(WG64, epilogue="direct", split_k=3), WGMMA_HEURISTIC):
                v = validate(op.for_problem(p), op.schedule_from_knobs(**knobs), p, backend="gpu")
                assert v.ok, (ep, s, knobs, v.summary())


@pytest.mark.gpu
def test_schedule_for_at_the_failure_classes_on_the_gpu():
    """The heuristic's picks where the plain tiles were slow (few blocks, long K, unaligned rows), in
    sizes of those classes small enough for a test."""
    from kernelgen import gpu
    t = gpu.device()
    for layout, s in (("NN", {"M": 16, "N": 1760, "K": 1760}), ("NT", {"M": 64, "N": 2560, "K": 2560}),
                      ("NN", {"M": 16, "N": 512, "K": 50000}), ("NN", {"M": 1000, "N": 5124, "K": 520}),
                      ("TN", {"M": 1133, "N": 760, "K": 760}), ("TT", {"M": 129, "N": 77, "K": 3333})):
        p = op.problem(s, layout=layout)
        v = validate(op, op.schedule_for(p, t), p, backend="gpu")
        assert v.ok, (layout, s, v.summary())
