"""Attention on fp32 data in 3xTF32 (dtype tf32x3, the flash_mma kernel at twice the width): each Q, K, P and V
value split into a TF32 high and low part, three mma.sync m16n8k8 products, P V in the key order that leaves P in
S's registers and a tile's products summed apart. Legality with the numbers in the message, the SASS (three HMMA a
product, no spills at sm_80 and sm_90), every variant on the CPU emulator at awkward sizes, mutations the
emulator must catch, schedule_for's pick, and the GPU (fp32-grade error over long rows of keys)."""
import pytest

from kernelgen import get_op, render
from kernelgen.compile import compile_cuda
from kernelgen.emulate.launch import EmulationError
from kernelgen.errors import ScheduleError
from kernelgen.inspect import facts_of
from kernelgen.target import target
from kernelgen.validate import validate

op = get_op("attention")
X3 = dict(algo="flash_mma", wq=16, bk=32, qreg=False)
# each on a size that crosses its tiles: seq not a multiple of bq or bk, seq_q != seq_k, causal and not, head_dim
# 128 and 97 (zero-padded columns, the unaligned twin), 20, 48, seq 1
VARIANTS = [
    (X3, dict(batch=1, heads=3, seq=37, head_dim=64, causal=1)),
    (X3, dict(batch=1, heads=1, seq=1, head_dim=64, causal=0)),
    (dict(X3, bq=128), dict(batch=1, heads=3, seq=200, head_dim=64, causal=1)),
    (dict(X3, dmax=128), dict(batch=1, heads=1, seq=70, head_dim=128, causal=1)),
    (dict(X3, dmax=128, bq=128), dict(batch=1, heads=2, seq=33, head_dim=97, causal=0)),
    (dict(X3, qreg=True), dict(batch=2, heads=1, seq_q=90, seq_k=77, head_dim=64, causal=1)),
    (dict(X3, bk=64), dict(batch=1, heads=2, seq_q=50, seq_k=150, head_dim=48, causal=1)),
    (dict(X3, wq=32, dmax=32), dict(batch=2, heads=1, seq=90, head_dim=32, causal=0)),
    (dict(X3, stages=1, copy="sync"), dict(batch=3, heads=1, seq=100, head_dim=64, causal=1)),
    (dict(X3, stages=3, dmax=32), dict(batch=2, heads=1, seq_q=100, seq_k=130, head_dim=32, causal=1)),
    (dict(X3, bk=128, dmax=32, pipe="split", stages=1), dict(batch=1, heads=1, seq_q=17, seq_k=300, head_dim=32, causal=0)),
    (dict(X3, rescale="lazy", order="queries"), dict(batch=1, heads=2, seq_q=133, seq_k=70, head_dim=20, causal=1)),
    (dict(X3, split="fma"), dict(batch=1, heads=2, seq_q=70, seq_k=150, head_dim=64, causal=1)),      # Veltkamp's split
    (dict(X3, split="mixed", dmax=128), dict(batch=1, heads=1, seq_q=40, seq_k=99, head_dim=120, causal=0)),
]
PICK = dict(batch=1, heads=32, seq=2048, head_dim=128, causal=1)     # the 7B block's attention


def name(c):
    return ",".join(f"{k}={v}" for k, v in c.items()) if isinstance(c, dict) else str(c)


def kernel(knobs, arch="sm_90"):
    return op.kernel(op.schedule(**knobs), target(arch), op.types("tf32x3"))


# -- schedules and legality -------------------------------------------------------------------------
@pytest.mark.parametrize("change,message", [
    (dict(epilogue="smem"), r"cache_write\(O\): 'shared' is illegal \(limit: O goes through the Q tile as 16-bit "
                            r"pairs; tf32x3's fp32 O is stored from its fragments"),
    (dict(wq=32, bk=64, qreg=True), r"'~450 registers per thread' is illegal \(limit: 255"),
    (dict(dmax=128, bk=64), r"'~274 registers per thread' is illegal"),
    (dict(bq=128, dmax=128, min_blocks=2), r"2 blocks of 256 threads leave 128 registers a thread; the tiles need ~242"),
])
def test_illegal_variants_say_why(change, message):
    with pytest.raises(ScheduleError, match=message):
        kernel(dict(X3, **change))


def test_the_split_knob_is_tf32x3s_and_named_where_it_differs():
    with pytest.raises(ScheduleError, match=r"annotate\(tf32_split\): 'fma' is illegal \(limit: float16 data is not "
                       r"split: the knob is tf32x3's; allowed: alu \(none\)\)"):
        op.kernel(op.schedule(**dict(X3, split="fma")), target("sm_90"), op.types("float16"))
    assert kernel(dict(X3, split="mixed")).name.endswith("_qr0_spmixed")
    assert op.schedule(**dict(X3, split="fma")).to_python().endswith('.annotate("tf32_split", "fma")')


def test_tf32_mma_needs_sm_80_and_the_name_says_the_type():
    with pytest.raises(ScheduleError, match=r"sm_80"):
        kernel(X3, "sm_75")
    assert kernel(X3).name == "attention_tf32x3_sm90_aflashmma_bq64_wq16_bk32_d64_st2_ccpasync_qr0"
    p = op.problem(dict(batch=1, heads=2, seq=33, head_dim=22), dtype="tf32x3")
    plan = op.plan(kernel(X3), p)
    assert plan.launches[0].symbol.endswith("_unaligned") and dict(plan.alignment)["Q"] == 4   # rows at any fp32 offset
    aligned = op.plan(kernel(X3), op.problem(dict(batch=1, heads=2, seq=33, head_dim=24), dtype="tf32x3"))
    assert not aligned.launches[0].symbol.endswith("_unaligned") and dict(aligned.alignment)["Q"] == 16   # 24 % 4 == 0


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("d", [32, 64, 128])
def test_schedule_for_takes_the_tensor_cores_in_tiles_that_fit(arch, d):
    p = op.problem(dict(PICK, head_dim=d), dtype="tf32x3")
    k = op.kernel(op.schedule_for(p, target(arch)), target(arch), p.types)
    assert k.knob("algo") == "flash_mma" and k.knob("dmax") == d and k.knob("epilogue") == "direct"
    assert k.registers_estimate <= 255 and k.static_smem <= target(arch).max_smem


def test_the_tuning_space_holds_tf32x3_tiles_and_no_staged_o():
    from kernelgen.tune.space import legal_space
    p = op.problem(PICK, dtype="tf32x3")
    space = list(op.space(p, target("sm_90")))
    assert space and all(k["algo"] == "flash_mma" and k["epilogue"] == "direct" for k in space)
    legal, pruned = legal_space(op, p, target("sm_90"))
    assert legal and pruned and all((c.knobs["wq"], c.knobs["bk"], c.knobs["qreg"]) == (16, 32, False) for c in legal)


# -- SASS -------------------------------------------------------------------------------------------
# ptxas holds some of these to 168 registers (three blocks of 128 threads) or runs d128 up to 255 and spills a
# little rather than take more: at most 32 bytes (sm_90 d128 with min_blocks 1, sm_80 d64 28); the sm_90 kernels of
# d <= 64 spill nothing.
@pytest.mark.nvrtc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("knobs", [X3, dict(X3, dmax=128), dict(X3, dmax=128, min_blocks=1), dict(X3, wq=32, dmax=32),
                                   dict(X3, bk=64)], ids=name)
def test_variants_compile_to_three_tf32_products_with_few_spills(arch, knobs):
    k = kernel(knobs, arch)
    found = {f.symbol: f for f in facts_of(compile_cuda(render(k), arch, k.name))}
    assert set(found) == {k.name, k.name + "_unaligned"}
    mi, dk, nk, nd = k.knob("wq") // 16, k.knob("dmax") // 8, k.knob("bk") // 8, k.knob("dmax") // 8
    for sym, f in found.items():
        clean = arch == "sm_90" and k.knob("dmax") <= 64
        assert (f.spill_bytes == 0 and f.local_ops == 0) if clean else f.spill_bytes <= 32, (sym, f)
        assert f.hmma == 3 * mi * (dk * nk + nk * nd), (sym, f)     # S: d/8 k8 steps x bk/8; P V: bk/8 x d/8
    assert found[k.name].ldg128 > 0 and found[k.name + "_unaligned"].ldg128 == 0


# -- the emulator -----------------------------------------------------------------------------------
@pytest.mark.emulate
@pytest.mark.parametrize("knobs,sizes", VARIANTS, ids=name)
def test_variants_are_correct_on_the_emulator(knobs, sizes):
    v = validate(op, op.schedule(**knobs), op.problem(sizes, dtype="tf32x3"), backend="emulate", order="random")
    assert v.ok, v.summary()
    assert dict(v.errors)["O"] < 2e-6, v.summary()     # fp32's grade: one TF32 product alone errs ~1e-3


@pytest.mark.emulate
@pytest.mark.parametrize("old,new", [
    ("p[i][1] = __float_as_uint(s[i][kk][2]);", "p[i][1] = __float_as_uint(s[i][kk][1]);"),   # keys out of V's order
    ("kg_mma_m16n8k8_tf32(part[i][j], pl[i], b[j]);", ""),             # P's low part dropped: P V in 2xTF32
    ("kg_mma_m16n8k8_tf32(t[i][j], al[i], b[j]);", ""),                # Q's low part dropped
    ("acc[i][c0 + j][q] += part[i][j][q];", "acc[i][c0 + j][q] = part[i][j][q];"),   # earlier tiles forgotten
    ("^ ((c0 + j) * 16))", "+ ((c0 + j) * 16))"),                     # V's column blocks added past the swizzle
])
def test_the_emulator_catches_broken_tf32x3_products(old, new):
    sched = op.schedule(**X3)
    src = render(kernel(X3))
    assert old in src, old
    mutate = lambda s: s.replace(old, new)
    p = op.problem(dict(batch=1, heads=2, seq_q=70, seq_k=100, head_dim=64, causal=1), dtype="tf32x3")
    try:
        v = validate(op, sched, p, backend="emulate", mutate=mutate)
    except EmulationError as e:     # the checker stops reads past the tile (the mis-swizzled columns)
        assert "shared" in str(e), e
        return
    assert not v.ok, v.summary()


# -- the GPU ----------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("knobs,sizes", [
    (dict(X3, dmax=128, bq=128), dict(batch=2, heads=3, seq=1000, head_dim=128, causal=1)),
    (X3, dict(batch=1, heads=4, seq_q=333, seq_k=1027, head_dim=60, causal=0)),
    (dict(X3, bk=64), dict(batch=2, heads=2, seq=777, head_dim=64, causal=0)),
    (dict(X3, dmax=32, wq=32), dict(batch=1, heads=1, seq=1, head_dim=32, causal=1))], ids=name)
def test_variants_are_correct_on_the_gpu(knobs, sizes):
    v = validate(op, op.schedule(**knobs), op.problem(sizes, dtype="tf32x3"), backend="gpu")
    assert v.ok, v.summary()


@pytest.mark.gpu
@pytest.mark.parametrize("sizes,bound", [
    (dict(batch=1, heads=4, seq=2048, head_dim=128, causal=1), 2e-6),     # the 7B layer's rows: 1.06e-6 measured
    (dict(batch=1, heads=2, seq_q=64, seq_k=8192, head_dim=128, causal=0), 1e-5)], ids=name)
def test_the_error_over_long_rows_of_keys_on_the_gpu(sizes, bound):
    """The tensor cores' fp32 sums truncate. With S's and a tile's P V products summed apart the error at 2048 keys is
    fp32's (1.06e-6; the CUDA-core kernel 7.9e-7, torch's fp32 SDPA 6.2e-7 and 8.2e-7: bench/attention_x3_error.py,
    H200); at 8192 keys it grows to 6.7-8.3e-6 (CUDA cores 2.0-2.5e-6, torch's 3xTF32 SDPA 7.3e-7), inside the
    op's tolerance."""
    p = op.problem(sizes, dtype="tf32x3")
    v = validate(op, op.schedule_for(p), p, backend="gpu")
    assert v.ok and dict(v.errors)["O"] < bound, v.summary()
