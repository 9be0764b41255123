"""The Shared Memory Workbench in a real browser (headless Debian chromium through Playwright).

The widget's JavaScript only plays back the steps that :func:`gemmlab.workbench.plan` computed
and adds up their deltas, so every counter on the page must equal a sum over the same steps
taken here in Python. The widget is tested on two kinds of page:

- ``standalone``: ``gemmlab.workbench.show()`` written to a bare HTML file (the current Python
  and JavaScript, whatever the notebooks hold), served from 127.0.0.1;
- ``book``: the built book's ``book/workbench`` page, whose widget is the stored output of
  ``book/workbench.ipynb`` (skipped while that page is not in ``_toc.yml``).

A page with two widgets checks that they keep apart. Screenshots (desktop, dark theme, phone)
go to test-artifacts/.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gemmlab import workbench

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
    assert wb.root.get_by_test_id("status").get_attribute("aria-live") == "polite"
    assert wb.root.get_by_test_id("play").get_attribute("aria-pressed") == "false"
    d = wb.payload
    plan = workbench.plan(d["mode"], d["M"], d["N"], d["K"], d["T"])
    gx, gy = plan.grid
    assert wb.root.locator(".blk[role=button][tabindex='0']").count() == gx * gy
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
        wb.root.get_by_role("button", name=f"block ({bx}, {by})", exact=True).click()
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
    block = wb.root.get_by_role("button", name=f"block ({bx}, {by})", exact=True)
    block.focus()
    page.keyboard.press("Enter")
    row, col = wb.thread()
    start = block_start(plan, b)
    wb.check(expect(plan, start, row, col), "Enter on a block")
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
        assert not stale, (f"{BOOK_PAGE}.ipynb's stored widget is older than gemmlab/workbench*: {stale}; "
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
        second.root.get_by_role("button", name=f"block ({gx - 1}, {gy - 1})", exact=True).click()
        second.click("forward", 5)      # phase 2's load: k = 4..7 with K = 7, so one column is padding
        assert second.root.locator(".threads .th.idle").count() > 0
        assert second.root.locator("[data-testid='s_A'] .sh-cell.pad").count() > 0
        assert second.root.locator("[data-testid='s_B'] .sh-cell.pad").count() > 0
        o.page.screenshot(path=str(artifacts / "workbench-two-widgets.png"), full_page=True)
        assert_clean(o)
    finally:
        o.close()
