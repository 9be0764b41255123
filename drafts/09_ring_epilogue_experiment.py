# Issue #18: of the last step's epilogue (2.7-2.8 us a tile at 4096^3), 0.8 us is waiting for the copy engine to read
# boxes out of shared memory before their buffer can be written again (results/stagger-h200.txt: 1.9 us without the
# stores); each consumer has only two 8 KiB buffers, since the ring of 4 stages takes 192 of the 227 KiB. But when a
# tile's main loop ends, the stage of its last K-tile is read and nobody needs it at once: the next tile's first three
# K-tiles fit in the other three stages, and its fourth is needed some 1.9 us into the next main loop. Here a consumer
# keeps that stage until its epilogue has used it: 16 KiB of the stage's B part per consumer, two more boxes, so that
# four buffers take turns (ring, ring, own, own: a buffer is written again once the box four before it has been read,
# cp.async.bulk.wait_group.read 3), and the stage is handed back (each warp's arrival, as at every K-tile) once the
# boxes in it have been read (wait_group.read 2 at the end: the last two boxes, in the own buffers, still leave while
# the next tile starts). The producer is unchanged: it waits for that stage as for any other. Both consumers read all
# of B, so a consumer may write into the stage's B part only once the other's last wgmma is done too (a barrier of
# the two consumers' 256 threads; the first version did not wait, and was wrong). 'ringA' uses instead the 8 KiB of
# the stage's A part that only its own wgmma read: one more buffer (three take turns), no wait for the other.
# Checked at awkward sizes, timed interleaved with cuBLAS at the four sizes (4096^3 twice).
# Run on a Hopper GPU with CuPy:   timeout 400 python3 drafts/09_ring_epilogue_experiment.py
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from drafts.variants import BOX_HEAD, GOAL_SIZES, WS_STORE, last_step_experiment

SIGNATURE = """template <int REGS, bool ADD = false>
__device__ __forceinline__ void store_d_tma(const float (&d)[REGS], const CUtensorMap* c_map, unsigned char* buffers,
                                            int consumer, int row0, int col0)
{"""
RING_SIGNATURE = """template <int REGS, bool ADD = false>
__device__ __forceinline__ void store_d_tma(const float (&d)[REGS], const CUtensorMap* c_map, unsigned char* buffers,
                                            int consumer, int row0, int col0, unsigned char* ring = nullptr)
{                                                                    // experiment: ring, two more buffers"""
RING_HEAD = """        unsigned char* buf = (ring && j % 4 < 2 ? ring : buffers) + (j % 2) * C_BOX_BYTES;
        if (issuer && ring)                                          // the box four before this one is read
            asm volatile("cp.async.bulk.wait_group.read 3;" ::: "memory");
        else if (issuer)                                             // the store that read buf last is done reading
            asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
"""
TAIL = """            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        }
    }
}
// [/store_d_tma]"""
RING_TAIL = """            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        }
    }
    if (ring) {                                 // the boxes in the ring's stage are read (eight boxes: the last two own)
        if (issuer)
            asm volatile("cp.async.bulk.wait_group.read 2;" ::: "memory");
        warpgroup_barrier(1 + consumer);
    }
}
// [/store_d_tma]"""
LAST_RELEASE = """            if (OVERLAP) {
                asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
                if (ke > kb && threadIdx.x % 32 == 0)
                    release<CLUSTER>(&empty[(it - 1) % WS_STAGES], rank);
            }
"""
RING_RELEASE = """            constexpr bool RING = STORE == 0 && !STREAMK && OVERLAP;   // experiment: the last stage kept
            const bool keep = RING && ke > kb;
            if (OVERLAP) {
                asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
                if (!keep && ke > kb && threadIdx.x % 32 == 0)
                    release<CLUSTER>(&empty[(it - 1) % WS_STAGES], rank);
            }
"""
RING_STORE = """            } else if (keep) {                                       // then the kept stage goes back (REGS 128)
                asm volatile("bar.sync 3, 256;" ::: "memory");      // both consumers' wgmma have read all of B
                store_d_tma(d, c_map, buffers, c, m0 + 64 * c, n0,
                            b_tiles + (it - 1) % WS_STAGES * B_STAGE + c * 2 * C_BOX_BYTES);
                if (threadIdx.x % 32 == 0)
                    release<CLUSTER>(&empty[(it - 1) % WS_STAGES], rank);
""" + WS_STORE
RING = [(SIGNATURE, RING_SIGNATURE), (BOX_HEAD, RING_HEAD), (TAIL, RING_TAIL), (LAST_RELEASE, RING_RELEASE),
        (WS_STORE, RING_STORE)]

RING_A_HEAD = """        unsigned char* buf = !ring ? buffers + (j % 2) * C_BOX_BYTES
                             : j % 3 == 0 ? ring : buffers + (j % 3 - 1) * C_BOX_BYTES;
        if (issuer && ring && j == 0)                                // the tile before's last box, in buffer 0, is read
            asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
        else if (issuer && ring)                                     // the box three before this one is read
            asm volatile("cp.async.bulk.wait_group.read 2;" ::: "memory");
        else if (issuer)                                             // the store that read buf last is done reading
            asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
"""
RING_A_TAIL = RING_TAIL.replace("cp.async.bulk.wait_group.read 2;", "cp.async.bulk.wait_group.read 1;").replace(
    "(eight boxes: the last two own)", "(eight boxes: the last one own)")
RING_A_STORE = RING_STORE.replace('''                asm volatile("bar.sync 3, 256;" ::: "memory");      // both consumers' wgmma have read all of B
''', "").replace("b_tiles + (it - 1) % WS_STAGES * B_STAGE + c * 2 * C_BOX_BYTES",
                  "a_tiles + (it - 1) % WS_STAGES * A_STAGE + c * 64 * 128")
RING_A = [(SIGNATURE, RING_SIGNATURE), (BOX_HEAD, RING_A_HEAD), (TAIL, RING_A_TAIL), (LAST_RELEASE, RING_RELEASE),
          (WS_STORE, RING_A_STORE)]
EDITS = {"ring": RING, "ringA": RING_A}
CHECK = ((1, 1, 1), (300, 520, 1234), (1000, 2000, 777), (8192, 8192, 1024), (512, 1024, 64), (700, 200, 100),
         (2048, 4096, 192), (4096, 4096, 4096))

if __name__ == "__main__":
    last_step_experiment(EDITS, CHECK, GOAL_SIZES, once=False)
