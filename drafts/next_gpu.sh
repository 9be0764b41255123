#!/usr/bin/env bash
# The next GPU session's work (drafts/README.md, "Waiting for a GPU"), in commands that each fit the device's 600 s,
# from the project root on the H200:  bash .gpu/remote.sh bash drafts/next_gpu.sh $OUT PART
# All seven take about 1,750 s of device time with one start: where a session has less, P first (it checks code already
# in main), then A (the bench JSON issue #17's acceptance asks for), D and E (what limits chapter 8; chapter 9's L2
# gap), F, and B with C last.
#   P  the GPU checks of what changed on 2026-12-02 without a GPU: probes.mma_probe (from mma_ceiling and the power
#      script) and compiler.capability (which the tensor-core launcher and the probes now read the compiled
#      architecture with): the tensor-kernel, probe, steady-state and bench tests, and one short run of
#      scripts/power_under_load.py (about 3 min)
# Before B, here: git apply drafts/pending-09_sizes_interleaved.patch. After B, here: tar xzf FILES_AT/nb.tgz, so
# that C checks the executed notebook (nbval over the old copy fails on its changed cell).
#   A  python -m gemmlab bench, every precision, the default sizes -> bench.json (results/bench.json lacks chapter 8's
#      last step, tc_inner; the float64 references at 8192^3 take most of the time)
#   B  execute chapter 9 with its sizes table interleaved (about 250 s), the notebook back as nb.tgz
#   C  nbval over chapter 9 (about 200 s)
#   D  issue #18: where cuBLAS's 18% fewer L2 bytes come from at 4096^3 (results/ncu-h200-hopper-4096.csv): the L2's
#      sectors by source (the SMs or the fabric between the L2's two halves) and by operation, for the last step and
#      cuBLAS's kernel; the metric names are listed first, since a wrong one makes ncu refuse the whole run. And
#      issue #17: what chapter 8's copies cost, bytes or instructions (drafts/08_copy_path_experiment.py, about 1 min),
#      and what tc_inner's half-empty last wave and its tile order cost at 8192^3 (08_tail_group_experiment.py, 3 min)
#   E  Nsight Compute's memory and warp-state sections on chapter 8's steady loop with copies and on tc_inner_bf16 at
#      4096^3 (about 90 s: is the loop bound by the L2's bandwidth, and which stall idles the tensor pipe 29% of the time: #17)
#   F  issue #17: chapter 8's last step with a stream-K tail (drafts/08_streamk_tail_experiment.py, about 3 min):
#      correctness at awkward sizes and forced splits, then timed interleaved against tc_inner and cuBLAS
set -uo pipefail
out=${1:?usage: next_gpu.sh OUTPUT_DIR A|B|C|D|E|F|P}
part=${2:?usage: next_gpu.sh OUTPUT_DIR A|B|C|D|E|F|P}
mkdir -p "$out/logs"
export MPLBACKEND=Agg PYTHONUNBUFFERED=1
run() {  # run NAME SECONDS CMD...: a step under a time limit, its log and time in $out/logs
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" > "$out/logs/$name.log" 2>&1
    echo "$name: rc $? in $((SECONDS - t0)) s" | tee -a "$out/logs/summary"
}
case $part in
  A) run bench 560 python3 -m gemmlab bench --precision all --json "$out/bench.json" ;;
  E) # Is chapter 8's loop bound by the L2? At 80% of the probe the copies pull about 5.9 TB/s from it (24 KiB per
     # 2.1 MFLOP tile); Nsight Compute's memory and warp-state sections on the steady loop with copies and on tc_inner
     sections="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats"
     run ncu-steady 150 ncu --clock-control none --launch-skip 2 --launch-count 1 -k regex:steady_copies $sections \
         --csv --page details python3 -c 'from gemmlab import probes; probes.steady_state("copies", iters=1024)'
     run ncu-inner 150 ncu --clock-control none --launch-skip 1 --launch-count 1 -k regex:_in_bf16 $sections \
         --csv --page details python3 -c 'from gemmlab import gpu, registry, verify
gpu.cuda()
A, B = verify.random_operands(4096, 4096, 4096, seed=1)
problem = registry.lookup("tc_inner_bf16").on_device(A, B)
for _ in range(3):
    problem.launch()' ;;
  B) run execute-09 560 bash scripts/execute.sh chapters/09_hopper.ipynb
     tar czf "$out/nb.tgz" chapters/09_hopper.ipynb ;;
  C) run nbval-09 400 python3 -m pytest -p no:cacheprovider -q -ra --nbval chapters/09_hopper.ipynb --nbval-current-env \
         --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=330 ;;
  P) run test-bench-probes 300 python3 -m pytest -p no:cacheprovider -q -ra tests/gpu/test_bench.py \
         tests/gpu/test_steady_state.py tests/gpu/test_tensor_kernels.py tests/gpu/test_mma_probe.py
     run power 60 python3 scripts/power_under_load.py --sizes 1024 --seconds 2 --kernels tc_inner_bf16 ;;
  D) run ncu-query 60 bash -c 'ncu --query-metrics --chip gh100 | grep -E "^lts__t_(sectors|requests)_(srcunit|op)"'
     metrics=lts__t_sectors.sum,lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_ltcfabric.sum
     metrics+=,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_op_red.sum
     run ncu-l2 150 ncu --clock-control none --launch-count 2 -k 'regex:nvjet|wgmma_gemm_tmastore_bf16' \
         --metrics "$metrics" --csv --page details python3 drafts/09_tail_experiment.py --once --cublas
     run copy-path 200 python3 drafts/08_copy_path_experiment.py
     run tail-group 300 python3 drafts/08_tail_group_experiment.py ;;
  F) run streamk-tail 400 python3 drafts/08_streamk_tail_experiment.py ;;
  *) echo "unknown part $part (A, B, C, D, E, F or P)" >&2; exit 2 ;;
esac
tail -n 3 "$out"/logs/*.log; cat "$out/logs/summary"
