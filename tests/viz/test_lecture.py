"""The lecture in one click: the post's story on the lecturer's sentence, every slide from the model that shows it,
one computed sentence on it, notes with a question and the answer to expect — computed from the slide's numbers, as
these tests recompute them — exported as PowerPoint and HTML, from the app and the command line."""

from __future__ import annotations

import io
import os

import pytest

from viz.export.deck import check_item, deck_html, deck_pptx, slides
from viz.export.lecture import LECTURE, build_lecture, story
from viz.export.lecture_story import MAX_TAKEAWAY, takeaway
from viz.views.find import COREFERENCE

pytestmark = pytest.mark.slow
OTHER = "The cat sat on the mat because the mat was warm."


@pytest.fixture(scope="module")
def built(default_run):
    before = os.environ.get("ATTENTION_LAB_RUNS")
    os.environ["ATTENTION_LAB_RUNS"] = str(default_run[1])  # the stored default run: nothing trained here
    try:
        yield build_lecture("")
    finally:
        os.environ["ATTENTION_LAB_RUNS"] = before or ""


def test_the_lecture_tells_the_posts_story(built):
    items, notes = built
    keys = [i["key"] for i in items]
    assert keys[: len(LECTURE)] == [r.key for r in LECTURE] and keys[len(LECTURE) :] == [
        "learn.curves",
        "learn.moments",
        "learn.frame",
    ]
    assert not notes  # every model it draws on is installed here
    asked = [i["notes"]["ask"] for i in items]
    assert len(set(asked)) == len(items)  # a question of its own for every slide, no boilerplate
    for item in items:
        assert item["takeaway"] and len(item["takeaway"]) <= MAX_TAKEAWAY + 1, item["key"]
        assert item["notes"]["answer"] and item["provenance"]["model"], item["key"]
    questions = [i["key"] for kind, i in slides(items) if kind == "question"]
    assert questions == ["anim.frame", "lesson.predict"]  # predict first: q·k, and where "it" looks
    models = {i["provenance"]["model"] for i in items}
    assert {"Attention Lab bundled MLM v2", "all-MiniLM-L6-v2"} <= models and any("Watch it learn" in m for m in models)


def test_the_answers_are_the_slides_numbers(built):
    items, _ = built
    told = story("")
    obs = told.main.obs
    row = obs.patterns[told.layer, told.head, told.query]
    assert obs.tokens[told.query] == "it" and told.text == COREFERENCE
    qk = next(i for i in items if i["notes"]["ask"].startswith("Which word will"))
    assert qk["notes"]["answer"].startswith(f"“{obs.tokens[int(row.argmax())]}”")
    heads = next(i for i in items if i["key"] == "heads")
    for h in range(obs.n_heads):
        assert (
            f"head {h} → “{obs.tokens[int(obs.patterns[told.layer, h, told.query].argmax())]}”"
            in (heads["notes"]["answer"])
        )
    mask = next(i for i in items if i["key"] == "masks.causal")
    assert mask["notes"]["answer"].startswith(f"{row[told.query + 1 :].sum():.0%}")
    on, layer, head, it, animal = told.link
    link = next(i for i in items if i["key"] == "lesson.predict")
    assert f"{on.obs.patterns[layer, head, it, animal]:.0%}" in link["notes"]["answer"]
    assert link["provenance"]["model"] == on.loaded.name


def test_a_text_without_it_picks_its_own_query_and_head():
    told = story(OTHER)
    obs = told.main.obs
    assert obs.tokens[told.query] != "it" and "looks hardest at a distant word" in told.why
    row = obs.patterns[told.layer, told.head, told.query]
    named = told.why.rsplit(" to ", 1)[1].strip("“”")
    keys = [j for j, t in enumerate(obs.tokens) if t == named and abs(j - told.query) > 1]
    assert keys and f"gives {max(row[j] for j in keys):.0%} of its weight" in told.why  # the number is the pattern's


def test_takeaway_is_one_sentence():
    assert takeaway("First one. Second one.") == "First one."
    assert takeaway("highest “animal” (25.98), lowest “'” (5.96).") == "highest “animal” (25.98), lowest “'” (5.96)."
    long = "word " * 80
    assert len(takeaway(long)) <= MAX_TAKEAWAY and takeaway(long).endswith("…")


def test_exports_carry_the_takeaway_on_the_slide_and_the_notes(built):
    import pptx

    items, _ = built
    data = deck_pptx(items, title="Attention from scratch", render=lambda fig: _png())
    deck = list(pptx.Presentation(io.BytesIO(data)).slides)
    assert len(deck) == 1 + len(slides(items))
    qk = next(s for s in deck if "Which word will" in s.notes_slide.notes_text_frame.text)
    notes = qk.notes_slide.notes_text_frame.text
    assert "Ask the room:" in notes and "Expected answer:" in notes and "Why this token and head:" in notes
    texts = [sh.text_frame.text for sh in qk.shapes if sh.has_text_frame]
    item = next(i for i in items if i["notes"]["ask"] in notes)
    assert texts == [item["takeaway"]]
    sizes = {p.font.size.pt for sh in qk.shapes if sh.has_text_frame for p in sh.text_frame.paragraphs}
    assert sizes == {24.0}
    height = pptx.Presentation(io.BytesIO(data)).slide_height
    for slide in deck[1:]:
        pictures = [sh for sh in slide.shapes if sh.shape_type == 13]
        assert not pictures or pictures[0].height >= 0.8 * height  # the figure keeps ≥ 80 % of the slide
    assert [check_item(i)["notes"] for i in items] == [i["notes"] for i in items]  # a session file keeps them
    page = deck_html(items, title="Attention from scratch")
    assert all(i["takeaway"].replace("“", "")[:20] in page.replace("&quot;", '"').replace("“", "") for i in items[:3])


def _png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (1920, 1080), "white").save(buf, "PNG")
    return buf.getvalue()


def test_the_command_line_writes_the_lecture(default_run, tmp_path, monkeypatch, capsys):
    from viz.export.cli import main

    monkeypatch.setenv("ATTENTION_LAB_RUNS", str(default_run[1]))
    out = tmp_path / "lecture.html"
    assert main(["--lecture", "--text", OTHER, "--format", "html", "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert page.count("class='slide'") >= 19 and "The cat sat on the mat" in page
    assert "wrote" in capsys.readouterr().out


def test_the_lecture_reads_from_the_back_row_as_libreoffice_prints_it(built, tmp_path):
    """The real slides (figures rendered at 1920 × 1080) printed by LibreOffice to PDF and measured there: every
    picture ≥ 80 % of the slide's height, all slide text ≥ 20 pt, tick labels inside the figures ≥ 18 pt (their
    44.8 of 1920 px across the picture's printed width), nothing past an edge, the title slide whole."""
    from scripts.slide_pdf import pages, soffice, to_pdf
    from viz.export.render import render_image
    from viz.figures.theme import SLIDE_TICK_PX

    if soffice() is None:
        if os.environ.get("CI"):
            pytest.fail("LibreOffice is missing: scripts/test.sh installs libreoffice-impress")
        pytest.skip("LibreOffice is not installed (apt-get install -y libreoffice-impress)")
    items, _ = built
    data = deck_pptx(items, title="Attention from scratch", render=lambda fig: render_image(fig, "png", size="slide"))
    printed = pages(to_pdf(data, tmp_path))
    assert len(printed) == 1 + len(slides(items))
    title = " ".join(text for text, _, _ in printed[0].lines)
    assert "Attention from scratch" in title and f"{len(items)} figures" in title
    for number, page in enumerate(printed, start=1):
        assert not page.outside(), (number, page.outside())
        small = [(text[:30], round(size, 1)) for text, size, _ in page.lines if size < 20]
        assert not small, (number, small)
        if page.pictures:
            assert page.picture_share() >= 0.8, (number, page.picture_share())
            assert page.tick_pt(SLIDE_TICK_PX) >= 18, (number, page.tick_pt(SLIDE_TICK_PX))  # the slide's ticks
