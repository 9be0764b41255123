#!/usr/bin/env bash
# The measurements that the open questions of chapters 8 and 9 wait for (drafts/README.md), from the project root on
# the H200 (each part's time below; all of them were run by 2026-12-02, their answers are in drafts/README.md):
#   bash .gpu/remote.sh bash drafts/open_questions.sh $OUT/questions ncu ncu8
# power     Is the H200 power-bound? Clock, power, FLOP per cycle and per joule of each kernel run alone for 4 s.
# ncu       Nsight Compute at 4096^3, BF16: the last step, its stream-K version and cuBLAS's own kernel side by side
#           (sections, then the L2 hit rate, DRAM bytes, the clock and the tensor pipe's activity as metrics; about
#           35 s; the gmma pipe metric reads n/a on the H200's ncu). Output: results/ncu-h200-hopper-4096.csv.
# ncu8      Nsight Compute at 4096^3, BF16: chapter 8's tc_wide and tc_inner (shared-memory pipe, bank conflicts, tensor
#           pipe; about 25 s). Output: results/ncu-h200-tensor-core-4096.csv.
# epilogue  Chapter 9: the per-warp epilogue (09_epilogue_experiment.py's "warp") against the last step's,
#           interleaved with cuBLAS at four sizes.
# energy    Chapter 9 at 4096^3: the last step and ping-pong with other tile-group sizes, at equal clocks and at equal
#           power (09_energy_experiment.py, about 5 minutes).
out=${1:?usage: open_questions.sh OUTPUT_DIR [power] [ncu] [ncu8] [epilogue] [energy]}
shift
parts=${*:-power ncu ncu8 epilogue energy}
mkdir -p "$out"
for part in $parts; do
  case $part in
    power)
      timeout 150 python3 scripts/power_under_load.py > "$out/power.txt" 2>&1
      echo "power_experiment: rc $?" >> "$out/power.txt" ;;
    ncu)
      kernels='regex:nvjet|wgmma_gemm_(tmastore|streamk)_bf16'
      timeout 120 ncu --clock-control none --launch-count 3 -k "$kernels" \
        --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
        --section WarpStateStats --section SchedulerStats --section LaunchStats \
        --csv --page details python3 drafts/09_tail_experiment.py --once --cublas \
        > "$out/ncu-sections.csv" 2> "$out/ncu-sections.err"
      echo "ncu sections: rc $?" >> "$out/ncu-sections.err"
      metrics=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lts__t_sector_hit_rate.pct,dram__bytes_read.sum
      metrics+=,dram__bytes_write.sum,lts__t_bytes.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
      metrics+=,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed
      timeout 90 ncu --clock-control none --launch-count 3 -k "$kernels" --metrics "$metrics" \
        --csv --page details python3 drafts/09_tail_experiment.py --once --cublas \
        > "$out/ncu-metrics.csv" 2> "$out/ncu-metrics.err"
      echo "ncu metrics: rc $?" >> "$out/ncu-metrics.err" ;;
    epilogue)
      timeout 220 python3 drafts/09_epilogue_experiment.py base warp > "$out/epilogue.txt" 2>&1
      echo "epilogue experiment: rc $?" >> "$out/epilogue.txt" ;;
    ncu8)
      metrics=gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__cycles_elapsed.avg.per_second
      metrics+=,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum
      metrics+=,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed
      metrics+=,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed
      metrics+=,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed
      timeout 150 ncu --clock-control none --launch-count 6 --metrics "$metrics" --csv --page details \
        python3 -c 'from gemmlab import gpu, registry, verify
gpu.cuda()
A, B = verify.random_operands(4096, 4096, 4096, seed=1)
for name in ("tc_wide_bf16", "tc_inner_bf16"):
    problem = registry.lookup(name).on_device(A, B)
    for _ in range(3):
        problem.launch()' > "$out/ncu8.csv" 2> "$out/ncu8.err"
      echo "ncu8: rc $?" >> "$out/ncu8.err" ;;
    energy)
      timeout 420 python3 drafts/09_energy_experiment.py > "$out/energy.txt" 2>&1
      echo "energy experiment: rc $?" >> "$out/energy.txt" ;;
    *) echo "unknown part $part (power, ncu, ncu8, epilogue, energy)" >&2; exit 2 ;;
  esac
done
tail -n 4 "$out"/*.txt "$out"/*.err 2>/dev/null
