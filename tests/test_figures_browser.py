"""Every figure of the built book as a reader sees it. On a desktop (1366 px) each is shown at its own
size, or nearly, so that text drawn at the course's smallest size (tests/test_figures.py) is at least the
body text's, which is measured here too. On a phone (390 px) a figure is shown larger than the screen, in
a box that scrolls sideways (book/_static/course.css), so that its text stays at least PHONE_TEXT_PX; the
page itself does not scroll sideways. A screenshot of each figure at both widths goes to
test-artifacts/figures/."""

import pytest

from gemmlab.book import figures
from notebook_tools import CHAPTERS

DESKTOP, PHONE = {"width": 1366, "height": 900}, {"width": 390, "height": 844}
PHONE_TEXT_PX = 12

FIGURES_JS = """() => [...document.querySelectorAll('article .cell_output img')]
  .filter(i => i.naturalWidth > 300)
  .map((i, n) => ({n, natural: i.naturalWidth, shown: i.getBoundingClientRect().width, alt: i.alt}))"""


@pytest.mark.parametrize("chapter", [p.stem for p in CHAPTERS])
def test_figures_are_shown_at_their_own_size(chapter, served_book, browser, artifacts):
    out = artifacts / "figures"
    out.mkdir(exist_ok=True)
    context = browser.new_context(viewport=DESKTOP, service_workers="block")
    try:
        page = context.new_page()
        page.goto(f"{served_book}/chapters/{chapter}.html", wait_until="load")
        body = page.evaluate("parseFloat(getComputedStyle(document.querySelector('article.bd-article p')).fontSize)")
        assert body == figures.BODY_PX, f"the book's body text is {body} px, figures.BODY_PX says {figures.BODY_PX}"
        found = page.evaluate(FIGURES_JS)
        smallest_text = figures.FONT_PT * figures.DPI / 72                  # px, in the image as drawn
        small = [f for f in found if smallest_text * f["shown"] / f["natural"] < body]
        assert not small, f"{chapter}: figures shrunk so far that their smallest text is below the body's {body} px: {small}"
        for width, viewport in (("1366", DESKTOP), ("390", PHONE)):
            page.set_viewport_size(viewport)
            page.wait_for_timeout(100)
            images = page.query_selector_all("article .cell_output img")
            for f in page.evaluate(FIGURES_JS):
                image = [i for i in images if i.evaluate("i => i.naturalWidth") > 300][f["n"]]
                image.scroll_into_view_if_needed()
                if viewport is PHONE:
                    text = smallest_text * f["shown"] / f["natural"]
                    assert text >= PHONE_TEXT_PX, f"{chapter}: on a phone figure {f['n']}'s smallest text is {text:.1f} px"
                image.screenshot(path=str(out / f"{chapter}-{f['n']}-{width}.png"))
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], "the page scrolls sideways"
    finally:
        context.close()
