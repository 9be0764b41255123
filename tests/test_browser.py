"""A real browser on the built book: headless Chromium (Debian's, driven by Playwright) opens
every page of the table of contents from a local web server.

Each page must load with no console errors and no uncaught exceptions, show its title as the
h1, have every local image inside the article loaded (with alt text), every formula typeset, one
search field, and lay out no wider than a 390 px phone screen. The machine may have no internet:
every request that leaves 127.0.0.1 is answered here with an empty 200 response and recorded,
and the hosts asked for must be in ALLOWED_HOSTS, so a page that starts to depend on a new CDN
is noticed. A full-page screenshot of each page goes to test-artifacts/; with
GEMMLAB_UPDATE_SCREENSHOT=1 the landing page's also becomes book/_static/book-screenshot.png.
"""

from __future__ import annotations

import os
import shutil
from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.slow

# External hosts a page may ask for: none. MathJax is served by the book itself
# (book/_ext/offline_math.py) and the Colab badge is the book's own image. A host added here is a
# dependency that a reader without it (or offline) would miss: add one only after deciding it is acceptable.
ALLOWED_HOSTS: set[str] = set()

VIEWPORT = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}      # a phone in portrait: no page may be wider (book/_static/course.css)
PAGE_TIMEOUT_MS = 30_000

# Every <img> in the article with a local src: loaded (complete, with a width) or not.
IMAGES_JS = """async () => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  if (!article) return null;
  const imgs = Array.from(article.querySelectorAll('img'))
    .filter(img => img.currentSrc.startsWith(location.origin) || img.src.startsWith(location.origin));
  await Promise.all(imgs.map(img => {
    img.loading = 'eager';
    return img.complete ? null : new Promise(done => {
      img.addEventListener('load', done, {once: true});
      img.addEventListener('error', done, {once: true});
      setTimeout(done, 10000);
    });
  }));
  return imgs.map(img => ({src: img.getAttribute('src'), ok: img.complete && img.naturalWidth > 0,
                           alt: img.getAttribute('alt') || ''}));
}"""

# Math on the page, and how much of it MathJax typeset (with no network: see ALLOWED_HOSTS).
MATH_JS = """async () => {
  const math = document.querySelectorAll('article .math').length;
  if (!math) return {math: 0, typeset: 0};
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  return {math, typeset: document.querySelectorAll('article .math mjx-container').length};
}"""

# Search fields a reader sees (the sidebar's, the search page's form; the theme's top bar is hidden).
SEARCH_FIELDS_JS = """() => [...document.querySelectorAll('.search-button-field, form.bd-search input')]
  .filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; }).length"""

H1_JS = """() => {
  const h1 = document.querySelector('article.bd-article h1') || document.querySelector('main h1');
  if (!h1) return null;
  const copy = h1.cloneNode(true);
  copy.querySelectorAll('.headerlink').forEach(a => a.remove());
  return copy.textContent.replace(/\\s+/g, ' ').trim();
}"""


def test_page_in_browser(toc_page, served_book, browser, artifacts, repo_root, book_sources, offline_routes):
    """Browser, server and the offline request stubs are the shared fixtures of tests/conftest.py."""
    url = f"{served_book}/{toc_page}.html"
    external: list[str] = []
    problems: list[str] = []

    context = browser.new_context(viewport=VIEWPORT, service_workers="block")
    try:
        offline_routes(context, external)
        page = context.new_page()
        page.set_default_timeout(PAGE_TIMEOUT_MS)
        page.on("console", lambda m: problems.append(f"console error: {m.text} ({m.location.get('url', '')})")
                if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(f"uncaught exception: {e}"))
        page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} ({r.failure})"))

        response = page.goto(url, wait_until="load")
        assert response is not None and response.ok, f"{url} answered {response and response.status}"
        page.wait_for_load_state("networkidle")

        images = page.evaluate(IMAGES_JS)
        if images is None:
            problems.append("the page has no article (article.bd-article or main)")
        else:
            problems += [f"image did not load: {i['src']}" for i in images if not i["ok"]]
            problems += [f"image without alt text (or a file name as its alt): {i['src']}" for i in images
                         if not i["alt"] or i["alt"].endswith((".png", ".svg", ".jpg"))]

        math = page.evaluate(MATH_JS)
        if math["typeset"] < math["math"]:
            problems.append(f"MathJax typeset {math['typeset']} of the page's {math['math']} formulas")

        h1 = page.evaluate(H1_JS)
        expected = book_sources.title(toc_page)
        if not h1:
            problems.append("the page has no h1 title")
        elif expected is not None and h1 != expected:
            problems.append(f"the h1 reads {h1!r}, the source's title is {expected!r}")
        elif h1 not in page.title():
            problems.append(f"the h1 {h1!r} is not in the document title {page.title()!r}")

        fields = page.evaluate(SEARCH_FIELDS_JS)
        if fields != 1:
            problems.append(f"{fields} search fields on the page, where one is enough")

        page.set_viewport_size(PHONE)
        page.wait_for_timeout(200)
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > PHONE["width"]:
            problems.append(f"at {PHONE['width']} px wide the page lays out {width} px wide")
        page.set_viewport_size(VIEWPORT)

        shot = artifacts / (toc_page.replace("/", "__") + ".png")
        page.screenshot(path=str(shot), full_page=True)
        if toc_page == book_sources.root_doc and os.environ.get("GEMMLAB_UPDATE_SCREENSHOT") == "1":
            target = repo_root / "book" / "_static" / "book-screenshot.png"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(shot, target)
    finally:
        context.close()

    hosts = sorted({urlparse(u).hostname or u for u in external})
    unexpected = [h for h in hosts if h not in ALLOWED_HOSTS]
    assert not unexpected, (f"{toc_page} requests hosts outside the allow-list {sorted(ALLOWED_HOSTS)}: "
                            f"{unexpected}\n" + "\n".join(u for u in external if urlparse(u).hostname in unexpected))
    assert not problems, f"{toc_page} in a browser ({url}):\n" + "\n".join(problems)
