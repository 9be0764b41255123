"""The book's navigation buttons in a real browser (headless Debian chromium through Playwright).

On one chapter page, at a phone (390 px), a tablet (800 px) and a laptop (1366 px) width, the
button a reader sees is tapped and the result is looked at, not the theme's classes:

- below the theme's wide layout the sidebar toggle opens the chapter list (every chapter of
  ``_toc.yml`` linked, visible and inside the screen) and Escape closes it; the contents button
  opens the page contents (a link to every section of the page) and a tap on the overlay beside
  it closes it; the chapter list opens again and the overlay closes it too;
- at 1366 px the sidebar toggle hides the sidebar and a second tap shows it again; the page
  contents stand in their own column there, with no button.

Themes whose listeners sit on another copy of these buttons fail here: pydata-sphinx-theme 0.17.1
under sphinx-book-theme 1.3.0 bound them to hidden copies in its top bar until book/_ext/coursebook.py
(``_no_top_bar``) emptied that bar. A screenshot of each width with the sidebar open goes to
test-artifacts/.
"""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.slow

PAGE = "chapters/03_syncthreads_pitfall"     # a chapter with sections, so it has page contents
HEIGHT = 844
TIMEOUT_MS = 30_000
SETTLE_MS = 3_000      # the theme animates the sidebar (margin, opacity) for a fraction of that

# Each width and how the theme lays it out there: "dialog" (both sidebars behind buttons, opened
# as modal dialogs) or "columns" (both sidebars beside the article, the left one toggled).
WIDTHS = {390: "dialog", 800: "dialog", 1366: "columns"}

# What a reader sees of the navigation. A link is shown when it is rendered (not hidden, not
# transparent), lies across the screen's width, and, where its middle is on screen, is what a tap
# there would hit (not covered by the article or an overlay). `anyHit` says that at least one of
# the links is on screen and tappable, so that a list scrolled out of sight does not count as shown.
NAV_STATE_JS = """([chapters, sections]) => {
  const shown = a => {
    if (!a.checkVisibility({opacityProperty: true, visibilityProperty: true})) return {shown: false, hit: false};
    const r = a.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0 || r.left < 0 || r.right > innerWidth) return {shown: false, hit: false};
    const x = (r.left + r.right) / 2, y = (r.top + r.bottom) / 2;
    if (y < 0 || y > innerHeight) return {shown: true, hit: false};
    const top = document.elementFromPoint(x, y);
    const hit = !!top && (top === a || a.contains(top));
    return {shown: hit, hit};
  };
  const summary = (links, key, wanted) => {
    const out = {}, hits = [];
    for (const want of wanted) {
      const matching = links.filter(a => key(a) === want).map(shown);
      out[want] = matching.some(s => s.shown);
      if (matching.some(s => s.hit)) hits.push(want);
    }
    return {each: out, anyHit: hits.length > 0};
  };
  const docs = [...document.querySelectorAll('nav.bd-docs-nav a[href]')];
  const toc = [...document.querySelectorAll('nav.page-toc a[href]')];
  return {
    chapters: summary(docs, a => new URL(a.href).pathname, chapters),
    contents: summary(toc, a => new URL(a.href).hash.slice(1), sections),
  };
}"""

# The sections a page's contents list must link to: the article's second-level headings.
SECTIONS_JS = """() => [...document.querySelectorAll('article.bd-article h2')]
  .map(h => h.closest('section')?.id).filter(Boolean)"""


class Nav:
    """The navigation of one page: what is shown now, and waiting until it is what a test wants."""

    def __init__(self, page, chapters: list[str], sections: list[str]):
        self.page, self.chapters, self.sections = page, chapters, sections

    def state(self) -> dict:
        return self.page.evaluate(NAV_STATE_JS, [self.chapters, self.sections])

    @staticmethod
    def all_shown(part: dict) -> bool:
        return all(part["each"].values()) and part["anyHit"]

    @staticmethod
    def none_shown(part: dict) -> bool:
        return not any(part["each"].values())

    def expect(self, part: str, shown: bool, after: str) -> None:
        """Wait (up to SETTLE_MS) until every link of ``part`` ("chapters", "contents") is shown,
        or none is; fail with what is shown otherwise."""
        want = self.all_shown if shown else self.none_shown
        waited, step_ms = 0, 100
        while True:
            state = self.state()[part]
            if want(state) or waited >= SETTLE_MS:
                break
            self.page.wait_for_timeout(step_ms)
            waited += step_ms
        if want(state):
            return
        listed = {"chapters": "the chapter list is", "contents": "the page contents are"}[part]
        if shown:
            missing = [k for k, v in state["each"].items() if not v]
            detail = (f"links not shown: {missing}" if missing
                      else "none of its links is on screen where a tap would reach it")
            pytest.fail(f"after {after}, {listed} not shown: {detail}", pytrace=False)
        present = [k for k, v in state["each"].items() if v]
        pytest.fail(f"after {after}, {listed} still shown: {present}", pytrace=False)


def the_visible(page, selector: str, what: str):
    """The one element matching ``selector`` that a reader sees (a theme may render hidden copies)."""
    visible = page.locator(f"{selector} >> visible=true")
    count = visible.count()
    assert count == 1, f"{count} visible {what} on the page ({selector}), where a reader needs one"
    return visible.first


def tap_backdrop(page, dialog_id: str, after: str) -> None:
    """Tap the overlay beside an open modal dialog (the theme closes the dialog on that)."""
    box = page.evaluate("""id => { const d = document.getElementById(id); if (!d || !d.open) return null;
      const r = d.getBoundingClientRect(); return {left: r.left, right: r.right}; }""", dialog_id)
    assert box is not None, f"after {after}, #{dialog_id} is not open"
    width = page.viewport_size["width"]
    if box["right"] <= width - 20:
        x = (box["right"] + width) / 2
    elif box["left"] >= 20:
        x = box["left"] / 2
    else:
        pytest.fail(f"#{dialog_id} covers the whole {width} px screen: there is no overlay to tap", pytrace=False)
    page.touchscreen.tap(x, HEIGHT / 2)


@pytest.mark.parametrize("width", list(WIDTHS))
def test_sidebar_and_contents_buttons(width, served_book, browser, artifacts, toc_pages, offline_routes):
    """Browser, server and the offline request stubs are the shared fixtures of tests/conftest.py."""
    layout = WIDTHS[width]
    url = f"{served_book}/{PAGE}.html"
    chapters = [urlparse(f"{served_book}/{doc}.html").path for doc in toc_pages if doc.startswith("chapters/")]
    assert chapters, "_toc.yml lists no chapters/ documents"
    external: list[str] = []
    problems: list[str] = []

    # Touch where the layout is a phone's or a tablet's, a mouse on the laptop.
    context = browser.new_context(viewport={"width": width, "height": HEIGHT}, has_touch=layout == "dialog",
                                  service_workers="block")
    try:
        offline_routes(context, external)
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.on("console", lambda m: problems.append(f"console error: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(f"uncaught exception: {e}"))
        response = page.goto(url, wait_until="load")
        assert response is not None and response.ok, f"{url} answered {response and response.status}"
        page.wait_for_load_state("networkidle")
        sections = page.evaluate(SECTIONS_JS)
        assert sections, f"{PAGE} has no second-level sections: pick a page with page contents"
        nav = Nav(page, chapters, sections)
        shot = artifacts / f"nav-{width}-sidebar-open.png"

        if layout == "dialog":
            toggle = the_visible(page, ".primary-toggle", "sidebar toggles")
            nav.expect("chapters", False, "loading the page")
            toggle.tap()
            nav.expect("chapters", True, "a tap on the sidebar toggle")
            page.screenshot(path=str(shot))
            page.keyboard.press("Escape")
            nav.expect("chapters", False, "Escape in the open chapter list")

            contents = the_visible(page, ".secondary-toggle", "contents buttons")
            nav.expect("contents", False, "closing the chapter list")
            contents.tap()
            nav.expect("contents", True, "a tap on the contents button")
            tap_backdrop(page, "pst-secondary-sidebar-modal", "a tap on the contents button")
            nav.expect("contents", False, "a tap on the overlay beside the page contents")
            # The lists went back where they came from: the sidebar toggle opens them again.
            toggle.tap()
            nav.expect("chapters", True, "a second tap on the sidebar toggle")
            tap_backdrop(page, "pst-primary-sidebar-modal", "a second tap on the sidebar toggle")
            nav.expect("chapters", False, "a tap on the overlay beside the chapter list")
        else:
            toggle = the_visible(page, ".primary-toggle", "sidebar toggles")
            nav.expect("chapters", True, "loading the page")
            nav.expect("contents", True, "loading the page")
            page.screenshot(path=str(shot))
            assert page.locator(".secondary-toggle >> visible=true").count() == 0, \
                f"at {width} px the page contents have their own column, yet a contents button shows"
            toggle.click()
            nav.expect("chapters", False, "a click on the sidebar toggle")
            toggle.click()
            nav.expect("chapters", True, "a second click on the sidebar toggle")
            nav.expect("contents", True, "hiding and showing the sidebar")
    finally:
        context.close()

    assert not external, f"the page asked other hosts for: {external}"
    assert not problems, f"{PAGE} at {width} px:\n" + "\n".join(problems)
