"""The post's six claims, each one click from Start here onto the exact view that shows it: the page, the model that
carries it (switched to, and said, when the sidebar's model cannot show it — a post-norm model never illustrates
"pre-norm"), the text, the layer, head, query and step."""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

from model.io.catalog import LABELS, available
from viz.shell.widgets import open_page
from viz.views.animate import STEPS
from viz.views.find import COREFERENCE


@dataclass(frozen=True)
class Claim:
    """One claim of the post and where it is shown (``settings``: widget keys and values on that page)."""

    text: str
    page: str  # the page's script
    url_path: str  # the page's URL path (where the note is shown)
    settings: dict = field(default_factory=dict)
    model: str = ""  # the catalog entry that carries the claim ("": the sidebar's model does)
    needs: str = ""  # what a model must be to carry it: "pre-norm" ("": any)
    focus: tuple[str, str] = ()  # the query and key tokens to put in focus, on the coreference sentence
    reason: str = ""  # why ``model`` is opened, said on the page


CLAIMS = (
    Claim(
        "Q and K decide where a token looks, V what it takes",
        "viz/pages/animate.py",
        "animate",
        {"layer": 2, "head": 0, "anim_step": STEPS.index("q·k")},
        model="bundled",
        focus=("it", "animal"),
        reason="the claim is shown on its layer 2, head 0, with “it” as the query",
    ),
    Claim("Dividing by √d_k keeps the softmax soft", "viz/pages/lessons.py", "lessons", {"lesson_section": "Why √d_k"}),
    Claim(
        "Heads specialise",
        "viz/pages/lessons.py",
        "lessons",
        {"lesson_section": "Heads specialise"},
        model="minilm",
        focus=("it", "animal"),
        reason="a pretrained model's heads, counted beside a random init of its config",
    ),
    Claim(
        "Without positions attention ignores order",
        "viz/pages/positional.py",
        "positional",
        {"pe_section": "Permutation lab"},
    ),
    Claim("The pre-norm block: x + MHA(LN(x)), x + FF(LN(x))", "viz/pages/block.py", "block", needs="pre-norm"),
    Claim("The causal mask hides the future", "viz/pages/masks.py", "masks"),
)
#: the model a claim falls back on when its own is not installed, or when the sidebar's cannot carry it
FALLBACK = "bundled"


def _switch_to(claim: Claim) -> str:
    """The catalog entry to open for ``claim`` ("" to keep the sidebar's) and why, in a sentence ("" if kept)."""
    ctx = st.session_state.get("_ctx")
    current = ctx.spec.kind if ctx is not None else ""
    if claim.needs == "pre-norm" and ctx is not None and ctx.loaded.model.cfg.norm != "pre":
        return FALLBACK, f"{ctx.model_name} is a post-norm model, which cannot show x + MHA(LN(x))"
    if claim.model and current != claim.model:
        kind = claim.model if available(claim.model)[0] else FALLBACK
        if kind != current:
            return kind, claim.reason
    return "", ""


def open_claim(index: int) -> None:
    """Callback of claim ``index``'s button: the model, text and selection that show it, and the page; a note on that
    page says what was switched and why."""
    claim = CLAIMS[index]
    state = st.session_state
    kind, why = _switch_to(claim)
    said = []
    if kind:
        state["model_kind"] = kind
        said.append(f"the model to {LABELS[kind]}: {why}")
    if claim.focus and state.get("text") != COREFERENCE:
        state["text"] = COREFERENCE
        said.append(f"the text to the coreference example, “{COREFERENCE}”")
    state.update(claim.settings)
    if claim.focus:
        state["_claim_focus"] = claim.focus  # placed once the text's tokens are known (see place_claim_focus)
    note = f"Claim {index + 1}, “{claim.text}”"
    state["_claim_note"] = (claim.url_path, note + (": switched " + "; ".join(said) + "." if said else "."))
    open_page(claim.page)


def place_claim_focus(tokens) -> None:
    """Put the claim's query and key tokens in focus on the text just observed (their positions depend on the
    model's tokenizer); Step through a head's query follows the focus."""
    wanted = st.session_state.pop("_claim_focus", None)
    if not wanted:
        return
    labels = [t.strip().lower() for t in tokens]
    query, key = (labels.index(w) if w in labels else -1 for w in wanted)
    if query >= 0:
        st.session_state["focus_query"] = st.session_state["anim_query"] = query
    if key >= 0:
        st.session_state["focus_key"] = key


def claim_note(url_path: str) -> str | None:
    """The note a claim left for this page, once (None on other pages and later runs)."""
    found = st.session_state.get("_claim_note")
    if found and found[0] == url_path:
        del st.session_state["_claim_note"]
        return found[1]
    return None
