"""The glossary explains every CUDA construct the kernels use (issue #14: no magic for a learner)."""

import re

from notebook_tools import ROOT

GLOSSARY = ROOT / "book" / "glossary.md"
# construct as it appears in a kernel -> the glossary term that explains it
CONSTRUCTS = {
    "__global__": "`__global__`", "__device__": "`__device__`", "__forceinline__": "`__forceinline__`",
    'extern "C"': '`extern "C"`', "template <": "`template <int T>`", "__launch_bounds__": "`__launch_bounds__`",
    "__restrict__": "`__restrict__`", "#pragma unroll": "`#pragma unroll`", "__shared__": "`__shared__`",
    "extern __shared__": "`extern __shared__`", "__syncthreads()": "`__syncthreads()`",
    "threadIdx": "`threadIdx`, `blockIdx`, `blockDim`", "float4": "`float4`", "reinterpret_cast": "`reinterpret_cast`",
    "fmaf(": "`fmaf`", "volatile": "`volatile`", "constexpr": "`constexpr`, `static_assert`",
    "static_assert": "`constexpr`, `static_assert`", "__ldg": "`__ldg`", "__CUDA_ARCH__": "`__CUDA_ARCH__`",
    "cp.async": "`cp.async`",
}


def terms() -> set[str]:
    """The terms of the glossary directives: unindented lines inside ```{glossary} blocks."""
    found = set()
    for block in re.findall(r"```\{glossary\}\n(.*?)```", GLOSSARY.read_text(), re.S):
        found |= {line.strip() for line in block.splitlines() if line and not line.startswith(" ")}
    return found


def test_every_construct_the_kernels_use_is_in_the_glossary():
    kernels = "\n".join(p.read_text() for p in sorted((ROOT / "kernels").glob("*.cu")))
    used = {c for c in CONSTRUCTS if c in kernels}
    assert len(used) >= 15, "the construct list no longer matches the kernels"
    missing = sorted({CONSTRUCTS[c] for c in used} - terms())
    assert not missing, f"book/glossary.md has no entry for {missing}"


def test_the_glossary_is_in_the_book():
    assert "book/glossary" in (ROOT / "_toc.yml").read_text()
    assert "{doc}`glossary`" in (ROOT / "book" / "intro.md").read_text()
