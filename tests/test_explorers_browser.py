"""The explorer pages in a real browser: their answers equal gemmlab's.

The Occupancy Calculator's JavaScript re-implements the calculator's rules; this test sets the page's own
inputs (the device list, the three number fields) over a grid of cases on every preset and compares the
blocks per SM, the binding limits and the refusals with gemmlab.models.occupancy.calculate. The Bank Conflict
Explorer shows cases that Python computed; this test sets its inputs to every one of them and compares
what the page shows (wavefronts, ideal, every lane's words and banks, the words stacked in the picture)
with gemmlab.models.banks.bank_access on addresses built here. Also: no console errors, keyboard focus reaches
every input, and the pages fit a phone.
"""

from __future__ import annotations

import itertools

import pytest

from gemmlab.book import bank_explorer, occupancy_explorer
from gemmlab.models import banks, occupancy

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


@pytest.mark.parametrize("page_name, selector", [("book/occupancy", ".occx"), ("book/workbench", ".smwb"),
                                                 ("book/banks", ".bkx")])
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


# ---------------------------------------------------------------- the Bank Conflict Explorer

# Set the page's inputs to each case (dependent choices after the ones they depend on) and read back what it
# shows: the case key, the numbers, the sentence, each lane's words and banks, and every box of the picture.
RUN_BANK_CASES_JS = """(cases) => {
  const box = document.querySelector('.bkx');
  const order = ['mode', 'row', 'pattern', 'column', 'swizzle', 'width', 'columns', 'pad', 'tile', 'layout',
                 'instruction', 'stride'];
  return cases.map(c => {
    for (const f of order) {
      if (!(f in c)) continue;
      const input = box.querySelector('[data-bkx=' + f + ']');
      input.value = String(c[f]);
      if (input.value !== String(c[f])) return {unset: f};
      input.dispatchEvent(new Event(input.tagName === 'SELECT' ? 'change' : 'input'));
    }
    const lanes = [...box.querySelectorAll('tr[data-lane]')].map(tr =>
      [tr.querySelector('[data-bkx-cell=words]').textContent, tr.querySelector('[data-bkx-cell=banks]').textContent]);
    const rects = [...box.querySelectorAll('rect[data-word]')].map(r =>
      [Number(r.dataset.group), Number(r.dataset.bank), Number(r.dataset.word)]);
    return {key: box.dataset.bkxKey, wavefronts: box.dataset.bkxWavefronts, ideal: box.dataset.bkxIdeal,
            error: box.dataset.bkxError, summary: box.querySelector('[data-bkx-out=summary]').textContent,
            lanes, rects};
  });
}"""


def bank_case_addresses(case):
    """A case's addresses and width, built here from its inputs (the swizzle from gemmlab.models.banks, whose chunk
    rule tests/test_banks_and_occupancy.py checks against gemmlab.models.mma), or None where the page must refuse."""
    lanes, mode = range(32), case["mode"]
    if mode == "kernel":
        ins = banks.tiled_shared_instructions(case["tile"], case["layout"])[case["instruction"]]
        return list(ins.addresses), ins.access_bytes
    width = case["width"]
    if mode == "stride":
        return [4 * case["stride"] * lane for lane in lanes], width
    if mode == "padded":
        return [4 * lane * (case["columns"] + case["pad"]) for lane in lanes], width
    if case["swizzle"] == "words" and width > 4:
        return None
    if case["pattern"] == "column":
        rows, words = list(lanes), [case["column"]] * 32
    else:
        rows, words = zip(*(divmod(lane * width // 4, case["row"]) for lane in lanes))
    return banks.tile_addresses(rows, words, case["row"], case["swizzle"]), width


def span(values):
    return str(values[0]) if len(values) == 1 else f"{values[0]}–{values[-1]}"


def bank_case_problems(case, got):
    """What the page shows for ``case`` that the bank model contradicts (empty when all agrees)."""
    if "unset" in got:
        return [f"the page has no choice {case[got['unset']]!r} for {got['unset']}"]
    if got["key"] != bank_explorer.key(case):
        return [f"the page shows case {got['key']!r}"]
    built = bank_case_addresses(case)
    try:
        access = banks.bank_access(*built) if built else None
    except ValueError:
        access = None
    if access is None:
        return [] if got["error"] and got["summary"] == got["error"] and not got["rects"] else [
            f"the model refuses it, the page shows {got['wavefronts']!r} wavefronts"]
    addrs, width = built
    problems = []
    if (got["wavefronts"], got["ideal"], got["error"]) != (str(access.wavefronts), str(access.ideal), ""):
        problems.append(f"{got['wavefronts']} wavefronts, ideal {got['ideal']} {got['error']!r}; "
                        f"the model: {access.wavefronts}, ideal {access.ideal}")
    words = [list(range(a // 4, a // 4 + width // 4)) for a in addrs]
    want_lanes = [[span(ws), span([w % 32 for w in ws])] for ws in words]
    if got["lanes"] != want_lanes:
        problems.append(f"lanes' words and banks {got['lanes'][:4]}..., the model's {want_lanes[:4]}...")
    per_group: dict = {}
    for g, bank, word in got["rects"]:
        per_group.setdefault(g, {}).setdefault(bank, []).append(word)
    groups = banks.lane_groups(addrs, width)
    for g, lanes in enumerate(groups):
        drawn = per_group.get(g, {})
        want = {}
        for lane in lanes:
            for w in words[lane]:
                want.setdefault(w % 32, set()).add(w)
        if {b: sorted(ws) for b, ws in drawn.items()} != {b: sorted(ws) for b, ws in want.items()}:
            problems.append(f"group {g}: the picture's words per bank differ from the lanes' words")
        depth = max((len(ws) for ws in drawn.values()), default=0)
        if depth != banks.bank_access([addrs[lane] for lane in lanes], width).wavefronts:
            problems.append(f"group {g}: stacks {depth} deep")
    whole = [len({w for ws in per_group.values() for w in ws.get(b, [])}) for b in range(32)]
    if tuple(whole) != access.words_per_bank or len(per_group) != access.ideal:
        problems.append(f"words per bank drawn {whole}, the model's {list(access.words_per_bank)}")
    if got["summary"] != bank_explorer.result(addrs, width)["why"]:
        problems.append(f"the sentence {got['summary']!r}")
    return problems


@pytest.fixture(scope="module")
def bank_page(served_book, browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{served_book}/book/banks.html", wait_until="load")
    page.wait_for_selector(".bkx[data-mounted]")
    yield page, errors
    context.close()


def test_every_bank_case_equals_the_bank_model(bank_page):
    """Every case the page can select: strides 0-64, padded columns, swizzled rows and columns, each 4, 8 and
    16 bytes wide, and all 36 shared-memory instructions of the tiled kernels (T = 8, 16, 32, three layouts)."""
    page, errors = bank_page
    cases = list(bank_explorer.cases())
    got = page.evaluate(RUN_BANK_CASES_JS, cases)
    wrong = [f"{bank_explorer.key(c)}: {p}" for c, g in zip(cases, got) for p in bank_case_problems(c, g)]
    modes = {c["mode"] for c in cases}
    assert len(cases) > 500 and modes == set(bank_explorer.MODES)
    assert sum(c["mode"] == "kernel" for c in cases) == 36
    assert not wrong, f"{len(wrong)} problems over {len(cases)} cases, e.g.\n" + "\n".join(wrong[:8])
    assert sum(1 for g in got if g["error"]) > 50, "the grid must include refused (misaligned) accesses"
    assert sum(1 for g in got if g["wavefronts"] and int(g["wavefronts"]) > 8) > 20, "and heavy conflicts"
    assert not errors, errors


def test_the_bank_page_answers_in_words_and_is_keyboard_and_phone_ready(bank_page):
    page, _ = bank_page
    page.evaluate(RUN_BANK_CASES_JS, [{"mode": "stride", "stride": 2, "width": 4}])
    box = page.locator(".bkx")
    assert page.locator("[data-bkx-out=summary]").inner_text() == (
        "Lanes 0 and 16 both want bank 0, words 0 and 32: 2 wavefronts where 1 would do.")
    assert page.locator(".bkx-result").get_attribute("aria-live") == "polite"
    svg = page.locator(".bkx-figure svg")
    assert svg.get_attribute("role") == "img" and "2 wavefronts where 1 would do" in svg.get_attribute("aria-label")

    def tab_through(first, n):
        page.locator(f"[data-bkx={first}]").focus()
        seen = []
        for _ in range(n):
            page.keyboard.press("Tab")
            seen.append(page.evaluate("document.activeElement.getAttribute('data-bkx')"))
        return seen

    assert tab_through("mode", 2) == ["stride", "width"], "Tab goes from input to input (the slider is skipped)"
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("", "none"), "the focused input shows a focus ring"
    page.locator("[data-bkx=stride]").focus()
    page.keyboard.press("ArrowUp")                       # stride 3: every lane its own bank
    assert (box.get_attribute("data-bkx-key"), box.get_attribute("data-bkx-wavefronts")) == ("stride:3/4", "1")
    page.locator("[data-bkx=mode]").focus()
    page.keyboard.press("End")                           # the last access kind, from the keyboard
    assert box.get_attribute("data-bkx-key").startswith("kernel:")
    assert tab_through("mode", 3) == ["tile", "layout", "instruction"], "hidden inputs leave the Tab order"
    page.evaluate(RUN_BANK_CASES_JS, [{"mode": "kernel", "tile": 32, "layout": "transposed", "instruction": 1}])
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(100)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    width = page.evaluate("document.querySelector('.bkx-figure svg').getBoundingClientRect().width")
    assert 250 < width <= 390, f"the picture scales to the phone ({width} px)"
