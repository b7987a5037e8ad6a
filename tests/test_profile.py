"""`kernelgen profile` and kernelgen.ncu without a GPU: ncu's raw-page CSV parsed into the figures, the
command line, ncu's failures as one line, the whole command against a stand-in `ncu` that prints a
recorded CSV, and the message where ncu is absent.

tests/data/ncu_raw_transpose.csv is written by hand in the layout `ncu --csv --page raw --print-units
base` prints (==PROF== lines, a header row, a units row, a row per launch; thousands separators), with
the counts the transpose ladder's unpadded tile (step 2) makes on a 1024 x 1024 float32 problem: 32768
warp requests each way, column reads of the tile 32 wavefronts each, 4 sectors per global request.
"""
from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelgen import ncu
from kernelgen.cli import main
from kernelgen.errors import UsageError

FIXTURE = Path(__file__).parent / "data" / "ncu_raw_transpose.csv"
STEP2 = "transpose_f32_sm90_t32_r8_v1_s1_p0_orow_g0"


def test_the_raw_page_parses_into_the_figures():
    (launch,) = ncu.parse_csv(FIXTURE.read_text())
    assert (launch.kernel, launch.block, launch.grid) == (STEP2, "(32, 8, 1)", "(1024, 1, 1)")
    assert set(ncu.METRICS) <= set(launch.metrics)
    f = ncu.figures(launch.metrics)
    assert f["duration_ns"] == 10592.0 and f["occupancy_pct"] == 84.73 and f["issue_active_pct"] == 11.62
    assert f["dram_bytes_per_s"] == pytest.approx(827.39e9, rel=1e-4) and f["l2_pct"] == 21.05
    assert list(f["stalls"])[:3] == ["mio_throttle", "long_scoreboard", "barrier"]
    assert "tex_throttle" not in f["stalls"] and "membar" not in f["stalls"]          # n/a and 0 are left out
    assert f["shared"]["load"] == {"requests": 32768, "wavefronts": 1048576, "conflicts": 1015808, "per_request": 32.0}
    assert f["shared"]["store"]["per_request"] == 1.0 and f["shared"]["store"]["conflicts"] == 0
    assert f["global"]["load"] == {"requests": 32768, "sectors": 131072, "per_request": 4.0}
    text = "\n".join(ncu.lines(f))
    assert "84.7% achieved" in text and "827 GB/s" in text and "mio_throttle 14.62" in text
    assert "loads 32.00 wavefronts/request (32768 requests, 1015808 bank conflicts)" in text
    assert "stores 4.00 sectors/request" in text


def test_scaled_units_and_missing_values():
    head = '"ID","Kernel Name","dram__bytes.sum.per_second","gpu__time_duration.sum","lts__t_bytes.sum.per_second"'
    text = "\n".join([head, '"","","Gbyte/second","usecond","Tbyte/second"', '"0","k","1,500.5","12.5","n/a"',
                      "a line the profiled program printed", '"1","k","2","3","4"'])
    first, second = ncu.parse_csv(text)
    assert first.metrics == {"dram__bytes.sum.per_second": 1500.5e9, "gpu__time_duration.sum": 12500.0,
                             "lts__t_bytes.sum.per_second": None}
    assert second.metrics["lts__t_bytes.sum.per_second"] == 4e12
    with pytest.raises(UsageError, match="no metrics table"):
        ncu.parse_csv("==PROF== No kernels were profiled.\n")


def test_the_command_line():
    cmd = ncu.command("/opt/ncu", ["k_b", "k.a", "k_b"], 3, ["python3", "-m", "kernelgen.ncu"])
    assert cmd[:9] == ["/opt/ncu", "--csv", "--page", "raw", "--print-units", "base", "--target-processes", "all",
                       "--clock-control"]
    assert cmd[cmd.index("-k") + 1] == r"regex:^(k\.a|k_b)$"
    assert cmd[cmd.index("--launch-count") + 1] == "3" and cmd[-3:] == ["python3", "-m", "kernelgen.ncu"]
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum" in metrics
    assert ncu.stall_metric("long_scoreboard") in metrics
    assert "sm__warps_active.avg.pct_of_peak_sustained_active" in metrics


def fake_ncu(tmp_path: Path, body: str) -> Path:
    """An executable `ncu` that records its arguments in args.json and then runs `body` (Python)."""
    path = tmp_path / "ncu"
    record = f"json.dump(sys.argv[1:], open({str(tmp_path / 'args.json')!r}, 'w'))"
    path.write_text(f"#!{sys.executable}\nimport json, sys\n{record}\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_ncu_failures_are_one_line_and_unknown_metrics_are_left_out(tmp_path):
    exe = fake_ncu(tmp_path, "print('==ERROR== ERR_NVGPUCTRPERM - The user does not have permission'); sys.exit(1)")
    with pytest.raises(UsageError, match="ERR_NVGPUCTRPERM"):
        ncu.run(ncu.command(str(exe), ["k"], 1, ["prog"]), 1)
    exe = fake_ncu(tmp_path, f"""ms = sys.argv[sys.argv.index('--metrics') + 1]
if 'bogus__metric.sum' in ms:
    print(r'==ERROR== Failed to find metric regex:^bogus__metric\\.(sum|min|max|avg|pct|ratio|max_rate)$')
    sys.exit(1)
print(open({str(FIXTURE)!r}).read())""")
    (launch,) = ncu.run(ncu.command(str(exe), ["k"], 1, ["prog"], metrics=ncu.METRICS + ("bogus__metric.sum",)), 1)
    assert launch.kernel == STEP2
    exe = fake_ncu(tmp_path, "print('error: transpose: unknown size q', file=sys.stderr); sys.exit(2)")
    with pytest.raises(UsageError, match=r"ncu profiled 0 of 1 launches \(exit status 2\): error: transpose: unknown"):
        ncu.run(ncu.command(str(exe), ["k"], 1, ["prog"]), 1)
    exe = fake_ncu(tmp_path, "print('==WARNING== No kernels were profiled.'); print('done')")
    with pytest.raises(UsageError, match=r"profiled 0 of 2 launches \(exit status 0\): ==WARNING== No kernels were"):
        ncu.run(ncu.command(str(exe), ["k"], 2, ["prog"]), 2)


def test_the_profiled_process_reports_a_mistake_in_one_line(capsys):
    assert ncu.main(["nope", "n=1", "float32", "float32", "{}"]) == 2
    assert capsys.readouterr().err.startswith("error: unknown op 'nope'")


def test_without_ncu_one_line_and_exit_2(tmp_path):
    r = CliRunner().invoke(main, ["profile", "transpose"], env={"PATH": str(tmp_path), "KERNELGEN_NCU": None})
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines() == [r.output.strip()] and "Traceback" not in r.output
    assert "error: Nsight Compute's `ncu` is not installed here" in r.output


@pytest.mark.nvrtc
def test_profile_against_a_recorded_ncu(tmp_path, monkeypatch):
    """The whole command on a stand-in ncu (the GPU is the sm_90 target; the kernel is compiled, not run)."""
    from kernelgen import gpu, results
    from kernelgen.target import target
    monkeypatch.setattr(gpu, "device", lambda: target("sm_90"))
    monkeypatch.setenv("KERNELGEN_NCU", str(fake_ncu(tmp_path, f"print(open({str(FIXTURE)!r}).read())")))
    out = tmp_path / "profile.json"
    r = CliRunner().invoke(main, ["profile", "transpose", "--size", "M=1024,N=1024", "--step", "2", "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert f"kernel   {STEP2}" in r.output and "shared       loads 32.00 wavefronts/request" in r.output
    args = json.loads((tmp_path / "args.json").read_text())
    assert args[args.index("-k") + 1] == f"regex:^({STEP2})$" and args[args.index("--launch-count") + 1] == "1"
    child = args[args.index("-m") - 1:]
    assert child[1:6] == ["-m", "kernelgen.ncu", "transpose", "M=1024,N=1024", "float32"]
    doc = results.load(out)
    (row,) = doc["runs"][0]["rows"]
    assert doc["kind"] == "profile" and row["kernel"] == STEP2 and row["time_us"] == pytest.approx(10.592)
    assert row["profile"][0]["shared"]["load"]["per_request"] == 32.0
    r = CliRunner().invoke(main, ["profile", "transpose", "--size", "M=1024,N=1024", "--ladder"])
    assert r.exit_code == 0, r.output
    assert r.output.count("occupancy") == 5 and "\n3. padded tile: storage_align(x, 1): transpose_f32_sm90" in r.output
    pytest.importorskip("matplotlib")          # the report page shows the figures
    page = tmp_path / "report.html"
    r = CliRunner().invoke(main, ["report", str(out), "-o", str(page)])
    assert r.exit_code == 0, r.output
    assert "32.00 wavefronts/request" in page.read_text()


def test_with_ncu_but_without_a_gpu_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELGEN_NO_GPU", "1")
    monkeypatch.setenv("KERNELGEN_NCU", str(fake_ncu(tmp_path, "sys.exit(0)")))
    r = CliRunner().invoke(main, ["profile", "transpose"])
    assert r.exit_code == 2 and "no CUDA GPU is available" in r.output, r.output


def test_profile_ladder_takes_no_schedule():
    r = CliRunner().invoke(main, ["profile", "transpose", "--ladder", "--step", "2"])
    assert r.exit_code == 2 and "--ladder profiles every ladder step" in r.output


# -- on a GPU with Nsight Compute -----------------------------------------------------------------
def _needs_ncu():
    import shutil
    from kernelgen import config
    return pytest.mark.skipif(shutil.which(config.ncu()) is None, reason="Nsight Compute (ncu) is not on PATH")


@pytest.mark.gpu
@_needs_ncu()
def test_profile_transpose_on_the_gpu(tmp_path):
    from kernelgen import results
    out = tmp_path / "profile.json"
    r = CliRunner().invoke(main, ["profile", "transpose", "--size", "M=1024,N=1024", "--json", str(out)])
    assert r.exit_code == 0, r.output
    (row,) = results.load(out)["runs"][0]["rows"]
    (f,) = row["profile"]
    assert 0 < f["duration_ns"] < 1e6 and 0 < row["time_us"] < 1e3
    for k in ("occupancy_pct", "occupancy_limit_pct", "issue_active_pct", "dram_pct", "l2_pct"):
        assert 0 < f[k] <= 100.5, (k, f[k])
    assert 1e9 < f["dram_bytes_per_s"] < 1e13 and 1e9 < f["l2_bytes_per_s"] < 1e14
    assert f["stalls"] and all(v >= 0 for v in f["stalls"].values())
    assert f["global"]["load"]["requests"] > 0 and 1 <= f["global"]["load"]["per_request"] <= 32
    assert f["global"]["store"]["requests"] > 0 and 1 <= f["global"]["store"]["per_request"] <= 32
    assert f["shared"]["load"]["per_request"] >= 1 and f["shared"]["store"]["per_request"] >= 1
    assert "occupancy" in r.output and "stalls" in r.output and "wavefronts/request" in r.output


@pytest.mark.gpu
@pytest.mark.emulate
@_needs_ncu()
@pytest.mark.parametrize("step, shared_loads", [(2, 32.0), (3, 1.0)])    # the tile unpadded, then padded
def test_emulator_wavefronts_per_request_agree_with_ncu_on_transpose_storage_alignment(step, shared_loads):
    import kernelgen as kg
    from kernelgen import gpu
    from kernelgen.emulate.traffic import profile
    op = kg.get_op("transpose")
    sched, problem = op.ladder()[step - 1].schedule, op.problem({"M": 256, "N": 256})
    ours = ncu.traffic_metrics(profile(op, sched, problem))
    _, launches = ncu.profile(op, sched, problem, gpu.device(), ncu.TRAFFIC.values())
    theirs = ncu.sum_launches(launches)
    for space in ("shared", "global"):
        for access in ("load", "store"):
            units, requests = (ncu.TRAFFIC[(space, access, w)] for w in ("units", "requests"))
            mine = ours[units] / ours[requests]
            assert theirs[units] / theirs[requests] == pytest.approx(mine, rel=0.02), (space, access, ours, theirs)
    assert ours[ncu.TRAFFIC[("shared", "load", "units")]] / ours[ncu.TRAFFIC[("shared", "load", "requests")]] \
        == shared_loads


@pytest.mark.gpu
@pytest.mark.emulate
@_needs_ncu()
@pytest.mark.parametrize("op_name, step", [("sgemm", 2), ("sgemm", 4), ("sgemm", 9), ("staged_load", 1)])
def test_emulator_counts_agree_with_ncu_where_nvcc_vectorises(op_name, step):
    """Steps whose shared requests NVCC's vectoriser merges (the emulator's vectorize.hpp) or whose 16-byte loads pair
    their lanes up: ncu's requests, wavefronts and bank conflicts equal the emulator's."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    import banks_ncu
    import kernelgen as kg
    op = kg.get_op(op_name)
    ladder_step = op.ladder()[step - 1]
    ours, theirs = banks_ncu.emulator_counts(op, ladder_step), banks_ncu.ncu_counts(op, ladder_step)
    assert banks_ncu.agree(ours, theirs), (banks_ncu.per_request(ours), banks_ncu.per_request(theirs))
    for access in ("load", "store"):
        requests = ncu.TRAFFIC[("shared", access, "requests")]
        assert theirs[requests] == ours[requests], (access, ours, theirs)
