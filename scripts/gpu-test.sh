#!/usr/bin/env bash
# The GPU runner: the GPU tests (tests/gpu) and nbval over every chapter, on a machine with an NVIDIA
# GPU, the CUDA toolkit and the GPU requirements (README). It never rewrites a notebook: nbval runs
# copies and compares their outputs with the stored ones, minus the cells tagged as device-dependent.
# GEMMLAB_ARCH=compute_75 bash scripts/gpu-test.sh runs it all with every kernel compiled to PTX for
# the T4's architecture and JIT-compiled by the driver. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" MPLBACKEND=Agg PYTHONUNBUFFERED=1
exec python3 -m pytest -p no:cacheprovider -ra tests/gpu --nbval chapters/ --nbval-current-env \
    --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=600 "$@"
