"""generated/ holds every op's default and ladder kernels for sm_90, fresh, and each compiles with nvcc."""
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
import subprocess
from pathlib import Path

import pytest

from kernelgen.emit import expected_files

GENERATED = Path(__file__).resolve().parent.parent / "generated"


def test_generated_is_fresh():
    expected = expected_files("sm_90")
    on_disk = {str(p.relative_to(GENERATED)): p.read_text() for p in GENERATED.glob("*/*.cu")}
    stale = sorted(k for k in expected if on_disk.get(k) != expected[k])
    extra = sorted(set(on_disk) - set(expected))
    assert not stale and not extra, (f"generated/ is stale ({len(stale)} differ, {len(extra)} extra); "
                                     "run `kernelgen emit --all`")


@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc not on PATH")
def test_generated_files_compile_with_nvcc(tmp_path):
    files = sorted(GENERATED.glob("*/*.cu"))
    assert files

    def nvcc(f: Path):
        cmd = ["nvcc", "-c", "-arch=sm_90", "-o", str(tmp_path / f"{f.stem}.o"), str(f)]
        return f, subprocess.run(cmd, capture_output=True, text=True)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for f, out in pool.map(nvcc, files):
            assert out.returncode == 0, f"{f}: {out.stderr[-2000:]}"
