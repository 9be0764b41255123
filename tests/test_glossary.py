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
    "cp.async": "`cp.async`", "__align__": "`__align__`", "mma.sync": "`mma.sync`", "ldmatrix": "`ldmatrix`",
    "asm volatile": "`asm volatile`", "__cvta_generic_to_shared": "`__cvta_generic_to_shared`", "wmma::": "`wmma::`",
    "__grid_constant__": "`__grid_constant__`", "__cluster_dims__": "`__cluster_dims__`", "__nanosleep": "`__nanosleep`",
    "__shfl_xor_sync": "`__shfl_xor_sync`", "cp.async.bulk.tensor": "`cp.async.bulk.tensor`", "mbarrier.": "`mbarrier`",
    "wgmma.mma_async": "`wgmma.mma_async`", "setmaxnreg": "`setmaxnreg`", "fence.proxy.async": "`fence.proxy.async`",
    "cp.reduce.async.bulk": "`cp.reduce.async.bulk`",
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


def term_roles(text: str) -> list[str]:
    """The targets of every {term} role in MyST text: {term}`target` or {term}`title <target>`."""
    found = []
    for content in re.findall(r"\{term\}`([^`]+)`", text):
        m = re.fullmatch(r"(.+?)\s*<(.*)>", content)
        found.append(m.group(2) if m else content)
    return found


def test_term_roles_name_glossary_terms():
    """A {term} link in a chapter or a book page names a term the glossary has (the term's text without
    its backticks, as Sphinx matches it), so the link resolves without a book build."""
    import nbformat

    from notebook_tools import CHAPTERS

    known = {t.replace("`", "").lower() for t in terms()}
    pages = {p.name: p.read_text() for p in (ROOT / "book").glob("*.md")}
    pages |= {p.name: "\n".join(c.source for c in nbformat.read(p, as_version=4).cells if c.cell_type == "markdown")
              for p in CHAPTERS}
    unknown = {name: t for name, text in pages.items() for t in term_roles(text) if t.lower() not in known}
    assert not unknown, f"{{term}} roles that name no glossary term: {unknown}"


def test_term_role_parsing():
    assert term_roles("a {term}`bank`, {term}`barrier <__syncthreads()>` and {term}`templates <template <int T>>`") == \
        ["bank", "__syncthreads()", "template <int T>"]

