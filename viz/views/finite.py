"""Heads whose numbers are NaN or Inf (a checkpoint with NaN/Inf weights, an overflow) are shown as not
computable, with the reason, instead of as empty plots or captions that read "nan%".

:func:`check_selection` refuses a view of such a head (the page shows the message where the figure would be);
:func:`mark_figure` writes "not computable" on every heatmap panel that has no finite value, and
:func:`checked_caption` replaces a caption whose numbers came out NaN or Inf.
"""

from __future__ import annotations

import re

import numpy as np
import plotly.graph_objects as go

from model.observe import Observation

#: NaN or Inf as Python formats numbers ("nan", "nan%", "×inf"), not inside a word or a name ("nan.safetensors")
NOT_A_NUMBER = re.compile(r"(?<![\w.])(nan|inf)(?!\w|\.\w)")
HEAD_KEYS = (("layer", "head"), ("layer_a", "head_a"), ("layer_b", "head_b"))  # selections naming a head


def reason(warnings: list[str]) -> str:
    """Why numbers are not finite: the checkpoint's NaN/Inf weights when the loader found them."""
    bad = [w.split(" contains ")[0] for w in warnings if "NaN or Inf" in w]
    if bad:
        more = f" and {len(bad) - 2} more" if len(bad) > 2 else ""
        return (
            f"the model's weights hold NaN or Inf values ({', '.join(bad[:2])}{more}), and they reach this "
            "head's attention. Load a checkpoint without them"
        )
    return "the forward pass produced NaN or Inf here (an overflow). Try float32 or another text"


def finite_head(obs: Observation, layer: int, head: int) -> bool:
    return bool(np.isfinite(obs.patterns[layer, head]).all())


def finite_heads(obs: Observation) -> np.ndarray:
    """(L, H) bool: the heads whose attention weights are all finite (found once per observation: the page-top
    notice asks on every run)."""
    return obs.finite


def not_computable(obs: Observation, warnings: list[str], heads: list[tuple[int, int]]) -> str:
    names = ", ".join(f"L{a}H{b}" for a, b in heads)
    good = finite_heads(obs)
    first = np.argwhere(good)
    where = (
        f" {int(good.sum())} of {good.size} heads are computable (first: L{first[0][0]}H{first[0][1]})."
        if len(first)
        else " No head of this model is computable on this text."
    )
    return f"{names} is not computable: {reason(warnings)}.{where}"


def check_selection(obs: Observation, warnings: list[str], selection: dict) -> str | None:
    """The message for a selection that names a head with non-finite weights, else None."""
    for lk, hk in HEAD_KEYS:
        layer, head = selection.get(lk), selection.get(hk)
        named = isinstance(layer, int) and isinstance(head, int)
        if named and 0 <= layer < obs.n_layers and 0 <= head < obs.n_heads and not finite_head(obs, layer, head):
            return not_computable(obs, warnings, [(layer, head)])
    layer = selection.get("layer")
    whole = "head" not in selection and isinstance(layer, int) and 0 <= layer < obs.n_layers
    if whole and not np.isfinite(obs.patterns[layer]).any(axis=(-2, -1)).any():
        return f"Layer {layer} is not computable: {reason(warnings)}."
    return None


def checked_caption(caption: str, warnings: list[str]) -> str:
    """``caption``, or what to say instead when its numbers came out NaN or Inf."""
    if not caption or not NOT_A_NUMBER.search(caption):
        return caption
    return f"Not computable: some of the numbers this figure is built from are NaN or Inf — {reason(warnings)}."


def mark_figure(fig: go.Figure) -> None:
    """Write "not computable" across every heatmap panel whose values are all NaN or Inf."""
    for trace in fig.data:
        if trace.type != "heatmap" or trace.z is None:
            continue
        z = np.asarray(trace.z, dtype=np.float64)
        if z.size and not np.isfinite(z).any():
            xa, ya = (trace.xaxis or "x"), (trace.yaxis or "y")
            fig.add_annotation(
                text="not computable<br>(NaN or Inf)", x=0.5, y=0.5, xref=f"{xa} domain", yref=f"{ya} domain",
                showarrow=False, font={"color": "#c92a2a"},
            )  # fmt: skip


def model_notice(warnings: list[str], obs: Observation) -> str | None:
    """The page-top notice for a model whose weights hold NaN or Inf: which tensors, how many heads it costs."""
    bad = [w.split(" contains ")[0] for w in warnings if "NaN or Inf" in w]
    if not bad:
        return None
    good = finite_heads(obs)
    named = ", ".join(bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
    return (
        f"This checkpoint holds NaN or Inf values in {len(bad)} tensor{'s' if len(bad) > 1 else ''} ({named}): "
        f"{good.size - int(good.sum())} of {good.size} heads are not computable on this text and every page marks "
        "them so. Load a checkpoint without NaN or Inf weights to see them."
    )
