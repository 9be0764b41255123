// Chapter 9 candidate, compiled for sm_90a but not yet run on a GPU: a stream-K tail for the persistent
// warp-specialised kernel with the copy-engine epilogue (ws_gemm<true, true, 0, F16, CLUSTER> of 09_hopper.cu).
//
// A persistent grid of G units (blocks, or clusters of two) walks T tiles (pairs of tiles in clusters) of k K-tiles
// each. When T is not a multiple of G the last round leaves units idle: at 4096^3 on an H200, 512 tiles on 132 SMs
// are 3 full rounds and one of 116 tiles. Here the last full round and the partial one after it are cut evenly
// into G ranges of K-tiles instead, so every unit finishes at about the same time; a range may begin and end inside
// a tile (StreamK below). A tile cut between units is finished by the unit that holds its K-tile 0 (the owner): the
// others write their FP32 sums to a workspace slot and raise a flag; the owner adds them and stores the tile.
//
//   wgmma_gemm_streamk_bf16 / _f16 (a_map, bt_map, c_map, C, M, N, K, partials, flags, epoch) - clusters of two,
//       as wgmma_gemm_tmastore_*; grid: an even number of blocks, all resident at once (at most
//       cuOccupancyMaxActiveClusters clusters: see the deadlock argument at streamk_gemm).
//   wgmma_gemm_streamk1_bf16 / _f16 (same arguments) - one block per unit, no cluster; at most one block per SM.
//   partials: WS_CONSUMERS * 64 * WS_BN floats per block of the grid (64 KiB per consumer warpgroup);
//   flags: WS_CONSUMERS unsigned per block, zero before the first launch; epoch: a value the flags have never held
//       (the host counts launches from 1). WGMMA_GEMM_TMA_STORE_SHARED bytes of dynamic shared memory.

#include "../kernels/09_hopper.cu"

// [streamk_split]
// Who computes what. T tiles, G units, k K-tiles per tile. Where T is a multiple of G, every unit takes whole tiles
// t, t + G, ... as ws_gemm does. Otherwise all rounds but the last whole one go that way, and the K-tiles of the
// tiles left (G + T mod G of them, or all T where T < G) are counted one after the other, tile by tile, and cut into
// G ranges as even as integers allow: unit u takes [S u / G, S (u + 1) / G) of the S shared K-tiles. Its range may
// start inside one tile and end inside another. The producer and the consumers of a block (and both blocks of a
// cluster) walk the same portions with the same StreamK, so the ring's stages and phases agree.
// drafts/09_streamk_experiment.py's StreamK is the same arithmetic, line for line: change both together (its --model
// compiles this struct for the host and compares the two).
struct StreamK {
    int k, units, whole;             // K-tiles per tile, units, tiles done whole (0 .. whole - 1)
    long long shared;                // K-tiles shared out after the whole tiles
    int t;                           // this unit's next whole tile
    long long i, end;                // this unit's next shared K-tile, and the end of its range

    __host__ __device__ StreamK(int tiles, int k_tiles, int units_, int unit) : k(k_tiles), units(units_)
    {
        const int rounds = tiles / units;
        whole = tiles % units == 0 ? tiles : (rounds > 1 ? rounds - 1 : 0) * units;
        shared = static_cast<long long>(tiles - whole) * k;
        t = unit;
        i = begin(unit);
        end = begin(unit + 1);
    }

    // Where unit u's shared range begins (and unit u - 1's ends).
    __host__ __device__ long long begin(int u) const { return shared * u / units; }

    // The next portion, K-tiles [kb, ke) of tile `tile` (in ws_tile's order); false once the unit is done.
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

    // For the owner of shared tile `tile`: the first unit after h whose range begins inside the tile and is not
    // empty (it computed a part of the tile, first thing in its range), or `units` when there is none.
    __host__ __device__ int next_contributor(int h, int tile) const
    {
        const long long tile_end = static_cast<long long>(tile - whole + 1) * k;
        for (++h; h < units && begin(h) < tile_end; ++h)
            if (begin(h) != begin(h + 1))
                return h;
        return units;
    }
};
// [/streamk_split]

// [streamk_handoff]
// A consumer warpgroup's 64 x 256 partial sums in its block's slot: register 4j + e of thread l at float 4 (128 j + l)
// + e, so that each warp's float4 stores (and the owner's loads, same layout) cover 512 contiguous bytes. Only the
// owner's same warpgroup (same rows) reads it, so the wgmma layout is never converted. .cg: the L2, never a stale L1.
#define STREAMK_SLOT (64 * WS_BN)

// A wait that gives up: a mistake in the split must end the launch with an error within a second, not hang the GPU.
#define STREAMK_PATIENCE_NS 1000000000ull
#ifndef STREAMK_TIMEOUT
#define STREAMK_TIMEOUT 1          // -DSTREAMK_TIMEOUT=0: plain waits, to measure what the checks cost
#endif
__device__ __forceinline__ void give_up_after(unsigned long long& since)
{
    if (!STREAMK_TIMEOUT)
        return;
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (since == 0)
        since = now;
    else if (now - since > STREAMK_PATIENCE_NS)
        __trap();
}

__device__ __forceinline__ void ring_wait(uint64_t* bar, unsigned parity)
{
    unsigned done = 0;
    for (unsigned long long since = 0;; give_up_after(since)) {
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done) : "r"(tma_smem(bar)), "r"(parity) : "memory");
        if (done)
            return;
    }
}

__device__ __forceinline__ void publish(const float (&d)[128], float* slot, unsigned* flag, unsigned epoch, int consumer)
{
    float4* out = reinterpret_cast<float4*>(slot) + threadIdx.x % 128;
#pragma unroll
    for (int j = 0; j < 32; ++j)
        __stcg(out + 128 * j, make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
    asm volatile("fence.acq_rel.gpu;" ::: "memory");     // this thread's stores come before anything it does next
    warpgroup_barrier(1 + consumer);                      // ... and every thread's before the flag below
    if (threadIdx.x % 128 == 0)
        asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(epoch) : "memory");
}

// Every thread acquires the flag itself, so its own loads of the slot come after the contributor's stores.
__device__ __forceinline__ void add_partial(float (&d)[128], const float* slot, const unsigned* flag, unsigned epoch)
{
    unsigned seen;
    for (unsigned long long since = 0;; give_up_after(since)) {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(flag) : "memory");
        if (seen == epoch)
            break;
        __nanosleep(64);
    }
    const float4* in = reinterpret_cast<const float4*>(slot) + threadIdx.x % 128;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
        const float4 v = __ldcg(in + 128 * j);
        d[4 * j] += v.x, d[4 * j + 1] += v.y, d[4 * j + 2] += v.z, d[4 * j + 3] += v.w;
    }
}
// [/streamk_handoff]

// [gemm_streamk]
// ws_gemm with OVERLAP, PERSISTENT and the copy-engine epilogue, walking StreamK's portions instead of whole tiles.
// A portion [kb, ke) of a tile: kb == 0, ke == k is a whole tile, stored as before; kb > 0 is a contributor's, its
// sums go to the workspace (slot and flag of this block and warpgroup); kb == 0, ke < k is the owner's, which adds
// the slots of the units after it whose ranges begin inside the tile, then stores it.
//
// No deadlock, given that every unit of the grid is resident at once (a unit that spins keeps its SM, so a unit it
// waits for must not be queued behind it: the host never launches more units than fit at once):
//   - an owner waits only for units after it (u + 1, u + 2, ... up to the tile's end): no cycle of waits;
//   - more: a unit's range runs forward through the tiles, so a portion with kb > 0 can only be the first shared
//     portion of its unit and one with kb == 0, ke < k only the last. A unit publishes at most once (one slot per
//     block is enough) and before it ever waits, after its whole tiles only, none of which waits for anything: the
//     waits have depth one. In a cluster the two blocks need each other's consumers to free the ring's stages, but
//     they walk the same portions and a consumer frees every stage of a portion before its epilogue, so a block
//     that waits never holds back the other.
// The owner waits at the end of its range and the contributions come at the start of theirs, so in practice it finds
// the flags already raised.
// Flags hold the launch's epoch rather than being reset: nothing to clear between launches, and a flag left by an
// earlier launch (or another kernel that shared the workspace and its counter) never looks raised. The cost: two
// launches must not use one workspace at the same time, and the host must never repeat an epoch.
template <bool F16, int CLUSTER>
__device__ __forceinline__ void streamk_gemm(const CUtensorMap* a_map, const CUtensorMap* bt_map, const CUtensorMap* c_map,
                                             int M, int N, int K, float* __restrict__ partials, unsigned* flags,
                                             unsigned epoch)
{
    constexpr int A_STAGE = WS_BM * WS_BK * 2, B_STAGE = WS_BN * WS_BK * 2;
    extern __shared__ unsigned char ring_raw[];
    unsigned char* base = ring_raw + ((1024 - tma_smem(ring_raw) % 1024) % 1024);
    unsigned char* a_tiles = base;
    unsigned char* b_tiles = base + WS_STAGES * A_STAGE;
    __shared__ __align__(8) uint64_t full[WS_STAGES], empty[WS_STAGES];
    const int group = threadIdx.x / 128, k_tiles = (K + WS_BK - 1) / WS_BK;
    const unsigned rank = CLUSTER > 1 ? cluster_rank() : 0;
    const int tiles_m = (M + WS_BM * CLUSTER - 1) / (WS_BM * CLUSTER), tiles_n = (N + WS_BN - 1) / WS_BN;
    const int units = gridDim.x / CLUSTER, unit = blockIdx.x / CLUSTER;
    StreamK walk(tiles_m * tiles_n, k_tiles, units, unit);
    if (threadIdx.x == 0) {
        for (int s = 0; s < WS_STAGES; ++s) {
            barrier_init_count(&full[s], 1);
            barrier_init_count(&empty[s], WS_CONSUMERS * 4 * CLUSTER);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if (CLUSTER > 1)
        cluster_sync();
    else
        __syncthreads();

    int t, kb, ke;
    if (group == 0) {                                                // the producer warpgroup
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            int it = 0;
            while (walk.next(t, kb, ke)) {
                const int2 tile = ws_tile<true>(t, tiles_m, tiles_n);
                const int m0 = (tile.x * CLUSTER + rank) * WS_BM, n0 = tile.y * WS_BN;
                for (int kt = kb; kt < ke; ++kt, ++it) {
                    const int s = it % WS_STAGES;
                    if (it >= WS_STAGES)
                        ring_wait(&empty[s], (it / WS_STAGES - 1) & 1);
                    barrier_expect(&full[s], A_STAGE + B_STAGE);
                    tma_load_2d(a_tiles + s * A_STAGE, a_map, kt * WS_BK, m0, &full[s]);
                    if (CLUSTER == 1)
                        tma_load_2d(b_tiles + s * B_STAGE, bt_map, kt * WS_BK, n0, &full[s]);
                    else
                        tma_load_2d_both(b_tiles + s * B_STAGE + rank * (WS_BN / 2) * 128, bt_map, kt * WS_BK,
                                         n0 + rank * (WS_BN / 2), &full[s]);
                }
            }
        }
    } else {                                                         // a consumer warpgroup: 64 rows of the tile
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int c = group - 1;
        float d[128];
        int it = 0;
        while (walk.next(t, kb, ke)) {
            const int2 tile = ws_tile<true>(t, tiles_m, tiles_n);
            const int m0 = (tile.x * CLUSTER + rank) * WS_BM, n0 = tile.y * WS_BN;
#pragma unroll
            for (int i = 0; i < 128; ++i)
                d[i] = 0.0f;
            for (int kt = kb; kt < ke; ++kt, ++it) {
                const int s = it % WS_STAGES;
                ring_wait(&full[s], (it / WS_STAGES) & 1);
                asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
                for (int kk = 0; kk < WS_BK / 16; ++kk)
                    wgmma_64x256x16<F16>(d, descriptor_128b(a_tiles + s * A_STAGE + c * 64 * 128) + 2 * kk,
                                         descriptor_128b(b_tiles + s * B_STAGE) + 2 * kk);
                asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
                if (kt > kb && threadIdx.x % 32 == 0)
                    release<CLUSTER>(&empty[(it - 1) % WS_STAGES], rank);
            }
            asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
            if (threadIdx.x % 32 == 0)
                release<CLUSTER>(&empty[(it - 1) % WS_STAGES], rank);
#pragma unroll
            for (int i = 0; i < 128; ++i)                            // final here (see ws_gemm)
                asm volatile("" : "+f"(d[i])::"memory");
            const int mine = blockIdx.x * WS_CONSUMERS + c;
            if (kb > 0) {
                publish(d, partials + static_cast<size_t>(mine) * STREAMK_SLOT, flags + mine, epoch, c);
                continue;
            }
            if (ke < k_tiles)                                        // the rest of the tile: units after this one
                for (int h = walk.next_contributor(unit, t); h < units; h = walk.next_contributor(h, t)) {
                    const int theirs = (h * CLUSTER + static_cast<int>(rank)) * WS_CONSUMERS + c;
                    add_partial(d, partials + static_cast<size_t>(theirs) * STREAMK_SLOT, flags + theirs, epoch);
                }
            store_d_tma(d, c_map, b_tiles + WS_STAGES * B_STAGE + c * 2 * C_BOX_BYTES, c, m0 + 64 * c, n0);
        }
        if (threadIdx.x % 128 == 0)                                  // every box has left before the block does
            asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    }
    if (CLUSTER > 1)
        cluster_sync();
}
// [/gemm_streamk]

#define GEMM_STREAMK_PARAMS GEMM_TMA_STORE_PARAMS, float* __restrict__ partials, unsigned* __restrict__ flags, \
                            unsigned epoch
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) __cluster_dims__(2, 1, 1)
wgmma_gemm_streamk_bf16(GEMM_STREAMK_PARAMS) { streamk_gemm<false, 2>(&a_map, &bt_map, &c_map, M, N, K, partials, flags, epoch); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1) __cluster_dims__(2, 1, 1)
wgmma_gemm_streamk_f16(GEMM_STREAMK_PARAMS) { streamk_gemm<true, 2>(&a_map, &bt_map, &c_map, M, N, K, partials, flags, epoch); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
wgmma_gemm_streamk1_bf16(GEMM_STREAMK_PARAMS) { streamk_gemm<false, 1>(&a_map, &bt_map, &c_map, M, N, K, partials, flags, epoch); }
extern "C" __global__ void __launch_bounds__(WS_THREADS, 1)
wgmma_gemm_streamk1_f16(GEMM_STREAMK_PARAMS) { streamk_gemm<true, 1>(&a_map, &bt_map, &c_map, M, N, K, partials, flags, epoch); }
