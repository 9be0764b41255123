#!/usr/bin/env bash
# Issue #18: the machine code of the kernel cuBLAS runs for BF16 with FP32 C at 4096^3
# (nvjet_sm90_tss_256x128_64x4_1x2_h_bz_coopA_NNT, drafts/README.md, "What cuBLAS runs"), to see how its epilogue
# takes the accumulators to C (shared-memory stores or stmatrix, fences, barriers, copy-engine stores or the threads'
# own) next to chapter 9's last step, with the warps' stall samples per instruction for both. cuobjdump finds no such
# function in libcublasLt (cuBLAS builds its nvjet kernels when it runs), so Nsight Compute reads the code of the
# launched kernel. Read, not copied: the course's kernels are its own.
# Run on the H200:  bash drafts/09_cublas_sass.sh OUTDIR   (about 120 s)
set -u
out=${1:?output directory}
mkdir -p "$out"
profile() {  # profile NAME KERNEL-REGEX CMD...: one launch with the source counters, then its SASS page as CSV
    local name=$1 regex=$2; shift 2
    timeout 200 ncu --clock-control none --launch-count 1 -k "regex:$regex" --section WarpStateStats \
        --section SourceCounters -o "$out/$name" "$@" > "$out/$name.log" 2>&1
    echo "$name: profile rc $?"
    timeout 100 ncu -i "$out/$name.ncu-rep" --page source --csv --print-source sass > "$out/$name-sass.csv" 2>> "$out/$name.log"
    echo "$name: sass rc $?, $(wc -l < "$out/$name-sass.csv") lines"
}
profile nvjet-4096 nvjet python3 drafts/09_tail_experiment.py --cublas
profile tmastore-4096 wgmma_gemm_tmastore_bf16 python3 drafts/09_tail_experiment.py --once
tar czf "$out/cublas-sass.tgz" -C "$out" nvjet-4096-sass.csv tmastore-4096-sass.csv nvjet-4096.log tmastore-4096.log
rm -f "$out"/*.ncu-rep "$out"/*-sass.csv "$out"/*-4096.log
