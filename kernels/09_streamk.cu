// Chapter 9, beside the ladder (hopper_streamk): hopper_tmastore's kernel, C = A * B for BF16 or FP16 inputs, with a
// stream-K tail: where the tiles of C are not a multiple of the grid's clusters, the last round's K-tiles are shared
// out evenly, and the parts of a tile cut between clusters meet in C through the copy engine's adds.

#include "09_hopper.cuh"

// [streamk_split]
// Who computes what. T tiles (pairs of tiles in clusters) of k K-tiles each, G units (blocks, or clusters). Unit u
// takes whole tiles u, u + G, u + 2G, ... Without SHARE that is all. With SHARE, where T is not a multiple of G, the
// last round would leave units idle: its tiles' K-tiles (or, where fewer than half the units would have work, those
// of the last whole round too) are counted one after the other and cut into G ranges as even as integers allow, unit
// u taking [S u / G, S (u + 1) / G) of the S shared K-tiles. A range may begin and end inside a tile: a tile cut
// between units comes in parts, each a portion [kb, ke) of its K-tiles. gemmlab.streamk is the same arithmetic (the
// CPU tests compile this struct for the host and compare).
struct StreamK {
    int k, units, whole;             // K-tiles per tile, units, tiles done whole (0 .. whole - 1)
    long long shared;                // K-tiles shared out after the whole tiles
    int t;                           // this unit's next whole tile
    long long i, end;                // this unit's next shared K-tile, and the end of its range

    __host__ __device__ StreamK(int tiles, int k_tiles, int units_, int unit, bool share) : k(k_tiles), units(units_)
    {
        const int rounds = tiles / units, left = tiles % units;
        whole = !share || left == 0 ? tiles : (2 * left >= units ? rounds : (rounds > 1 ? rounds - 1 : 0)) * units;
        shared = static_cast<long long>(tiles - whole) * k;
        t = unit;
        i = begin(unit);
        end = begin(unit + 1);
    }

    // Where unit u's shared range begins (and unit u - 1's ends).
    __host__ __device__ long long begin(int u) const { return shared * u / units; }

    // The next portion, K-tiles [kb, ke) of tile `tile`; false once the unit is done.
    __host__ __device__ bool next(int& tile, int& kb, int& ke)
    {
        if (t < whole) {
            tile = t, kb = 0, ke = k;
            t += units;
            return true;
        }
        if (i >= end)
            return false;
        tile = whole + static_cast<int>(i / k);
        kb = static_cast<int>(i % k);
        ke = end - i < k - kb ? kb + static_cast<int>(end - i) : k;
        i += ke - kb;
        return true;
    }

    // The unit whose range holds K-tile kt of shared tile `tile` (the last unit that begins at or before it).
    __host__ __device__ int holder(int tile, int kt) const
    {
        const long long x = static_cast<long long>(tile - whole) * k + kt;
        int u = static_cast<int>(x * units / shared);
        while (u + 1 < units && begin(u + 1) <= x)
            ++u;
        while (u > 0 && begin(u) > x)
            --u;
        return u;
    }
};
// [/streamk_split]

// [streamk_handoff]
// The parts of a cut tile meet in C, added by the copy engine (store_d_tma with ADD: cp.reduce.async.bulk.tensor .add,
// FP32 sums in the L2), in a fixed order so that C is the same at every launch: the last part (the one holding
// K-tile k - 1, the first thing its unit computes in its range) stores its sums as a whole tile would; every other
// part waits for the part after it to be in C, then adds its own. A part that others wait for raises its flag once
// the engine has written it. One thread per consumer warpgroup waits and raises, as it issues the stores. The flag
// holds the launch's epoch rather than being reset: nothing to clear between launches.
__device__ __forceinline__ void raise_when_stored(unsigned* flag, unsigned epoch)
{
    if (threadIdx.x % 128 != 0)
        return;
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");      // the engine has written this part into C
    asm volatile("fence.proxy.async.global;" ::: "memory");         // ... before the flag (other proxy) goes up
    // An atomic exchange (its old value dropped), so that no thread stores (STG) to global memory.
    asm volatile("{\n .reg .b32 old;\n atom.release.gpu.global.exch.b32 old, [%0], %1;\n}"
                 ::"l"(flag), "r"(epoch) : "memory");
}

__device__ __forceinline__ void await_part(const unsigned* flag, unsigned epoch)
{
    if (threadIdx.x % 128 != 0)
        return;
    unsigned seen;
    for (;;) {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(flag) : "memory");
        if (seen == epoch)
            break;
        __nanosleep(32);
    }
    asm volatile("fence.proxy.async.global;" ::: "memory");         // the engine's adds come after what it saw
}
// [/streamk_handoff]

// [gemm_streamk]
// hopper_tmastore's kernel, walking parts of tiles (StreamK) instead of whole tiles: a part is K-tiles [kb, ke) of a
// tile, and a part with another after it adds its sums into C in order (streamk_handoff). Two more parameters: flags,
// one unsigned per consumer warpgroup of the grid, zero before the first launch; epoch, a value the flags have never
// held (the host counts launches from 1). Every cluster of the grid must be resident at once (at most
// cuOccupancyMaxActiveClusters clusters). Grid, threads and shared memory as hopper_tmastore's.
template <bool F16>
__device__ __forceinline__ void streamk_gemm(const CUtensorMap* a_map, const CUtensorMap* bt_map,
                                             const CUtensorMap* c_map, int M, int N, int K, unsigned* flags,
                                             unsigned epoch)
{
    constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, CONSUMERS = 2;
    constexpr int A_STAGE = BM * BK * 2, B_STAGE = BN * BK * 2;
    extern __shared__ unsigned char ring_raw[];
    unsigned char* base = ring_raw + ((1024 - tma_smem(ring_raw) % 1024) % 1024);
    unsigned char* a_tiles = base;                                   // STAGES tiles of 128 rows x 128 bytes
    unsigned char* b_tiles = base + STAGES * A_STAGE;                // STAGES tiles of 256 rows x 128 bytes
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    const int group = threadIdx.x / 128, k_tiles = (K + BK - 1) / BK;
    // The work is counted in pairs of tiles, one per block of a cluster (a pair past the last row of tiles
    // computes zeros that it never stores); the cluster walks them as a block did.
    const unsigned rank = cluster_rank();
    const int tiles_m = (M + 2 * BM - 1) / (2 * BM), tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
    const int unit = blockIdx.x / 2, units = gridDim.x / 2;          // this cluster, of the grid's clusters
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            barrier_init_count(&full[s], 1);                         // the producer's arrival (and the bytes)
            barrier_init_count(&empty[s], CONSUMERS * 4 * 2);        // every consumer warp of the cluster
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_sync();                  // both blocks' barriers exist before either block's copies name them

    StreamK walk(tiles, k_tiles, units, unit, true);                 // new: whole tiles, then parts of tiles
    // Both sides count the K-tiles they have passed over all of this block's tiles: stage it % STAGES, and
    // it / STAGES is how many times the ring went round (the parity of the phase to wait for).
    int t, kb, ke;
    if (group == 0) {                                                // the producer warpgroup
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            int it = 0;
            while (walk.next(t, kb, ke)) {
                const int2 tile = ws_tile(t, tiles_m, tiles_n);      // in groups of rows, for the L2
                const int m0 = (tile.x * 2 + rank) * BM, n0 = tile.y * BN;
                for (int kt = kb; kt < ke; ++kt, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES)                                // the consumers released the last round
                        barrier_wait(&empty[s], (it / STAGES - 1) & 1);
                    barrier_expect(&full[s], A_STAGE + B_STAGE);
                    tma_load_2d(a_tiles + s * A_STAGE, a_map, kt * BK, m0, &full[s]);
                    const int half = BN / 2;                         // this block's half of B, into both
                    tma_load_2d_both(b_tiles + s * B_STAGE + rank * half * 128, bt_map, kt * BK, n0 + rank * half,
                                     &full[s]);
                }
            }
        }
    } else {                                                         // a consumer warpgroup: 64 rows of the tile
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int c = group - 1;
        float d[128];
        unsigned char* const buffers = b_tiles + STAGES * B_STAGE + c * 2 * C_BOX_BYTES;   // behind the ring
        int it = 0;
        while (walk.next(t, kb, ke)) {
            const int2 tile = ws_tile(t, tiles_m, tiles_n);
            const int m0 = (tile.x * 2 + rank) * BM, n0 = tile.y * BN;
#pragma unroll
            for (int i = 0; i < 128; ++i)
                d[i] = 0.0f;
            for (int kt = kb; kt < ke; ++kt, ++it) {
                const int s = it % STAGES;
                barrier_wait(&full[s], (it / STAGES) & 1);
                asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)
                    wgmma_64x256x16<F16>(d, descriptor_128b(a_tiles + s * A_STAGE + c * 64 * 128) + 2 * kk,
                                         descriptor_128b(b_tiles + s * B_STAGE) + 2 * kk);
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                // Wait for the K-tile before only and hand its stage back, while this one's wgmma run.
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                if (kt > kb && threadIdx.x % 32 == 0)                 // to both blocks' empty barriers
                    release_both(&empty[(it - 1) % STAGES], rank);
            }
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");     // then the last K-tile's
            if (ke > kb && threadIdx.x % 32 == 0)
                release_both(&empty[(it - 1) % STAGES], rank);
            // The accumulators are final here: keep the compiler from moving the epilogue's reads of them above the
            // last wait (ptxas would then serialise every wgmma to be safe).
#pragma unroll
            for (int i = 0; i < 128; ++i)
                asm volatile("" : "+f"(d[i])::"memory");
            // New: a part with another after it adds its sums once that one is in C; a tile's last part stores.
            if (ke < k_tiles) {
                await_part(flags + (walk.holder(t, ke) * 2 + rank) * CONSUMERS + c, epoch);
                store_d_tma<128, true>(d, c_map, buffers, c, m0 + 64 * c, n0);
            } else
                store_d_tma(d, c_map, buffers, c, m0 + 64 * c, n0);
            if (kb > 0)                                              // new: a part that the one before it waits for
                raise_when_stored(flags + blockIdx.x * CONSUMERS + c, epoch);
        }
        if (threadIdx.x % 128 == 0)                                  // every box has left before the block does
            asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
    cluster_sync();                  // no block leaves while the other may still arrive on its barriers
}
// [/gemm_streamk]
