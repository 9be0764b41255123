// A barrier that can never complete, for chapter 3's watchdog demo: warp 0 waits at
// __syncthreads() for the other warps, which spin on a flag that warp 0 sets only after the barrier.
// With spin_limit > 0 the spinners give up and exit; exited threads no longer count at a barrier, so warp 0 goes on.

extern "C" __global__ void barrier_deadlock(int* out, int spin_limit)
{
    __shared__ volatile int flag;
    if (threadIdx.x == 0)
        flag = 0;
    __syncthreads();                       // everyone sees flag == 0
    if (threadIdx.x < 32) {
        __syncthreads();                   // warp 0: waits for every non-exited thread of the block
        flag = 1;
        out[threadIdx.x] = 1;
    } else {
        long long spins = 0;
        while (flag == 0) {                // the others: wait for warp 0, which waits for them
            if (spin_limit > 0 && ++spins >= spin_limit)
                return;                    // give up and exit: this is what lets warp 0 through
        }
        out[threadIdx.x] = 2;
    }
}
