"""Property tests on the emulator: legal schedules drawn at random from each op's search space, at
random awkward sizes, must compute the reference."""
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kernelgen import OPS
from kernelgen.emulate import runnable_target
from kernelgen.errors import ScheduleError, UsageError
from kernelgen.target import Target, target
from kernelgen.validate import validate

pytestmark = pytest.mark.emulate


def legal_space(op, problem):
    out, emulated = [], runnable_target(target())    # TMA-fed schedules are proven on the GPU
    for knobs in op.space(problem, emulated):
        try:
            sched = op.schedule_from_knobs(**knobs)
            op.plan(op.kernel(sched, emulated), problem, emulated)
            out.append(sched)
        except ScheduleError:
            continue
    return out


@pytest.mark.parametrize("name", sorted(OPS))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_legal_schedules_at_random_sizes(name, data):
    op = OPS[name]
    # sizes: each dim drawn between its minimum and twice its small (awkward) size, capped to keep it quick
    sizes = {d.name: data.draw(st.integers(d.minimum, max(d.minimum, min(2 * d.small, 3000))), label=d.name)
             for d in op.dims}
    try:
        problem = op.problem(sizes)
    except UsageError:  # e.g. a convolution whose output would be empty: rejected by design
        return
    space = legal_space(op, problem)
    if not space:
        return
    sched = data.draw(st.sampled_from(space), label="schedule")
    v = validate(op, sched, problem, backend="emulate", order="random")
    assert v.ok, (str(problem), sched.to_python(), v.summary())
