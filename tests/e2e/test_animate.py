"""The post's claims in a real browser: the block diagram opens the view of a clicked part, and the step-by-step
animation plays (frames change on their own), pauses, steps, and exports a GIF, an MP4 and numbered PNGs."""

from __future__ import annotations

import contextlib
import io
import re
import zipfile

import pytest

from scripts.browser import open_page, start_at, wait_idle
from tests.e2e.test_interaction import click_at, marker_point

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def frame_title(page) -> str:
    return page.locator(".js-plotly-plot svg .gtitle").first.text_content()


def step_shown(page) -> int:
    text = page.get_by_text(re.compile(r"^Step \d+ of 12")).first.text_content()
    return int(text.split()[1])


def stepped_to(page, step: int) -> int:
    """The step shown once a step was asked for (a click, a key): the frame lives in a fragment, whose rerun a busy
    machine may start only after ``wait_idle`` has found the page idle, so the page is first given up to 30 s to
    show ``step``; the step shown then, whatever it is, is returned for the test to judge."""
    # playwright's TimeoutError is suppressed: the assertion after this says what was shown instead
    with contextlib.suppress(Exception):
        page.get_by_text(re.compile(rf"^Step {step} of 12")).first.wait_for(timeout=30_000)
    wait_idle(page)
    return step_shown(page)


def test_a_click_on_the_block_diagram_opens_the_attention_map(server, tab):
    page = start_at(tab, server, "block", "The block")
    chart = page.locator(".js-plotly-plot").first
    titles = [t.text_content() for t in chart.locator(".gtitle").all()]
    assert titles and "one block of 4" in titles[0], titles
    assert "Pre-norm" in page.get_by_text(re.compile("^Pre-norm: each sublayer")).first.text_content()
    # the click targets list every part's five markers in order; find the attention box's middle one
    pick = (
        "const tr = gd._fullData[gd._fullData.length - 1]; const i = tr.customdata.findIndex(c => c[0] === 'attn') + 2;"
    )
    click_at(page, marker_point(page, chart, pick))
    page.get_by_role("heading", name="Attention map").first.wait_for(timeout=30_000)


def test_the_animation_plays_pauses_steps_and_exports(server, tab, tmp_path):
    page = start_at(tab, server, "animate", "Step through a head", "anim_seconds=0.5")  # a link's speed
    assert step_shown(page) == 1
    first = frame_title(page)
    assert first.startswith("Step 1/12"), first
    page.get_by_role("button", name="Play").click()
    seen = {first}
    for _ in range(40):  # 0.5 s per step: within ~8 s the frame has moved on twice on its own
        page.wait_for_timeout(200)
        try:
            seen.add(frame_title(page))
        except Exception:  # the chart is being replaced
            continue
        if len(seen) >= 3:
            break
    assert len(seen) >= 3, seen
    page.get_by_role("button", name="Pause").click()
    page.get_by_role("button", name="Play").wait_for(timeout=30_000)  # the pause has been run (not only asked)
    wait_idle(page)
    paused = step_shown(page)
    page.wait_for_timeout(1500)
    assert step_shown(page) == paused  # paused: three steps' time, and nothing moves
    page.get_by_role("button", name="Next").click()
    assert stepped_to(page, min(paused + 1, 12)) == min(paused + 1, 12)
    assert frame_title(page).startswith(f"Step {min(paused + 1, 12)}/12")
    # the frame lives in a fragment: "Add to deck" must answer from its callback, and not add the same frame twice
    toasts = page.locator('[data-testid="stToast"]')
    page.get_by_role("button", name="Add to deck").first.click()
    toasts.filter(has_text="as slide 2 (after the title slide): the deck has 1 figure").wait_for(timeout=15_000)
    page.get_by_role("button", name="Add to deck").first.click()
    toasts.filter(has_text="is already slide 2 of the deck (1 figure)").wait_for(timeout=15_000)
    for label, magic in (("GIF", b"GIF8"), ("MP4", b"ftyp"), ("PNG frames (zip)", b"PK")):
        with page.expect_download(timeout=120_000) as pending:
            page.get_by_role("button", name=label).click()
        path = tmp_path / pending.value.suggested_filename
        pending.value.save_as(path)
        data = path.read_bytes()
        assert magic in data[:12], label
        if label.startswith("PNG"):
            names = sorted(zipfile.ZipFile(io.BytesIO(data)).namelist())
            assert len(names) == 12 and names[0].endswith("_01.png") and names[-1].endswith("_12.png")
        if label == "GIF":
            from PIL import Image

            assert Image.open(path).n_frames == 12


def test_play_pause_keeps_the_keyboard_and_answers_its_shortcuts(server, tab):
    """Enter on Play starts it and the keyboard stays on the button (now Pause), so Enter again pauses; K plays and
    pauses from anywhere on the page, L and J step on and back. The session starts on a link to the page: its first
    press is its first rerun, where the page once moved every element one place (and the button lost the keyboard)."""
    page = start_at(tab, server, "animate", "Step through a head")
    focused = "() => document.activeElement && document.activeElement.innerText || ''"
    page.get_by_role("button", name=re.compile("^Play")).focus()
    page.keyboard.press("Enter")
    page.get_by_role("button", name=re.compile("^Pause")).wait_for(timeout=15_000)
    page.wait_for_timeout(300)
    assert "Pause" in page.evaluate(focused), page.evaluate(focused)
    page.keyboard.press("Enter")
    page.get_by_role("button", name=re.compile("^Play")).wait_for(timeout=15_000)
    wait_idle(page)
    assert "Play" in page.evaluate(focused), page.evaluate(focused)
    at = step_shown(page)
    page.evaluate("() => document.activeElement.blur()")
    page.keyboard.press("l")
    assert stepped_to(page, min(at + 1, 12)) == min(at + 1, 12)
    page.keyboard.press("j")
    assert stepped_to(page, at) == at
    page.keyboard.press("k")
    page.get_by_role("button", name=re.compile("^Pause")).wait_for(timeout=15_000)
    page.keyboard.press("k")
    page.get_by_role("button", name=re.compile("^Play")).wait_for(timeout=15_000)


def test_a_claim_on_start_here_opens_its_view(server, tab):
    page = start_at(tab, server, "start", "Start here")
    page.get_by_role("button", name=re.compile(r"^5\. The pre-norm block")).click()
    page.get_by_role("heading", name="The block").first.wait_for(timeout=30_000)
    wait_idle(page)
    open_page(page, server, "start", "Start here")
    page.get_by_role("button", name=re.compile(r"^4\. Without positions")).click()
    page.get_by_role("heading", name="Positional encodings").first.wait_for(timeout=30_000)
    wait_idle(page)
    assert page.get_by_text(re.compile("^Permutation lab: layer")).count() or page.locator(".gtitle").count()
