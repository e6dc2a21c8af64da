#!/usr/bin/env bash
# cuda.core's own test suite on cuda-sim, run by hand (not in CI: cuda-core has
# no source distribution on PyPI, so its tests come from the cuda-python
# repository, and they stay outside this one).
#
#   .ci/cuda_core/run.sh [PYTEST ARGS...]
#
# Environment (all optional):
#   CUDA_PYTHON  a clone of https://github.com/NVIDIA/cuda-python (a bare one
#                too) holding COMMIT; without it, it is cloned into WORK
#   COMMIT       the cuda-python commit whose tests run (default below)
#   WORK         where the venv, the tests and the results go
#                (default: /tmp/aruntime-cuda-core)
#   LIB_DIR      the directory of cuda-sim's libcuda.so.1 (default: this
#                checkout's, built by aruntime's Python: PYTHON below)
#   PYTHON       a Python with this checkout installed (default: .venv/bin/python)
#   TIMEOUT      seconds per test (default 180)
#
# What it does: a venv with .ci/cuda_core/requirements.txt (cuda-core 1.2.2,
# cuda-bindings 13.5.0, NVRTC 13.5); cuda_core/tests, its examples and the
# shared test helpers of COMMIT; cuda.bindings' test helpers of COMMIT copied
# into the venv (the wheel does not ship them); one import the 1.2.2 wheel no
# longer exports moved to the module that defines it; then pytest with
# libcuda.so.1 from LIB_DIR, tests/system left out (it tests NVML, a library
# cuda-sim does not provide), and the JUnit XML summarized by summarize.py.
#
# COMMIT is the newest commit the snapshot used here had (cuda-core 1.2.2's
# own commit, g59e5faa1d, was not in it); cuda-core 1.2.2 and its tests agree
# except where summarize.py counts "Python-level" failures.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
COMMIT="${COMMIT:-cb56ab9f9ae3b4a0ef19666697336945925589a5}"
WORK="${WORK:-/tmp/aruntime-cuda-core}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
TIMEOUT="${TIMEOUT:-180}"
mkdir -p "$WORK"

if [ -z "${LIB_DIR:-}" ]; then
    LIB_DIR="$(cd "$ROOT" && "$PYTHON" -c \
        'import aruntime._native as n; print(n.native_library_path("libcuda.so.1").parent)')"
fi
[ -e "$LIB_DIR/libcuda.so.1" ] || { echo "no libcuda.so.1 in $LIB_DIR" >&2; exit 1; }

if [ -z "${CUDA_PYTHON:-}" ]; then
    CUDA_PYTHON="$WORK/cuda-python.git"
    [ -d "$CUDA_PYTHON" ] || git clone --bare --filter=blob:none \
        https://github.com/NVIDIA/cuda-python "$CUDA_PYTHON"
fi
git -C "$CUDA_PYTHON" cat-file -e "$COMMIT^{commit}" 2>/dev/null || {
    echo "$CUDA_PYTHON lacks commit $COMMIT (fetch it, or set COMMIT)" >&2
    exit 1
}

VENV="$WORK/venv"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q -r "$HERE/requirements.txt"
fi

SRC="$WORK/src-${COMMIT:0:12}"
if [ ! -d "$SRC" ]; then
    mkdir -p "$SRC.tmp"
    git -C "$CUDA_PYTHON" archive "$COMMIT" cuda_core/tests cuda_core/examples \
        cuda_core/pytest.ini cuda_python_test_helpers cuda_bindings/cuda/bindings/_test_helpers |
        tar -x -C "$SRC.tmp"
    # cuda-core 1.2.2's cuda.core._memory exports only its __all__; the
    # descriptor is still there, in the module that defines it.
    sed -i 's/^from cuda\.core\._memory import IPCBufferDescriptor$/from cuda.core._memory._ipc import IPCBufferDescriptor/' \
        "$SRC.tmp/cuda_core/tests/test_memory.py" "$SRC.tmp/cuda_core/tests/memory_ipc/test_errors.py"
    mv "$SRC.tmp" "$SRC"
fi
SITE="$("$VENV/bin/python" -c 'import cuda.bindings, os; print(os.path.dirname(cuda.bindings.__file__))')"
rm -rf "$SITE/_test_helpers"
cp -r "$SRC/cuda_bindings/cuda/bindings/_test_helpers" "$SITE/_test_helpers"

RESULTS="$WORK/results-${COMMIT:0:12}.xml"
cd "$SRC/cuda_core"
set +e
LD_LIBRARY_PATH="$LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$VENV/bin/python" -m pytest \
    -p no:cacheprovider -q --timeout="$TIMEOUT" --ignore=tests/system \
    -o junit_logging=system-err --junitxml="$RESULTS" "$@" tests >"$WORK/pytest.log" 2>&1
status=$?
set -e
tail -n 1 "$WORK/pytest.log"
echo "log: $WORK/pytest.log; results: $RESULTS"
"$VENV/bin/python" "$HERE/summarize.py" "$RESULTS" --json "$WORK/summary.json"
# pytest's own status: 1 (some tests failed) is the expected outcome here.
[ "$status" -le 1 ]
