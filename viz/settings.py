"""Every user setting, declared once: key, default, type, allowed values, and what depends on the model. The
Streamlit shell initialises session state from this list (:mod:`viz.shell.state`), session files save and validate
it (:mod:`viz.session`), and nothing else declares a setting. No Streamlit here. A default is a value, or a function
of the :class:`Shape` of the current model and text (and of the other settings) for settings that depend on them (a
layer index, a token position); ``fit`` also clamps such a value when the model or the text changes, so a widget
never holds an option that no longer exists."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from model.analysis.find import RELATIONS
from model.analysis.metrics import METRICS
from model.analysis.sinks import SINK_TARGETS
from model.config import PositionalKind
from model.io.catalog import SOURCES
from model.positional import sinusoid_dims
from model.profile.job import COLUMNS as PROFILE_COLUMNS
from viz.figures.common import COLORBLIND_SCALES, EXPORT_SIZES, LABEL_POSITIONS
from viz.setting import Setting
from viz.views.animate import STEPS as ANIMATION_STEPS

EXAMPLES = {
    "The cat sat on the mat.": "The cat sat on the mat.",
    "Coreference": "The animal didn't cross the street because it was too tired.",
    "Fill the gap": "The cat sat on the [MASK].",
    "Fill the verb": "She [MASK] to the store yesterday.",
    "Two sentences": "The quick brown fox jumps over the lazy dog. The dog was not amused.",
    "Repetition": "one two three four one two three four one two three four",
    "Masked word": "The capital of France is [MASK].",
}
YOUR_TEXT = "Your text"  # what the example picker shows once the text is not one of the examples
DEFAULT_TEXT = EXAMPLES["The cat sat on the mat."]
LEARN_TASKS = ("induction", "previous", "sort", "reverse", "dates", "mlm")  # model.learn.tasks.TASKS
LEARN_POSITIONS = ("rope", "learned", "sinusoidal", "none")
SEQ2SEQ_STACKS = ("decoder", "encoder")  # model.learn.store.loaded_model
LEARN_SCORES = ("task", "previous", "first", "entropy", "mean_distance", "self", "next", "max_weight")
ATTENTION_MODES = ("softmax weights", "raw scaled scores (QKᵀ/√d_k)")
COMPARE_MODES = ("two heads", "two texts", "two models")
COMPARE_MODELS = ("random", "bundled", "minilm")
#: pages in sections: only the section on screen is computed and drawn (tabs would draw all of them)
QKV_SECTIONS = ("X → Q, K, V", "Scores → output", "One query", "Query/key space", "Value norms")
HV_KINDS = ("self-attention", "cross-attention")  # the head view of a decoder that reads a source
PE_SECTIONS = ("Sinusoidal formula", "This model's encoding", "Permutation lab")
CORPUS_SOURCES = ("bundled held-out documents", "my .txt or .jsonl file")
METRIC_DEFINITIONS = ("Attention Lab's (ordinary queries)", "Clark et al. 2019 (as their code computes)")
MIXING_SECTIONS = ("Context mixing", "Compare methods", "Sinks and head types")
CAUSES_SECTIONS = ("Logit lens", "Attribution", "Patching", "Circuits")
ALL_PATCHES = ("z", "resid_pre", "attn_out", "mlp_out")  # what patching sweeps (model/analysis/patching.py)
PATCH_SWEEPS = {"heads": ALL_PATCHES[:1], "heads and residual stream": ALL_PATCHES[:2], "everything": ALL_PATCHES}
PATCH_CHOICES = tuple(PATCH_SWEEPS)
#: activation patching, its one-pass estimate, and path patching (model/analysis/attribution.py, paths.py)
PATCH_METHODS = ("activation patching", "attribution patching (estimate)", "path patching")
PATH_RECEIVERS = ("logits", "queries", "keys", "values")
#: the circuit card's embedding: the default (effective after layer 0, direct at layer 0) or one of them
CIRCUIT_EMBEDDINGS = ("as fits the layer", "effective", "direct")
LESSON_SECTIONS = (
    "Predict first",
    "Why √d_k",
    "Heads specialise",
    "Pre- or post-norm",
    "Ablation",
    "Masked tokens",
    "Attention sinks",
    "Induction heads",
    "Shared K/V (GQA)",
    "Needle in a haystack",
)


def _focus(state: Mapping[str, Any], key: str) -> list[int]:
    """The token in focus as a one-token pick (none when nothing is in focus)."""
    value = state.get(key, -1)
    return [value] if isinstance(value, int) and value >= 0 else []


def _focus_or_first(s, state: Mapping[str, Any]) -> int:
    """The query in focus, else the first ordinary token of the observation ``s`` (else 0)."""
    return (_focus(state, "focus_query") or [*s.ordinary, 0])[0]


SETTINGS: tuple[Setting, ...] = (
    # the sidebar
    Setting("model_kind", "bundled", str, SOURCES, url=True),
    Setting("rand_layers", 4, int, url=True, bounds=(1, 24)),
    Setting("rand_heads", 4, int, url=True, bounds=(1, 16)),
    Setting("rand_d_model", 256, int, url=True, bounds=(8, 1024)),
    Setting("rand_seed", 0, int, url=True, bounds=(0, 2**31 - 1)),
    Setting("rand_positional", "sinusoidal", str, get_args(PositionalKind), url=True),
    Setting("folder_path", "", str),
    Setting("trained_run", "", str, url=True),  # a run of "Watch it learn" (its 12-hex-digit key)
    Setting("trained_stack", "decoder", str, SEQ2SEQ_STACKS, url=True),  # an encoder–decoder run's stack
    Setting("trained_source", "", str, url=True),  # what its decoder's cross-attention reads ("": the probe's)
    Setting("pair_stack", "decoder", str, SEQ2SEQ_STACKS, url=True),  # a T5 / BART folder's or upload's stack
    Setting("pair_source", "", str, url=True),  # what its decoder's cross-attention reads ("": a default sentence)
    Setting("ckpt_heads", 8, int),  # heads of a checkpoint that does not store them (the post's encoder)
    Setting("ckpt_norm", "pre", str, ("pre", "post")),
    # a file that brings no tokenizer: nothing is chosen for the user ("choose"), least of all one whose vocabulary
    # merely has the right size
    Setting("ckpt_tokenizer", "choose", str, ("choose", "upload", "ids", "bundled")),
    Setting("device", "cpu", str),
    Setting("example", "The cat sat on the mat.", str, (*EXAMPLES, YOUR_TEXT), saved=False),
    Setting("text", DEFAULT_TEXT, str, url=True),
    Setting("hide_special", False, bool, url=True),
    Setting("causal_override", "as built", str, ("as built", "on", "off"), url=True),
    Setting("scale_scores", True, bool, url=True),
    Setting("presentation", False, bool, url=True),
    Setting("dark", False, bool, url=True),
    Setting("colorscale", "Viridis", str, COLORBLIND_SCALES, url=True),
    Setting("label_positions", "duplicates", str, LABEL_POSITIONS, url=True),
    Setting("export_size", "screen", str, tuple(EXPORT_SIZES), url=True),
    Setting("export_caption", "slides", str, ("slides", "always", "never"), url=True),
    Setting("slide_window", False, bool, url=True),
    Setting("deck_title", "Attention from scratch", str),
    Setting("pack_matrices", False, bool),
    # the head and the tokens in focus, shared by every page (-1: no token in focus)
    Setting("layer", 0, int, fits="layer", url=True),
    Setting("head", 0, int, fits="head", url=True),
    Setting("focus_query", -1, int, fits="token_or_none", url=True),
    Setting("focus_key", -1, int, fits="token_or_none", url=True),
    # pages
    Setting("attn_mode", ATTENTION_MODES[0], str, ATTENTION_MODES, page="attention", url=True),
    Setting("attn_without_sink", False, bool, page="attention", url=True),
    Setting("attn_window", [], list, fits="span", page="attention", url=True),  # a long text: [q0, q1, k0, k1]
    Setting("attn_cells", "mean", str, ("mean", "max"), page="attention", url=True),  # its cells' mean or max
    Setting("mix_section", MIXING_SECTIONS[0], str, MIXING_SECTIONS, page="mixing", url=True),
    Setting("mix_across", False, bool, page="mixing", url=True),
    Setting("mix_target", "", str, page="mixing", url=True),
    Setting("mix_sink", SINK_TARGETS[0], str, SINK_TARGETS, page="mixing", url=True),
    Setting("causes_section", CAUSES_SECTIONS[0], str, CAUSES_SECTIONS, page="causes", url=True),
    Setting("causes_answer", "", str, page="causes", url=True),  # "": the model's own top guess
    Setting("causes_foil", "", str, page="causes", url=True),
    Setting("causes_corrupted", "", str, page="causes", url=True),
    Setting("causes_patch", PATCH_CHOICES[1], str, PATCH_CHOICES, page="causes", url=True),
    Setting("causes_method", PATCH_METHODS[0], str, PATCH_METHODS, page="causes", url=True),
    Setting("causes_receivers", PATH_RECEIVERS[0], str, PATH_RECEIVERS, page="causes", url=True),
    Setting("causes_receiver_heads", "", str, page="causes", url=True),  # "L9H6, L9H9"
    Setting("causes_score", "logit difference", str, ("logit difference", "probability"), page="causes", url=True),
    Setting("causes_template_pick", "Names (indirect object, Wang et al., 2022)", str, page="causes"),
    Setting("causes_embedding", CIRCUIT_EMBEDDINGS[0], str, CIRCUIT_EMBEDDINGS, page="causes", url=True),
    Setting("causes_composition", "K", str, ("K", "Q", "V"), page="causes", url=True),
    Setting("causes_window", 16, int, page="causes", url=True, bounds=(4, 32)),
    Setting("corpus_source", CORPUS_SOURCES[0], str, CORPUS_SOURCES, page="corpus"),
    Setting("corpus_docs", 300, int, page="corpus", url=True, bounds=(10, 5000)),
    Setting("corpus_x", "previous", str, PROFILE_COLUMNS, page="corpus", url=True),
    Setting("corpus_y", "share_cls", str, PROFILE_COLUMNS, page="corpus", url=True),
    Setting("corpus_metric", "entropy", str, PROFILE_COLUMNS, page="corpus", url=True),
    Setting("hv_heads", lambda s, state: [state.get("head", 0)], list, fits="heads", page="head-view", url=True),
    # 0.01: the lightest line the head view sends (viz/figures/headview.py LINE_FLOOR)
    Setting("hv_threshold", 0.05, float, page="head-view", url=True, bounds=(0.01, 0.5)),
    Setting("hv_attention", HV_KINDS[0], str, HV_KINDS, page="head-view", url=True),  # an encoder–decoder's decoder
    Setting("metrics_definitions", METRIC_DEFINITIONS[0], str, METRIC_DEFINITIONS, page="metrics", url=True),
    Setting("ov_layer", 0, int, fits="layer", saved=False, page="overview"),
    Setting("ov_head", 0, int, fits="head", saved=False, page="overview"),
    Setting("cmp_mode", COMPARE_MODES[0], str, COMPARE_MODES, page="compare", url=True),
    Setting("cmpA_layer", 0, int, fits="layer", page="compare", url=True),
    Setting("cmpA_head", 0, int, fits="head", page="compare", url=True),
    Setting("cmpB_layer", 0, int, fits="layer", page="compare", url=True),
    Setting("cmpB_head", lambda s, state: min(1, s.n_heads - 1), int, fits="head", page="compare", url=True),
    Setting("cmp_text_b", "The dog sat on the log.", str, page="compare", url=True),
    Setting("cmp_model_b", "random", str, COMPARE_MODELS, page="compare", url=True),
    Setting("cmp_seed_b", 1, int, page="compare", url=True, bounds=(0, 10_000)),
    Setting("block_token", -1, int, fits="token_or_none", page="block", url=True),
    Setting(  # the token in focus, else the second token (the first is often [CLS] or <s>)
        "anim_query",
        lambda s, state: (_focus(state, "focus_query") or [min(1, s.n_tokens - 1)])[0],
        int,
        fits="token",
        page="animate",
        url=True,
    ),
    Setting("anim_step", 0, int, tuple(range(len(ANIMATION_STEPS))), page="animate", url=True),
    Setting("anim_seconds", 2.0, float, tuple(x / 2 for x in range(1, 11)), page="animate", url=True),
    Setting("qkv_section", QKV_SECTIONS[0], str, QKV_SECTIONS, page="qkv", url=True),
    Setting("pad_text_b", "A short one.", str, page="masks", url=True),
    Setting("perm_layer", 0, int, fits="layer", page="positional", url=True),
    Setting("perm_head", 0, int, fits="head", page="positional", url=True),
    Setting("perm_positions", False, bool, page="positional", url=True),
    Setting("perm_seed", 0, int, page="positional", url=True, bounds=(0, 1000)),
    Setting("pe_section", PE_SECTIONS[0], str, PE_SECTIONS, page="positional", url=True),
    Setting("rel_layer", 0, int, fits="layer", page="positional", url=True),  # the score split / relative bias
    Setting("rel_head", 0, int, fits="head", page="positional", url=True),
    Setting(  # the token in focus, else the first ordinary token
        "rel_query",
        _focus_or_first,
        int,
        fits="token",
        page="positional",
        url=True,
    ),
    Setting("pe_positions", 128, int, page="positional", url=True, bounds=(16, 8192)),
    Setting(
        "pe_dims",
        lambda s, state: sinusoid_dims(s.d_model - s.d_model % 2),
        list,
        fits="dims",
        page="positional",
        url=True,
    ),
    Setting(  # picked tokens when a token is in focus, else a relation that needs no picking
        "find_relation",
        lambda s, state: "tokens" if _focus(state, "focus_query") else "previous",
        str,
        (*RELATIONS, "source tokens"),  # the last: a decoder's cross-attention (viz/views/find.SOURCE)
        page="find",
        url=True,
    ),
    Setting("find_sources", [], list, page="find", url=True),  # (the source's token positions)
    Setting(
        "metrics_cross", "focus", str, ("focus", "spread", "writes next", "monotone"), page="metrics", url=True
    ),  # source tokens (keys of cross-attention) picked
    Setting("find_queries", lambda s, state: _focus(state, "focus_query"), list, fits="tokens", page="find", url=True),
    Setting("find_keys", lambda s, state: _focus(state, "focus_key"), list, fits="tokens", page="find", url=True),
    Setting("lesson_section", LESSON_SECTIONS[0], str, LESSON_SECTIONS, page="lessons", url=True),
    Setting("lesson_metric", "previous", str, METRICS, page="lessons", url=True),
    Setting("predict_layer", 0, int, fits="layer", page="lessons", url=True),
    Setting("predict_head", 0, int, fits="head", page="lessons", url=True),
    Setting(  # the token in focus, else the first ordinary token
        "predict_query",
        _focus_or_first,
        int,
        fits="token",
        page="lessons",
        url=True,
    ),
    Setting("predict_guess", 0, int, fits="token", page="lessons", url=True),
    Setting("ablate_heads", lambda s, state: [(0, 0)], list, fits="pairs", saved=False, page="lessons"),
    # -1: not chosen yet, so the lesson opens on the text's strongest sink head (a function of the patterns)
    Setting("sink_layer", -1, int, fits="unset", page="lessons", url=True),
    Setting("sink_head", -1, int, fits="unset", page="lessons", url=True),
    Setting("ind_period", 24, int, page="lessons", url=True, bounds=(8, 64)),
    Setting("ind_seed", 0, int, page="lessons", url=True, bounds=(0, 2**31 - 1)),
    Setting("gqa_kv", 0, int, page="lessons", url=True),
    Setting("needle_lengths", [512, 1024, 2048], list, page="lessons", url=True),
    Setting("needle_depths", [0, 25, 50, 75, 100], list, page="lessons", url=True),
    Setting("next_position", -1, int, fits="token_or_none", page="next-token", url=True),  # -1: after the last token
    Setting("next_temperature", 1.0, float, page="next-token", url=True, bounds=(0.1, 2.0)),
    Setting("gen_n", 12, int, page="next-token", url=True, bounds=(1, 48)),
    Setting("gen_temperature", 0.0, float, page="next-token", url=True, bounds=(0.0, 2.0)),
    Setting("gen_seed", 0, int, page="next-token", url=True, bounds=(0, 2**31 - 1)),
    Setting("learn_task", "induction", str, tuple(LEARN_TASKS), page="learn", url=True),
    Setting("learn_layers", 2, int, page="learn", url=True, bounds=(1, 4)),
    Setting("learn_heads", 4, int, page="learn", url=True, bounds=(1, 8)),
    Setting("learn_d_model", 64, int, page="learn", url=True, bounds=(16, 256)),
    Setting("learn_steps", 1500, int, page="learn", url=True, bounds=(100, 20000)),
    Setting("learn_positional", "rope", str, LEARN_POSITIONS, page="learn", url=True),
    Setting("learn_norm", "pre", str, ("pre", "post"), page="learn", url=True),
    Setting("learn_lr", 0.003, float, (0.0003, 0.001, 0.003, 0.01), page="learn", url=True),
    Setting("learn_seed", 0, int, page="learn", url=True, bounds=(0, 10_000)),
    Setting("learn_ff", False, bool, page="learn", url=True),
    Setting("learn_score", "task", str, LEARN_SCORES, page="learn", url=True),
    Setting("learn_step", -1, int, fits="unset", page="learn", url=True),  # -1: the last snapshot
    Setting("learn_layer", -1, int, fits="unset", page="learn", url=True),  # -1: the head with the best score
    Setting("learn_head", -1, int, fits="unset", page="learn", url=True),
    Setting(
        "mlm_pick",
        lambda s, state: s.ordinary[0] if s.ordinary else 0,
        int,
        fits="ordinary",
        saved=False,
        page="lessons",
    ),
)
BY_KEY: dict[str, Setting] = {s.key: s for s in SETTINGS}
