"""The row ops' any-alignment twin (cols % vec != 0): rows that start anywhere in a vector, read and
written as whole vectors from the aligned address at or below each row's start, the first and last
vector lane by lane. Every algorithm of softmax and layer norm on the emulator with the checker on
(an out-of-bounds lane would be reported), at row lengths shorter than a vector, around it, odd and
vocabulary-like (scaled down), 1 and 3 rows (the rows' offsets in their vector then differ), each
element type; the plan's and recipe's chunk count for the split form, and the register-row limit."""
import pytest

from kernelgen import get_op
from kernelgen.ops.rows import ANY_SUFFIX
from kernelgen.recipe import evaluate
from kernelgen.validate import validate

sm, ln = get_op("softmax"), get_op("layernorm")
COLS = (1, 7, 9, 37, 254, 1001, 4099)      # 254 with 256-column chunks: a row's last chunk may hold nothing
DTYPES = ("float32", "float16", "bfloat16")


def vec(dtype):
    return 4 if dtype == "float32" else 8


def knobs_for(algo, dtype):
    if algo == "registers":      # a tile of 4608 (float32) or 5120 columns: 4099 fits
        return dict(threads=128, items=9 if dtype == "float32" else 5, vec=vec(dtype), algo=algo)
    if algo == "split":
        return dict(threads=32, items=2, vec=vec(dtype), algo=algo, l2_batch_mb=0)
    return dict(threads=32, rows_per_block=4, items=2, vec=vec(dtype), algo=algo)


CASES = [(op, algo) for op, algos in ((sm, ("registers", "online", "three_pass", "split")),
                                      (ln, ("registers", "welford", "two_pass", "split"))) for algo in algos]


@pytest.mark.emulate
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op,algo", CASES, ids=[f"{o.name}-{a}" for o, a in CASES])
def test_any_alignment_twin_on_awkward_rows(op, algo, dtype):
    s = op.schedule(**knobs_for(algo, dtype))
    kern = op.kernel(s, types=op.types(dtype))
    for cols in COLS:
        for rows in (1, 3):
            p = op.problem({"rows": rows, "cols": cols}, dtype=dtype)
            twin = cols % vec(dtype) != 0
            assert op.plan(kern, p).launches[0].symbol.endswith(ANY_SUFFIX) == twin
            v = validate(op, s, p, backend="emulate", order="reverse", check=True)
            assert v.ok, (algo, dtype, rows, cols, v.summary())


@pytest.mark.parametrize("op", (sm, ln), ids=lambda o: o.name)
def test_split_twin_takes_a_chunk_more_where_rows_start_inside_a_vector(op):
    kern = op.kernel(op.schedule(threads=32, items=2, algo="split", l2_batch_mb=0))     # 256-column chunks
    for cols, chunks in ((256, 1), (255, 2), (254, 2), (253, 1), (1001, 4), (1, 1)):
        plan = op.plan(kern, op.problem({"rows": 3, "cols": cols}))
        assert plan.launches[0].grid[1] == chunks, (cols, plan.launches[0].grid)
        run = evaluate(op.recipe(kern), {"rows": 3, "cols": cols}, 132)
        assert [(x.symbol, x.grid) for x in run.launches] == [(x.symbol, x.grid) for x in plan.launches]
        assert [c for _, _, c, _ in run.workspaces] == [w.count for w in plan.workspaces]


@pytest.mark.emulate
@pytest.mark.parametrize("dtype", ("float32", "float16"))
@pytest.mark.parametrize("op", (sm, ln), ids=lambda o: o.name)
def test_register_twin_holds_rows_up_to_its_tile_whatever_their_offset(op, dtype):
    # 4 threads x 2 vectors: a tile of 8 vectors; a row of tile - 1 columns starting vec - 1 into a vector
    # spans 9 vectors, its last elements riding in the first vector's free lanes
    w = vec(dtype)
    s = op.schedule(threads=4, rows_per_block=8, items=2, vec=w, algo="registers", reduction="shuffle")
    cap = 8 * w
    for cols in (cap - 1, cap - 2, cap - w + 1, cap - w - 1, 1):
        for rows in (1, 3, 2 * w + 1):
            p = op.problem({"rows": rows, "cols": cols}, dtype=dtype)
            assert evaluate(op.recipe(op.kernel(s, types=op.types(dtype))), {"rows": rows, "cols": cols}, 132).ok
            v = validate(op, s, p, backend="emulate", order="random", check=True)
            assert v.ok, (dtype, rows, cols, v.summary())


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op,algo", CASES, ids=[f"{o.name}-{a}" for o, a in CASES])
def test_any_alignment_twin_on_the_gpu(op, algo, dtype):
    s = op.schedule(**knobs_for(algo, dtype))
    for rows, cols in ((3, 1), (5, 7), (33, 1001), (17, 4099)):
        v = validate(op, s, op.problem({"rows": rows, "cols": cols}, dtype=dtype), backend="gpu")
        assert v.ok, (algo, dtype, rows, cols, v.summary())
    for rows, cols in ((4096, 50257), (4096, 12289), (1, 250001)):       # each op's own heuristic
        p = op.problem({"rows": rows, "cols": cols}, dtype=dtype)
        v = validate(op, op.schedule_for(p), p, backend="gpu")
        assert v.ok, (rows, cols, dtype, v.summary())
