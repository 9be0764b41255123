# Issue #18: where does chapter 9's stream-K lose its time at 4096^3? The model says sharing out the last round saves
# 2.7% of the launch; measured, stream-K is 2.2% *behind* the last step at equal clocks (97.4 against 99.6% of cuBLAS,
# results/power-h200.txt), and at 8192^3 it gains 2.4% where the model says 3.0%. Both sizes fit one reading: the
# shared round runs about 22% slower per K-tile than a whole tile, some 8 us per unit at either size, and it reads
# 30 MB more from DRAM (results/ncu-h200-hopper-4096.csv). Candidates: the wait for a first part's stores to reach C
# before its flag goes up (cp.async.bulk.wait_group 0, in the middle of the unit's range), the adds of every unit's
# last part all at the end of the launch, the waits for flags, and K-tiles fetched out of step.
# This draft stamps %globaltimer in consumer 0 of every block at each portion's start, the end of its main loop, after
# its wait for a flag, and after its stores (and flag) have been issued, and once at the end; prints, for the whole
# tiles and the shared parts, what each phase takes, and when each unit's last stores had left. Then 'late': the flag
# of a first part raised after the next portion's main loop (or at the end) instead of right after its stores, so that
# no wait_group 0 holds up the tensor cores in the middle of the range (the part before it waits only at its own end).
# Both checked, timed interleaved with cuBLAS and the last step at 4096^3 and 8192^3, and the stamps of both at
# 4096^3.
# Run on a Hopper GPU with CuPy:   timeout 300 python3 drafts/09_streamk_phases_experiment.py
import statistics, sys, tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from gemmlab import gpu, tma, verify
from drafts.variants import (WS_CONSUMER, WS_END, cuda_and_cupy, device_array, last_step_variants,
                             launched_three_times, print_correct, time_against_cublas)

SLOTS = 40                    # per block: 4 per portion (at most 9 portions), the end in slot 36
ARRAYS = f"""__device__ unsigned long long xstamps[132 * {SLOTS}];   // experiment
__device__ int xparts[132 * {SLOTS}];
#define XSTAMP(slot) do {{ if (STREAMK && c == 0 && threadIdx.x == 128 && gridDim.x == 132 && (slot) < {SLOTS}) {{ \\
    unsigned long long now_; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now_)); \\
    xstamps[blockIdx.x * {SLOTS} + (slot)] = now_; }} }} while (0)

// [gemm_ws]
"""
TILE = ("            const int2 tile = ws_tile<PERSISTENT>(t, tiles_m, tiles_n);\n"
        "            const int m0 = (tile.x * CLUSTER + rank) * WS_BM, n0 = tile.y * WS_BN;\n#pragma unroll\n")
BUFFERS = "            unsigned char* buffers = b_tiles + WS_STAGES * B_STAGE + c * 2 * C_BOX_BYTES;\n"
AWAIT = "                await_part(flags + (walk.holder(t, ke) * CLUSTER + rank) * WS_CONSUMERS + c, epoch);\n"
RAISE = ("            if (STREAMK && kb > 0)                                   // a part that the one before it waits for\n"
         "                raise_when_stored(flags + blockIdx.x * WS_CONSUMERS + c, epoch);\n")
DRAIN = "            asm volatile(\"cp.async.bulk.wait_group 0;\" ::: \"memory\");\n"

STAMPS = [("// [gemm_ws]\n", ARRAYS),
          (WS_CONSUMER, WS_CONSUMER + "        int xp = 0;\n"),
          (TILE, "            XSTAMP(xp * 4);\n            if (STREAMK && c == 0 && threadIdx.x == 128 && gridDim.x == 132 && xp < 9) {\n"
                 f"                xparts[blockIdx.x * {SLOTS} + xp * 4] = t; xparts[blockIdx.x * {SLOTS} + xp * 4 + 1] = kb;\n"
                 f"                xparts[blockIdx.x * {SLOTS} + xp * 4 + 2] = ke; }}\n" + TILE),
          (BUFFERS, BUFFERS + "            XSTAMP(xp * 4 + 1);\n"),
          (AWAIT, AWAIT + "                XSTAMP(xp * 4 + 2);\n"),
          (RAISE, RAISE + "            XSTAMP(xp * 4 + 3);\n            ++xp;\n"),
          (WS_END, "        XSTAMP(36);\n" + WS_END),
          (WS_END + DRAIN, WS_END + DRAIN + "        XSTAMP(37);\n")]
LATE_RAISE = "                raise_when_stored(flags + blockIdx.x * WS_CONSUMERS + c, epoch);\n"
LATE = [(WS_CONSUMER, WS_CONSUMER + "        bool owed = false;                                           // experiment: a flag to raise\n"),
        (BUFFERS, BUFFERS + "            if (STREAMK && owed) {                                   // the part before is long in C\n"
                            "    " + LATE_RAISE + "                owed = false;\n            }\n"),
        (RAISE, "            if (STREAMK && kb > 0)                                   // raised after the next main loop\n"
                "                owed = true;\n"),
        (WS_END, "        if (STREAMK && owed)\n    " + LATE_RAISE + WS_END)]
EDITS = {"stamp": STAMPS, "late": LATE, "late_stamp": STAMPS + LATE}


def phases(kernel, n: int) -> None:
    """What each phase of the stamped launch took: per K-tile of the main loop, the wait for a flag, the stores (and
    the flag), for whole tiles and shared parts, and when the shared round began and each unit ended."""
    s = device_array(kernel, "xstamps", np.uint64, 132 * SLOTS).reshape(132, SLOTS).astype(np.int64)
    p = device_array(kernel, "xparts", np.int32, 132 * SLOTS).reshape(132, SLOTS)
    t0, k_tiles = s[:, 0].min(), n // 64
    whole = {"per K-tile": [], "stores": []}
    shared = {"per K-tile": [], "flag wait": [], "stores (+ flag)": [], "round starts": [], "unit ends": [],
              "stores drained": []}
    for b in range(132):
        first_shared = True
        for q in range(9):
            start, loop_end, awaited, stored = s[b, 4 * q: 4 * q + 4]
            if start == 0:
                break
            _, kb, ke = p[b, 4 * q: 4 * q + 3]
            if ke - kb == k_tiles:
                whole["per K-tile"].append((loop_end - start) / k_tiles)
                whole["stores"].append(stored - loop_end)
                continue
            if first_shared:
                shared["round starts"].append(start - t0)
                first_shared = False
            shared["per K-tile"].append((loop_end - start) / (ke - kb))
            if awaited:
                shared["flag wait"].append(awaited - loop_end)
            shared["stores (+ flag)"].append(stored - (awaited or loop_end))
        shared["unit ends"].append(s[b, 36] - t0)
        shared["stores drained"].append(s[b, 37] - t0)
    for name, d in (("whole tiles", whole), ("shared parts", shared)):
        print(f"   {name}: " + "; ".join(f"{k} median {statistics.median(v):.0f} ns (min {min(v):.0f}, max {max(v):.0f})"
                                         for k, v in d.items() if v), flush=True)


def stamped(ks: dict) -> None:
    """The phases of each stamped kernel of ``ks`` (a name with 'stamp'), from its third launch at 4096^3."""
    A, B = verify.random_operands(4096, 4096, 4096, seed=1)
    for name in (name for name in ks if "stamp" in name):
        launched_three_times(ks[name], A, B)
        print(f"{name}, 4096^3, the third launch (ns from the first block's start):", flush=True)
        phases(ks[name], 4096)


def stamped_then_timed(cp, ks: dict) -> None:
    """:func:`stamped`, then the kernels of ``ks`` without stamps interleaved with cuBLAS at 4096^3 and 8192^3."""
    stamped(ks)
    time_against_cublas(cp, {name: k for name, k in ks.items() if "stamp" not in name}, ((4096,) * 3, (8192,) * 3))


def main():
    gpu.cuda()
    cp = cuda_and_cupy()
    with tempfile.TemporaryDirectory() as tmp:
        ks = last_step_variants(Path(tmp), EDITS, config=tma.GEMM_STREAMK)
        ks["last"] = tma.hopper_kernel(tma.GEMM_TMA_STORE)
        print_correct(ks, ((1, 1, 1), (300, 520, 1234), (1000, 2000, 777), (4096, 4096, 4096), (8192, 8192, 1024)))
        stamped_then_timed(cp, ks)


if __name__ == "__main__":
    main()
