# Issue #18: cuBLAS reads 11% fewer sectors from the L2 than chapter 9's last step at 4096^3 because the L2's request
# coalescer (LRC) merges more of its blocks' requests for the same data ("hardware" coalescing: 5.31 million request
# sectors against our 1.73 million, of 33.55 million each; results/ncu-h200-lrc-4096.csv). Requests merge when blocks
# on different SMs ask for the same sectors at about the same time. Does it matter where on the GPU the blocks that
# share A or B run? This draft builds the last step with the persistent unit taken from the SM the cluster's first
# block runs on (%smid / 2: a pair of SMs, one TPC, where a cluster of two sits) instead of from blockIdx, so that
# neighbouring SMs (likely in one GPC) take neighbouring tiles, with the chapter's tile order (groups of 8 rows of pair
# tiles: neighbours share B) and with row-major order (groups of 1: neighbours share A). Only with the full grid (132
# blocks); if two clusters sat on one TPC, tiles would be computed twice and others not at all (the check says so).
# Run on a Hopper GPU with CuPy:   timeout 200 python3 drafts/09_sm_order_experiment.py [--once]
import argparse, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from drafts.variants import last_step_experiment

SYNC = "        cluster_sync();              // both blocks' barriers exist before either block's copies name them\n    else\n        __syncthreads();\n"
UNIT_FROM_TPC = SYNC + r"""    if (PERSISTENT && CLUSTER == 2 && gridDim.x == 132) {  // experiment: the unit from the TPC of the cluster's block 0
        __shared__ unsigned tpc;
        if (threadIdx.x == 0 && rank == 0) {
            unsigned sm;
            asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
            tpc = sm / 2;
        }
        cluster_sync();
        unsigned v;
        asm volatile("{\n .reg .b32 r;\n mapa.shared::cluster.u32 r, %1, 0;\n ld.shared::cluster.u32 %0, [r];\n}"
                     : "=r"(v) : "r"(tma_smem(&tpc)) : "memory");
        unit = v;
    }
"""
EDITS = {
    "g1": [("#define WS_GROUP 8\n", "#define WS_GROUP 1\n")],
    "tpc": [("    const int unit = PERSISTENT ? blockIdx.x / CLUSTER", "    int unit = PERSISTENT ? blockIdx.x / CLUSTER"),
            (SYNC, UNIT_FROM_TPC)],
}
EDITS["tpc_g1"] = EDITS["tpc"] + EDITS["g1"]


def main(once: bool):
    last_step_experiment(EDITS, ((1000, 2000, 777), (4096,) * 3, (8192, 8192, 1024)), ((4096,) * 3,), once)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--once", action="store_true", help="each kernel launched twice at 4096^3, for ncu")
    main(parser.parse_args().once)
