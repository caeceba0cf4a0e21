"""A lecture deck: figures collected from the pages, reordered and retitled, exported as PowerPoint (python-pptx)
or as one offline HTML file of slides (arrow keys). No Streamlit here.

A deck item is plain data (it lives in the session and in session files): the view's key, its title and
computed caption, its provenance, the figure laid out for a slide and the figure as on screen (plotly JSON),
and for predict-first exercises the question asked before the answer is shown.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
import uuid
from collections.abc import Callable, Sequence

import plotly.graph_objects as go
import plotly.io as pio

from viz.export.notes import lecture_notes, speaker_notes
from viz.export.offline import CSP, library
from viz.export.provenance import app_version, provenance_line
from viz.figures.text import wrap
from viz.views.captions import quoted_at

FORMAT = "attention-lab-deck/1"
SLIDE_IN = (13.333, 7.5)  # a 16:9 slide in inches
CAPTION_PT = 16  # the caption's text on a slide: readable from a back row
TAKEAWAY_PT = 24  # a lecture slide's one sentence (its caption goes to the notes)
MAX_ITEMS = 60


def make_item(
    view, provenance: dict, *, question: str = "", window: tuple[int, int] | None = None, figure: str | None = None
) -> dict:
    """A deck item from a view as it is on screen (the figures are stored, so the slide shows what was seen);
    ``figure``: the view's exact figure as JSON, when the caller has it already."""
    return {
        "id": uuid.uuid4().hex[:10],
        "key": view.key,
        "title": view.title,
        "caption": view.caption,
        "source": provenance_line(provenance),
        "provenance": provenance,
        "slide": view.slide(window=window).to_json(),
        "figure": view.exact().to_json() if figure is None else figure,
        "question": question,
    }


def predict_question(view, tokens: Sequence[str]) -> str:
    """The question slide of a predict-first exercise (lesson.predict), before its answer."""
    sel = view.selection
    query = min(max(int(sel.get("query", 1)), 0), len(tokens) - 1)
    return (
        f"Layer {sel.get('layer', 0)}, head {sel.get('head', 0)}: which token will {quoted_at(tokens, query)} "
        f"(position {query}) attend to most?\n\nThe tokens: " + " · ".join(f"{i} {t}" for i, t in enumerate(tokens))
    )


def check_item(item) -> dict:
    """A deck item read back from a session file: the keys and types it must have (ValueError otherwise)."""
    need = {"id": str, "key": str, "title": str, "caption": str, "source": str, "slide": str, "figure": str}
    if not isinstance(item, dict) or any(not isinstance(item.get(k), t) for k, t in need.items()):
        raise ValueError("a deck item lacks its title, caption or figures")
    clean = {k: item[k] for k in need}
    clean["question"] = item.get("question") if isinstance(item.get("question"), str) else ""
    clean["provenance"] = item.get("provenance") if isinstance(item.get("provenance"), dict) else {}
    if isinstance(item.get("takeaway"), str):  # a lecture slide's one sentence and its notes (viz/export/lecture.py)
        clean["takeaway"] = item["takeaway"]
    notes = item.get("notes")
    if isinstance(notes, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in notes.items()):
        clean["notes"] = dict(notes)
    motion = item.get("motion")  # an animation's recipe: a kind and plain values (viz/export/motion.py)
    values = motion.values() if isinstance(motion, dict) else [None]
    plain = all(isinstance(v, str | int) and not isinstance(v, bool) for v in values)
    if plain and motion.get("kind") in ("steps", "run"):
        clean["motion"] = dict(motion)
    if not re.fullmatch(r"[0-9a-f]{1,32}", clean["id"]):  # ids key the deck page's widgets: ours, or a new one
        clean["id"] = uuid.uuid4().hex[:10]
    for k in ("slide", "figure"):
        clean[k] = _offline(pio.from_json(clean[k]), clean[k])  # one that does not parse is refused here
    return clean


def _offline(fig: go.Figure, spec: str) -> str:
    """A figure read back from a file without any picture it would fetch from elsewhere (``layout.images`` whose
    source is a URL, not inline data): an exported deck must make no outside request."""
    images = list(fig.layout.images or [])
    kept = [im for im in images if isinstance(im.source, str) and im.source.startswith("data:image/")]
    if len(kept) == len(images):
        return spec
    fig.layout.images = kept
    return fig.to_json()


def slide_figure(item: dict, part: str = "slide") -> go.Figure:
    """An item's figure ("slide": laid out for a slide; "figure": as on screen) under the item's title (the
    deck page may have retitled it)."""
    fig = pio.from_json(item[part])
    drawn = html.unescape((fig.layout.title.text or "").replace("<br>", " "))
    if item["title"] and drawn != item["title"]:
        width = (fig.layout.width or 1200) - 36
        fig.layout.title.text = wrap(item["title"], width, fig.layout.title.font.size or 30)
    return fig


def slides(items: Sequence[dict]) -> list[tuple[str, dict]]:
    """The slides after the title slide: ("question", item) before a predict-first answer, ("figure", item)."""
    out = []
    for item in items:
        if item.get("question"):
            out.append(("question", item))
        out.append(("figure", item))
    return out


def deck_pptx(
    items: Sequence[dict],
    *,
    title: str,
    render: Callable[[go.Figure], bytes],
    progress: Callable[[float, str], None] | None = None,
    animate: Callable[[dict], bytes] | None = None,
) -> bytes:
    """The deck as a .pptx: a title slide with provenance, then one 16:9 slide per figure (the picture, its
    caption as the slide's text, speaker notes with what it shows, the numbers and a question), a question slide
    before each predict-first answer. ``render``: figure -> PNG bytes (1920 × 1080); ``animate``: a motion recipe ->
    GIF bytes (viz/export/motion.py), for the items that carry one (without it they show their still)."""
    from pptx import Presentation
    from pptx.dml.color import RGBColor
    from pptx.enum.text import MSO_AUTO_SIZE
    from pptx.util import Inches, Pt

    progress = progress or (lambda f, m: None)
    prs = Presentation()
    prs.slide_width, prs.slide_height = Inches(SLIDE_IN[0]), Inches(SLIDE_IN[1])
    first = prs.slides.add_slide(prs.slide_layouts[0])
    first.shapes.title.text = title
    source = deck_source(items)
    first.placeholders[1].text = source
    for shape, (top, height) in zip(first.placeholders, ((1.2, 1.8), (3.2, 3.9))):  # the layout is 4:3's
        shape.left, shape.top, shape.width, shape.height = Inches(0.8), Inches(top), Inches(11.7), Inches(height)
    body = first.placeholders[1].text_frame
    body.word_wrap = True
    body.auto_size = MSO_AUTO_SIZE.TEXT_TO_FIT_SHAPE  # past 8 lines, PowerPoint and LibreOffice shrink it to fit
    size = 24 if caption_lines(source, 24) <= 6 else 20  # 3.9 in hold 6 lines at 24 pt, 8 at 20 pt
    for para in body.paragraphs:
        para.font.size = Pt(size)
        para.font.color.rgb = RGBColor(0x33, 0x33, 0x33)  # the template's grey is 3.5:1 on white
    blank = prs.slide_layouts[6]
    todo = slides(items)
    for i, (kind, item) in enumerate(todo):
        progress(i / max(1, len(todo)), f"slide {i + 2}: {item['title']}")
        slide = prs.slides.add_slide(blank)
        if kind == "question":
            _text(slide, "Predict first", Inches(0.6), Inches(0.5), Inches(12.1), Inches(1.0), Pt(40), bold=True)
            _text(slide, item["question"], Inches(0.6), Inches(1.7), Inches(12.1), Inches(5.2), Pt(24))
            slide.notes_slide.notes_text_frame.text = "Let everyone commit to a guess before the next slide."
            continue
        said, size = (item["takeaway"], TAKEAWAY_PT) if item.get("takeaway") else (item["caption"], CAPTION_PT)
        lines = caption_lines(said, size)
        text_h = 0.25 + lines * size * 1.25 / 72 if lines else 0.0
        pic_h = SLIDE_IN[1] - 0.3 - text_h
        pic_w = min(SLIDE_IN[0] - 0.4, pic_h * 16 / 9)
        pic_h = pic_w * 9 / 16
        moving = item.get("motion") and animate is not None
        picture = slide.shapes.add_picture(
            io.BytesIO(animate(item["motion"]) if moving else render(slide_figure(item))),
            Inches((SLIDE_IN[0] - pic_w) / 2),
            Inches(0.15),
            Inches(pic_w),
            Inches(pic_h),
        )
        picture.name = item["title"][:80]
        if lines:
            top = 0.15 + pic_h + 0.1
            _text(slide, said, Inches(0.5), Inches(top), Inches(12.33), Inches(SLIDE_IN[1] - top - 0.1), Pt(size))
        slide.notes_slide.notes_text_frame.text = (
            lecture_notes(item) if item.get("notes") else speaker_notes(item["key"], item["caption"], item["source"])
        )
    buf = io.BytesIO()
    prs.save(buf)
    progress(1.0, "done")
    return buf.getvalue()


def caption_lines(caption: str, size: float = CAPTION_PT) -> int:
    """Lines the caption takes at ``size`` pt across a slide (a generous estimate: 0.55 em per character)."""
    if not caption:
        return 0
    per_line = int(12.3 * 72 / (0.55 * size))
    return sum(1 + len(part) // per_line for part in caption.split("\n"))


def _text(slide, text, left, top, width, height, size, bold=False):
    box = slide.shapes.add_textbox(left, top, width, height)
    frame = box.text_frame
    frame.word_wrap = True
    for i, para in enumerate(text.split("\n")):
        p = frame.paragraphs[0] if i == 0 else frame.add_paragraph()
        p.text = para
        p.font.size, p.font.bold = size, bold
    return box


def deck_source(items: Sequence[dict]) -> str:
    """The title slide's provenance: the models and texts the figures come from, the app's version."""
    models = sorted({i.get("provenance", {}).get("model", "") for i in items} - {""})
    texts = list(dict.fromkeys(t for i in items if (t := i.get("provenance", {}).get("text", ""))))  # a run: no text
    quoted = "; ".join(f"“{t[:120]}”" for t in texts[:3]) + (f" and {len(texts) - 3} more" if len(texts) > 3 else "")
    return "\n".join(
        line
        for line in (
            f"Model{'s' * (len(models) > 1)}: {', '.join(models)}" if models else "",
            f"Text{'s' * (len(texts) > 1)}: {quoted}" if texts else "",
            f"{len(items)} figure{'s' * (len(items) != 1)} · made with Attention Lab {app_version()}",
        )
        if line
    )


def deck_html(items: Sequence[dict], *, title: str, animate: Callable[[dict], bytes] | None = None) -> str:
    """The deck as one offline HTML file: a slide per figure (interactive), arrow keys or space to move; ``animate``:
    as for :func:`deck_pptx` (an animation plays as an image in the page)."""
    sections = [
        f"<section class='slide'><h1>{html.escape(title)}</h1><p class='source'>"
        f"{html.escape(deck_source(items)).replace(chr(10), '<br>')}</p></section>"
    ]
    figures = []
    for kind, item in slides(items):
        if kind == "question":
            body = html.escape(item["question"]).replace("\n", "<br>")
            sections.append(f"<section class='slide'><h1>Predict first</h1><p class='question'>{body}</p></section>")
            continue
        if item.get("motion") and animate is not None:
            data = base64.b64encode(animate(item["motion"])).decode()
            shown = f"<img class='motion' alt='{html.escape(item['title'])}' src='data:image/gif;base64,{data}'>"
        else:
            figures.append(json.loads(slide_figure(item).to_json()))
            shown = f"<div class='plot' id='fig{len(figures) - 1}'></div>"
        sections.append(
            f"<section class='slide'>{shown}"
            f"<p class='caption'>{html.escape(item.get('takeaway') or item['caption'])}</p>"
            f"<p class='source'>{html.escape(item['source'])}</p></section>"
        )
    data = json.dumps(figures, ensure_ascii=False).replace("</", "<\\/")
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
        f"<title>{html.escape(title)}</title><style>{_CSS}</style>"
        f"<script type='text/javascript'>{library()}</script></head><body>"
        f"{''.join(sections)}<nav class='moves'><button id='prev' aria-label='Previous slide'>‹</button>"
        "<div id='counter' aria-live='polite'></div><button id='next' aria-label='Next slide'>›</button></nav>"
        f"<script type='application/json' id='figures'>{data}</script><script>{_JS}</script></body></html>"
    )


#: the file asks for nothing outside itself: every script, style and image is inline (or a data: URI plotly makes)


_CSS = (
    "html,body{margin:0;height:100%;font-family:'DejaVu Sans',Arial,sans-serif;background:#fff;color:#111}"
    ".slide{display:none;box-sizing:border-box;width:100vw;height:100vh;padding:2vh 3vw;flex-direction:column}"
    ".slide.on{display:flex}.slide h1{font-size:5vh;margin:0 0 3vh}"
    ".plot{flex:1;min-height:0}"
    ".motion{flex:1;min-height:0;object-fit:contain;max-width:100%}"
    ".caption{font-size:2.6vh;margin:1vh 0 0}.source{font-size:1.6vh;color:#555}"
    ".question{font-size:3.6vh;white-space:pre-wrap}"
    ".moves{position:fixed;right:1.5vw;bottom:1vh;display:flex;align-items:center;gap:8px}"
    ".moves button{font-size:22px;min-width:44px;min-height:44px;border:1px solid #adb5bd;border-radius:8px;"
    "background:#fff;color:#111;cursor:pointer}#counter{font-size:14px;color:#495057}"
    "@media (max-width:600px){.slide{padding:2vh 3vw 64px}.slide h1{font-size:24px}.caption{font-size:16px}"
    ".source{font-size:12px}.question{font-size:18px}}"
)
_JS = """
const figs = JSON.parse(document.getElementById('figures').textContent);
const slides = Array.from(document.querySelectorAll('.slide'));
let at = 0;
function show(i) {
  at = Math.max(0, Math.min(slides.length - 1, i));
  slides.forEach((s, j) => s.classList.toggle('on', j === at));
  const plot = slides[at].querySelector('.plot');
  if (plot && !plot.dataset.drawn) {
    const fig = figs[Number(plot.id.slice(3))];
    const layout = Object.assign({}, fig.layout, {width: null, height: null, autosize: true});
    Plotly.newPlot(plot, fig.data, layout, {displaylogo: false, responsive: true});
    plot.dataset.drawn = '1';
  }
  document.getElementById('counter').textContent = (at + 1) + ' / ' + slides.length;
  if (location.hash !== '#' + (at + 1)) history.replaceState(null, '', '#' + (at + 1));
}
document.getElementById('prev').onclick = () => show(at - 1);
document.getElementById('next').onclick = () => show(at + 1);
let touch = null;  // a horizontal swipe turns the slide (a tap on a figure stays a tap: its hover values)
document.addEventListener('touchstart', (e) => { touch = e.touches.length === 1 ? e.touches[0] : null; },
  {passive: true});
document.addEventListener('touchend', (e) => {
  if (!touch) return;
  const end = e.changedTouches[0], dx = end.clientX - touch.clientX, dy = end.clientY - touch.clientY;
  if (Math.abs(dx) > 50 && Math.abs(dx) > 2 * Math.abs(dy)) show(at + (dx < 0 ? 1 : -1));
  touch = null;
}, {passive: true});
document.addEventListener('keydown', (e) => {
  if (['ArrowRight', 'PageDown', ' '].includes(e.key)) { show(at + 1); e.preventDefault(); }
  if (['ArrowLeft', 'PageUp'].includes(e.key)) { show(at - 1); e.preventDefault(); }
  if (e.key === 'Home') show(0);
  if (e.key === 'End') show(slides.length - 1);
});
show((parseInt(location.hash.slice(1)) || 1) - 1);
"""
