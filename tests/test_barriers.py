"""The static barrier check: flags an exit that can be taken before a __syncthreads(), nothing else."""

import pytest

from gemmlab.runtime import barriers
from gemmlab.runtime.provenance import KERNELS_DIR

FLAGGED = {
    "return before the barrier": """
__global__ void k(float* x, int n) {
    int i = threadIdx.x;
    if (i >= n) return;
    __shared__ float s[32];
    s[i] = x[i];
    __syncthreads();
    x[i] = s[31 - i];
}""",
    "return inside a loop that holds a barrier": """
__global__ void k(float* x, int n) {
    for (int t = 0; t < 4; ++t) {
        __syncthreads();
        if (x[t] < 0) return;
    }
}""",
    "early return in a kernel that calls a barrier function": """
template <int T> __device__ void tile(float* x) { __syncthreads(); x[0] = 1; }
extern "C" __global__ void k(float* x, int n) {
    if (threadIdx.x >= n) return;
    tile<32>(x);
}""",
    "return inside a while loop that holds a barrier": """
__global__ void k(float* x) {
    int t = 0;
    while (t < 4) { if (x[t] < 0) { return; } __syncthreads(); ++t; }
}""",
    "return inside a lambda, before a barrier of the lambda": """
__global__ void k(float* x) {
    auto step = [&](int t) {
        if (x[t] < 0) return;
        __syncthreads();
    };
    step(0);
}""",
    "return after a braced array declaration, before the barrier": """
__global__ void k(float* x) {
    float acc[4] {};
    if (x[0] < 0) return;
    __syncthreads();
    x[0] = acc[0];
}""",
    "return under a condition that mixes the block's and the thread's index": """
__global__ void k(float* x, int n) {
    if (blockIdx.x * blockDim.x + threadIdx.x >= n) return;
    __syncthreads();
}""",
    "return under a uniform if, inside a condition on the thread": """
__global__ void k(float* x, int n) {
    if (threadIdx.x < 32) { if (blockIdx.x < n) return; }
    __syncthreads();
}""",
    "return under a condition on a local (counted as the thread's own)": """
__global__ void k(float* x, int n) {
    const int b = blockIdx.x;
    if (b >= n) return;
    __syncthreads();
}""",
    "return under a condition that reads memory": """
__global__ void k(float* x, int n) {
    if (x[blockIdx.x] < 0) return;
    __syncthreads();
}""",
    "asm exit before the barrier": """
__global__ void k(float* x) {
    if (x[0] > 0) asm volatile("exit;");
    __syncthreads_count(1);
}""",
}

CLEAN = {
    "return after the last barrier": """
__global__ void k(float* x, int n) {
    __shared__ float s[32];
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    if (threadIdx.x >= n) return;
    x[threadIdx.x] = s[0];
}""",
    "return in a loop after the last barrier, the loop holding none": """
__global__ void k(float* x) {
    __syncthreads();
    for (int t = 0; t < 4; ++t) { if (x[t] < 0) return; }
}""",
    "no barrier at all": """
__global__ void k(float* x, int n) { if (threadIdx.x >= n) return; x[threadIdx.x] = 0; }""",
    "words in comments and strings": """
// if (i >= n) return;   then __syncthreads();
__global__ void k(float* x) {
    const char* s = "return; __syncthreads();";
    /* return */ __syncthreads();
}""",
    "return that leaves a lambda only (chapter 8's load_tile)": """
__global__ void k(float* x, int n) {
    auto load = [&](int t) {
        if (t < n) { x[t] = 1; return; }
        x[t] = 0;
    };
    load(threadIdx.x);
    __syncthreads();
}""",
    "a whole block leaving under a uniform condition (chapter 8's tc_tail)": """
#define TILES 4
__device__ void part(float* x, int k) { __syncthreads(); x[k] = 1; }
template <int BM>
__device__ void tail(float* x, int M, int whole) {
    if (static_cast<int>(blockIdx.x) < whole) {
        part(x, 0);
        return;
    }
    for (int i = 0; i < TILES; ++i) { part(x, i); __syncthreads(); }
}
__global__ void k(float* x, int n) {
    if (blockIdx.y * BM_ROWS >= n && gridDim.x > 1) return;
    tail<128>(x, n, 3);
}""",
    "return in the else of a uniform if": """
__global__ void k(float* x, int n) {
    if (blockIdx.x < n) { x[0] = 1; } else { return; }
    __syncthreads();
}""",
    "return in another function than the barrier": """
__device__ float f(float a) { if (a < 0) return 0; return a; }
__global__ void k(float* x) { __syncthreads(); x[0] = f(x[0]); }""",
}


@pytest.mark.parametrize("name", FLAGGED)
def test_flags(name):
    findings = barriers.check_source(FLAGGED[name], "k.cu")
    assert len(findings) >= 1
    f = findings[0]
    assert f.line < f.barrier_line or "loop" in name
    assert str(f).startswith(f"k.cu:{f.line}: an exit in ")


def test_reports_the_right_lines():
    [f] = barriers.check_source(FLAGGED["return before the barrier"], "k.cu")
    assert (f.function, f.line, f.barrier_line) == ("k", 4, 7)


@pytest.mark.parametrize("name", CLEAN)
def test_clean(name):
    assert barriers.check_source(CLEAN[name]) == []


def test_comment_stripping_keeps_lines():
    src = "a /* x\ny */ b // z\nc 'q' \"s\\\"t\""
    out = barriers.strip_comments_and_strings(src)
    assert out.count("\n") == src.count("\n") and "x" not in out and "z" not in out and "s" not in out.split("\n")[2]


@pytest.mark.parametrize("path", sorted(KERNELS_DIR.glob("*.cu")), ids=lambda p: p.name)
def test_course_kernels(path):
    """Every course kernel is clean, except the chapter 3 pitfall kernels, which must be flagged."""
    findings = barriers.check_file(path)
    if "early_return" in path.name:
        assert findings, f"{path.name} is the pitfall and must be flagged"
    else:
        assert findings == [], "\n".join(map(str, findings))
