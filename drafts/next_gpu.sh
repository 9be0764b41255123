#!/usr/bin/env bash
# The next GPU session's work (drafts/README.md, "Waiting for a GPU"), in commands that each fit the device's 600 s,
# from the project root on the H200:  bash .gpu/remote.sh bash drafts/next_gpu.sh $OUT PART
# Before A, here: git apply drafts/pending-08_inner.patch drafts/pending-08_steady_state.patch, and fix BF16's
# "8-bit" in gemmlab/precisions.py (chapter 7). After A, here: tar xzf FILES_AT/nb.tgz, so that B checks the
# executed notebooks (nbval over the old copies fails on every kernel hash: 2026-12-01).
#   A  execute chapters 8, 7, 1 and 2 in place (about 250 + 100 + 25 + 30 s), notebooks back as nb.tgz
#   B  nbval over the same four chapters (about as long)
#   C  tests/gpu (about 300 s), nbval over chapters 0, 3, 4, 5, 6 (about 120 s: gemmlab changed since their last nbval)
#      and one short run of scripts/power_under_load.py (30 s)
#   D  the energy experiment (drafts/09_energy_experiment.py, about 300 s) and Nsight Compute at 4096^3 (open_questions.sh ncu)
set -uo pipefail
out=${1:?usage: next_gpu.sh OUTPUT_DIR A|B|C|D}
part=${2:?usage: next_gpu.sh OUTPUT_DIR A|B|C|D}
mkdir -p "$out/logs"
export MPLBACKEND=Agg PYTHONUNBUFFERED=1
CHAPTERS="chapters/08_tensor_cores.ipynb chapters/07_toward_cublas.ipynb chapters/01_naive.ipynb chapters/02_tiled.ipynb"
run() {  # run NAME SECONDS CMD...: a step under a time limit, its log and time in $out/logs
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" > "$out/logs/$name.log" 2>&1
    echo "$name: rc $? in $((SECONDS - t0)) s" | tee -a "$out/logs/summary"
}
case $part in
  A) for nb in $CHAPTERS; do run "execute-$(basename "$nb" .ipynb)" 330 bash scripts/execute.sh "$nb"; done
     tar czf "$out/nb.tgz" $CHAPTERS ;;
  B) run nbval 560 python3 -m pytest -p no:cacheprovider -q -ra --nbval $CHAPTERS --nbval-current-env \
         --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=330 ;;
  C) run gpu-tests 360 python3 -m pytest -p no:cacheprovider -q -ra tests/gpu
     run nbval-rest 150 python3 -m pytest -p no:cacheprovider -q -ra --nbval chapters/00_*.ipynb chapters/03_*.ipynb \
         chapters/04_*.ipynb chapters/05_*.ipynb chapters/06_*.ipynb --nbval-current-env \
         --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=120
     run power 90 python3 scripts/power_under_load.py --sizes 4096 --seconds 3 --kernels tc_wide_bf16 tc_inner_bf16 ;;
  D) run energy 330 python3 drafts/09_energy_experiment.py
     run ncu 240 bash drafts/open_questions.sh "$out/questions" ncu ;;
  *) echo "unknown part $part (A, B, C or D)" >&2; exit 2 ;;
esac
tail -n 3 "$out"/logs/*.log; cat "$out/logs/summary"
