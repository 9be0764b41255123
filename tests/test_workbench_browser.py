"""The Shared Memory Workbench in a real browser (headless Debian chromium through Playwright).

The widget's JavaScript only plays back the steps that :func:`gemmlab.book.workbench.plan` computed
and adds up their deltas, so every counter on the page must equal a sum over the same steps
taken here in Python. The widget is tested on two kinds of page:

- ``standalone``: ``gemmlab.book.workbench.show()`` written to a bare HTML file (the current Python
  and JavaScript, whatever the notebooks hold), served from 127.0.0.1;
- ``book``: the built book's ``book/workbench`` page, whose widget is the stored output of
  ``book/workbench.ipynb`` (skipped while that page is not in ``_toc.yml``).

A page with two widgets checks that they keep apart. Screenshots (desktop, dark theme, phone)
go to test-artifacts/.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gemmlab.book import workbench

pytestmark = pytest.mark.slow

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 375, "height": 812}
TIMEOUT_MS = 30_000
BOOK_PAGE = "book/workbench"
SECOND = dict(M=13, N=10, K=7, T=4, mode="tiled")     # the second widget of the two-widget page

# Every label the page must show, by its text (the legend's and the caveats' included).
LABELS = [
    "Shared Memory Workbench", "B", "K×N", "A", "M×K", "global memory", "blocks done",
    "s_A", "s_B", "BARRIER", "__syncthreads()", "register acc",
    "Global memory (DRAM)", "Shared memory (SRAM)", "Selected thread", "hundreds of cycles", "tens of cycles",
    "Reuse grows with the tile size", "Global loads per block", "Reuse factor", "Shared memory per block",
    "2·T²·4 B", "2 KB at T = 16, 8 KB at T = 32", "T² ≤ 1024", "T ≤ 32",
    "Legend", "A row strip", "B column strip", "active K-tile", "selected block", "selected thread",
    "idle thread", "staged in s_A / s_B", "zero padding", "written to C", "waiting at the barrier",
    "Caveats", "warp", "L1 and L2", "Volta", "Best Practices Guide", "120 GB/s", "196 GB/s", "V100",
]

PAGE_SHELL = """<!doctype html>
<html lang="en" data-theme="light"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
  body {{ font-family: system-ui, sans-serif; margin: 0 auto; padding: 8px; max-width: 780px; }}
  html[data-theme="dark"] body {{ background: #121212; color: #ced6dd; }}
</style></head>
<body><h1>{title}</h1>
{body}
</body></html>
"""


def number(text: str) -> float:
    """A counter as the page writes it ("8,192", "151.67") as a number."""
    return float(text.replace(",", "").replace("\u2212", "-").strip())


def value_a(i: int, j: int) -> int:       # the widget's demo matrices (workbench.js: valA, valB)
    return ((i * 7 + j * 3) % 5) - 2


def value_b(i: int, j: int) -> int:
    return ((i * 3 + j * 5 + 1) % 5) - 2


@dataclass
class Expect:
    """The counters after the first n steps of a plan, for one followed thread."""

    step: int
    total: int
    global_loads: int
    shared_loads: int
    thread_global: int
    thread_shared: int
    blocks_done: int
    blocks: int


def expect(plan: workbench.Plan, n: int, row: int = 0, col: int = 0) -> Expect:
    steps = list(plan.steps())
    done = steps[:n]
    T, (gx, gy) = plan.T, plan.grid
    b = (row // T) * gx + col // T
    idx = (row % T) * T + col % T
    mine = [s for blk, s in done if blk == b]
    blocks_done = gx * gy if n >= len(steps) else steps[n][0]
    return Expect(step=n, total=len(steps),
                  global_loads=sum(s["global"] for _, s in done),
                  shared_loads=sum(s["shared"] for _, s in done),
                  thread_global=sum(s["tg"][idx] for s in mine if s["tg"]),
                  thread_shared=sum(s["ts"][idx] for s in mine if s["ts"]),
                  blocks_done=blocks_done, blocks=gx * gy)


def block_start(plan: workbench.Plan, b: int) -> int:
    return sum(len(plan.templates[t]) for t in plan.block_template[:b])


@dataclass
class Widget:
    """One widget on an open page, found by its container, with its own payload."""

    page: object
    root: object              # Locator of the .smwb container
    payload: dict
    problems: list = field(default_factory=list)

    @property
    def mode(self) -> str:
        return "tiled" if self.root.get_by_test_id("mode-tiled").is_checked() else "naive"

    @property
    def T(self) -> int:
        return int(self.root.get_by_test_id("tile-size").input_value())

    def plan(self) -> workbench.Plan:
        d = self.payload
        return workbench.plan(self.mode, d["M"], d["N"], d["K"], self.T)

    def text(self, testid: str) -> str:
        return self.root.get_by_test_id(testid).first.text_content().strip()

    def num(self, testid: str) -> float:
        return number(self.text(testid))

    def step(self) -> int:
        return int(number(self.text("step").split("/")[0]))

    def click(self, testid: str, times: int = 1) -> None:
        button = self.root.get_by_test_id(testid)
        for _ in range(times):
            button.click()

    def thread(self) -> tuple[int, int]:
        return (int(self.root.get_by_test_id("thread-row").input_value()),
                int(self.root.get_by_test_id("thread-col").input_value()))

    def check(self, e: Expect, where: str = "") -> None:
        got = {"step": self.text("step"), "global-loads": self.num("global-loads"),
               "shared-loads": self.num("shared-loads"), "thread-global": self.num("thread-global"),
               "thread-shared": self.num("thread-shared"), "blocks-done": self.text("blocks-done")}
        want = {"step": f"{e.step:,}/{e.total:,}", "global-loads": e.global_loads, "shared-loads": e.shared_loads,
                "thread-global": e.thread_global, "thread-shared": e.thread_shared,
                "blocks-done": f"{e.blocks_done}/{e.blocks}"}
        assert got == want, f"{where}: the page's counters differ from the plan's sums"


class Opened:
    """A browser page on a URL, recording console errors, page errors and every request."""

    def __init__(self, browser, url: str, offline_routes, viewport=DESKTOP):
        self.context = browser.new_context(viewport=viewport, service_workers="block")
        self.external: list[str] = []
        self.requests: list[str] = []
        self.problems: list[str] = []
        offline_routes(self.context, self.external)
        self.page = self.context.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.page.on("console", lambda m: self.problems.append(f"console error: {m.text}")
                     if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.problems.append(f"uncaught exception: {e}"))
        self.page.on("request", lambda r: self.requests.append(r.url))
        response = self.page.goto(url, wait_until="load")
        assert response is not None and response.ok, f"{url} answered {response and response.status}"
        self.url = url
        self.html = response.text()             # the page as served, before any script ran

    def widgets(self) -> list[Widget]:
        roots = self.page.locator(".smwb[data-workbench]")
        out = []
        for i in range(roots.count()):
            root = roots.nth(i)
            uid = root.get_attribute("id")
            payload = self.page.evaluate("id => JSON.parse(document.getElementById(id + '-data').textContent)", uid)
            out.append(Widget(self.page, root, payload, self.problems))
        return out

    def close(self) -> None:
        self.context.close()


# ---------------------------------------------------------------- the pages


@pytest.fixture(scope="module")
def standalone_site(tmp_path_factory, directory_server):
    """Bare pages with the widget as ``show()`` renders it now: one widget, and two widgets."""
    site = tmp_path_factory.mktemp("workbench-site")
    one = workbench.show()._repr_html_()
    two = workbench.show()._repr_html_() + "\n<p>A second, independent widget:</p>\n" + \
        workbench.show(**SECOND)._repr_html_()
    (site / "one.html").write_text(PAGE_SHELL.format(title="Workbench", body=one), encoding="utf-8")
    (site / "two.html").write_text(PAGE_SHELL.format(title="Two workbenches", body=two), encoding="utf-8")
    return directory_server(site)


@pytest.fixture(params=["standalone", "book"])
def page_url(request, standalone_site, toc_pages):
    if request.param == "standalone":
        return f"{standalone_site}/one.html"
    if BOOK_PAGE not in toc_pages:
        pytest.skip(f"{BOOK_PAGE} is not in _toc.yml yet")
    served = request.getfixturevalue("served_book")
    return f"{served}/{BOOK_PAGE}.html"


@pytest.fixture
def opened(browser, page_url, offline_routes):
    o = Opened(browser, page_url, offline_routes)
    yield o
    o.close()


def first_widget(o: Opened) -> Widget:
    """The first widget on the page (the book page's absence of one is test_book_page_shows_the_workbench's
    failure; the other tests skip there)."""
    found = o.widgets()
    if not found:
        assert o.url.endswith(f"{BOOK_PAGE}.html"), f"{o.url} has no Shared Memory Workbench"
        pytest.skip(f"{BOOK_PAGE} shows no workbench (see test_book_page_shows_the_workbench)")
    w = found[0]
    o.page.wait_for_function("el => el.querySelector('svg') !== null", arg=w.root.element_handle())
    return w


@pytest.fixture
def wb(opened) -> Widget:
    return first_widget(opened)


def assert_clean(o: Opened) -> None:
    assert not o.problems, f"{o.url}:\n" + "\n".join(o.problems)


# ---------------------------------------------------------------- one widget


def test_renders_every_label(wb, opened):
    assert wb.root.locator("h3", has_text="Shared Memory Workbench").is_visible()
    assert wb.root.locator("svg.smwb-svg").count() >= 2
    assert wb.root.locator("svg.smwb-svg").first.is_visible()
    text = " ".join(wb.root.text_content().split())
    missing = [label for label in LABELS if label not in text]
    assert not missing, f"labels missing from the widget: {missing}"
    for testid in ("s_A", "s_B", "barrier", "register", "status", "legend", "caveats", "tier-global",
                   "tier-shared", "reuse-loads-naive", "reuse-loads-tiled", "reuse-factor", "shared-bytes",
                   "mode-naive", "mode-tiled", "tile-size", "reset", "back", "play", "forward"):
        assert wb.root.get_by_test_id(testid).count() == 1, f"no single data-testid={testid!r}"
    assert wb.root.get_by_test_id("announce").get_attribute("aria-live") == "polite"
    assert wb.root.get_by_test_id("play").get_attribute("aria-pressed") == "false"
    d = wb.payload
    plan = workbench.plan(d["mode"], d["M"], d["N"], d["K"], d["T"])
    gx, gy = plan.grid
    assert wb.root.locator("[role=grid] .blk[role=gridcell]").count() == gx * gy
    wb.check(expect(plan, 0), "at load")
    assert wb.thread() == (0, 0)
    if opened.url.endswith("one.html"):        # the widget asks for nothing over the network
        assert opened.requests == [opened.url], opened.requests
    assert_clean(opened)


def test_step_forward_matches_the_plan(wb, opened):
    wb.root.get_by_test_id("mode-naive").check()
    plan = wb.plan()
    first_block = len(plan.templates[plan.block_template[0]])
    done = 0
    for n in sorted({1, 2, 5, first_block - 1, first_block, first_block + 3}):
        wb.click("forward", n - done)
        done = n
        wb.check(expect(plan, n), f"naive, after {n} steps")
        if n == first_block:                    # block 0 finished: thread (0, 0) wrote its sum
            K = wb.payload["K"]
            acc = sum(value_a(0, k) * value_b(k, 0) for k in range(K))
            reg = " ".join(wb.root.get_by_test_id("register").text_content().split())
            assert f"acc = {acc}".replace("-", "\u2212") in reg and "written" in reg, reg
    status = wb.text("status")
    assert status.startswith("Block (1, 0)") or status.startswith("Block (0, 1)"), status
    assert_clean(opened)


def test_back_and_reset(wb, opened):
    plan = wb.plan()
    wb.click("forward", 4)
    wb.click("back")
    wb.check(expect(plan, 3), "after 4 forward and 1 back")
    wb.click("back", 3)
    wb.check(expect(plan, 0), "back at the start")
    assert wb.root.get_by_test_id("back").is_disabled()
    wb.click("forward", 6)
    wb.click("reset")
    wb.check(expect(plan, 0), "after reset")
    assert_clean(opened)


def test_play_pause(wb, opened):
    page = opened.page
    play = wb.root.get_by_test_id("play")
    wb.root.get_by_test_id("speed").evaluate("el => { el.value = el.max; el.dispatchEvent(new Event('input')); }")
    play.click()
    assert play.get_attribute("aria-pressed") == "true"
    page.wait_for_function("el => parseInt(el.textContent.replace(/,/g, '')) >= 3",
                           arg=wb.root.get_by_test_id("step").element_handle())
    play.click()
    assert play.get_attribute("aria-pressed") == "false"
    paused = wb.step()
    page.wait_for_timeout(600)
    assert wb.step() == paused, "the step counter moved after pause"
    wb.check(expect(wb.plan(), paused), f"paused after {paused} steps")

    # Play stops by itself at the end (the largest tile, tiled: the fewest steps).
    wb.root.get_by_test_id("mode-tiled").check()
    wb.root.get_by_test_id("tile-size").select_option(str(max(wb.payload["tiles"])))
    plan = wb.plan()
    play.click()
    page.wait_for_function("el => el.getAttribute('aria-pressed') === 'false'", arg=play.element_handle(),
                           timeout=max(TIMEOUT_MS, 200 * plan.totals()["steps"]))
    wb.check(expect(plan, plan.totals()["steps"]), "played to the end")
    assert_clean(opened)


def test_tiled_mode_barrier_and_shared_tiles(wb, opened):
    wb.root.get_by_test_id("mode-tiled").check()
    plan = wb.plan()
    wb.check(expect(plan, 0), "tiled, at 0")
    barrier = wb.root.get_by_test_id("barrier")
    s_a = wb.root.get_by_test_id("s_A")
    assert barrier.get_attribute("data-active") == "false"
    assert s_a.get_attribute("data-staged") == "false"
    kinds = [s["kind"] for _, s in plan.steps()]
    for n in range(1, min(len(kinds), 9) + 1):
        wb.click("forward")
        wb.check(expect(plan, n), f"tiled, after {n} steps")
        kind = kinds[n - 1]
        assert barrier.get_attribute("data-active") == ("true" if kind == "sync" else "false"), (n, kind)
        assert s_a.get_attribute("data-staged") == "true"
        assert wb.root.get_by_test_id("s_B").get_attribute("data-staged") == "true"
        if kind == "sync":
            assert wb.root.locator(".threads .th-wait").count() == plan.T ** 2
        if kind == "compute":
            assert "compute from s_A and s_B" in wb.text("status")
    assert_clean(opened)


def test_tile_size_select_updates_the_reuse_panel(wb, opened):
    d = wb.payload
    for mode in ("naive", "tiled"):
        wb.root.get_by_test_id(f"mode-{mode}").check()
        for T in d["tiles"]:
            wb.root.get_by_test_id("tile-size").select_option(str(T))
            want = workbench.reuse_table(d["M"], d["N"], d["K"], T)
            assert wb.num("shared-bytes") == 2 * T * T * 4 == want["shared_bytes"]
            assert wb.num("reuse-loads-naive") == pytest.approx(want["naive_loads_per_block"], abs=0.006)
            assert wb.num("reuse-loads-tiled") == pytest.approx(want["tiled_loads_per_block"], abs=0.006)
            assert wb.num("reuse-factor") == pytest.approx(want["reuse"], abs=0.006)
            wb.check(expect(workbench.plan(mode, d["M"], d["N"], d["K"], T), 0), f"{mode}, T = {T}")
            assert wb.root.locator(".blk").count() == want["blocks"]
    assert_clean(opened)


def test_click_a_block_jumps_to_it(wb, opened):
    for mode in ("naive", "tiled"):
        wb.root.get_by_test_id(f"mode-{mode}").check()
        plan = wb.plan()
        gx, gy = plan.grid
        b = min(5, gx * gy - 1)
        bx, by = b % gx, b // gx
        wb.root.get_by_role("gridcell", name=f"block ({bx}, {by})", exact=True).click()
        row, col = wb.thread()
        assert (row // plan.T, col // plan.T) == (by, bx), "the followed thread is not in the clicked block"
        start = block_start(plan, b)
        wb.check(expect(plan, start, row, col), f"{mode}: clicked block ({bx}, {by})")
        assert wb.text("blocks-done") == f"{b}/{gx * gy}"
        wb.click("forward", 2)
        wb.check(expect(plan, start + 2, row, col), f"{mode}: two steps into block ({bx}, {by})")
        # an element of C in another block: follow its thread and play that block
        r, c = wb.payload["M"] - 1, wb.payload["N"] - 1
        cell = wb.root.locator(f".cell-c[data-r='{r}'][data-c='{c}']")
        cell.click()
        assert wb.thread() == (r, c)
        last = (r // plan.T) * gx + c // plan.T
        wb.check(expect(plan, block_start(plan, last), r, c), f"{mode}: clicked C[{r},{c}]")
    assert_clean(opened)


def test_keyboard(wb, opened):
    page = opened.page
    plan = wb.plan()
    gx, gy = plan.grid
    bx, by = min(1, gx - 1), min(1, gy - 1)
    b = by * gx + bx
    block = wb.root.get_by_role("gridcell", name=f"block ({bx}, {by})", exact=True)
    block.focus()
    page.keyboard.press("Enter")
    row, col = wb.thread()
    start = block_start(plan, b)
    wb.check(expect(plan, start, row, col), "Enter on a block")
    wb.root.locator(".smwb-stage").focus()       # in the grid of C the arrows move between blocks
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowLeft")
    wb.check(expect(plan, start + 1, row, col), "ArrowRight twice, ArrowLeft once")

    play = wb.root.get_by_test_id("play")
    wb.root.locator(".smwb-stage").focus()
    page.keyboard.press("p")
    assert play.get_attribute("aria-pressed") == "true"
    page.keyboard.press("p")
    assert play.get_attribute("aria-pressed") == "false"
    page.keyboard.press(" ")
    assert play.get_attribute("aria-pressed") == "true"
    page.keyboard.press(" ")
    assert play.get_attribute("aria-pressed") == "false"

    # the buttons work from the keyboard; arrows inside a form field are the field's own
    wb.click("reset")
    forward = wb.root.get_by_test_id("forward")
    forward.focus()
    page.keyboard.press("Enter")
    page.keyboard.press(" ")
    assert wb.step() == 2
    row_in = wb.root.get_by_test_id("thread-row")
    row_in.focus()
    page.keyboard.press("ArrowRight")
    assert wb.step() == 2, "ArrowRight inside the row field stepped the animation"

    # choosing the followed thread by keyboard
    M, N = wb.payload["M"], wb.payload["N"]
    r, c = min(3, M - 1), min(5, N - 1)
    row_in.fill(str(r))
    row_in.press("Enter")
    col_in = wb.root.get_by_test_id("thread-col")
    col_in.fill(str(c))
    col_in.press("Enter")
    assert wb.thread() == (r, c)
    tb = (r // plan.T) * gx + c // plan.T
    wb.click("forward", 3)
    wb.check(expect(plan, block_start(plan, tb) + 3, r, c), f"following thread ({r}, {c})")
    assert_clean(opened)


# ---------------------------------------------------------------- keyboard, screen readers, words


def _active_block(page) -> int | None:
    """data-block of the focused element, if it is a block of C."""
    return page.evaluate("() => { const e = document.activeElement; return e && e.getAttribute('role') === 'gridcell' "
                         "? parseInt(e.getAttribute('data-block'), 10) : null; }")


def test_grid_of_c_is_one_tab_stop(wb, opened):
    """The blocks of C are one ARIA grid with a roving tabindex: one Tab in, one Tab out; the arrow
    keys (Home, End, Ctrl+Home, Ctrl+End) move the focus, which is drawn; Enter or Space selects."""
    page = opened.page
    plan = wb.plan()
    gx, gy = plan.grid
    assert gx >= 3 and gy >= 2, "the test needs a grid of at least 3×2 blocks"
    grid = wb.root.locator("[role=grid]")
    assert grid.count() == 1
    cells = grid.locator("[role=row] [role=gridcell]")
    assert cells.count() == gx * gy

    def tab_stops() -> list[int]:
        return [int(c.get_attribute("data-block")) for c in grid.locator("[role=gridcell][tabindex='0']").all()]

    assert tab_stops() == [0], "the grid of C must be a single Tab stop (one block with tabindex=0)"
    assert grid.locator("[role=gridcell][tabindex='-1']").count() == gx * gy - 1

    ring = wb.root.get_by_test_id("grid-focus")
    wb.root.locator(".smwb-stage").focus()
    page.keyboard.press("Tab")
    assert _active_block(page) == 0, "Tab from the figure did not land on the block on show"
    assert ring.is_visible(), "the focused block is not drawn as focused"
    box, cell = ring.bounding_box(), cells.nth(0).bounding_box()
    assert abs(box["x"] - cell["x"]) < 4 and abs(box["width"] - cell["width"]) < 6, (box, cell)
    page.keyboard.press("Tab")
    assert _active_block(page) is None and not grid.evaluate("g => g.contains(document.activeElement)"), \
        "one Tab did not leave the grid of C"
    assert not ring.is_visible()
    page.keyboard.press("Shift+Tab")
    assert _active_block(page) == 0

    moves = [("ArrowLeft", 0), ("ArrowUp", 0), ("ArrowRight", 1), ("ArrowDown", gx + 1), ("End", 2 * gx - 1),
             ("Home", gx), ("Control+End", gx * gy - 1), ("Control+Home", 0), ("ArrowRight", 1)]
    for key, want in moves:
        page.keyboard.press(key)
        assert _active_block(page) == want, f"{key}: focus on block {_active_block(page)}, expected {want}"
        assert tab_stops() == [want], f"{key}: the Tab stop did not follow the focus"
        assert wb.step() == 0, f"{key} in the grid of C stepped the animation"
        box, cell = ring.bounding_box(), cells.nth(want).bounding_box()
        assert abs(box["x"] - cell["x"]) < 4 and abs(box["y"] - cell["y"]) < 4, f"{key}: the ring is elsewhere"

    page.keyboard.press("Enter")
    wb.check(expect(plan, block_start(plan, 1), *wb.thread()), "Enter on block 1")
    assert cells.nth(1).get_attribute("aria-selected") == "true"
    assert grid.locator("[aria-selected='true']").count() == 1
    page.keyboard.press("ArrowDown")
    page.keyboard.press(" ")
    assert wb.text("blocks-done") == f"{gx + 1}/{gx * gy}", "Space did not select the focused block"
    assert cells.nth(gx + 1).get_attribute("aria-selected") == "true"

    # after the reader moves on elsewhere, Tab comes back to the block on show
    page.keyboard.press("Tab")
    wb.click("reset")
    wb.root.locator(".smwb-stage").focus()
    page.keyboard.press("Tab")
    assert _active_block(page) == 0 and tab_stops() == [0]
    assert_clean(opened)


# every element of the widget that a screen reader treats (or might treat) as a live region
_WATCH_LIVE = """root => {
    const regions = [...root.querySelectorAll('[aria-live], [role=status], [role=alert], [role=log]')];
    window.__smwbLive = [];
    const ob = new MutationObserver(rs => rs.forEach(r => {
        const el = r.target.nodeType === 1 ? r.target : r.target.parentElement;
        window.__smwbLive.push(el.closest('[data-testid]') ? el.closest('[data-testid]').dataset.testid : '?');
    }));
    regions.forEach(el => ob.observe(el, {childList: true, characterData: true, subtree: true}));
    window.__smwbObserver = ob;
    return regions.map(e => e.dataset.testid || e.className);
}"""


def test_live_region_is_quiet_during_play(wb, opened):
    """Single steps are announced; during Play nothing is, and Play says once why it stopped."""
    page = opened.page
    regions = wb.root.evaluate(_WATCH_LIVE)
    assert regions, "the widget has no live region"

    def heard() -> list:
        return page.evaluate("() => { const h = window.__smwbLive; window.__smwbLive = []; return h; }")

    def spoken() -> list[str]:
        return wb.root.evaluate("root => [...root.querySelectorAll('[aria-live], [role=status]')]"
                                ".filter(e => e.getAttribute('aria-live') !== 'off').map(e => e.textContent)")

    wb.click("forward")
    assert heard(), "a single step was not announced"
    assert wb.text("status") in spoken()
    wb.click("back")
    assert heard() and wb.text("status") in spoken()

    wb.root.get_by_test_id("speed").evaluate("el => { el.value = el.max; el.dispatchEvent(new Event('input')); }")
    play = wb.root.get_by_test_id("play")
    play.click()
    page.wait_for_function("el => parseInt(el.textContent.replace(/,/g, '')) >= 8",
                           arg=wb.root.get_by_test_id("step").element_handle())
    during = heard()
    assert not during, f"the live region spoke {len(during)} times during Play"
    assert regions == ["announce"], f"live regions in the widget: {regions}"
    status = wb.root.get_by_test_id("status")
    assert status.get_attribute("aria-live") in (None, "off") and status.get_attribute("role") is None
    announce = wb.root.get_by_test_id("announce")
    play.click()
    after = heard()
    assert after, "pausing Play said nothing"
    said = announce.text_content()
    assert said.startswith(f"Paused at step {wb.step():,} of ") and said.endswith(wb.text("status")), said
    page.wait_for_timeout(300)
    assert not heard(), "the live region spoke after the pause"

    # Play to the end: quiet on the way, one announcement at the end
    wb.root.get_by_test_id("mode-tiled").check()
    wb.root.get_by_test_id("tile-size").select_option(str(max(wb.payload["tiles"])))
    plan = wb.plan()
    heard()
    play.click()
    page.wait_for_function("el => el.getAttribute('aria-pressed') === 'false'", arg=play.element_handle(),
                           timeout=max(TIMEOUT_MS, 200 * plan.totals()["steps"]))
    page.wait_for_timeout(100)
    said = announce.text_content()
    assert said.startswith("Played to the end"), said
    assert len(set(heard())) == 1, "Play to the end announced more than once"
    assert_clean(opened)


# A count and a noun that disagree: "1 blocks", "the 1 block", "2 thread" and the like.
_NOUNS = r"(?:block|thread|load request|shared read|request|read|load|step|row|element|phase|tile|value)"
_SINGULAR = r"(?:block|thread|load request|shared read|step|row|element|phase|tile|value)(?![\w-]| request| read)"
_BAD_GRAMMAR = [
    re.compile(rf"(?<![\d.,/×])\b1 {_NOUNS}s\b"),
    re.compile(rf"(?<![\d.,/×])\b(?:0|[2-9]|[1-9]\d+|\d{{1,3}}(?:,\d{{3}})+) {_SINGULAR}"),
    re.compile(r"\bthe 1 \w+"),
    re.compile(r"\b(?:block|thread|request|read|tile) (?:before it |in it )?are\b"),
    re.compile(r"\b(?:blocks|threads|requests|reads|tiles) (?:before it |in it )?is\b"),
]


def _all_words(w: Widget) -> str:
    """Every sentence the widget shows or says: its text, the live region, labels and SVG titles."""
    return w.root.evaluate("""root => [root.innerText, root.querySelector('[data-testid=announce]').textContent,
        ...[...root.querySelectorAll('[aria-label]')].map(e => e.getAttribute('aria-label')),
        ...[...root.querySelectorAll('[aria-valuetext]')].map(e => e.getAttribute('aria-valuetext')),
        ...[...root.querySelectorAll('svg text')].map(e => e.textContent)].join('\\n')""")


def test_counts_agree_with_their_nouns(wb, opened):
    """"the block before it is done", "the 2 blocks before it are done"; no "1 blocks" anywhere."""
    plan = wb.plan()
    gx, gy = plan.grid
    wb.root.locator(".blk[data-block='1']").click()
    assert wb.text("status") == "Block (1, 0) is next; the block before it is done."
    wb.root.locator(".blk[data-block='2']").click()
    assert wb.text("status") == "Block (2, 0) is next; the 2 blocks before it are done."

    bad = []
    for mode in ("naive", "tiled"):
        wb.root.get_by_test_id(f"mode-{mode}").check()
        for T in wb.payload["tiles"]:
            wb.root.get_by_test_id("tile-size").select_option(str(T))
            p = wb.plan()
            kinds = len(p.templates[p.block_template[0]])
            texts = [_all_words(wb)]
            for _ in range(min(kinds, 6)):
                wb.click("forward")
                texts.append(_all_words(wb))
            for b in sorted({1, 2, p.grid[0] * p.grid[1] - 1}):
                if b < p.grid[0] * p.grid[1]:
                    wb.root.locator(f".blk[data-block='{b}']").click()
                    texts.append(_all_words(wb))
            for text in texts:
                for rx in _BAD_GRAMMAR:
                    bad += [f"{mode}, T = {T}: …{text[max(0, m.start() - 40):m.end() + 20]!r}…"
                            for m in rx.finditer(text)]
    assert not bad, "counts that disagree with their nouns:\n" + "\n".join(sorted(set(bad))[:20])
    assert_clean(opened)


PHONE_390 = {"width": 390, "height": 844}


def test_phone_controls_stay_next_to_the_panels(browser, page_url, offline_routes):
    """At 390×844 the widget is long: wherever a panel that the controls drive is on screen, the
    buttons, the tile size and the kernel are on screen with it (a sticky bar), uncovered."""
    o = Opened(browser, page_url, offline_routes, PHONE_390)
    try:
        w = first_widget(o)
        height = w.root.bounding_box()["height"]
        bar = w.root.get_by_test_id("control-bar")
        if bar.count():
            assert bar.bounding_box()["height"] <= 0.25 * PHONE_390["height"], "the control bar takes over the screen"
        controls = ["forward", "back", "play", "reset", "tile-size", "mode-tiled", "step"]
        panels = {"matrices": ".smwb-fig-matrices", "block": ".smwb-fig-block", "tiers": ".smwb-tiers",
                  "reuse": "[data-testid=reuse]", "note": "[data-testid=mode-note]"}
        far = []
        for name, sel in panels.items():
            panel = w.root.locator(sel)
            # the panel's top a third of the way down the screen, as a reader scrolling to it sees it
            o.page.evaluate("([el, h]) => window.scrollTo(0, el.getBoundingClientRect().top + scrollY - h / 3)",
                            [panel.element_handle(), PHONE_390["height"]])
            o.page.wait_for_timeout(50)
            p = panel.bounding_box()
            assert p["y"] < PHONE_390["height"] and p["y"] + p["height"] > 0, f"{name} is not on screen"
            for c in controls:
                el = w.root.get_by_test_id(c)
                b = el.bounding_box()
                inside = b and b["y"] >= 0 and b["y"] + b["height"] <= PHONE_390["height"]
                on_top = inside and el.evaluate("""(e) => { const r = e.getBoundingClientRect();
                    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
                    return !!hit && (hit === e || e.contains(hit) || (e.labels && [...e.labels].some(l => l.contains(hit)))
                                      || hit.contains(e)); }""")
                if not on_top:
                    far.append(f"{c} while {name} is on screen (control at {b and round(b['y'])} px, "
                               f"{name} at {round(p['y'])} px)")
        # and it drives them from there: a step while the memory tiers are on screen
        o.page.evaluate("el => window.scrollTo(0, el.getBoundingClientRect().top + scrollY - 300)",
                        w.root.locator(".smwb-tiers").element_handle())
        before = w.step()
        w.root.get_by_test_id("forward").click(no_wait_after=True)
        assert w.step() == before + 1
        assert not far, (f"the widget is {height:.0f} px tall at 390 px; controls off screen or covered:\n"
                         + "\n".join(far))
        assert o.page.evaluate("document.scrollingElement.scrollWidth") <= PHONE_390["width"] + 1
        assert_clean(o)
    finally:
        o.close()


def test_screenshots_and_phone_width(browser, page_url, artifacts, offline_routes):
    tag = "book" if page_url.endswith(f"{BOOK_PAGE}.html") else "standalone"
    o = Opened(browser, page_url, offline_routes, DESKTOP)
    try:
        w = first_widget(o)
        w.root.get_by_test_id("mode-tiled").check()
        w.click("forward", 6)
        w.root.screenshot(path=str(artifacts / f"workbench-{tag}-desktop.png"))
        o.page.evaluate("document.documentElement.dataset.theme = 'dark'")
        w.root.screenshot(path=str(artifacts / f"workbench-{tag}-desktop-dark.png"))
        assert_clean(o)
    finally:
        o.close()

    o = Opened(browser, page_url, offline_routes, PHONE)
    try:
        w = first_widget(o)
        w.root.get_by_test_id("mode-tiled").check()
        w.click("forward", 6)
        widths = o.page.evaluate("""() => ({scroll: document.scrollingElement.scrollWidth, inner: innerWidth})""")
        assert widths["scroll"] <= widths["inner"] + 1, f"the page scrolls sideways at 375 px: {widths}"
        box = w.root.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] + 1, box
        for svg in w.root.locator("svg.smwb-svg").all():
            s = svg.bounding_box()
            assert s["width"] > 250 and s["x"] + s["width"] <= box["x"] + box["width"] + 1, s
        w.root.screenshot(path=str(artifacts / f"workbench-{tag}-phone.png"))
        o.page.screenshot(path=str(artifacts / f"workbench-{tag}-phone-page.png"), full_page=True)
        assert_clean(o)
    finally:
        o.close()


def test_book_page_shows_the_workbench(browser, toc_pages, offline_routes, request):
    """The book page holds the stored output of book/workbench.ipynb: every widget on it must be
    the one that the current gemmlab draws (same data, same script and style), and must start."""
    if BOOK_PAGE not in toc_pages:
        pytest.skip(f"{BOOK_PAGE} is not in _toc.yml yet")
    url = f"{request.getfixturevalue('served_book')}/{BOOK_PAGE}.html"
    o = Opened(browser, url, offline_routes)
    try:
        found = o.widgets()
        assert found, (f"{url} shows no Shared Memory Workbench (.smwb[data-workbench]): execute "
                       f"{BOOK_PAGE}.ipynb and commit its outputs")
        html = o.html
        raw = Path(workbench.ASSETS)
        stale = [name for name in ("workbench.js", "workbench.css")
                 if (raw / name).read_text(encoding="utf-8").strip() not in html]
        for w in found:
            o.page.wait_for_function("el => el.querySelector('svg') !== null", arg=w.root.element_handle())
            d = w.payload
            fresh = workbench.data(d["M"], d["N"], d["K"], d["T"])
            stale += [f"{w.root.get_attribute('id')}: {key}" for key in ("tiles", "plans", "reuse")
                      if d[key] != fresh[key]]
        assert not stale, (f"{BOOK_PAGE}.ipynb's stored widget is older than gemmlab/book/workbench*: {stale}; "
                           "re-execute the notebook")
        assert_clean(o)
    finally:
        o.close()


# ---------------------------------------------------------------- two widgets on one page


def test_two_widgets_keep_apart(browser, standalone_site, artifacts, offline_routes):
    o = Opened(browser, f"{standalone_site}/two.html", offline_routes)
    try:
        first, second = o.widgets()
        assert (second.payload["M"], second.payload["N"], second.payload["K"], second.payload["T"]) == (13, 10, 7, 4)
        assert second.mode == "tiled" and first.mode == "naive"
        dup = o.page.evaluate("""() => {
            const seen = {}; const dup = [];
            document.querySelectorAll('[id]').forEach(e => { if (seen[e.id]) dup.push(e.id); seen[e.id] = 1; });
            return dup; }""")
        assert not dup, f"duplicate element ids: {dup[:10]}"
        assert o.page.evaluate("typeof window.SMWorkbench.mount") == "function"

        p1, p2 = first.plan(), second.plan()
        first.click("forward", 3)
        first.check(expect(p1, 3), "first widget")
        second.check(expect(p2, 0), "second widget, untouched")
        second.click("forward", 7)
        second.check(expect(p2, 7), "second widget")
        first.check(expect(p1, 3), "first widget, after the second moved")
        assert second.root.get_by_test_id("barrier").get_attribute("data-active") == \
            ("true" if [s["kind"] for _, s in p2.steps()][6] == "sync" else "false")
        assert first.root.get_by_test_id("barrier").get_attribute("data-active") == "false"

        # keyboard focus in one widget drives that widget only
        second.root.locator(".smwb-stage").focus()
        o.page.keyboard.press("ArrowRight")
        second.check(expect(p2, 8), "second widget, ArrowRight")
        first.check(expect(p1, 3), "first widget, after ArrowRight in the second")

        # the same radio labels and selects, separate state
        first.root.get_by_test_id("tile-size").select_option("4")
        assert second.T == 4 and first.T == 4
        first.root.get_by_test_id("tile-size").select_option("8")
        assert second.T == 4
        second.check(expect(p2, 8), "second widget, after the first changed its tile")
        first.root.get_by_test_id("mode-tiled").check()
        assert first.mode == "tiled" and second.mode == "tiled"
        first.root.get_by_test_id("mode-naive").check()
        assert second.mode == "tiled", "switching the first widget's mode switched the second's"

        # edge blocks: idle threads and zero padding in the second widget (13×10, T = 4)
        gx, gy = p2.grid
        second.root.get_by_role("gridcell", name=f"block ({gx - 1}, {gy - 1})", exact=True).click()
        second.click("forward", 5)      # phase 2's load: k = 4..7 with K = 7, so one column is padding
        assert second.root.locator(".threads .th.idle").count() > 0
        assert second.root.locator("[data-testid='s_A'] .sh-cell.pad").count() > 0
        assert second.root.locator("[data-testid='s_B'] .sh-cell.pad").count() > 0
        o.page.screenshot(path=str(artifacts / "workbench-two-widgets.png"), full_page=True)
        assert_clean(o)
    finally:
        o.close()
