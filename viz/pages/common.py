"""State, caches and small widgets shared by every page. The only Streamlit code outside app.py and pages."""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from model.catalog import CatalogModel, ModelSpec, load
from model.pipeline import Analysis, Options, analyse
from viz.figures.common import Theme, plotly_config, safe_filename

EXAMPLES = {
    "The cat sat on the mat.": "The cat sat on the mat.",
    "Bible (in the training data's style)": "In the beginning God created the heaven and the earth. And the earth "
    "was without form, and void.",
    "Python docs": "The return statement leaves the current function call with the expression list as return value.",
    "Coreference": "The animal didn't cross the street because it was too tired.",
    "Repetition": "one two three four one two three four one two three four",
    "Masked word": "The capital of France is [MASK].",
}
DEFAULT_TEXT = EXAMPLES["The cat sat on the mat."]

DEFAULTS = {
    "model_kind": "bundled",
    "rand_layers": 4,
    "rand_heads": 4,
    "rand_d_model": 256,
    "rand_seed": 0,
    "rand_positional": "sinusoidal",
    "folder_path": "",
    "device": "cpu",
    "text": DEFAULT_TEXT,
    "example": "The cat sat on the mat.",
    "hide_special": False,
    "layer": 0,
    "head": 0,
    "presentation": False,
    "dark": False,
    "colorscale": "Viridis",
    "causal_override": "as built",
    "scale_scores": True,
}


PERSISTENT = (
    "attn_mode",
    "hv_heads",
    "hv_threshold",
    "cmp_mode",
    "cmp_text_b",
    "pad_text_b",
    "ablate_heads",
    "lesson_metric",
    "perm_positions",
    "perm_seed",
    "pe_positions",
    "pe_dims",
)


def init_state() -> None:
    """Session state is initialised here and nowhere else."""
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)
    # Streamlit drops a widget's value when a page does not draw that widget; re-assigning the keys at the
    # start of every run keeps layer, head and the other shared choices across page switches.
    for key in (*DEFAULTS, *PERSISTENT):
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]
    st.session_state.setdefault("active_spec", None)  # last spec that loaded successfully
    st.session_state.setdefault("failed", {})  # spec -> message, so a bad file is not re-parsed each rerun
    st.session_state.setdefault("uploads", {})  # digest -> (name, bytes): this session's uploads only


@st.cache_resource(max_entries=6, show_spinner="Loading model…")
def cached_model(spec: ModelSpec, device: str, _data: bytes | None = None) -> CatalogModel:
    """One loaded model per (spec, device), shared by all sessions (uploads are keyed by their digest)."""
    loaded = load(spec, _data)
    if device != "cpu":
        loaded.model.to(device)
    return loaded


# Analyses are cached as resources, not data: they hold up to hundreds of MB of arrays at 512 tokens and
# st.cache_data would copy (pickle) them on every rerun. The arrays are read-only, so sharing is safe.
@st.cache_resource(max_entries=24, show_spinner="Running the model…")
def cached_analysis(spec: ModelSpec, device: str, text: str, options: Options, _loaded: CatalogModel) -> Analysis:
    return analyse(_loaded.model, _loaded.tokenizer, text, options, device)


@dataclass
class Ctx:
    """What every page needs for this run."""

    spec: ModelSpec
    loaded: CatalogModel
    analysis: Analysis
    device: str
    theme: Theme
    hide_special: bool
    options: Options

    @property
    def keep(self) -> np.ndarray:
        return self.analysis.keep(self.hide_special)

    @property
    def tokens(self) -> list[str]:
        return [self.analysis.tokens[i] for i in self.keep]

    def pattern(self, layer: int, head: int) -> np.ndarray:
        return self.patterns(layer)[head]

    def patterns(self, layer: int | None = None) -> np.ndarray:
        """(L, H, n, n) or (H, n, n) restricted to the shown tokens (no copy when all are shown)."""
        k = self.keep
        p = self.analysis.patterns if layer is None else self.analysis.patterns[layer]
        return p if len(k) == self.analysis.n_tokens else p[..., k, :][..., :, k]

    def model_name(self) -> str:
        return str(self.loaded.description.get("name", self.spec.kind))


def ctx() -> Ctx:
    """The context app.py computed for this run."""
    return st.session_state["_ctx"]


def analysis_for(
    c: Ctx, text: str | None = None, options: Options | None = None, spec: ModelSpec | None = None
) -> tuple[Analysis, CatalogModel]:
    """Another cached analysis (another text, options or model) on the same device."""
    spec = spec or c.spec
    data = upload_bytes(spec)
    loaded = c.loaded if spec == c.spec else cached_model(spec, c.device, data)
    return cached_analysis(
        spec, c.device, c.analysis.text if text is None else text, options or c.options, loaded
    ), loaded


def upload_bytes(spec: ModelSpec) -> bytes | None:
    """This session's bytes behind an upload spec (or behind the base of a re-initialised one)."""
    root = spec.base if spec.kind == "reinit" and spec.base is not None else spec
    return st.session_state["uploads"].get(root.digest, (None, None))[1] if root.kind == "upload" else None


def show_chart(fig: go.Figure, key: str, *parts: object, on_select=None, **kwargs):
    """Render a figure with the export modebar (PNG at 3x, named after model, page and view), SVG/PNG/HTML
    download buttons under it (rendered only when clicked), and register it for the page's export pack."""
    from viz.export import figure_html, image_export_available, render_image

    c = st.session_state.get("_ctx")
    name = safe_filename(c.model_name() if c else "attention-lab", *parts)
    st.session_state.setdefault("_page_figures", []).append((name, fig))
    kwargs.setdefault("width", "stretch")
    select = {} if on_select is None else {"on_select": on_select}
    event = st.plotly_chart(fig, key=key, config=plotly_config(name), **select, **kwargs)
    row = st.container(horizontal=True, gap="small")
    downloads = [("HTML", lambda: figure_html(fig, name), "text/html")]
    if image_export_available():
        downloads = [
            ("SVG", lambda: render_image(fig, "svg"), "image/svg+xml"),
            ("PNG", lambda: render_image(fig, "png"), "image/png"),
            *downloads,
        ]
    for label, make, mime in downloads:  # bytes are rendered only when the button is clicked
        row.download_button(
            label,
            make,
            f"{name}.{label.lower()}",
            mime,
            key=f"{key}__{label.lower()}",
            icon=":material/download:",
            type="tertiary",
            on_click="ignore",  # a download needs no rerun of the page
        )
    return event


def layer_head_picker(c: Ctx, prefix: str = "", *, head: bool = True, label: str = "") -> tuple[int, int]:
    """Layer (and head) selectors. Without a prefix they share the global layer/head keys."""
    lk, hk = (f"{prefix}layer", f"{prefix}head") if prefix else ("layer", "head")
    st.session_state.setdefault(lk, 0)
    st.session_state.setdefault(hk, 0)
    if st.session_state[lk] >= c.analysis.n_layers:
        st.session_state[lk] = 0
    if st.session_state[hk] >= c.analysis.n_heads:
        st.session_state[hk] = 0
    cols = st.columns(2)
    layer = cols[0].selectbox(f"{label}Layer", range(c.analysis.n_layers), key=lk)
    h = cols[1].selectbox(f"{label}Head", range(c.analysis.n_heads), key=hk) if head else 0
    return int(layer), int(h)


def token_chips(tokens, ids, offsets, special) -> str:
    """HTML chips for tokens (escaped: whatever the user typed renders as text)."""
    chips = []
    for i, (tok, tid, (a, b), sp) in enumerate(zip(tokens, ids, offsets, special)):
        cls = "al-chip al-special" if sp else "al-chip"
        span = "special" if sp else f"chars {a}–{b}"
        chips.append(
            f'<span class="{cls}" title="position {i} · id {tid} · {span}">'
            f"<b>{html.escape(tok)}</b><small>#{i} · id {tid} · {span}</small></span>"
        )
    return '<div class="al-chips">' + "".join(chips) + "</div>"


CHIP_CSS = """
<style>
.al-chips {display: flex; flex-wrap: wrap; gap: 6px; margin: 4px 0 12px 0;}
.al-chip {display: inline-flex; flex-direction: column; padding: 4px 8px; border-radius: 8px;
          background: #e7ecff; border: 1px solid #b9c6ff; color: #1b2559; font-family: monospace;}
.al-chip small {color: #4a5480; font-size: 0.72em;}
.al-special {background: #f1f3f5; border: 1px dashed #adb5bd; color: #495057;}
</style>
"""

PRESENTATION_CSS = """
<style>
.stMainBlockContainer p, .stMainBlockContainer li, .stMainBlockContainer label {font-size: 1.25rem !important;}
.stMainBlockContainer h1 {font-size: 3rem !important;}
.stMainBlockContainer h2, .stMainBlockContainer h3 {font-size: 2rem !important;}
</style>
"""
