"""bench/cuda_check.sh, the README's CUDA checks in one bounded run (no GPU here): it parses, its
test list is the README's CUDA command less what its header leaves out (and why), and the two
stand-ins it writes for bench/fk.py and bench/ik.py (which replace fk.py's Pinocchio reference
and keep ik.py from importing coal) still fit those scripts: they are run here, on the CPU, as
the script runs them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "cuda_check.sh"
LEFT_OUT = {"tests/test_fk_pinocchio.py", "tests/test_ik_tasks.py"}  # the script's header: they import pinocchio


def _heredoc(name: str) -> str:
    """The text the script writes to ``$HELP/<name>``."""
    text = SCRIPT.read_text()
    found = re.search(rf'cat >"\$HELP/{re.escape(name)}" <<\'EOF\'\n(.*?)\nEOF\n', text, re.S)
    assert found, f"bench/cuda_check.sh no longer writes $HELP/{name}"
    return found.group(1)


def test_the_script_parses():
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)


def test_its_tests_are_the_readmes_cuda_tests_less_the_ones_it_names():
    readme = (ROOT / "README.md").read_text()
    command = next(line for line in readme.splitlines() if line.startswith("IKSTUDIO_TEST_BACKENDS=cuda"))
    documented = set(re.findall(r"tests/\S+\.py", command))
    step = SCRIPT.read_text().split('step "pytest $BACKEND"', 1)[1].split("# 3.", 1)[0]
    ran = set(re.findall(r"tests/\S+\.py", step))
    assert ran == documented - LEFT_OUT, (sorted(ran ^ (documented - LEFT_OUT)))
    header = SCRIPT.read_text().split("set -u", 1)[0]
    assert all(name in header for name in LEFT_OUT)  # each left-out file is named, with its reason
    assert all((ROOT / name).is_file() for name in documented)


@pytest.mark.cpu_backend_only
@pytest.mark.parametrize("stub,args,expect", [
    ("fk_nopin.py", ["--backend", "cpu", "--quick"], r"(?m)^ +16384 \|.*\n(.*\n)*Pinocchio .*: nan configs/s"),
    ("ik_nocoal.py", ["--backend", "cpu", "--no-pk", "--quick", "--sizes", "16", "--collision-sizes"],
     r"(?m)^single +16 +\d+ +[0-9.]+ .* 100\.0% +100\.0%$"),
])
def test_its_bench_stand_ins_run_the_benches(stub, args, expect, tmp_path, backend):
    """Run as the script runs them (from the repository root, taichi's banner off): exit 0 and a
    table of figures, fk.py's Pinocchio column nan (not carried to the GPU machine)."""
    path = tmp_path / stub
    path.write_text(_heredoc(stub))
    env = dict(os.environ, ENABLE_TAICHI_HEADER_PRINT="0", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, str(path), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert re.search(expect, done.stdout), done.stdout[-2000:]
