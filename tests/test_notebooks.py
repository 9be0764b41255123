"""Notebook conventions and freshness: what a reader, a Colab learner and nbval rely on."""

import re
import textwrap

import nbformat
import pytest

import gemmlab
from gemmlab.gemm import units
from gemmlab.runtime import colab, provenance
from notebook_tools import (CHAPTERS, GPU_MODULES, ROOT, UNNUMBERED, assigned_string, config, load_script, output_text,
                            read, setup_cell, tags)

pytestmark = pytest.mark.skipif(not CHAPTERS, reason="no chapter notebooks yet")
IDS = [p.name for p in CHAPTERS]
RELEASE = "v" + gemmlab.__version__


@pytest.fixture(params=CHAPTERS, ids=IDS)
def chapter(request):
    return request.param, read(request.param)


def test_valid_notebook_format(chapter):
    nbformat.validate(chapter[1])


def test_no_draft_placeholder_is_published(chapter):
    """Prose that waits for a GPU run is marked @@NAME@@ while it is written; a published chapter has none left."""
    path, nb = chapter
    left = [c.get("id") for c in nb.cells if re.search(r"@@\w*@@", c.source)]
    assert not left, f"{path.name}: placeholders left in cells {left}"


def test_title_and_colab_badge(chapter):
    path, nb = chapter
    first = nb.cells[0]
    assert first.cell_type == "markdown"
    if path.name in UNNUMBERED:
        assert re.match(r"# (?!\d+\. )\S", first.source), "an unnumbered page's title is a name, not '# N. Title'"
    else:
        number = int(path.name[:2])
        assert re.match(rf"# {number}\. \S", first.source), "the first cell starts with '# N. Title'"
    repo = config()["repository"]["url"].removeprefix("https://github.com/")
    badge = (f"[![Open In Colab](../book/_static/colab-badge.svg)]"      # the book's own image: no external host
             f"(https://colab.research.google.com/github/{repo}/blob/{RELEASE}/chapters/{path.name})")
    assert badge in first.source, f"the badge opens the chapter at the release tag {RELEASE}"


def test_every_figure_has_alt_text(chapter):
    """A figure's alt text (cell metadata ``mystnb.image.alt``, which myst-nb puts on the image) says what
    it shows; without it the book's alt text is the image's file name."""
    _, nb = chapter
    for cell in nb.cells:
        if cell.cell_type == "code" and any("image/png" in o.get("data", {}) for o in cell.get("outputs", [])):
            alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt", "")
            assert len(alt) >= 40 and not alt.endswith((".png", ".svg")), \
                f"a figure without alt text that says what it shows: {cell.source[:80]!r}"


def alt_numbers_not_in_outputs(nb) -> list[str]:
    """The decimals of figures' alt texts that no output of the notebook prints: an alt text written for an
    earlier run (the figure is redrawn at every execution, its alt text is not)."""
    decimals = load_script("prose_numbers").decimals
    printed = set(decimals("\n".join(output_text(c) for c in nb.cells if c.cell_type == "code")))
    return [f"{cell.get('id')}: {number}" for cell in nb.cells if cell.cell_type == "code"
            for number in decimals(cell.metadata.get("mystnb", {}).get("image", {}).get("alt", ""))
            if number not in printed]


def test_alt_text_quotes_this_run(chapter):
    """A number in a figure's alt text is one the same execution printed (a table beside the figure)."""
    path, nb = chapter
    assert not alt_numbers_not_in_outputs(nb), f"{path.name}: alt text from another run: {alt_numbers_not_in_outputs(nb)}"


def test_alt_text_check_can_fail():
    nb = nbformat.v4.new_notebook()
    table = nbformat.v4.new_code_cell("print(t)", outputs=[nbformat.v4.new_output("stream", text="tc_tma  538.5  70.9%\n")])
    figure = nbformat.v4.new_code_cell("fig = bars(t)")
    figure.metadata["mystnb"] = {"image": {"alt": "Bars: tc_tma 538.5 TFLOP/s, 70.9% of cuBLAS at 759.5"}}
    nb.cells = [table, figure]
    assert alt_numbers_not_in_outputs(nb) == [f"{figure.id}: 759.5"]


def test_each_number_names_one_chapter():
    numbers = [int(p.name[:2]) for p in CHAPTERS if p.name not in UNNUMBERED]
    assert len(numbers) == len(set(numbers)), f"two chapters share a number: {sorted(numbers)}"
    assert UNNUMBERED <= {p.name for p in CHAPTERS}, "UNNUMBERED names a notebook that is not in chapters/"


def test_one_setup_cell_right_after_the_title(chapter):
    _, nb = chapter
    setups = [c for c in nb.cells if "colab-setup" in tags(c)]
    assert len(setups) == 1 and nb.cells[1] is setups[0]
    src = setups[0].source
    assert 'if "google.colab" in sys.modules:' in src, "the setup cell acts only on Colab"
    assert not setups[0].outputs, "off Colab the setup cell prints nothing"


def test_one_setup_cell_text_for_every_chapter():
    texts = {p.name: setup_cell(read(p)).source for p in CHAPTERS}
    first = next(iter(texts.values()))
    differ = [name for name, text in texts.items() if text != first]
    assert not differ, f"these setup cells differ from {CHAPTERS[0].name}'s: {differ}"


def test_setup_cell_clones_the_release_tag(chapter):
    assert RELEASE == "v" + gemmlab.__version__
    assert assigned_string(setup_cell(chapter[1]).source, "RELEASE") == RELEASE


def test_setup_cell_uses_the_configured_repository(chapter):
    _, nb = chapter
    assert assigned_string(setup_cell(nb).source, "REPO_URL") == config()["repository"]["url"]


def test_setup_cell_installs_the_pinned_pycuda(chapter):
    """The cell installs PyCUDA through gemmlab.runtime.colab, whose pin is requirements-gpu.txt's."""
    _, nb = chapter
    pin = re.search(r"^pycuda==\S+", (ROOT / "requirements-gpu.txt").read_text(), re.M).group(0)
    assert colab.PYCUDA == pin
    assert "colab.install_pycuda(REPO_URL, RELEASE)" in setup_cell(nb).source


def test_asks_colab_for_a_gpu(chapter):
    assert chapter[1].metadata.get("accelerator") == "GPU"
    assert chapter[1].metadata["kernelspec"]["name"] == "python3"


def test_code_cells_executed_in_order(chapter):
    counts = [c.execution_count for c in chapter[1].cells if c.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1)), f"execution counts {counts}: re-run top to bottom"


def test_no_error_outputs_unless_tagged(chapter):
    for i, cell in enumerate(chapter[1].cells):
        if cell.cell_type != "code" or "raises-exception" in tags(cell):
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert not errors, f"cell {i} has an error output: {errors[0].get('ename')}: {errors[0].get('evalue')}"
        stderr = "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stderr")
        assert "Traceback" not in stderr, f"cell {i} printed a traceback"


def test_outputs_come_from_a_run(chapter):
    """Executed on a GPU: kernels compiled (provenance lines) and at least one figure stored."""
    _, nb = chapter
    text = "\n".join(output_text(c) for c in nb.cells if c.cell_type == "code")
    assert provenance.find(text), "no provenance line: the notebook was not executed with its kernels"
    assert any("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_fresh_against_kernel_sources(chapter):
    """Every kernel hash in the stored outputs is the hash of the file as it is now."""
    _, nb = chapter
    problems = units.stale("\n".join(output_text(c) for c in nb.cells if c.cell_type == "code"))
    assert not problems, "stale outputs (re-execute the notebook on a GPU):\n" + "\n".join(problems)


# Calls whose output depends on the GPU or the toolkit: the time, this device's limits, what the compiler
# chose (registers, SASS, ptxas), counters, the driver's answers, tool availability. A cell that prints
# their results must be tagged nbval-ignore-output, or nbval would fail on any runner but an H200.
DEVICE_DEPENDENT = re.compile(r"\.resources\(|\.sass\(|ptxas_report|time_gemm|time_cublas|bench\.(sweep|ladder)|"
                              r"tuning\.tune|nsight\.|ceilings\.|driver\.(compare|sweep)|environment\.|"
                              r"run_sanitized|run_isolated|device\.properties_table|\bspec\.")


def _compared(cell) -> bool:
    return "nbval-ignore-output" not in tags(cell) and "nbval-skip" not in tags(cell)


def test_device_dependent_cells_are_not_compared(chapter):
    _, nb = chapter
    offenders = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.outputs and _compared(c)
                 and "colab-setup" not in tags(c) and DEVICE_DEPENDENT.search(c.source)
                 and "nbval-device-independent" not in tags(c)]
    assert not offenders, (f"cells {offenders} print what depends on the GPU or toolkit: tag them nbval-ignore-output "
                           "(or nbval-device-independent, with a comment saying why every GPU prints the same)")


def test_device_dependence_check_can_fail():
    cell = nbformat.v4.new_code_cell("print(k.resources().registers)", outputs=[nbformat.v4.new_output("stream", text="31")])
    assert _compared(cell) and DEVICE_DEPENDENT.search(cell.source)
    cell.metadata["tags"] = ["nbval-ignore-output"]
    assert not _compared(cell)


def test_nbval_compares_at_least_half_of_the_cells_with_output():
    """Across the book nbval compares at least half of the code cells that have output; in each
    chapter at least three (chapter 5, about this GPU's occupancy, is mostly device-dependent)."""
    counts = {}
    for path in CHAPTERS:
        with_output = [c for c in read(path).cells if c.cell_type == "code" and c.outputs]
        counts[path.name] = (sum(_compared(c) for c in with_output), len(with_output))
    compared, total = map(sum, zip(*counts.values()))
    assert 2 * compared >= total, f"nbval compares {compared} of {total} cells with output: {counts}"
    few = {name: n for name, n in counts.items() if n[0] < 3}
    assert not few, f"chapters where nbval compares fewer than three cells with output: {few}"


def solution_blocks(nb):
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for details in re.findall(r"<details>(.*?)</details>", cell.source, re.S):
                yield from re.findall(r"```python\n(.*?)```", details, re.S)


def test_objectives_open_and_takeaways_close_the_chapter(chapter):
    """Each chapter says first what the reader will be able to do and, before the exercises, what to keep."""
    _, nb = chapter
    assert ":::{admonition} Objectives" in nb.cells[0].source, "the first cell has an Objectives admonition"
    objectives = nb.cells[0].source.split(":::{admonition} Objectives", 1)[1].split(":::", 1)[0]
    assert 3 <= objectives.count("\n- ") <= 5, "three to five objectives"
    md = [c for c in nb.cells if c.cell_type == "markdown"]
    takeaways = [i for i, c in enumerate(md) if c.source.startswith("## Takeaways")]
    exercises = [i for i, c in enumerate(md) if "## Exercises" in c.source]
    assert len(takeaways) == 1 and exercises and takeaways[0] < exercises[0], "## Takeaways comes just before ## Exercises"
    assert 3 <= md[takeaways[0]].source.count("\n- ") <= 6, "three to six takeaways"


def test_exercises_have_collapsed_solutions(chapter):
    _, nb = chapter
    md = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "## Exercises" in md
    assert md.count("<details>") == md.count("</details>") >= 2
    assert md.count("<summary>Solution</summary>") == md.count("<details>")


def test_cpu_solutions_run(chapter, capsys):
    """Solutions that need no GPU are executed here, so a solution can't rot."""
    _, nb = chapter
    for code in solution_blocks(nb):
        if any(gpu_only in code for gpu_only in GPU_MODULES):
            continue                       # needs a GPU: tests/gpu/test_exercise_solutions.py runs it
        exec(compile(textwrap.dedent(code), "<solution>", "exec"), {})


def test_freshness_check_fails_on_a_changed_kernel(tmp_path):
    """The freshness test above is able to fail: a changed kernel file makes the stored hash stale."""
    texts = ("\n".join(output_text(c) for c in read(p).cells if c.cell_type == "code") for p in CHAPTERS)
    text = next((t for t in texts if provenance.find(t)), None)
    assert text is not None, "no chapter has a provenance line in its outputs"
    path = provenance.find(text)[0].path
    copy = tmp_path / path
    copy.parent.mkdir(parents=True)
    copy.write_text((ROOT / path).read_text() + "\n// edited after the notebook ran\n")
    assert any(p.startswith(path) for p in units.stale(text, tmp_path))


@pytest.mark.usefixtures("nvcc_path")     # skips without nvcc; fails under GEMMLAB_STRICT_TOOLS=1
def test_kernel_solutions_compile_for_every_architecture(chapter):
    """Kernel solutions (CUDA source in a solution's SOURCE string) compile cleanly with nvcc (-Werror all-warnings),
    for every supported GPU (tests/nvcc_cache.py: the builds tests/test_exercises.py reads too)."""
    import nvcc_cache

    sources = [m for code in solution_blocks(chapter[1]) for m in re.findall(r"SOURCE = r\'\'\'(.*?)\'\'\'", code, re.S)]
    if not sources:
        pytest.skip("this chapter has no kernel solutions")
    for src in sources:
        for arch, build in nvcc_cache.solution_builds(src).items():
            assert build.returncode == 0, f"{arch}:\n{build.stderr}"


def workbench_outputs():
    """(notebook, stored html) for every Workbench output in the chapters and the book."""
    for path in sorted(CHAPTERS) + sorted((ROOT / "book").glob("*.ipynb")):
        for cell in read(path).cells:
            for out in cell.get("outputs", []):
                html = out.get("data", {}).get("text/html", "")
                html = html if isinstance(html, str) else "".join(html)
                if 'data-workbench="1"' in html:
                    yield path.name, html


def test_workbench_outputs_are_fresh():
    """A stored Workbench equals what gemmlab.book.workbench renders now (same data, CSS and script)."""
    import json

    from gemmlab.book import workbench

    found = list(workbench_outputs())
    if not found:
        pytest.skip("no stored Workbench output yet")
    for name, html in found:
        uid = re.search(r'<div class="smwb" id="([^"]+)"', html).group(1)
        blob = re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>', html, re.S).group(1)
        stored = json.loads(blob.replace("<\\/", "</"))
        payload = workbench.data(stored["M"], stored["N"], stored["K"], stored["T"])
        payload["mode"] = stored["mode"]
        assert html == workbench.page_html(payload, uid), f"{name}: stale Workbench output, re-execute it"
