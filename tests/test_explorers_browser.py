"""The Occupancy Calculator page in a real browser: its answers equal gemmlab.occupancy.calculate's.

The page's JavaScript re-implements the calculator's rules; this test sets the page's own inputs (the
device list, the three number fields) over a grid of cases on every preset and compares the blocks per
SM, the binding limits and the refusals with the Python function. Also: no console errors, keyboard
focus reaches every input, and the page fits a phone.
"""

from __future__ import annotations

import itertools

import pytest

from gemmlab import occupancy, occupancy_explorer

pytestmark = pytest.mark.slow

THREADS = (1, 32, 96, 256, 384, 512, 1024)
REGISTERS = (0, 16, 40, 64, 65, 128, 168, 255)
SHARED = (0, 1, 4096, 33_024, 49_152, 100_000)

RUN_CASES_JS = """(cases) => {
  const box = document.querySelector('.occx');
  const select = box.querySelector('[data-occx=device]');
  const field = k => box.querySelector('[data-occx=' + k + ']');
  return cases.map(([dev, t, r, s]) => {
    select.value = String(dev); select.dispatchEvent(new Event('change'));
    for (const [k, v] of [['threads', t], ['registers', r], ['shared', s]]) {
      field(k).value = String(v); field(k).dispatchEvent(new Event('input'));
    }
    return [box.dataset.occxBlocks, box.dataset.occxBinding, box.dataset.occxError];
  });
}"""


def expected(spec, threads, registers, shared):
    try:
        o = occupancy.calculate(spec, threads, registers, shared)
    except ValueError:
        return None
    return str(o.blocks_per_sm), ",".join(o.binding)


@pytest.fixture(scope="module")
def calculator_page(served_book, browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{served_book}/book/occupancy.html", wait_until="load")
    page.wait_for_selector(".occx[data-mounted]")
    yield page, errors
    context.close()


def test_every_answer_equals_the_python_calculator(calculator_page):
    page, errors = calculator_page
    presets = occupancy_explorer.PRESETS
    cases = [[i, t, r, s] for i, (t, r, s) in itertools.product(range(len(presets)), itertools.product(THREADS, REGISTERS, SHARED))]
    got = page.evaluate(RUN_CASES_JS, cases)
    wrong = []
    for (i, t, r, s), (blocks, binding, error) in zip(cases, got):
        want = expected(presets[i][1], t, r, s)
        if want is None and not error or want is not None and (blocks, binding) != want:
            wrong.append(f"{presets[i][0]} {t} threads, {r} registers, {s} B: page {blocks!r} {binding!r} {error!r}, "
                         f"Python {want}")
    assert len(cases) > 1000 and not wrong, f"{len(wrong)} of {len(cases)} cases differ, e.g.\n" + "\n".join(wrong[:5])
    assert sum(1 for g in got if g[2]) > 0, "the grid must include refused cases (too many registers for a block)"
    assert not errors, errors


def test_the_page_answers_in_words_and_is_keyboard_and_phone_ready(calculator_page):
    page, _ = calculator_page
    page.evaluate(RUN_CASES_JS, [[len(occupancy_explorer.PRESETS) - 1, 256, 65, 0]])
    summary = page.locator("[data-occx-out=summary]").inner_text()
    assert summary == "3 blocks per SM, 24 of 64 warps: occupancy 38%. Bound by registers."
    assert page.locator(".occx-result").get_attribute("aria-live") == "polite"
    focused = []
    page.locator("[data-occx=device]").focus()
    for _ in range(3):
        page.keyboard.press("Tab")
        focused.append(page.evaluate("document.activeElement.getAttribute('data-occx')"))
    assert focused == ["threads", "registers", "shared"], "Tab goes from field to field (sliders are skipped)"
    page.keyboard.press("ArrowUp")                   # the shared-memory field, from 0: one byte more
    assert page.locator(".occx").get_attribute("data-occx-blocks") == "3"
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


@pytest.mark.parametrize("page_name, selector", [("book/occupancy", ".occx"), ("book/workbench", ".smwb")])
def test_no_light_frame_in_dark_mode(served_book, browser, page_name, selector):
    """In dark mode the theme gives every HTML output a light box; the interactive pages draw their own
    background, so book/_static/course.css takes the box away around them."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{served_book}/{page_name}.html", wait_until="load")
        page.evaluate("document.documentElement.dataset.theme = 'dark'")
        frame = page.evaluate(f"getComputedStyle(document.querySelector('{selector}').parentElement).backgroundColor")
        assert frame in ("rgba(0, 0, 0, 0)", "transparent"), f"{page_name}: a {frame} frame around the widget in dark mode"
    finally:
        context.close()
