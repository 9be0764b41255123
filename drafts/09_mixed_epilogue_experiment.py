# Issue #18: the last step's epilogue sends all of C through shared memory and the copy engine (8 boxes per consumer
# and tile, each with a proxy fence and two warpgroup barriers: results/epilogue-cost-h200.txt), and the paired-stores
# step before it sent all of C from registers with 8-byte stores (1.01-1.05x slower over a whole tile). Here both
# at once: the first 8 - D boxes through the copy engine, the last D boxes' columns (32 each) straight from registers
# with 8-byte stores (a quad of lanes writes one full 32-byte sector of a row), so that the threads' stores run while
# the engine drains the boxes and there are D fewer fences and barrier pairs. Where N is not a multiple of 4 (C's rows
# then padded for the engine, so not N apart) the whole tile goes through the engine as before. D = 2 or 4. Checked
# at awkward sizes, timed interleaved with cuBLAS at 4096^3 (twice) and 6144x4096x2048.
# Run on a Hopper GPU with CuPy:   timeout 300 python3 drafts/09_mixed_epilogue_experiment.py
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from drafts.variants import BOX_LOOP, WS_STORE, last_step_experiment

SIGNATURE = "template <int REGS, bool ADD = false>\n__device__ __forceinline__ void store_d_tma("
DIRECT = """// experiment: the registers from box FIRST on straight to C (row-major, N apart), 8 bytes per store
template <int REGS, int FIRST>
__device__ __forceinline__ void store_d_direct(const float (&d)[REGS], float* __restrict__ C, int M, int N, int row0,
                                               int col0)
{
    const int warp = threadIdx.x % 128 / 32, lane = threadIdx.x % 32;
#pragma unroll
    for (int i = 16 * FIRST; i < REGS; i += 2) {
        const int r = row0 + 16 * warp + lane / 4 + 8 * (i % 4 / 2), c = col0 + 8 * (i / 4) + 2 * (lane % 4);
        if (r < M && c + 1 < N)
            *reinterpret_cast<float2*>(C + static_cast<size_t>(r) * N + c) = make_float2(d[i], d[i + 1]);
        else if (r < M && c < N)
            C[static_cast<size_t>(r) * N + c] = d[i];
    }
}

"""


def mixed(direct: int) -> list:
    """store_d_tma with a number of boxes (its default: all), and the last ``direct`` boxes of the last step's
    tiles stored from registers where N is a multiple of 4."""
    boxes = 8 - direct
    return [(SIGNATURE, DIRECT + "template <int REGS, bool ADD = false, int BOXES = REGS / 16>\n"
                                 "__device__ __forceinline__ void store_d_tma("),
            (BOX_LOOP, BOX_LOOP.replace("j < REGS / 16", "j < BOXES")),
            (WS_STORE, f"""            }} else if (STORE == 0 && !STREAMK && N % 4 == 0) {{            // experiment: mixed
                store_d_direct<128, {boxes}>(d, C, M, N, m0 + 64 * c, n0);
                store_d_tma<128, false, {boxes}>(d, c_map, buffers, c, m0 + 64 * c, n0);
""" + WS_STORE)]


EDITS = {"mix2": mixed(2), "mix4": mixed(4)}
CHECK = ((1, 1, 1), (300, 520, 1234), (1000, 2000, 777), (8192, 8192, 1024), (700, 200, 100), (777, 1001, 300))
SIZES = ((4096, 4096, 4096), (6144, 4096, 2048), (4096, 4096, 4096))

if __name__ == "__main__":
    last_step_experiment(EDITS, CHECK, SIZES, once=False, check_timed=False)
