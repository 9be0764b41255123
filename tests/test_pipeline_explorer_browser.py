"""The Pipeline Explorer in a real browser (headless Debian chromium through Playwright, the fixtures of
tests/conftest.py), operated from the keyboard alone at 1366 px and by taps at 390 px: the cycles it steps through
are the protocol model's (gemmlab.models.pipeline) for the default ring and both faults; every control does what it says;
nothing on a phone is smaller than a finger's tap target; no console errors, no request to another host."""

from __future__ import annotations

import pytest

from gemmlab.book import pipeline_explorer
from gemmlab.models import pipeline

pytestmark = pytest.mark.slow

PAGE = "book/pipeline"
LAPTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}
TAP_PX = 44

LANES_JS = """() => [...document.querySelectorAll('.ppx [data-agent]')]
  .map(l => [l.dataset.agent, l.querySelector('[data-ppx=did]').textContent])"""
STATUS_JS = "() => document.querySelector('.ppx [data-ppx=status]').textContent"
SMALL_JS = """px => [...document.querySelectorAll('.ppx button, .ppx select, .ppx input[type=range], .ppx label')]
  .filter(e => e.checkVisibility()).map(e => [e.textContent.trim() || e.getAttribute('aria-label') || e.tagName,
                                              Math.round(e.getBoundingClientRect().height)])
  .filter(([, h]) => h < px)"""


@pytest.fixture()
def explorer(browser, served_book, offline_routes):
    """Open the page at a width: (page, problems); the page's console errors and other hosts asked go to problems."""
    contexts, problems = [], []

    def open_at(viewport: dict):
        context = browser.new_context(viewport=viewport, has_touch=viewport is PHONE, service_workers="block")
        contexts.append(context)
        external: list[str] = []
        offline_routes(context, external)
        page = context.new_page()
        page.on("console", lambda m: problems.append(f"console error: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(f"uncaught exception: {e}"))
        page.goto(f"{served_book}/{PAGE}.html", wait_until="load")
        page.wait_for_selector(".ppx [data-agent]")
        problems.extend(f"asked another host: {u}" for u in external)
        return page

    yield open_at, problems
    for c in contexts:
        c.close()
    assert not problems, "\n".join(problems)


def keyboard_to(page, selector: str, limit: int = 60) -> None:
    """Tab until the element matching ``selector`` has the focus, as a keyboard user would."""
    page.locator(".ppx").first.evaluate("box => box.scrollIntoView()")
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.evaluate("() => document.querySelector('.ppx p').setAttribute('tabindex', '-1')")
    page.locator(".ppx p").first.focus()
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("s => document.activeElement === document.querySelector(s)", selector):
            return
    pytest.fail(f"Tab never reached {selector}", pytrace=False)


def choose_by_keyboard(page, fault: str) -> None:
    """Select a fault with the keyboard alone: Tab to the checked radio of the group, then arrow to ``fault``."""
    keyboard_to(page, ".ppx input[data-ppx=fault]:checked")
    for _ in range(4):
        if page.evaluate("f => document.querySelector('.ppx input[data-ppx=fault][value=' + f + ']').checked", fault):
            return
        page.keyboard.press("ArrowDown")
    pytest.fail(f"the arrow keys never reached the fault {fault}", pytrace=False)


@pytest.mark.parametrize("fault", [None, "expect_tx", "parity"])
def test_the_stepped_cycles_are_the_models(fault, explorer):
    """Step with the keyboard (Enter on the step button) from cycle 0 to the end: each cycle's lanes are the model's
    agents' steps for the same configuration, and the page ends as the model does."""
    open_at, _ = explorer
    page = open_at(LAPTOP)
    if fault:
        choose_by_keyboard(page, fault)
    config = pipeline.Config(**{**pipeline_explorer.DEFAULT.__dict__, "fault": fault})
    trace = pipeline.play(config, pipeline_explorer.CLOCK).trace
    if len(trace) > 1:                      # a ring that goes wrong at cycle 0 has nothing to step to
        keyboard_to(page, ".ppx button[data-ppx=step]")
    for cycle, row in enumerate(trace):
        lanes = dict(page.evaluate(LANES_JS))
        assert lanes == row["agents"], f"cycle {cycle}: the page shows {lanes}, the model {row['agents']}"
        if cycle < len(trace) - 1:
            page.keyboard.press("Enter")
    assert page.locator(".ppx button[data-ppx=step]").is_disabled(), "the last cycle is the model's last"
    status = page.evaluate(STATUS_JS)
    if fault == "expect_tx":
        assert status.startswith("Hangs: hang:") and "waits forever on full[0] phase 0" in status
    elif fault == "parity":
        assert status.startswith("Goes wrong:") and "read stage 0 before K-tile 0" in status
    else:
        assert status.startswith("Done: 4 tile results stored")


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["1366", "390"])
def test_every_control_does_what_it_says(viewport, explorer):
    open_at, _ = explorer
    page = open_at(viewport)
    box = page.locator(".ppx")

    def act(locator):
        locator.tap() if viewport is PHONE else locator.click()

    assert box.locator("[data-stage]").count() == 4 and box.locator("[data-agent]").count() == 3
    box.locator("select[data-ppx=stages]").select_option("6")
    assert box.locator("[data-stage]").count() == 6
    box.locator("select[data-ppx=consumers]").select_option("1")
    assert page.evaluate(LANES_JS)[-1][0] == "consumer 0" and box.locator("[data-agent]").count() == 2
    assert box.locator("input[data-ppx=fault][value=no_turns]").is_disabled(), "only ping-pong has turns"

    act(box.locator("label", has_text="ping-pong").first)            # two consumers take turns
    assert box.locator("select[data-ppx=consumers]").input_value() == "2"
    assert box.locator("select[data-ppx=consumers] option[value='1']").is_disabled()
    assert box.locator("[data-ppx=turns] p").count() == 2
    act(box.locator("label", has_text="without its turns"))
    assert box.locator("input[data-ppx=fault][value=no_turns]").is_checked()
    last = pipeline.play(pipeline.Config(6, 2, "pingpong", *pipeline_explorer.WORK["pingpong"], "no_turns"),
                         pipeline_explorer.CLOCK).trace
    assert box.locator("input[data-ppx=cycle]").get_attribute("max") == str(len(last) - 1)

    step, back, reset = (box.locator(f"button[data-ppx={n}]") for n in ("step", "back", "reset"))
    act(box.locator("label", has_text="kernel as written"))
    assert back.is_disabled() and reset.is_disabled()
    act(step), act(step)
    assert "cycle 2 of" in box.locator(".ppx-where").text_content()
    act(back)
    assert "cycle 1 of" in box.locator(".ppx-where").text_content()
    act(reset)
    assert "cycle 0 of" in box.locator(".ppx-where").text_content()
    box.locator("input[data-ppx=cycle]").fill("20")
    assert "cycle 20 of" in box.locator(".ppx-where").text_content()
    play = box.locator("button[data-ppx=play]")
    act(play)
    assert play.get_attribute("aria-pressed") == "true"
    page.wait_for_timeout(1000)
    act(play)
    assert play.get_attribute("aria-pressed") == "false"
    assert int(box.locator("input[data-ppx=cycle]").input_value()) > 20, "playing moved the cycles on"
    if viewport is PHONE:
        small = page.evaluate(SMALL_JS, TAP_PX)
        assert not small, f"controls under {TAP_PX} px on a phone: {small}"
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
