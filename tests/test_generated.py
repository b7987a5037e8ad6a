"""generated/ holds every op's default and ladder kernels (op/arch/name.cu), fresh, and each compiles with nvcc
for the arch of its folder."""
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
    on_disk = {str(p.relative_to(GENERATED)): p.read_text() for p in GENERATED.glob("*/*/*.cu")}
    stale = sorted(k for k in expected if on_disk.get(k) != expected[k])
    extra = sorted(set(on_disk) - set(expected))
    assert not stale and not extra, (f"generated/ is stale ({len(stale)} differ, {len(extra)} extra); "
                                     "run `kernelgen emit --all`")


@pytest.mark.nvcc
def test_generated_files_compile_with_nvcc(tmp_path):
    files = sorted(GENERATED.glob("*/*/*.cu"))
    assert files

    def nvcc(f: Path):
        arch = f.parent.name            # sm_90a needs the -gencode form to reach its own instructions
        cmd = ["nvcc", "-c", f"-gencode=arch=compute_{arch[3:]},code={arch}", "-DKERNELGEN_HOST_LAUNCHER",
               "-o", str(tmp_path / f"{f.stem}.o"), str(f)]
        return f, subprocess.run(cmd, capture_output=True, text=True)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for f, out in pool.map(nvcc, files):
            assert out.returncode == 0, f"{f}: {out.stderr[-2000:]}"
            assert "warning" not in out.stderr, f"{f} compiles with warnings: {out.stderr[-2000:]}"
