#!/usr/bin/env bash
# The whole GPU side in one go, for a machine with a GPU, PyCUDA, nbval and ipykernel:
# execute every chapter in place, run the GPU runner (tests/gpu + nbval over the chapters), run the
# bench. Logs go to the folder given as $1 (default _build/gpu-run). Exits non-zero if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" MPLBACKEND=Agg PYTHONUNBUFFERED=1
out=${1:-_build/gpu-run}
mkdir -p "$out"
status=0
step() {  # step NAME CMD...: run, log, time
    local name=$1; shift
    local t0=$SECONDS
    "$@" > "$out/$name.log" 2>&1 || { status=1; echo "FAILED: $name"; }
    echo "$name: $((SECONDS - t0)) s"; tail -n 3 "$out/$name.log"
}
step execute bash scripts/execute.sh
step gpu-tests bash scripts/gpu-test.sh
step bench python3 -m gemmlab bench --precision all --json results/bench.json
exit $status
