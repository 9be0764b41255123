"""What a reader on a phone meets, in a real browser (headless Debian chromium through Playwright, the fixtures of
tests/conftest.py): the landing page says in its first screen what the course covers, whom it is for and what
hardware each part needs, with a link to Start here; every figure either fits the screen or says, under itself,
that it scrolls sideways (course.css draws figures at 160% of the column on a phone so that their text stays
readable); and each explorer sits beside its chapter in the contents."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1366, "height": 768}

# The text of the first screen (what lies above the fold), and whether the link to Start here is in it.
FIRST_SCREEN_JS = """() => {
  const article = document.querySelector('article.bd-article');
  const above = [...article.querySelectorAll('h1, p')].filter(e => e.getBoundingClientRect().top < innerHeight);
  const start = [...article.querySelectorAll('a[href*="00_first_kernel"]')]
    .some(a => { const r = a.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight && r.width > 0; });
  return {text: above.map(e => e.textContent).join(' '), start};
}"""

# Every figure of the page: its output box's width against the room it has, and whether a visible hint follows it.
FIGURES_JS = """() => [...document.querySelectorAll('.bd-content div.cell_output:has(> img)')].map(box => {
  const hint = box.nextElementSibling;
  const shown = !!hint && hint.classList.contains('figure-scroll-hint') && !hint.hidden && hint.offsetHeight > 0;
  return {wider: box.scrollWidth > box.clientWidth + 1, hint: shown,
          alt: box.querySelector('img').getAttribute('alt') || ''};
})"""


def open_page(browser, offline_routes, url: str, viewport: dict):
    context = browser.new_context(viewport=viewport, service_workers="block")
    offline_routes(context, [])
    page = context.new_page()
    page.goto(url, wait_until="load")
    page.wait_for_load_state("networkidle")
    return context, page


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["390", "1366"])
def test_the_landing_page_says_what_for_whom_and_on_what_in_its_first_screen(viewport, served_book, browser,
                                                                            offline_routes, book_sources):
    context, page = open_page(browser, offline_routes, f"{served_book}/{book_sources.root_doc}.html", viewport)
    try:
        first = page.evaluate(FIRST_SCREEN_JS)
    finally:
        context.close()
    text = " ".join(first["text"].split())
    for covered in ("FP32", "tensor cores", "Hopper", "cuBLAS"):
        assert covered in text, f"the first screen does not say the course covers {covered}: {text[:300]}"
    assert "You need to read C" in text, "one stated prerequisite in the first screen"
    for hardware in ("Reading needs none", "T4", "H100"):
        assert hardware in text, f"the first screen does not say what hardware each part needs ({hardware})"
    assert first["start"], "the link to Start here is not in the first screen"


@pytest.mark.parametrize("chapter", ["chapters/00_your_gpu", "chapters/01_naive", "chapters/08_tensor_cores",
                                     "chapters/09_hopper"])
def test_a_figure_wider_than_a_phone_says_it_scrolls(chapter, served_book, browser, offline_routes):
    context, page = open_page(browser, offline_routes, f"{served_book}/{chapter}.html", PHONE)
    try:
        figures = page.evaluate(FIGURES_JS)
        link = page.locator(".figure-scroll-hint a").first.get_attribute("href") if figures else None
    finally:
        context.close()
    assert figures, f"{chapter} has no figure to look at"
    silent = [f["alt"][:60] for f in figures if f["wider"] and not f["hint"]]
    assert not silent, f"figures wider than the screen with no word of it: {silent}"
    assert not [f for f in figures if f["hint"] and not f["wider"]], "a hint under a figure that fits"
    assert any(f["wider"] for f in figures) and link and link.endswith(".png"), "the hint opens the figure"


def test_each_explorer_sits_beside_its_chapter(toc_pages):
    after = {"book/workbench": "chapters/02_tiled", "book/banks": "chapters/04_banks",
             "book/occupancy": "chapters/05_occupancy", "book/pipeline": "chapters/09_hopper"}
    for explorer, chapter in after.items():
        assert toc_pages.index(explorer) == toc_pages.index(chapter) + 1, f"{explorer} does not follow {chapter}"


# The whole ladder at a glance on the landing page: its table, its figure, the article.
GLANCE_JS = """() => {
  const table = document.querySelector('table.ladder-glance');
  const img = document.querySelector('figure.ladder-glance-figure img');
  const article = document.querySelector('article.bd-article');
  const box = e => e.getBoundingClientRect();
  return {table: table && {scroll: table.scrollWidth, client: table.clientWidth,
                           right: box(table).right},
          img: img && {shown: box(img).width, natural: img.naturalWidth,
                       right: box(img).right, alt: img.getAttribute('alt') || ''},
          article: box(article).right, page: document.documentElement.scrollWidth};
}"""


@pytest.mark.parametrize("viewport", [PHONE, LAPTOP], ids=["390", "1366"])
def test_the_whole_ladder_fits_the_screen(viewport, served_book, browser, offline_routes,
                                          book_sources):
    """The ladder at a glance (book/_ext/coursebook.py) needs no sideways scroll on a
    phone: its seven columns fit the article, and its figure, drawn 384 px wide, is shown
    whole at no less than 85% of its size (its labels above 13 px) and never stretched
    past it on a desktop."""
    url = f"{served_book}/{book_sources.root_doc}.html"
    context, page = open_page(browser, offline_routes, url, viewport)
    try:
        page.locator("table.ladder-glance").scroll_into_view_if_needed()
        got = page.evaluate(GLANCE_JS)
    finally:
        context.close()
    assert got["table"] and got["img"], "the landing page has no ladder at a glance"
    table, img = got["table"], got["img"]
    assert table["scroll"] <= table["client"] + 1, table
    assert table["right"] <= got["article"] + 1, table
    assert img["natural"] > 0 and img["right"] <= got["article"] + 1, img
    assert 0.85 * img["natural"] <= img["shown"] <= img["natural"] + 1, img
    assert got["page"] <= viewport["width"], "the page scrolls sideways"
    assert img["alt"].startswith("Horizontal bars")
