#!/usr/bin/env bash
# The README's CUDA checks ("On a machine with a CUDA GPU") in one bounded run, for a machine whose
# Python lacks the project's dependencies and has no network (the device machine: wheels in .whl/).
#
#   bash bench/cuda_check.sh [BACKEND]     # BACKEND: cuda (default) or cpu (a dry run of the same steps)
#
# Steps (each under `timeout`, bounded by a total budget, CK_BUDGET seconds, default 420, the tests by
# CK_PYTEST_TIMEOUT, default 270; pytest workers: CK_WORKERS, default 9 on 12+ cores; a failing
# step does not stop the others): install .whl/*.whl into /tmp/site (pip --no-index --target), versions,
# a smoke `ikstudio bench`, the reference tests on BACKEND, bench/fk.py and bench/ik.py on BACKEND then on
# the CPU. Full logs go to $OUT (default ./out, git-ignored), at most 8 files; stdout gets each log's tail
# and a summary.
#
# Left out, for want of carried packages (Pinocchio, coal and example-robot-data do not fit in the
# transfer limit): tests/test_fk_pinocchio.py and tests/test_ik_tasks.py (both import pinocchio), the
# ur5 / xarm7 cases of tests/test_ik_success.py and tests/test_static_kernels.py::test_which_robots_qualify
# (example-robot-data robots); bench/fk.py's Pinocchio reference (its figures print nan) and bench/ik.py's
# collision-aware case (--collision-sizes with no value; it judges targets with Pinocchio + coal).
set -u
cd "$(dirname "$0")/.."
BACKEND="${1:-cuda}"
PY="${PYTHON:-python3}"
OUT="${OUT:-$PWD/out}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 ENABLE_TAICHI_HEADER_PRINT=0 TI_ENABLE_TELEMETRY=0 TI_SKIP_VERSION_CHECK=ON
BUDGET="${CK_BUDGET:-420}"
T0=$SECONDS
SUMMARY=()

# step NAME TIMEOUT LOGFILE CMD...: runs CMD under timeout (never past the total budget), full log to $OUT/LOGFILE
step() {
    local name=$1 limit=$2 log=$3; shift 3
    local left=$((BUDGET - (SECONDS - T0)))
    if [ "$left" -lt 15 ]; then
        SUMMARY+=("$(printf '%-22s skipped (budget spent)' "$name")"); return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    printf '\n===== %s (timeout %ss) =====\n' "$name" "$limit"
    local t=$SECONDS rc
    set -o pipefail
    timeout -k 10 "$limit" "$@" >"$OUT/$log" 2>&1
    rc=$?
    set +o pipefail
    grep -v -e "SyntaxWarning: invalid escape sequence" -e '"""Save a field to a a specific file.' "$OUT/$log" | tail -n "${CK_TAIL:-25}"
    local what="rc $rc"; [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && what="TIMED OUT ($rc)"
    SUMMARY+=("$(printf '%-22s %-16s %4ss  %s' "$name" "$what" "$((SECONDS - t))" "$log")")
}

{  # install and machine: also in $OUT/0_machine.log (the head of stdout may not come back)
echo "===== install .whl/*.whl -> /tmp/site ====="
if ls .whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        || { echo "wheel install failed"; INSTALL_FAILED=1; }
    export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
    echo "no .whl/: using this Python's own packages"
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
echo "install: $((SECONDS - T0)) s"

HELP=/tmp/cuda_check_py
mkdir -p "$HELP"
cat >"$HELP/probe.py" <<'EOF'
import sys, numpy, taichi as ti, mujoco, trimesh, pydantic
print("python", sys.version.split()[0], sys.executable)
print("taichi", ".".join(map(str, ti.__version__)), "| numpy", numpy.__version__, "| mujoco", mujoco.__version__,
      "| trimesh", trimesh.__version__, "| pydantic", pydantic.__version__)
from engine.runtime import devices
print("CUDA device:", devices.cuda_device_name() or "none")
import engine
arch = engine.init(backend=sys.argv[1], precision="32")
x = ti.field(ti.f32, 1 << 20)
@ti.kernel
def fill():
    for i in x:
        x[i] = ti.sqrt(ti.cast(i, ti.f32))
fill()
ok = abs(float(x.to_numpy()[-1]) - ((1 << 20) - 1) ** 0.5) < 1e-2
print(f"engine.init(backend={sys.argv[1]!r}) -> {arch.describe()}; a kernel ran: {'ok' if ok else 'WRONG ANSWER'}")
EOF
echo "===== machine ====="
command -v nvidia-smi >/dev/null && nvidia-smi -L
echo "cores: $(nproc)"
if [ "$BACKEND" = cuda ]; then
    # taichi 1.7.4 dlopens "libcuda.so", which a driver mounted into a container often lacks (only
    # libcuda.so.1): link the libcuda.so.1 the loader finds under that name, first on LD_LIBRARY_PATH
    ldconfig -p 2>/dev/null | grep -F libcuda.so
    LIBCUDA=$("$PY" - <<'EOF'
import ctypes
try:
    ctypes.CDLL("libcuda.so.1")
except OSError:
    raise SystemExit(0)
for line in open("/proc/self/maps"):
    if "/libcuda.so" in line.split()[-1]:
        print(line.split()[-1])
        break
EOF
)
    if [ -n "$LIBCUDA" ]; then
        mkdir -p /tmp/cuda_check_lib && ln -sf "$LIBCUDA" /tmp/cuda_check_lib/libcuda.so
        export LD_LIBRARY_PATH="/tmp/cuda_check_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        echo "libcuda: $LIBCUDA, linked as /tmp/cuda_check_lib/libcuda.so (on LD_LIBRARY_PATH)"
    else
        echo "libcuda.so.1 does not load"
    fi
fi
timeout 120 "$PY" "$HELP/probe.py" "$BACKEND" 2>&1 | grep -v -e "SyntaxWarning: invalid escape" -e "Save a field to a a"
} >"$OUT/0_machine.log" 2>&1
cat "$OUT/0_machine.log"
[ -z "${INSTALL_FAILED:-}" ] || exit 1

# bench/fk.py and bench/ik.py, with the uncarried references stubbed (see the header)
cat >"$HELP/fk_nopin.py" <<'EOF'
import sys
sys.path.insert(0, "bench")
import fk  # bench/fk.py (main() runs only under __main__)
class _NoPinocchio:  # Pinocchio + example-robot-data not carried: the reference figures print nan
    def __init__(self, *a, **k): pass
    def rate(self, n=None): return float("nan")
fk.PinocchioLoop = _NoPinocchio
fk.side_by_side = lambda rounds, calls, pin, rng: [float("nan")]
sys.argv = ["bench/fk.py", *sys.argv[1:]]
fk.main()
EOF
cat >"$HELP/ik_nocoal.py" <<'EOF'
import sys, types
# bench/ik.py imports its collision case (bench/_collision.py -> tests/_coal.py: coal, pinocchio);
# empty stand-ins let it import, and --collision-sizes with no value skips that case.
for name in ("coal", "pinocchio"):
    sys.modules.setdefault(name, types.ModuleType(name))
sys.path.insert(0, "bench")
import ik
ik.main(sys.argv[1:])
EOF

# 1. smoke: does the backend start and solve at all (ikstudio bench == python -m app bench)
step "ikstudio bench $BACKEND" 60 "1_ikstudio_bench.log" \
    bash -c "'$PY' -m app bench --backend $BACKEND && '$PY' -m app bench --backend $BACKEND --n-envs 16384"

# 2. the reference tests on BACKEND (README's list less what needs Pinocchio / example-robot-data)
# one worker per test file where the cores allow (9 files; conftest's `-n auto` stops at 4): each
# worker compiles its own kernels, and a cold compile is most of the run
WORKERS="${CK_WORKERS:-$([ "$(nproc)" -ge 12 ] && echo 9 || echo auto)}"
TIMEOUT_OPT=()
"$PY" -c "import pytest_timeout" 2>/dev/null && TIMEOUT_OPT=(--timeout=240)
step "pytest $BACKEND" "${CK_PYTEST_TIMEOUT:-270}" "2_pytest.log" \
    env CI=true IKSTUDIO_TEST_BACKENDS="$BACKEND" "$PY" -m pytest -v -n "$WORKERS" -rfEs --durations=10 \
    "${TIMEOUT_OPT[@]}" \
    --junitxml="$OUT/2_pytest_junit.xml" \
    -k "not ur5 and not xarm7 and not test_which_robots_qualify" \
    tests/test_fk_mujoco.py tests/test_jacobian_fd.py tests/test_ik_success.py tests/test_ik_semantics.py \
    tests/test_ik_flags.py tests/test_state_api.py tests/test_ik_plan.py tests/test_static_kernels.py \
    tests/test_thread_safety.py

# 3. benches on BACKEND, then on the CPU (the same machine, for comparison)
step "fk.py $BACKEND" 45 "3_fk_$BACKEND.log" "$PY" "$HELP/fk_nopin.py" --backend "$BACKEND"
IK_SIZES=()
[ "$BACKEND" = cuda ] && IK_SIZES=(--sizes 1 16 256 1024 4096 16384 65536)
step "ik.py $BACKEND" 90 "4_ik_$BACKEND.log" "$PY" "$HELP/ik_nocoal.py" --backend "$BACKEND" --no-pk \
    --collision-sizes "${IK_SIZES[@]}"
if [ "$BACKEND" != cpu ]; then
    step "fk.py cpu" 35 "5_fk_cpu.log" "$PY" "$HELP/fk_nopin.py" --backend cpu
    step "ik.py cpu" 60 "6_ik_cpu.log" "$PY" "$HELP/ik_nocoal.py" --backend cpu --no-pk --collision-sizes
fi

echo
echo "===== summary ($BACKEND, $((SECONDS - T0)) s in all; logs in $OUT) ====="
printf '%s\n' "${SUMMARY[@]}"
grep -hE "^(=+ .*(passed|failed|error).* =+|[0-9]+ (passed|failed).*)$" "$OUT/2_pytest.log" 2>/dev/null | tail -1
if [ "$BACKEND" != cpu ] && grep -qs "did not start" "$OUT"/0_*.log "$OUT"/1_*.log "$OUT"/3_*.log "$OUT"/4_*.log; then
    echo "WARNING: backend '$BACKEND' did not start (probe or a bench): those figures are the CPU's (see the logs)"
fi
