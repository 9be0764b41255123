#!/usr/bin/env bash
# GPU work for the drafts (drafts/README.md, "Waiting for a GPU"), in commands that each fit the device's 600 s,
# from the project root on the H200:  bash .gpu/remote.sh bash drafts/next_gpu.sh $OUT PART
# Next: drafts/README.md, "Still waiting". Every part also reproduces a file in results/ (2026-12-02). B and C of one
#   chapter take one command each (together they need 480-660 of the 600 s; chapter 8's B about 345 s, C 315 s).
#   A  python -m gemmlab bench, every precision, the default sizes -> bench.json (results/bench.json; about 340 s)
#   B  execute a chapter (third argument, its number; 09 by default: about 245 s, 08: about 265 s), the notebook back
#      as nb-NN.tgz; here afterwards: tar xzf FILES_AT/nb-NN.tgz
#   C  nbval over a chapter (09 about 215 s, 08 about 200 s; over the executed copy, so unpack B's first)
#   D  issue #18: the L2's sectors by source (the SMs or the fabric between the L2's two halves) and by operation, for
#      chapter 9's last step and cuBLAS's kernel at 4096^3 (results/ncu-h200-l2-sources-4096.csv); the metric names
#      are listed first, since a wrong one makes ncu refuse the whole run
#   F  issue #18: the same counters for the last step built with tile groups of 1, 2, 4, 8, 16 and 32 rows, BF16
#      4096^3 (drafts/09_energy_experiment.py --once; the launches in the order it prints, two each, the second the
#      one to read): does the tile order move the traffic between the L2's halves, where cuBLAS has 33% less?
#   G  tests/gpu in full (about 240 s)
#   H  issue #18: chapter 9's last step in clusters of 2 x 2 blocks that share A as well as B
#      (drafts/09_cluster4_experiment.py): correctness in a short process of its own (a wrong barrier count hangs),
#      then interleaved with cuBLAS and the last step at 4096^3 and 8192^3, then Nsight Compute's L2 bytes of both at
#      4096^3 (results/cluster4-h200.txt; about 100 s)
#   E  Nsight Compute's memory and warp-state sections and the stall reasons on chapter 8's steady loop with copies
#      and on tc_inner_bf16 at 4096^3 (results/ncu-h200-tensor-core-stalls-4096.csv; about 20 s)
#   Q  issue #17: the mma.sync probe with 1, 2, 3 or 4 warps per scheduler, one block per SM, against the chapter's
#      (16 per scheduler): does the ceiling need more warps than tc_inner's 2? (drafts/08_probe_warps_experiment.py,
#      about 20 s)
#   S  Nsight Compute's warp-stall sampling by SASS instruction on tc_inner_bf16 at 4096^3 (the report, its source
#      page and details; results/ncu-h200-tc-inner-source-4096.csv keeps the sampled rows; about 30 s)
#   T  the GPU tests of chapter 8's kernels: tensor kernels, the Hopper step, sanitizer, JIT target, size-aware (about 160 s)
#   W  issue #17: is FP16 behind BF16 (78.0 against 79.9% of the probe, cuBLAS 4.6% behind too) because it draws more
#      power? The probe, cuBLAS and tc_inner at 8192^3 for 3 s each in both formats, clock and watts sampled: if
#      FP16's FLOP per cycle matches BF16's, the gap is the clock the power limit allows (about 60 s)
#   Y  issue #17: tc_inner against its shared destinations also carried, or its inner K-tiles in a loop of their own
#      without the bounds check (drafts/08_carried_pointers_experiment.py; results/carried-pointers-h200.txt, from
#      the variants on the kernel before the carried source pointers; about 60 s)
#   L  issue #17: chapter 8's last two steps, tc_inner and tc_tail, interleaved with cuBLAS at 8192^3 and 4096^3 (the
#      bench's --interleaved, FP16 then BF16; bench-tail-*.json): the shared wave at equal clocks, as published
#   U  issue #17: chapter 8's steady loop with its copies made by the copy engine instead of the warps: row by row
#      with cp.async.bulk (fenced per copy as in the switch, or once), or as five tensor-map boxes per tile by one
#      thread (cp.async.bulk.tensor, the copy engine's swizzles) of a computing warp or of a producer warpgroup of
#      its own (tma_ws, sm_90a), interleaved with steady_barrier and steady_copies;
#      then, with the switch patch applied here before the call (git show 1119565:drafts/08_bulk_switch_next.patch |
#      git apply), tc_inner's configuration with BULK checked at awkward sizes and interleaved against tc_inner at
#      8192^3 and 4096^3, FP16 and BF16 (drafts/08_copy_engine_experiment.py; a wrong byte count would hang, hence
#      the time limit; about 30 s, 70 s with the switch; the bulk part and the switch: results/bulk-copy-h200.txt)
#   V  issue #17: chapter 8's mma.sync probe against the same loop with registers of its own per chain, values near
#      1.0 or random, short and sustained (clock and power), and tc_tail at 8192^3 (drafts/08_probe_data_experiment.py
#      --kernels; results/probe-data-h200.txt; about 70 s)
#   R  issue #18: the last step with L2 priorities on its copies (evict_last / evict_first on A's and B's loads and
#      C's stores) and tile groups of 8 or 16, interleaved with cuBLAS and alone at the power limit, 4096^3 and 8192^3;
#      then Nsight Compute's DRAM bytes, L2 hit rate and sectors of each at 4096^3 (drafts/09_l2_residency_experiment.py;
#      about 250 s)
#   Z  issue #18: does cuBLAS read fewer L2 sectors because the L2's request coalescer (LRC) merges its blocks'
#      requests? The LRC metrics this ncu knows, then those of the last step and cuBLAS's kernel at 4096^3, BF16, with
#      the L2's sectors by source (about 90 s)
#   O  issue #18: the last step with its persistent unit taken from the TPC (%smid / 2) of the cluster's first block,
#      and with row-major tile order, checked and interleaved with cuBLAS at 4096^3, then the L2 coalescer's merged
#      requests of each (drafts/09_sm_order_experiment.py; results/sm-order-h200.txt; about 100 s)
#   N  issue #18: the epilogue split in halves, the right half stored under the next tile's first K-tiles
#      (drafts/09_split_epilogue_experiment.py; about 200 s)
#   EC issue #18: what the epilogue's 1.9 us without stores consist of (fence, barriers, writes left out, timing only),
#      and the boxes written in pairs, one fence for two (drafts/09_epilogue_cost_experiment.py; about 200 s)
#   OB issue #18, next: one warpgroup barrier per epilogue box instead of two, alone and with the split epilogue
#      (drafts/09_one_barrier_experiment.py, compile-checked; about 200 s)
#   SB issue #18: the last step's producer asking for each stage in smaller boxes (A in 1 or 2, its half of B in 2 or
#      4, as cuBLAS's kernel asks for its shared operand in 4), checked in a process of its own, timed interleaved
#      with cuBLAS at the goal's sizes, then the L2 coalescer's merges of each (drafts/09_subbox_experiment.py; ~250 s)
#   ST issue #18: who issues the epilogue's stores: the consumer's four warps in turn, or two idle warps of the
#      producer warpgroup (the consumers then wait for no store and no issuing thread), and, for timing only, the
#      issuer without its fence; stamped, checked, timed interleaved with cuBLAS (drafts/09_storer_experiment.py; ~200 s)
#   CS issue #18: the SASS of the kernel cuBLAS runs at 4096^3 (BF16, FP32 C) and of the last step, through Nsight Compute
#      with stall samples per instruction (drafts/09_cublas_sass.sh; its epilogue next to the last step's; about 120 s)
#   P  issue #18: when the last step's blocks ask for the tiles they share (the producer's requests stamped with
#      %globaltimer at 4096^3: how long after another request for the same K-tile of the same slab each comes), and a
#      serpentine tile order checked, timed interleaved and profiled (DRAM reads, coalescer merges)
#      (drafts/09_phase_experiment.py; about 120 s)
#   K  issue #18: the last step with its producer asking on a shared clock (each K-tile's requests wait for the next
#      multiple of 128, 256 or 512 ns of %globaltimer, so that blocks sharing a tile ask together), and asking for B
#      before A; checked, timed interleaved with cuBLAS at 4096^3 and 8192^3, then the coalescer's merged sectors and
#      DRAM reads of each (drafts/09_clock_align_experiment.py; about 150 s)
#   J  issue #18: the last step with consumer 1 starting 500, 1000 or 2000 ns late, so that the two consumers take
#      turns at the epilogue while sharing every tile; checked, timed interleaved with cuBLAS at the four sizes of the
#      goal, then the coalescer's merged sectors and DRAM reads of each (drafts/09_lag_experiment.py; about 200 s)
#   I  issue #18: where stream-K's shared round loses its time at 4096^3 (%globaltimer stamps of every phase), and
#      stream-K with each first part's flag raised after the next main loop; checked, timed interleaved with cuBLAS
#      and the last step at 4096^3 and 8192^3 (drafts/09_streamk_phases_experiment.py; about 150 s)
#   M  issue #18: the last step with the clusters of odd units starting 1.5 or 3 us late, so that not every block
#      stores its tile of C at once, and with its stores left out (timing only); the epilogue stamped, checked, timed
#      interleaved with cuBLAS at 4096^3 and 8192^3 (drafts/09_stagger_experiment.py; about 100 s)
#   X  chapter 8's four experiments of 2026-12-02 again (copy path, warp tiles, copy order, tail and tile groups;
#      results/copy-path-h200.txt, warp-tiles-h200.txt, copy-order-h200.txt, tail-group-tc-inner-h200.txt, measured
#      on tc_inner before the carried source pointers; about 300 s)
#   VG issue #18's last checks: nbval over chapters 8 and 9 and tests/gpu (with the sanitizer) side by side, each with
#      a TMPDIR of its own for PyCUDA's compile cache; none of the outputs nbval compares depends on timing, so the
#      three may share the GPU (alone: about 200, 215 and 330 s; together, give them the command's 560)
#   BH issue #18's bench JSON, alone on the GPU: chapter 9's last three steps, stream-K and ping-pong interleaved
#      with cuBLAS at the goal's sizes, BF16 then FP16 (bench-hopper-chapter9-*.json for results/; about 150-250 s)
set -uo pipefail
out=${1:?usage: next_gpu.sh OUTPUT_DIR A|B|C|...|Z|VG|BH (the list above) [CHAPTER]}
part=${2:?usage: next_gpu.sh OUTPUT_DIR A|B|C|...|Z|VG|BH (the list above) [CHAPTER]}
chapter=${3:-09}   # B and C: the chapter, by its number
mkdir -p "$out/logs"
export MPLBACKEND=Agg PYTHONUNBUFFERED=1
# tc_inner_bf16 at 4096^3, launched three times (the profiled launch is the second)
TC_INNER_4096='from gemmlab import gpu, registry, verify
gpu.cuda()
A, B = verify.random_operands(4096, 4096, 4096, seed=1)
problem = registry.lookup("tc_inner_bf16").on_device(A, B)
for _ in range(3):
    problem.launch()'
# the L2's sectors by source unit (the SMs: tex; the link between the L2's halves: ltcfabric) and by operation
L2_SOURCES=lts__t_sectors.sum,lts__t_sectors_srcunit_tex.sum,lts__t_sectors_srcunit_ltcfabric.sum
L2_SOURCES+=,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_op_red.sum
run() {  # run NAME SECONDS CMD...: a step under a time limit, its log and time in $out/logs
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS
    timeout "$limit" "$@" > "$out/logs/$name.log" 2>&1
    echo "$name: rc $? in $((SECONDS - t0)) s" | tee -a "$out/logs/summary"
}
nbval() {  # nbval CHAPTER SECONDS CELL_SECONDS: pytest --nbval over one chapter, as a step of its own
    run nbval-$1 "$2" python3 -m pytest -p no:cacheprovider -q -ra --nbval chapters/$1*.ipynb --nbval-current-env \
        --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout="$3"
}
case $part in
  A) run bench 560 python3 -m gemmlab bench --precision all --json "$out/bench.json" ;;
  B) run execute-$chapter 560 bash scripts/execute.sh chapters/$chapter*.ipynb
     tar czf "$out/nb-$chapter.tgz" chapters/$chapter*.ipynb ;;
  C) nbval $chapter 400 330 ;;
  T) run tests-tensor 300 python3 -m pytest -p no:cacheprovider -q -ra tests/gpu/test_tensor_kernels.py tests/gpu/test_tc_tma.py \
         tests/gpu/test_sanitizer.py tests/gpu/test_jit_target.py tests/gpu/test_size_aware.py ;;
  D) run ncu-query 60 bash -c 'ncu --query-metrics --chip gh100 | grep -E "^lts__t_(sectors|requests)_(srcunit|op)"'
     run ncu-l2 150 ncu --clock-control none --launch-count 2 -k 'regex:nvjet|wgmma_gemm_tmastore_bf16' \
         --metrics "$L2_SOURCES" --csv --page details python3 drafts/09_tail_experiment.py --once --cublas ;;
  F) run ncu-l2-groups 400 ncu --clock-control none -k regex:wgmma_gemm_tmastore_bf16 --metrics "$L2_SOURCES" \
         --csv --page details python3 drafts/09_energy_experiment.py --once --groups 1 2 4 16 32 ;;
  E) sections="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats"
     run ncu-steady 150 ncu --clock-control none --launch-skip 2 --launch-count 1 -k regex:steady_copies $sections \
         --csv --page details python3 -c 'from gemmlab import probes; probes.steady_state("copies", iters=1024)'
     run ncu-inner 150 ncu --clock-control none --launch-skip 1 --launch-count 1 -k regex:_in_bf16 $sections \
         --csv --page details python3 -c "$TC_INNER_4096"
     run ncu-stalls 100 ncu --clock-control none --launch-skip 1 --launch-count 1 -k regex:_in_bf16 \
         --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' --csv --page details \
         python3 -c "$TC_INNER_4096" ;;
  S) run ncu-source 200 ncu --clock-control none --launch-skip 1 --launch-count 1 -k regex:_in_bf16 \
         --section WarpStateStats --section SourceCounters -o "$out/tc_inner_source" python3 -c "$TC_INNER_4096"
     run ncu-source-sass 60 ncu -i "$out/tc_inner_source.ncu-rep" --page source --csv --print-source sass
     run ncu-source-details 60 ncu -i "$out/tc_inner_source.ncu-rep" --page details --csv ;;
  G) run tests-gpu 500 python3 -m pytest -p no:cacheprovider -q -ra tests/gpu ;;
  H) run c4-check 120 python3 drafts/09_cluster4_experiment.py --check
     if grep -q "False" "$out/logs/c4-check.log" || ! grep -q "4096x4096x4096" "$out/logs/c4-check.log"; then
         echo "c4: not correct or did not finish; not timed" | tee -a "$out/logs/summary"
     else
         run c4-time 300 python3 drafts/09_cluster4_experiment.py --time
         for k in c4 tmastore; do
             run c4-ncu-$k 150 ncu --clock-control none --launch-skip 1 --launch-count 1 -k regex:wgmma_gemm_${k}_bf16 \
                 --metrics lts__t_bytes.sum,dram__bytes_read.sum,gpu__time_duration.sum --csv --page details \
                 python3 drafts/09_cluster4_experiment.py --time --sizes 4096
         done
     fi ;;
  W) run power-FP16 120 python3 scripts/power_under_load.py --sizes 8192 --seconds 3 --precision FP16 --kernels tc_inner_f16
     run power-BF16 120 python3 scripts/power_under_load.py --sizes 8192 --seconds 3 --precision BF16 --kernels tc_inner_bf16 ;;
  Q) run probe-warps 120 python3 drafts/08_probe_warps_experiment.py ;;
  L) run bench-tail-FP16 250 python3 -m gemmlab bench --precision FP16 --kernels tc_inner_f16 tc_tail_f16 \
         --sizes 8192 4096 --interleaved --json "$out/bench-tail-fp16.json"
     run bench-tail-BF16 250 python3 -m gemmlab bench --precision BF16 --kernels tc_inner_bf16 tc_tail_bf16 \
         --sizes 8192 4096 --interleaved --json "$out/bench-tail-bf16.json" ;;
  U) run copy-engine 240 python3 drafts/08_copy_engine_experiment.py ;;
  V) run probe-data 200 python3 drafts/08_probe_data_experiment.py --kernels ;;
  Y) run carried-pointers 200 python3 drafts/08_carried_pointers_experiment.py ;;
  R) run l2-residency 330 python3 drafts/09_l2_residency_experiment.py
     run ncu-l2-residency 240 ncu --clock-control none -k regex:wgmma_gemm_tmastore_bf16 \
         --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum,$L2_SOURCES \
         --csv --page details python3 drafts/09_l2_residency_experiment.py --once ;;
  Z) run ncu-lrc-query 60 bash -c 'ncu --query-metrics --chip gh100 | grep -i -E "^lrc|coalesc"'
     for m in 'regex:^lrc__.*\.sum$' 'regex:^lrc__'; do
         run ncu-lrc 200 ncu --clock-control none --launch-count 2 -k 'regex:nvjet|wgmma_gemm_tmastore_bf16' \
             --metrics "$m" --csv --page details python3 drafts/09_tail_experiment.py --once --cublas
         grep -q '"lrc__' "$out/logs/ncu-lrc.log" && break
     done ;;
  O) run sm-order 150 python3 drafts/09_sm_order_experiment.py
     run ncu-sm-order 120 ncu --clock-control none -k regex:wgmma_gemm_tmastore_bf16 --metrics \
         lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum,lrc__lts2lrc_sectors_op_read.sum,lts__t_sectors_srcunit_ltcfabric.sum,dram__bytes_read.sum,gpu__time_duration.sum \
         --csv --page details python3 drafts/09_sm_order_experiment.py --once ;;
  P) run phase 150 python3 drafts/09_phase_experiment.py
     run ncu-phase 120 ncu --clock-control none -k regex:wgmma_gemm_tmastore_bf16 --metrics \
         lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum,lrc__lts2lrc_sectors_op_read.sum,dram__bytes_read.sum,gpu__time_duration.sum \
         --csv --page details python3 drafts/09_phase_experiment.py --once ;;
  K) run clock-align 300 python3 drafts/09_clock_align_experiment.py
     run ncu-clock-align 150 ncu --clock-control none -k regex:wgmma_gemm_tmastore_bf16 --metrics \
         lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum,lrc__lts2lrc_sectors_op_read.sum,dram__bytes_read.sum,gpu__time_duration.sum \
         --csv --page details python3 drafts/09_clock_align_experiment.py --once ;;
  J) run lag 400 python3 drafts/09_lag_experiment.py
     run ncu-lag 150 ncu --clock-control none -k regex:wgmma_gemm_tmastore_bf16 --metrics \
         lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum,lrc__lts2lrc_sectors_op_read.sum,dram__bytes_read.sum,gpu__time_duration.sum \
         --csv --page details python3 drafts/09_lag_experiment.py --once ;;
  I) run streamk-phases 400 python3 drafts/09_streamk_phases_experiment.py ;;
  M) run stagger 300 python3 drafts/09_stagger_experiment.py ;;
  N) run split-epilogue 500 python3 drafts/09_split_epilogue_experiment.py ;;
  EC) run epilogue-cost 400 python3 drafts/09_epilogue_cost_experiment.py ;;
  SB) run subbox-check 90 python3 drafts/09_subbox_experiment.py --check
     if grep -q "False" "$out/logs/subbox-check.log" || ! grep -q "2048x4096x192" "$out/logs/subbox-check.log"; then
         echo "subbox: not correct or did not finish; not timed" | tee -a "$out/logs/summary"
     else
         run subbox 300 python3 drafts/09_subbox_experiment.py --time
         run ncu-subbox 150 ncu --clock-control none -k regex:wgmma_gemm_tmastore_bf16 --metrics \
             lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum,lrc__lts2lrc_sectors_op_read.sum,lts__t_sectors_srcunit_ltcfabric.sum,dram__bytes_read.sum,gpu__time_duration.sum \
             --csv --page details python3 drafts/09_subbox_experiment.py --once
     fi ;;
  ST) run storer 400 python3 drafts/09_storer_experiment.py ;;
  CS) run cublas-sass 450 bash drafts/09_cublas_sass.sh "$out" ;;
  OB) run one-barrier 400 python3 drafts/09_one_barrier_experiment.py ;;
  X) run copy-path 150 python3 drafts/08_copy_path_experiment.py
     run warp-tile 200 python3 drafts/08_warp_tile_experiment.py
     run copy-order 100 python3 drafts/08_copy_order_experiment.py
     run tail-group 150 python3 drafts/08_tail_group_experiment.py ;;
  VG) for c in 08 09; do mkdir -p "/tmp/nbval-$c"
         TMPDIR="/tmp/nbval-$c" nbval $c 560 500 &
     done
     mkdir -p /tmp/tests-gpu
     TMPDIR=/tmp/tests-gpu run tests-gpu 560 python3 -m pytest -p no:cacheprovider -q -ra tests/gpu &
     wait ;;
  BH) for p in BF16:bf16 FP16:f16; do
         precision=${p%:*} k=${p#*:}
         run bench-hopper-$precision 280 python3 -m gemmlab bench --precision $precision --kernels hopper_tmastore_$k \
             hopper_storer_$k hopper_split_$k hopper_streamk_$k hopper_pingpong_$k --sizes 4096 8192 2048 6144x4096x2048 \
             --interleaved --json "$out/bench-hopper-chapter9-$k.json"
     done ;;
  *) echo "unknown part $part (see the list at the top)" >&2; exit 2 ;;
esac
tail -n 3 "$out"/logs/*.log; cat "$out/logs/summary"
