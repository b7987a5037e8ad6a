"""reduce_sum's plan: one launch where one block covers n (its partial is the sum), two otherwise."""
import pytest

from kernelgen import get_op
from kernelgen.target import target

op = get_op("reduce_sum")


def plan(n, dtype=None):
    problem = op.problem({"n": n}, dtype=dtype)
    return op.plan(op.kernel(op.default_schedule(), types=problem.types), problem, target("sm_90"))


def test_a_single_block_writes_the_sum_itself():
    p = plan(4096)
    (launch,) = p.launches
    assert launch.symbol.endswith("_partial") and launch.args == ("x", "out", "n") and launch.grid == (1, 1, 1)
    assert p.workspaces == ()


@pytest.mark.parametrize("n,dtype", [(1 << 24, None), (4096, "float16")])
def test_several_blocks_or_a_16_bit_out_keep_the_second_pass(n, dtype):
    # (a float16 sum is written in float16 by the second pass, which converts it)
    kinds = [l.symbol.rsplit("_", 1)[1] for l in plan(n, dtype).launches]
    assert kinds == ["partial", "final"]
