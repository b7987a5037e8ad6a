"""The Hopper attention kernel (algo flash_wgmma, issue 15's top step): its knobs and their legality with
the numbers in the message, the SASS (wgmma and TMA, spill-free on sm_90a), the 4-D tensor maps of its
plan and host launcher for every layout, schedule_for's choice between it and the mma.sync kernel, and the
GPU: every variant at sizes that cross its tiles (the emulator cannot run wgmma, TMA or mbarriers)."""
import ctypes
import re

import numpy as np
import pytest

from kernelgen import get_op, gpu, render
from kernelgen.compile import compile_cuda
from kernelgen.dtypes import dtype
from kernelgen.errors import ScheduleError, UsageError
from kernelgen.inspect import facts_of
from kernelgen.ops.attention import HOPPER_STEP
from kernelgen.recipe import evaluate
from kernelgen.schedule import schedule
from kernelgen.target import target
from kernelgen.validate import validate

op = get_op("attention")
H100 = target("sm_90a")
PICK_D64, PICK_D128 = HOPPER_STEP, dict(HOPPER_STEP, bq=128, dmax=128, overlap=True)   # schedule_for's at b8 h16 s2048
ONE_TILE = dict(HOPPER_STEP, persistent=False)       # one tile a block


def kernel(knobs, dt="float16", arch=H100):
    return op.kernel(op.schedule_from_knobs(**knobs), arch, op.types(dt))


def name(c):
    return ",".join(f"{k}={v}" for k, v in c.items()) if isinstance(c, dict) else str(c)


# -- schedules and legality -------------------------------------------------------------------------
def test_the_knobs_round_trip_and_the_name_says_what_applies():
    sched = op.schedule_from_knobs(**PICK_D64)
    text = sched.to_python()
    assert 'split("i", 192, 64).bind("i.0", "blockIdx.x").bind("i.1", "warpgroup")' in text
    assert 'tensorize("j.1", "wgmma.m64nNk16")' in text and 'annotate("pingpong", True)' in text
    assert {k: v for k, v in op.knobs_from_schedule(sched).items() if k in PICK_D64} == PICK_D64
    assert kernel(PICK_D64).name == "attention_f16_sm90a_aflashwgmma_bq192_bk128_d64_st2_boqueries_ps1_pp1"   # no copy, wq


@pytest.mark.parametrize("change,message", [
    (dict(bq=32), "BQ is 64 query rows for each of 1 to 3 consumer warpgroups"),
    (dict(dmax=32), "panels of 64 columns"),
    (dict(bk=176, dmax=128), "~192 registers with BK 176 and DMAX 128, over the 160 each of 3"),
    (dict(bq=64, pingpong=True), "turns are taken between consumer warpgroups: BQ 64 has one"),
], ids=name)
def test_illegal_variants_say_why(change, message):
    with pytest.raises(ScheduleError, match=message.replace("(", r"\(").replace(")", r"\)")):
        kernel(dict(PICK_D64, **change))


def test_the_instruction_needs_sm_90a_and_half_precision():
    with pytest.raises(ScheduleError, match="wgmma needs sm_90a"):
        kernel(PICK_D64, arch=target("sm_90"))
    with pytest.raises(ScheduleError, match="takes float16 or bfloat16 inputs, not float32"):
        kernel(PICK_D64, dt="float32")
    warp_rows = (schedule("attention").fuse("b", "h").bind("bh", "blockIdx.y").split("i", 192, 32).bind("i.0", "blockIdx.x")
                 .bind("i.1", "warpgroup").split("j", 128).split("d", 64).tensorize("j.1", "wgmma.m64nNk16")
                 .annotate("algo", "flash_wgmma"))
    with pytest.raises(ScheduleError, match=r"split\(i\): \(192, 32\) is illegal \(limit: a consumer warpgroup owns "
                       "wgmma's 64 query rows"):
        op.kernel(warp_rows, H100, op.types("float16"))


@pytest.mark.parametrize("knobs,panels", [(PICK_D64, 1), (PICK_D128, 2), (dict(HOPPER_STEP, bq=128, overlap=True), 1),
                                          (dict(HOPPER_STEP, bq=64, bk=176, pingpong=False, overlap=True), 1)], ids=name)
def test_variants_compile_to_wgmma_and_tma_without_spills(knobs, panels):
    k = kernel(knobs, "bfloat16")
    (facts,) = facts_of(compile_cuda(render(k), "sm_90a", k.name))
    assert facts.spill_bytes == 0 and facts.local_bytes == 0, facts
    # Q, K and V: one TMA load a panel each; S takes dmax/16 wgmma a tile, P V bk/16 (the overlap's
    # prologue and epilogue repeat them)
    assert facts.tma == 3 * panels, facts
    assert facts.hgmma >= knobs["dmax"] // 16 + knobs["bk"] // 16, facts
    assert facts.ldg == 0 and facts.ldsm == 0 and facts.hmma == 0      # nothing reaches the tiles but TMA


# -- plans, maps and launchers ------------------------------------------------------------------------
@pytest.mark.parametrize("layout", [None, "bshd", "packed"])
def test_the_plan_reads_q_k_v_through_4d_maps_of_their_strides(layout):
    p = op.problem(dict(batch=2, heads=3, seq=300, head_dim=64, causal=1), dtype="bf16", layout=layout)
    plan = op.plan(kernel(ONE_TILE, "bfloat16"), p, H100)
    st = op.strides(p)
    assert [(m.name, m.buffer, m.rows, m.cols, m.box_rows, m.box_cols, m.pitch, m.outer) for m in plan.tensor_maps] == [
        (f"tm{b}", b, 300, 64, box, 64, st[b].seq, ((3, st[b].head), (2, st[b].batch)))
        for b, box in (("Q", 192), ("K", 128), ("V", 128))]
    (launch,) = plan.launches
    assert launch.args[:4] == ("tmQ", "tmK", "tmV", "O") and launch.grid == (2, 6, 1) and launch.block == (512, 1, 1)
    assert launch.args[-1] == "pairs" and {s.name: s.value for s in plan.scalars}["pairs"] == 6
    # persistent: a block an SM, at most one a tile (12 tiles here; 4 * 6 * 16 = 384 there)
    assert op.plan(kernel(PICK_D64, "bfloat16"), p, H100).launches[0].grid == (12, 1, 1)
    big = op.problem(dict(batch=4, heads=16, seq=1000, head_dim=64), dtype="bf16", layout=layout)
    assert op.plan(kernel(PICK_D64, "bfloat16"), big, H100).launches[0].grid == (132, 1, 1)
    assert dict(plan.alignment) == {b: 16 for b in "QKVO"}


def test_rows_tma_cannot_read_are_refused_with_the_rule():
    p = op.problem(dict(batch=1, heads=2, seq=100, head_dim=60), dtype="f16")
    with pytest.raises(ScheduleError, match=r"head_dim \(60\) and every stride must be multiples of 8"):
        op.plan(kernel(PICK_D64), p, H100)


@pytest.mark.parametrize("sizes,arch,algo", [
    (dict(batch=8, heads=16, seq=2048, head_dim=64), "sm_90a", "flash_wgmma"),
    (dict(batch=1, heads=32, seq=2048, head_dim=128, causal=1), "sm_90a", "flash_wgmma"),   # K and V: 32 MiB
    (dict(batch=8, heads=16, seq=2048, head_dim=128), "sm_90a", "flash_wgmma"),             # K and V: 128 MiB
    (dict(batch=8, heads=12, seq=1024, head_dim=64), "sm_90a", "flash_wgmma"),   # 6 x 192 queries pad 1024 by 1/8
    (dict(batch=8, heads=16, seq=2048, head_dim=64), "sm_90", "flash_mma"),       # no wgmma
    (dict(batch=8, heads=16, seq=2048, head_dim=60), "sm_90a", "flash_mma"),      # rows TMA cannot read
    (dict(batch=1, heads=2, seq=300, head_dim=64), "sm_90a", "flash_mma"),        # 4 blocks of 192 for 132 SMs
    (dict(batch=2, heads=3, seq=1000, head_dim=128), "sm_90a", "flash_mma"),      # 48 blocks of 128
], ids=name)
def test_schedule_for_takes_the_hopper_kernel_where_it_applies(sizes, arch, algo):
    p = op.problem(sizes, dtype="bf16")
    k = op.knobs_from_schedule(op.schedule_for(p, target(arch)))
    assert k["algo"] == algo
    if algo == "flash_wgmma":   # 128-key tiles: 3 consumer warpgroups where S and O fit 160 registers, the grid
        # is not causal and 192-query blocks pad seq little more than 128-query ones, else 2 and the overlap
        padded = lambda bq: -(-sizes["seq"] // bq) * bq      # s2048: 2112 and 2048 rows; s1024: 1152 and 1024
        three = sizes["head_dim"] <= 64 and not sizes.get("causal") and padded(192) < 1.05 * padded(128)
        assert (k["bq"], k["bk"], k["dmax"], k["overlap"]) == ((192, 128, 64, False) if three else
                                                               (128, 128, sizes["head_dim"], True))
        assert k["persistent"] and k["order"] == "queries"    # causal grids too: the walk balances their tiles
        op.kernel(op.schedule_for(p, target(arch)), target(arch), p.types)   # legal as picked


def test_the_host_launcher_encodes_the_maps_the_plan_does():
    k = kernel(PICK_D128, "bfloat16")
    recipe = op.recipe(k)
    sizes = dict(batch=2, heads=3, seq_q=300, seq_k=200, head_dim=120, causal=0)
    run = evaluate(recipe, sizes, 132)
    plan = op.plan(k, op.problem(sizes, dtype="bf16"), H100)
    assert list(run.tensor_maps) == [(m.name, m.buffer, m.rows, m.cols, m.box_rows, m.box_cols, m.pitch, m.outer)
                                     for m in plan.tensor_maps]
    assert [(l.symbol, l.grid, l.block) for l in run.launches] == [(l.symbol, l.grid, l.block) for l in plan.launches]
    host = render(k).split("#ifdef KERNELGEN_HOST_LAUNCHER")[1]
    assert ("kg_encode_tensor_map(&tmK, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, K, (unsigned long long)(seq_k), (unsigned long "
            "long)(head_dim), (unsigned long long)(kv_ss), sizeof(__nv_bfloat16), 128, 64, 2, (unsigned long long)(heads), "
            "(unsigned long long)(k_sh), (unsigned long long)(batch), (unsigned long long)(k_sb));") in host
    assert not evaluate(recipe, dict(sizes, head_dim=100), 132).ok       # TMA's rule, before any launch


def test_a_4d_map_is_encoded_with_its_outer_strides_in_bytes(monkeypatch):
    from kernelgen.ops.base import TensorMap
    calls = []
    encode_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p,
                                *([ctypes.c_void_p] * 4), *([ctypes.c_int] * 4))

    def encode(out, dt, rank, addr, dims, strides, box, elem, interleave, swizzle, l2, oob):
        u64, u32 = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
        d, s, b, e = (ctypes.cast(x, t) for x, t in ((dims, u64), (strides, u64), (box, u32), (elem, u32)))
        calls.append((rank, tuple(d[:rank]), tuple(s[:rank - 1]), tuple(b[:rank]), tuple(e[:rank])))
        return 0

    class Driver:
        cuTensorMapEncodeTiled = encode_t(encode)

    monkeypatch.setattr(gpu, "_libcuda", lambda: Driver())
    tm = TensorMap("tmK", "K", rows=300, cols=64, box_rows=128, box_cols=64, pitch=192, outer=((3, 64), (2, 57600)))
    gpu._TensorMapSlot(tm, dtype("float16")).update(0x10000)
    # (head_dim, seq, heads, batch), innermost first; a row, a head and a batch apart in bytes; boxes one deep
    assert calls == [(4, (64, 300, 3, 2), (384, 128, 115200), (64, 128, 1, 1), (1, 1, 1, 1))]


def test_the_persistent_walk_takes_every_tile_once_forwards_and_backwards():
    """The rendered loop's next-tile expression, run in Python: every tile once, for grids of one block to more tiles
    than blocks; a block's rounds alternate direction, so the block that took a round's first (longest) tile takes
    the next round's last."""
    loop = re.search(r"for \(int n = 0, t = first; t < last; \+\+n, t = (.+?)\) \{", render(kernel(PICK_D64)))
    expr = re.sub(r"\(([^?()]+)\?([^:()]+):([^()]+)\)", r"((\2) if (\1) else (\3))", loop.group(1)).replace("/", "//")
    for tiles, sms in ((1, 132), (5, 132), (132, 132), (133, 132), (1408, 132), (23, 5)):
        step, walks = min(sms, tiles), []       # the plan launches a block an SM, at most one a tile
        for first in range(step):
            walk, n, t = [], 0, first
            while t < tiles:
                walk.append(t)
                n += 1
                t = eval(expr, {"n": n, "first": first, "step": step})
            walks.append(walk)
        assert sorted(t for w in walks for t in w) == list(range(tiles)), (tiles, sms)
        if tiles >= 2 * step:
            assert walks[0][:2] == [0, 2 * step - 1] and walks[-1][:2] == [step - 1, step]


def test_a_map_is_encoded_once_an_address_and_copied_back_after(monkeypatch):
    from kernelgen.ops.base import TensorMap
    encoded = []
    encode_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64,
                                *([ctypes.c_void_p] * 4), *([ctypes.c_int] * 4))

    def encode(out, dt, rank, addr, *rest):
        encoded.append(addr)
        ctypes.memmove(out, addr.to_bytes(8, "little") * 16, 128)      # a descriptor that names its address
        return 0

    class Driver:
        cuTensorMapEncodeTiled = encode_t(encode)

    monkeypatch.setattr(gpu, "_libcuda", lambda: Driver())
    slot = gpu._TensorMapSlot(TensorMap("tmQ", "Q", rows=64, cols=64, box_rows=64, box_cols=64), dtype("float16"))
    layers = [0x10000 * (i + 1) for i in range(3)]
    for address in layers * 3:          # three layers' buffers through one prepared kernel, three times over
        slot.update(address)
        assert bytes(slot.slot) == address.to_bytes(8, "little") * 16
    assert encoded == layers            # encoded once each, then copied back
    monkeypatch.setattr(gpu._TensorMapSlot, "KEPT", 2)
    slot = gpu._TensorMapSlot(slot.tm, dtype("float16"))
    encoded.clear()
    for address in layers * 2:          # more buffers than kept: the oldest is encoded again
        slot.update(address)
    assert encoded == layers * 2


# -- the GPU --------------------------------------------------------------------------------------------
GPU_VARIANTS = [PICK_D64, PICK_D128, dict(HOPPER_STEP, bq=128, overlap=True, order="pairs"), dict(HOPPER_STEP, overlap=True, bk=64),
                dict(HOPPER_STEP, bq=64, pingpong=False, overlap=True), dict(HOPPER_STEP, bk=48, stages=3),
                dict(HOPPER_STEP, bq=128, bk=176, dmax=128, overlap=True), ONE_TILE,
                dict(PICK_D128, persistent=True, order="pairs"), dict(HOPPER_STEP, bq=64, pingpong=False, persistent=True)]


@pytest.mark.gpu
@pytest.mark.parametrize("knobs", GPU_VARIANTS, ids=name)
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("sizes", [dict(batch=2, heads=3, seq=1000, head_dim=64, causal=1),
                                   dict(batch=1, heads=4, seq_q=333, seq_k=1027, head_dim=56, causal=0),
                                   dict(batch=2, heads=2, seq=777, head_dim=128, causal=0),
                                   dict(batch=1, heads=2, seq_q=400, seq_k=150, head_dim=104, causal=1),
                                   # 256-384 tiles: a persistent block (one an SM) walks 2-3 of them
                                   dict(batch=4, heads=16, seq_q=700, seq_k=900, head_dim=64, causal=1),
                                   dict(batch=1, heads=1, seq=1, head_dim=32, causal=1)], ids=name)
def test_variants_are_correct_on_the_gpu(knobs, dt, sizes):
    if sizes["head_dim"] > knobs["dmax"]:
        pytest.skip(f"head_dim {sizes['head_dim']} > dmax {knobs['dmax']}")
    v = validate(op, op.schedule_from_knobs(**knobs), op.problem(sizes, dtype=dt), backend="gpu")
    assert v.ok, v.summary()


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["bshd", "packed"])
def test_strided_layouts_on_the_gpu(layout):
    p = op.problem(dict(batch=2, heads=3, seq=500, head_dim=64, causal=1), dtype="bf16", layout=layout)
    v = validate(op, op.schedule_from_knobs(**PICK_D64), p, backend="gpu")
    assert v.ok, v.summary()


@pytest.mark.gpu
def test_kernelgen_torch_attention_runs_the_hopper_kernel_against_sdpa():
    torch = pytest.importorskip("torch")
    import kernelgen.torch as kgt
    if not gpu.device().has("wgmma"):
        pytest.skip("no wgmma on this GPU")
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(2, 12, 1024, 64, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    p = op.problem(dict(batch=2, heads=12, seq=1024, head_dim=64, causal=1), dtype="bf16")
    assert op.knobs_from_schedule(op.schedule_for(p, gpu.device()))["algo"] == "flash_wgmma"
    out = kgt.attention(q, k, v, causal=True)
    ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    err = ((out.double() - ref).norm() / ref.norm()).item()
    assert err < 3 * 2.0 ** -8, err
    assert np.isfinite(err)


def test_the_tuning_space_holds_hopper_points_on_sm_90a_only():
    p = op.problem(dict(batch=8, heads=16, seq=2048, head_dim=128), dtype="bf16")
    hopper = [k for k in op.space(p, H100) if k["algo"] == "flash_wgmma"]
    assert hopper and not [k for k in op.space(p, target("sm_90")) if k["algo"] == "flash_wgmma"]
    legal = []
    for k in hopper:
        try:
            legal.append(kernel(dict(op.default_knobs(), **k), "bfloat16").name)
        except ScheduleError as e:     # over a consumer's registers, or the shared memory
            assert "registers" in str(e) or "shared" in str(e), e
    assert "attention_bf16_sm90a_aflashwgmma_bq192_bk96_d128_st2_boqueries_pp1" in legal and len(legal) >= 8


@pytest.mark.parametrize("knobs", [PICK_D64, dict(PICK_D128, stages=3)], ids=name)
def test_shared_memory_holds_the_tiles_every_barrier_and_the_alignment(knobs):
    """The allocation: 1024 bytes to align the tiles, Q's panels, the K and V stages, and 8 bytes for each
    barrier the kernel initialises (those outside the stage loop once, those inside it once a stage)."""
    k = kernel(knobs, "bfloat16")
    src = render(k)
    body = src[src.index("if (tid == 0) {\n    kg_mbar_init"):]
    body = body[:body.index("kg_mbar_init_fence")]
    loop = body[body.index("for (int s = 0;"):]
    barriers = body.count("kg_mbar_init(") - loop.count("kg_mbar_init(") + knobs["stages"] * loop.count("kg_mbar_init(")
    panels = knobs["dmax"] // 64
    tiles = 128 * panels * (knobs["bq"] + 2 * knobs["stages"] * knobs["bk"])
    assert k.static_smem == 1024 + tiles + 8 * barriers and barriers == 2 + 4 * knobs["stages"]
