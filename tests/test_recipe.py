"""Launch recipes: the C expressions in every emitted file's header and host launcher, evaluated in
Python, make exactly the launches `op.plan` makes, at awkward sizes (so the two cannot drift); the
launcher compiles with nvcc for sm_80 and sm_90."""
import dataclasses
import itertools
import re
import subprocess
from pathlib import Path

import pytest

from kernelgen.emit import expected_files, generated_kernels
from kernelgen.errors import KernelgenError
from kernelgen.ops import OPS
from kernelgen.recipe import evaluate
from kernelgen.target import target

GENERATED = Path(__file__).resolve().parent.parent / "generated"

AWKWARD = (1, 2, 3, 7, 31, 127, 1000, 4097)
SIZES = {   # per op: a few awkward problems (all-awkward products would be too many for conv2d)
    "conv2d": [dict(N=n, C=c, H=h, W=w, K=k, R=r, S=s, stride_h=sh, stride_w=sw, pad_h=ph, pad_w=pw, dil_h=dh, dil_w=dw)
               for n, c, h, w, k, r, s, sh, sw, ph, pw, dh, dw in (
                   (1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1), (2, 3, 11, 13, 5, 3, 3, 2, 2, 1, 1, 1, 1),
                   (1, 7, 31, 127, 33, 3, 3, 1, 1, 1, 1, 1, 1), (3, 5, 64, 65, 300, 5, 5, 2, 2, 2, 2, 1, 1),
                   (1, 1, 5, 5, 1, 7, 7, 1, 1, 0, 0, 1, 1),                  # the filter does not fit: refused
                   (2, 1, 161, 70, 32, 20, 5, 8, 2, 0, 1, 1, 2),             # DeepBench-like: asymmetric everything
                   (1, 2, 9, 4, 3, 3, 2, 5, 7, 0, 0, 4, 3),                  # a 1x1 output of a dilated filter
                   (1, 2, 9, 4, 3, 3, 2, 5, 7, 0, 0, 5, 3))],                # dilated one row too far: refused
    "attention": [dict(batch=b, heads=h, seq_q=q, seq_k=k, head_dim=d, causal=c)
                  for b, h, q, k, d, c in ((1, 1, 1, 1, 1, 0), (2, 3, 37, 37, 64, 1), (3, 1, 70, 45, 24, 1),
                                           (1, 2, 19, 83, 63, 0), (1, 1, 5, 5, 128, 1),    # d 128: refused by DMAX 64
                                           (256, 256, 3, 3, 4, 0),                         # 65536 (b, h) pairs: refused
                                           (7, 31, 127, 1000, 32, 1))],
}


def problems(op):
    names = [d.name for d in op.dims]
    if op.name in SIZES:
        out = list(SIZES[op.name])
    elif len(names) == 1:
        out = [{names[0]: v} for v in AWKWARD + (1000003, 1 << 22, 123456789)]
    else:
        out = [dict(zip(names, vals)) for vals in itertools.product(AWKWARD, repeat=len(names))][::3]
    # each size at its limit and one past it, the others at their smallest (softmax's batches of rows
    # stay few) and small: the launcher refuses what the plan refuses
    for d in op.dims:
        for v in (d.maximum, d.maximum + 1, d.minimum - 1):
            for others in ("minimum", "small"):
                if -2**31 <= v < 2**31 and (others == "minimum" or v != d.maximum):
                    out.append(dict({e.name: max(getattr(e, others), 1) for e in op.dims}, **{d.name: v}))
    return out


EXTRA = {   # schedules generated/ lacks whose plans differ: split-K's zeroing launch, grid-stride loops
    "sgemm": [dict(split_k=2), dict(split_k=3, swizzle=1), dict(split_k=4, reduce_k="workspace"),
              dict(split_k=2, reduce_k="workspace", vec_a=1, vec_b=1, vec_c=1),
              dict(bm=8, bn=256, wm=8, wn=64, tm=4, tn=4, vec_c=2, split_k=7, reduce_k="workspace")],
    "transpose": [dict(grid_stride=4), dict(tile=64, rows=16, store_align=32, load_align=True),
                  dict(store_align=16, grid_stride=4)],       # tiles skewed per row of out: a row of tiles more
    "gemv": [dict(grid_stride=2)],
    "conv2d": [dict(split_k=3), dict(algo="im2col", split_k=16, bm=64, bn=64, bk=16, tm=8, tn=4)],
    "layernorm": [dict(algo="split", threads=128, items=4, l2_batch_mb=8), dict(algo="split", threads=32, items=2, vec=1)],
}


def kernels():
    for name, op in sorted(OPS.items()):
        for label, kernel in generated_kernels(op, target("sm_90")):
            yield pytest.param(op.for_schedule(kernel.schedule), kernel, id=f"{name}-{label.split(':')[0]}")
        for i, knobs in enumerate(EXTRA.get(name, ())):
            yield pytest.param(op, op.kernel(op.schedule(**knobs), target("sm_90")), id=f"{name}-extra{i}")
    gemm = OPS["gemm"]          # K in slices (a reduction and its workspace) and padded copies (wgmma), every layout
    wg = dict(instr="wgmma", bm=64, bn=128, bk=64, wm=64, wn=128, stages=4, copy="tma", pad=0, smem="xor",
              ldmatrix=False, swizzle=8, ws=True, epilogue="smem")
    for i, (knobs, layout, ep, arch) in enumerate([
            (dict(split_k=3), "NN", None, "sm_90"), (dict(split_k=5, swizzle=4), "TN", "acc + bias", "sm_90"),
            (wg, "NN", None, "sm_90a"), (dict(wg, split_k=4), "NT", None, "sm_90a"),
            (dict(wg, epilogue="direct", split_k=2), "TN", "relu(acc) + res", "sm_90a"), (wg, "TT", "acc + bias", "sm_90a")]):
        inst = gemm.for_problem(gemm.problem(epilogue=ep, layout=layout))
        yield pytest.param(inst, inst.kernel(inst.schedule(**knobs), target(arch), None, layout), id=f"gemm-slices{i}")
    sgemm, dot = OPS["sgemm"], dict(shared=False, layout="dot", wm=0, wn=0, bm=16, tm=8, bn=32, tn=8)
    for i, (knobs, ep) in enumerate([({}, None), (dict(split_k=3, reduce_k="workspace"), "acc + bias"),
                                     (dict(bm=32, tm=4, bn=8, tn=8, split_k=2), None)]):   # the dot layout, x . W^T
        inst = sgemm.for_problem(sgemm.problem(epilogue=ep, layout="NT"))
        yield pytest.param(inst, inst.kernel(inst.schedule(**dict(dot, **knobs)), target("sm_90"), None, "NT"),
                           id=f"sgemm-dot{i}")
    for mode in ("add", "add_store"):       # layer norm's residual add: more buffers, in every algorithm's launches
        inst = OPS["layernorm"].for_problem(OPS["layernorm"].problem(residual=mode))
        for i, knobs in enumerate([{}] + EXTRA["layernorm"]):
            yield pytest.param(inst, inst.kernel(inst.schedule(**knobs), target("sm_90")), id=f"layernorm-{mode}{i}")


def as_plan(plan):
    """A plan in the evaluated recipe's terms: args as (name, value) with pointers None."""
    scalars = {s.name: s.value for s in plan.scalars}
    launches = [(l.symbol, l.grid, l.block, tuple(scalars.get(a) for a in l.args),
                 tuple(a for a in l.args if a not in scalars), l.shared_bytes) for l in plan.launches]
    maps = [(t.name, t.buffer, t.rows, t.cols, t.box_rows, t.box_cols, t.pitch or t.cols, t.outer) for t in plan.tensor_maps]
    return launches, sorted((w.name, w.count, w.fill) for w in plan.workspaces), dict(plan.alignment), maps


def as_recipe(run):
    launches = [(l.symbol, l.grid, l.block, tuple(v for _, v in l.args),
                 tuple(a for a, v in l.args if v is None), l.shared_bytes) for l in run.launches]
    return launches, sorted((n, c, f) for n, _, c, f in run.workspaces if c), dict(run.alignment), list(run.tensor_maps)


@pytest.mark.parametrize("op,kernel", list(kernels()))
@pytest.mark.parametrize("sms", [132, 7])
def test_recipe_matches_plan(op, kernel, sms):
    recipe = op.recipe(kernel)
    tgt = dataclasses.replace(target(kernel.arch), sms=sms)
    checked = 0
    for sizes in problems(op):
        try:
            problem = op.problem(sizes, dtype=kernel.types.input.name if kernel.types else None,
                                 out_dtype=kernel.types.output.name if kernel.types else None,
                                 **({"residual": kernel.residual} if kernel.residual else {}),
                                 **({"layout": kernel.layout} if op.layouts else {}),
                                 **({"epilogue": kernel.epilogue} if kernel.epilogue else {}))
            plan = op.plan(kernel, problem, tgt)
        except KernelgenError:
            run = evaluate(recipe, sizes, sms)
            assert not run.ok, f"{sizes}: the plan refuses these sizes but the launcher would run them"
            continue
        run = evaluate(recipe, sizes, sms)
        assert run.ok, f"{sizes}: the launcher refuses ({run.failed}) sizes the plan runs"
        assert as_recipe(run) == as_plan(plan), sizes
        checked += 1
    assert checked


def test_every_generated_file_has_a_recipe_and_a_launcher():
    for rel, text in expected_files("sm_90").items():
        assert "// launch recipe" in text and "kernels, in order on one stream:" in text, rel
        assert "#ifdef KERNELGEN_HOST_LAUNCHER" in text and "kg_launch_" in text, rel
        if "/sm_90a/" in rel:       # the wgmma files encode their TMA descriptors themselves: the gemm's of each
            # operand or of its padded copy, attention's of Q, K and V (4-D: any strides, no copies)
            assert text.count("kg_encode_tensor_map(&tm") == (3 if rel.startswith("attention/") else 4), rel


# a sample, cheap enough for CI: the simplest plans and the ones with workspaces, twins and loops
SAMPLE = ("sgemm/sm_90/sgemm_f32_sm90_s1_bm128_bn128_tm8_tn8_lwarp_wm64_wn32_bk8_akm_pa4_pb0_va4_vb4_vc4_st1_csync_u0_mb2_sw1.cu",
          "reduce_sum/sm_90/reduce_sum_f32_sm90_t512_i4_v4_sshuffle_g4_ftwopass.cu",
          "softmax/sm_90/softmax_f32_sm90_t128_r1_i4_v4_sshuffle_asplit_b16.cu",
          "conv2d/sm_90/conv2d_f32_sm90_aim2col_t256_m32_n256_k8_tm4_tn8_st2_p4_v4_o0.cu",
          "gemm/sm_90/gemm_f16_sm90_imma_bm128_bn128_bk32_wm64_wn64_st4_ccpasync_p0_sxor_ld1_sw1.cu",  # > 48 KB shared
          "attention/sm_90/attention_f32_sm90_aunfused.cu",              # a float let (the scale) and a workspace
          "attention/sm_90/attention_f32_sm90_aflash_bq64_rq8_bk64_rk4_d64_st2_ccpasync.cu",  # twins, > 48 KB shared
          "attention/sm_90/attention_f16_sm90_aflashmma_bq64_wq16_bk64_d64_st2_ccpasync.cu")  # __half buffers, mma


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_launchers_compile_with_nvcc(tmp_path, arch):
    for rel in SAMPLE:
        f = GENERATED / rel
        cmd = ["nvcc", "-DKERNELGEN_HOST_LAUNCHER", "-c", f"-arch={arch}", "-Xcompiler", "-Wall",
               "-o", str(tmp_path / f"{f.stem}.o"), str(f)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        assert out.returncode == 0, f"{rel}: {out.stderr[-2000:]}"
        # no warning in the host code (the device code's own remarks are not this test's business)
        first = f.read_text().splitlines().index("#ifdef KERNELGEN_HOST_LAUNCHER") + 1
        lines = [int(m) for m in re.findall(rf"{re.escape(f.name)}[(:](\d+)", out.stderr)]
        assert all(n < first for n in lines), f"{rel}: warnings in the host launcher:\n{out.stderr[-2000:]}"
        syms = subprocess.run(["nm", str(tmp_path / f"{f.stem}.o")], capture_output=True, text=True).stdout
        assert f"T kg_launch_{f.stem}" in syms and f"T kg_workspace_bytes_{f.stem}" in syms, rel


@pytest.mark.nvcc
def test_example_client_builds_and_refuses_bad_input(tmp_path):
    """examples/launcher builds with nvcc alone; its client refuses bad input with cudaErrorInvalidValue
    before touching a device (on a GPU it also checks results at awkward sizes)."""
    import os
    import shutil
    import sys
    src = Path(__file__).resolve().parent.parent / "examples" / "launcher"
    work = tmp_path / "launcher"
    shutil.copytree(src, work, ignore=shutil.ignore_patterns("build", "client"))
    env = dict(os.environ, PYTHONPATH=str(src.parent.parent) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run(["make", "-j2", f"PYTHON={sys.executable}"], cwd=work, capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    run = subprocess.run(["./client"], cwd=work, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "FAIL" not in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]


def test_emit_header_writes_the_launcher_declarations(tmp_path):
    from click.testing import CliRunner
    from kernelgen.cli import main
    r = CliRunner().invoke(main, ["emit", "reduce_sum", "--header", "-o", str(tmp_path)])
    assert r.exit_code == 0, r.output
    (h,) = tmp_path.glob("*.h")
    text = h.read_text()
    assert f"kg_launch_{h.stem}(const float* x, float* out, int n, void* workspace" in text
    assert f"size_t kg_workspace_bytes_{h.stem}(int n);" in text and (tmp_path / f"{h.stem}.cu").is_file()
    r = CliRunner().invoke(main, ["emit", "--all", "--header", "-o", str(tmp_path)])
    assert r.exit_code == 2 and "--header" in r.output


@pytest.mark.nvrtc
def test_device_only_compile_is_unchanged_by_the_launcher():
    """Without KERNELGEN_HOST_LAUNCHER a file is device code only: NVRTC compiles it as before."""
    from kernelgen.compile import compile_cuda
    for rel in SAMPLE[:2]:
        text = (GENERATED / rel).read_text()
        device = [ln for ln in text.split("#ifdef KERNELGEN_HOST_LAUNCHER")[0].splitlines() if not ln.startswith("//")]
        assert not any("cudaStream_t" in ln or "kg_launch_" in ln for ln in device), rel
        assert compile_cuda(text, "sm_90").cubin


# -- the sm_90a wgmma files: the launcher encodes the TMA descriptors itself -----------------------
def _wgmma(layout="NN", dtype="float16", persistent="off"):
    from kernelgen.ops.gemm import WGMMA_HEURISTIC
    gemm = OPS["gemm"]
    knobs = dict(WGMMA_HEURISTIC, persistent=persistent)
    return gemm.kernel(gemm.schedule_from_knobs(**knobs), target("sm_90a"), gemm.types(dtype), layout)


@pytest.mark.parametrize("layout,maps", [
    ("NN", [("A", "M", "K", 128, 64), ("B", "K", "N", 64, 64)]),
    ("NT", [("A", "M", "K", 128, 64), ("B", "N", "K", 64, 64)]),
    ("TN", [("A", "K", "M", 64, 64), ("B", "K", "N", 64, 64)]),
    ("TT", [("A", "K", "M", 64, 64), ("B", "N", "K", 64, 64)])])
def test_wgmma_launcher_encodes_the_stored_tensors_of_each_layout(layout, maps):
    """Each map is encoded from its stored rows x cols (the sizes as the layout stores them), in the
    kernel's parameter order, before the launch that passes them by value."""
    from kernelgen.render import render
    kernel = _wgmma(layout, "bfloat16" if layout == "TT" else "float16")
    src = render(kernel)
    host = src.split("#ifdef KERNELGEN_HOST_LAUNCHER")[1]
    kind, ctype = ("BFLOAT16", "__nv_bfloat16") if layout == "TT" else ("FLOAT16", "__half")
    encodes = re.findall(r"if \((\w) % 8 == 0\) \{ cudaError_t e = kg_encode_tensor_map\(&(tm\w), CU_TENSOR_MAP_DATA_TYPE_(\w+), "
                         r"(\w), \(unsigned long long\)\((\w)\), \(unsigned long long\)\((\w)\), \(unsigned long long\)\((\w)\), "
                         r"sizeof\(([\w ]+)\), (\d+), (\d+)\)", host)
    assert encodes == [(c, f"tm{b}", kind, b, r, c, c, ctype, str(br), str(bc)) for b, r, c, br, bc in maps]
    # where a stored row is not 16 bytes a multiple, the map reads the operand's padded copy (rows rounded to 8)
    pitched = re.findall(r"if \((\w) % 8 != 0\) \{ cudaError_t e = kg_encode_tensor_map\(&(tm\w), CU_TENSOR_MAP_DATA_TYPE_\w+, "
                         r"(\w)_pitched, \(unsigned long long\)\((\w)\), \(unsigned long long\)\((\w)\), "
                         r"\(unsigned long long\)\(kg_cdiv\((\w), 8\) \* 8\), sizeof\(([\w ]+)\), (\d+), (\d+)\)", host)
    assert pitched == [(c, f"tm{b}", b, r, c, c, ctype, str(br), str(bc)) for b, r, c, br, bc in maps]
    assert f"<<<" in host and host.index("kg_encode_tensor_map(&tmB") < host.index("<<<")
    assert re.search(rf"{kernel.name}\(const __grid_constant__ kg_tensor_map tmA, const __grid_constant__ "
                     r"kg_tensor_map tmB,\s+\w+\* __restrict__ C, int M, int N, int K\)", src)
    assert f">>>(tmA, tmB, C, M, N, K);" in host and "cudaFuncSetAttribute" in host
    assert "CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B" in host and "cudaGetDriverEntryPoint" in host
    # the padded copies are made before the product that reads them
    assert host.index(f"{kernel.name}_pad<<<") < host.index(f"{kernel.name}<<<")


REFUSALS = r"""
#include <cstdio>
#include <cstdint>
#include <cuda.h>
#include KG_HEADER
#define KG_CAT(a, b) a##b
#define KG_XCAT(a, b) KG_CAT(a, b)
#define LAUNCH KG_XCAT(kg_launch_, KG_NAME)
// the enums' values kernelgen/gpu.py passes (ops/base.py's table) are the ones cuda.h names
%(asserts)s
static T* fake(uintptr_t offset = 0) { return reinterpret_cast<T*>(uintptr_t(1) << 20 | offset); }
int main() {
  int failures = 0;
  struct { const T *a, *b; T* c; int m, n, k; const char* what; } bad[] = {
    {nullptr, fake(), fake(), 8, 8, 8, "null A"}, {fake(), fake(), nullptr, 8, 8, 8, "null C"},
    {fake(), fake(), fake(), 0, 8, 8, "M = 0"}, {fake(), fake(), fake(), 8, -8, 8, "N < 0"},
    {fake(), fake(), fake(), 16776961, 8, 8, "M above its maximum"},
    {fake(), fake(), fake(), 8, 8, 12, "K = 12"}, {fake(), fake(), fake(), 8, 4, 8, "N = 4"},
    {fake(), fake(), fake(), 12, 8, 8, "M = 12"},
    {fake(8), fake(), fake(), 8, 8, 8, "A 8 bytes off"}, {fake(), fake(2), fake(), 8, 8, 8, "B 2 bytes off"},
    {fake(), fake(), fake(2), 8, 8, 8, "C 2 bytes off"}};
  for (auto& b : bad) {
    // a row length of 12 or 4 halves is bad only where the stored rows are that size's long (a padded copy then
    // needs a workspace, and none is given)
    if ((b.m == 12 && !KG_M_LEADS) || (b.k == 12 && !KG_K_LEADS) || (b.n == 4 && !KG_N_LEADS)) continue;
    cudaError_t e = LAUNCH(b.a, b.b, b.c, b.m, b.n, b.k, nullptr, 0, 0);
    if (e != cudaErrorInvalidValue) { std::printf("FAIL %%s: %%s\n", b.what, cudaGetErrorString(e)); ++failures; }
  }
  std::printf("%%d failures\n", failures);
  return failures != 0;
}
"""


@pytest.mark.nvcc
@pytest.mark.parametrize("layout,persistent", [("NN", "off"), ("TN", "coop")])
def test_wgmma_launcher_builds_for_sm_90a_and_refuses_bad_input(tmp_path, layout, persistent):
    """The launcher builds with nvcc for sm_90a (no host warnings, no -lcuda) and refuses bad input with
    cudaErrorInvalidValue before touching a device: the program makes only refused calls, with or
    without a GPU. (A persistent kernel's grid asks the device for its multiprocessor count.)"""
    from kernelgen.ops.base import TMA_DATA_TYPES, TMA_L2_PROMOTION, TMA_SWIZZLE
    from kernelgen.render import declarations, render
    kernel = _wgmma(layout, persistent=persistent)
    lead = {"NN": "KN", "TN": "MN"}[layout]      # the sizes that are the stored rows' lengths
    cu, h = tmp_path / f"{kernel.name}.cu", tmp_path / f"{kernel.name}.h"
    cu.write_text(render(kernel))
    h.write_text(declarations(kernel))
    asserts = "\n".join(f'static_assert({n} == {v}, "{n}");' for n, v in
                        [*TMA_DATA_TYPES.values(), TMA_SWIZZLE, TMA_L2_PROMOTION])
    main = tmp_path / "main.cu"
    main.write_text(REFUSALS % dict(asserts=asserts))
    gencode = "-gencode=arch=compute_90a,code=sm_90a"
    out = subprocess.run(["nvcc", "-DKERNELGEN_HOST_LAUNCHER", "-c", gencode, "-Xcompiler", "-Wall", "-o",
                          str(tmp_path / "k.o"), str(cu)], capture_output=True, text=True)
    assert out.returncode == 0 and "warning" not in out.stderr, out.stderr[-2000:]
    out = subprocess.run(["nvcc", gencode, "-Xcompiler", "-Wall", f"-I{tmp_path}", f'-DKG_HEADER="{h.name}"',
                          f"-DKG_NAME={kernel.name}", "-DT=__half", *(f"-DKG_{d}_LEADS={int(d in lead)}" for d in "MNK"),
                          "-o", str(tmp_path / "main"), str(main), str(tmp_path / "k.o")],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "warning" not in out.stderr, out.stderr[-2000:]
    run = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr

