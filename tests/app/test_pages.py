"""Every page, headless, with the bundled model and a random init; caching; model errors."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from model import observe
from tests.app.conftest import PAGES, configs, figures, new_app
from viz.settings import (
    CAUSES_SECTIONS,
    EXAMPLES,
    LESSON_SECTIONS,
    MIXING_SECTIONS,
    PE_SECTIONS,
    QKV_SECTIONS,
    YOUR_TEXT,
)

EXPECTED_CHARTS = {  # plotly charts on each page as it opens (pages in sections show their first section)
    "viz/pages/start.py": 1,
    "viz/pages/tokens.py": 0,
    "viz/pages/attention.py": 3,
    "viz/pages/head_view.py": 0,  # drawn by a component; its static version is in the downloads
    "viz/pages/overview.py": 1,
    "viz/pages/compare.py": 2,  # A and B side by side in one figure, then A − B
    "viz/pages/metrics.py": 2,  # the gallery of kinds, the head similarity
    "viz/pages/find.py": 1,
    "viz/pages/next_token.py": 0,  # an encoder: the page says which model predicts the next token
    "viz/pages/qkv.py": 2,
    "viz/pages/block.py": 2,  # the diagram and the residual stream
    "viz/pages/animate.py": 1,  # one frame at a time
    "viz/pages/rollout.py": 3,  # rollout, one token layer by layer, flow
    "viz/pages/mixing.py": 2,  # four measures side by side, norm-based per head
    "viz/pages/corpus.py": 0,  # nothing until a corpus is run (tests/app/test_corpus.py runs one)
    "viz/pages/masks.py": 3,
    "viz/pages/positional.py": 3,
    "viz/pages/lessons.py": 0,  # "Predict first": nothing is shown before the guess
    "viz/pages/learn.py": 0,  # nothing trained yet: the Train button
    "viz/pages/deck.py": 0,  # an empty deck says how to fill it
    "viz/pages/causes.py": 0,  # an encoder reads its answer at a [MASK]; the default text has none
}
#: page -> (section setting, sections, charts in each)
SECTIONED = {
    "viz/pages/qkv.py": ("qkv_section", QKV_SECTIONS, (2, 4, 1, 1, 1)),
    "viz/pages/positional.py": ("pe_section", PE_SECTIONS, (3, 1, 1)),
    "viz/pages/lessons.py": ("lesson_section", LESSON_SECTIONS, (0, 1, 3, 1, 3, 1, 2, 2, 0, 0)),
    "viz/pages/mixing.py": ("mix_section", MIXING_SECTIONS, (2, 2, 2)),
    "viz/pages/causes.py": ("causes_section", CAUSES_SECTIONS, (0, 0, 0, 1)),  # patching waits for its prompt
}
#: what differs for the decoder (SmolLM2): predictions and generation; no MLM; GQA shown
DECODER_CHARTS = {"viz/pages/next_token.py": 1, "viz/pages/causes.py": 2}  # generation waits for its button
#: on a big model the lessons that run it again (heads specialise, ablation) wait for a button
DECODER_SECTIONS = {"viz/pages/lessons.py": (0, 1, 0, 0, 0, 0, 2, 2, 2, 0)}  # the needle waits for its button


@pytest.mark.parametrize(
    "source",
    ["bundled", pytest.param("random", marks=pytest.mark.slow), pytest.param("smollm2", marks=pytest.mark.slow)],
)
def test_every_page_renders(source):
    at = new_app()
    if source == "random":
        at.sidebar.selectbox(key="model_kind").set_value("random").run()
        at.sidebar.number_input(key="rand_layers").set_value(2)
        at.run()
        assert not at.exception
    if source == "smollm2":
        at.sidebar.selectbox(key="model_kind").set_value("smollm2").run()
        assert not at.exception and not at.sidebar.error
    for page in PAGES:
        at.switch_page(page)
        at.run()
        assert not at.exception, (page, at.exception)
        assert not at.error, (page, [e.value for e in at.error])
        expected = (DECODER_CHARTS if source == "smollm2" else {}).get(page, EXPECTED_CHARTS[page])
        assert len(at.get("plotly_chart")) == expected, page
        if expected or page.endswith("head_view.py"):  # every figure has download buttons, the page an export
            buttons = at.get("download_button")
            keys = {b.key for b in buttons}
            assert "page_html" in keys and any(k.endswith("__html") for k in keys)
            assert all(b.proto.ignore_rerun for b in buttons)  # downloading never re-runs the page
        for cfg in configs(at):  # every figure exports PNG at >= 2x with a descriptive name
            opts = cfg["toImageButtonOptions"]
            assert opts["scale"] >= 2 and opts["filename"]
    about = [e.label for e in at.sidebar.expander if e.label.startswith("About:")]
    assert about and ("Random init" in about[0]) == (source == "random")


@pytest.mark.parametrize(
    "page",
    [  # the lessons' ten sections take 1.5 s: every tier runs them, the fast tier the other pages' sections
        *(pytest.param(p, marks=pytest.mark.slow) if p.endswith("lessons.py") else p for p in SECTIONED),
        pytest.param("decoder lessons", marks=pytest.mark.slow),
    ],
    ids=[*SECTIONED, "decoder"],
)
def test_every_section_renders(app, page):
    if page == "decoder lessons":  # SmolLM2: sinks, induction and GQA lessons, no masked-token head
        app.sidebar.selectbox(key="model_kind").set_value("smollm2").run()
        page = "viz/pages/lessons.py"
        key, sections, _ = SECTIONED[page]
        charts = DECODER_SECTIONS[page]
    else:
        key, sections, charts = SECTIONED[page]
    assert len(charts) == len(sections), page
    app.switch_page(page).run()
    for name, count in zip(sections, charts):
        app.session_state[key] = name
        app.run()
        assert not app.exception, (page, name, app.exception)
        assert not app.error, (page, name, [e.value for e in app.error])
        assert len(app.get("plotly_chart")) == count, (page, name)


def test_attention_page_figure_content(app):
    fig = figures(app)[0]
    heat = fig["data"][0]
    assert heat["type"] == "heatmap"
    assert heat["y"][0] == "[CLS]" and heat["y"][-1] == "[SEP]"
    assert "weight" in heat["hovertemplate"] and "query" in heat["hovertemplate"]
    assert "Layer 0, head 0" in fig["layout"]["title"]["text"]
    app.radio(key="attn_mode").set_value("raw scaled scores (QKᵀ/√d_k)").run()
    assert "scores" in figures(app)[0]["layout"]["title"]["text"]


@pytest.fixture
def forward_passes(monkeypatch):
    """Counts the forward passes the app runs (through model.observe) while a test drives it."""
    calls = {"n": 0}
    real = observe._forward

    def counting(*args, **kwargs):
        calls["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(observe, "_forward", counting)
    return calls


@pytest.mark.slow
def test_layer_head_page_and_style_changes_run_no_forward_pass(app, forward_passes):
    for page in PAGES[:6]:  # the part-1 pages need nothing but the one observation of this text
        app.switch_page(page).run()
    app.switch_page("viz/pages/attention.py").run()
    before = forward_passes["n"]
    app.selectbox(key="layer").set_value(1).run()
    for page in PAGES[:6]:
        app.switch_page(page).run()
    app.switch_page("viz/pages/attention.py").run()
    assert forward_passes["n"] == before
    app.selectbox(key="head").set_value(3).run()
    assert "Layer 1, head 3" in figures(app)[0]["layout"]["title"]["text"]
    app.sidebar.selectbox(key="colorscale").set_value("Cividis").run()
    app.sidebar.toggle(key="presentation").set_value(True).run()
    for page in PAGES:  # pages with comparisons (masks, lessons) may run their own extra observations once...
        app.switch_page(page).run()
    assert not app.exception
    after_first_visit = forward_passes["n"]
    assert after_first_visit - before <= 6
    for page in PAGES:  # ...but never again
        app.switch_page(page).run()
    app.switch_page("viz/pages/attention.py").run()
    app.selectbox(key="layer").set_value(0).run()
    assert forward_passes["n"] == after_first_visit
    # a new text does run the model once
    app.sidebar.text_area(key="text").set_value("A brand new sentence for the counter.").run()
    assert forward_passes["n"] == after_first_visit + 1


@pytest.mark.slow
def test_a_long_text_names_what_is_read_whole_and_a_models_own_limit_truncates(app):
    app.sidebar.text_area(key="text").set_value("word " * 900).run()
    assert not app.exception
    notices = " ".join(w.value for w in app.warning)
    assert "The text has 902 tokens." in notices and "read all 902" in notices and "the first 512" in notices
    app.sidebar.selectbox(key="model_kind").set_value("random").run()  # learned positions: 512 is the model's limit
    app.sidebar.selectbox(key="rand_positional").set_value("learned").run()
    assert not app.exception
    assert any("reads at most 512" in w.value for w in app.warning)


@pytest.mark.slow
def test_example_picker_follows_the_text(app):
    app.sidebar.selectbox(key="example").set_value("Coreference").run()
    assert app.sidebar.text_area(key="text").value == EXAMPLES["Coreference"]
    app.sidebar.text_area(key="text").set_value("My own sentence about 🐈.").run()
    assert not app.exception and app.sidebar.selectbox(key="example").value == YOUR_TEXT
    assert any("became [UNK]" in w.value and "🐈" in w.value for w in app.warning)  # the emoji is named
    app.sidebar.text_area(key="text").set_value(EXAMPLES["Repetition"]).run()
    assert app.sidebar.selectbox(key="example").value == "Repetition"


def test_hide_special_tokens(app):
    app.sidebar.toggle(key="hide_special").set_value(True).run()
    y = figures(app)[0]["data"][0]["y"]
    assert "[CLS]" not in y and "[SEP]" not in y


@pytest.mark.slow
def test_bad_upload_keeps_previous_model_and_text(app, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_MODEL_DIRS", str(tmp_path))
    app.sidebar.text_area(key="text").set_value("Keep this text.").run()
    app.sidebar.selectbox(key="model_kind").set_value("folder").run()
    app.sidebar.text_input(key="folder_path").set_value(str(tmp_path / "nonexistent" / "model")).run()
    assert not app.exception
    assert any("no such file or folder" in e.value for e in app.sidebar.error)
    assert app.sidebar.text_area(key="text").value == "Keep this text."
    assert len(app.get("plotly_chart")) == 3  # the previous (bundled) model still drives the page


@pytest.mark.slow
def test_overview_pick_opens_attention_page(app):
    app.switch_page("viz/pages/overview.py").run()
    app.selectbox(key="ov_layer").set_value(1)
    app.selectbox(key="ov_head").set_value(2)
    next(b for b in app.button if b.label.startswith("Open this head")).click().run()
    assert not app.exception
    assert "Layer 1, head 2" in figures(app)[0]["layout"]["title"]["text"]


@pytest.mark.slow
def test_find_heads_ranks_every_head_for_picked_tokens(app):
    app.sidebar.text_area(key="text").set_value("The cat sat because it was tired.").run()
    app.switch_page("viz/pages/find.py").run()
    assert not app.exception and "previous token" in figures(app)[0]["layout"]["title"]["text"]
    app.radio(key="find_relation").set_value("tokens").run()
    assert any("Pick at least one query" in i.value for i in app.info)
    tokens = app.session_state["_ctx"].obs.tokens
    query, key = len(tokens) - 3, 2
    app.multiselect(key="find_queries").set_value([query])
    app.multiselect(key="find_keys").set_value([key]).run()
    assert not app.exception
    (fig,) = figures(app)
    assert f"“{tokens[query]}” → “{tokens[key]}”" in fig["layout"]["title"]["text"]
    table = app.dataframe[0].value
    obs = app.session_state["_ctx"].obs
    n_heads = obs.n_layers * obs.n_heads
    assert len(table) == n_heads and table["weight on the pairs"].is_monotonic_decreasing  # every head, ranked
    best = re.fullmatch(r"L(\d+)H(\d+)", table["head"][0]).groups()
    assert fig["data"][1]["customdata"][0] == [int(b) for b in best]  # the first thumbnail is the best head
    assert any(f"strongest of the {n_heads} heads is {table['head'][0]}" in c.value for c in app.caption)


@pytest.mark.slow
def test_predict_first_hides_the_answer_until_revealed(app):
    app.switch_page("viz/pages/lessons.py").run()
    assert app.segmented_control(key="lesson_section").value == "Predict first"
    app.selectbox(key="predict_layer").set_value(1)
    app.selectbox(key="predict_query").set_value(3)
    app.selectbox(key="predict_guess").set_value(0).run()
    assert not figures(app)  # no answer before the guess is made
    app.button(key="predict_reveal").click().run()
    (fig,) = figures(app)
    row = app.session_state["_ctx"].obs.patterns[1, 0, 3]
    assert fig["data"][0]["y"] == pytest.approx(row.tolist(), abs=1e-6)
    verdict = next(c.value for c in app.caption if "attends most" in c.value)
    assert verdict.startswith("Right" if row.argmax() == 0 else "Not quite")
    app.selectbox(key="predict_guess").set_value(int(row.argmax())).run()
    assert not figures(app)  # a new guess hides the answer again
    app.button(key="predict_reveal").click().run()
    assert any(c.value.startswith("Right") for c in app.caption)


@pytest.mark.slow
def test_compare_modes(app):
    app.switch_page("viz/pages/compare.py").run()
    app.radio(key="cmp_mode").set_value("two texts").run()
    assert not app.exception
    app.radio(key="cmp_mode").set_value("two models").run()
    assert not app.exception and len(app.get("plotly_chart")) == 2
    pair, diff = figures(app)
    panel_titles = [a["text"] for a in pair["layout"]["annotations"]]
    assert "Random init" in panel_titles[1] and "A − B" in diff["layout"]["title"]["text"]


@pytest.mark.slow
def test_minilm_loads_when_installed(app):
    app.sidebar.selectbox(key="model_kind").set_value("minilm").run()
    assert not app.exception
    fig = figures(app)[0]
    assert fig["data"][0]["y"][1] == "the·1"  # MiniLM's own tokenizer (and "the" repeats: it carries its position)
    app.switch_page("viz/pages/overview.py").run()
    assert not app.exception


#: (page, setting, another value): every widget that selects what a figure shows
SELECTIONS = [
    *[(page, "layer", 1) for page in PAGES],
    *[(page, "head", 1) for page in PAGES],
    ("viz/pages/attention.py", "attn_mode", "raw scaled scores (QKᵀ/√d_k)"),
    ("viz/pages/head_view.py", "hv_heads", [0, 2]),
    ("viz/pages/head_view.py", "hv_threshold", 0.3),
    ("viz/pages/compare.py", "cmpA_layer", 1),
    ("viz/pages/compare.py", "cmpA_head", 2),
    ("viz/pages/compare.py", "cmpB_layer", 1),
    ("viz/pages/compare.py", "cmpB_head", 3),
    ("viz/pages/attention.py", "focus_query", 3),
    ("viz/pages/attention.py", "focus_key", 2),
    ("viz/pages/rollout.py", "focus_query", 3),
    ("viz/pages/masks.py", "pad_text_b", "Another short text here."),
    ("viz/pages/positional.py", "pe_positions", 64),
    ("viz/pages/positional.py", "pe_dims", [2, 3]),
    ("viz/pages/positional.py", "perm_layer", 1),
    ("viz/pages/positional.py", "perm_head", 2),
    ("viz/pages/positional.py", "perm_positions", True),
    ("viz/pages/positional.py", "perm_seed", 3),
    ("viz/pages/lessons.py", "lesson_metric", "entropy"),
    ("viz/pages/lessons.py", "ablate_heads", [(1, 1)]),
    ("viz/pages/lessons.py", "mlm_pick", 3),
]
COMPARE_MODES = [
    ("two texts", "cmp_text_b", "A cat is not a dog."),
    ("two models", "cmp_model_b", "bundled"),
    ("two models", "cmp_seed_b", 4),
]


def charts_and_names(app):
    return list(zip(figures(app), [cfg["toImageButtonOptions"]["filename"] for cfg in configs(app)]))


def assert_changed_figures_changed_names(before, after, where):
    assert len(before) == len(after), where
    for (fig0, name0), (fig1, name1) in zip(before, after):
        if fig0["data"] != fig1["data"] or fig0["layout"].get("title") != fig1["layout"].get("title"):
            assert name0 != name1, (where, name0)


@pytest.mark.slow
def test_a_figure_that_changes_with_any_selection_is_exported_under_a_new_name():
    """Exports of two selections must not overwrite each other: where a figure depends on a widget, so does its
    file name (every page's pickers, compare sides, the permutation head, the query token, ...)."""
    app = new_app()
    selections = [  # (page, setting, another value, settings to apply first)
        *SELECTIONS,
        ("viz/pages/qkv.py", "focus_query", 3, {"qkv_section": QKV_SECTIONS[2]}),
        ("viz/pages/qkv.py", "focus_query", 2, {"qkv_section": QKV_SECTIONS[3]}),
        ("viz/pages/qkv.py", "focus_key", 2, {"qkv_section": QKV_SECTIONS[1]}),
    ]
    for page, key, value, *setup in selections:
        for k, v in (setup[0] if setup else {}).items():
            app.session_state[k] = v
        app.switch_page(page).run()
        default = app.session_state[key]
        before = charts_and_names(app)
        app.session_state[key] = value
        app.run()
        assert not app.exception, (page, key, app.exception)
        assert_changed_figures_changed_names(before, charts_and_names(app), (page, key))
        app.session_state[key] = default
        app.run()
    app.switch_page("viz/pages/compare.py").run()
    for mode, key, value in COMPARE_MODES:
        app.session_state["cmp_mode"] = mode
        app.run()
        before = charts_and_names(app)
        app.session_state[key] = value
        app.run()
        assert not app.exception, (mode, key, app.exception)
        assert_changed_figures_changed_names(before, charts_and_names(app), (mode, key))


@pytest.mark.slow
def test_a_big_model_runs_the_extra_lesson_passes_on_request(app):
    """SmolLM2 (270 heads): why √d_k, heads specialise and ablation run the model again only once asked."""
    app.sidebar.selectbox(key="model_kind").set_value("smollm2").run()
    app.switch_page("viz/pages/lessons.py").run()
    for section, button, charts in (
        ("Why √d_k", "run_unscaled", 1),
        ("Heads specialise", "run_reinit", 3),  # kinds trained vs random init, the gallery, one metric's spread
        ("Ablation", "run_ablation", 1),
    ):
        app.session_state["lesson_section"] = section
        app.run()
        assert not [m for m in app.metric if "no scaling" in m.label], section
        app.button(key=button).click().run()
        assert not app.exception, (section, app.exception)
        assert len(app.get("plotly_chart")) == charts, section
        if section == "Why √d_k":
            assert [m for m in app.metric if m.label == "same weights, no scaling"]
        app.run()  # asked once for this text: it stays shown
        assert len(app.get("plotly_chart")) == charts, section


CLAIM_PAGES = [  # Start here's six claims: the page each opens and its title
    ("viz/pages/animate.py", "Step through a head"),
    ("viz/pages/lessons.py", "Lessons"),
    ("viz/pages/lessons.py", "Lessons"),
    ("viz/pages/positional.py", "Positional encodings"),
    ("viz/pages/block.py", "The block"),
    ("viz/pages/masks.py", "Masks"),
]


@pytest.mark.slow
@pytest.mark.parametrize("claim", range(6))
def test_each_of_the_posts_claims_is_one_click_from_start_here(claim):
    """Start here lists the post's six claims; each button sets the section that shows it and asks for its page
    (the switch itself is a browser's: tests/e2e/test_animate.py clicks one), which draws a figure with its
    computed caption."""
    from tests.app.conftest import new_app

    at = new_app()
    at.switch_page("viz/pages/start.py").run()
    at.button(key=f"start_claim_{claim}").click().run()
    assert not at.exception
    page, title = CLAIM_PAGES[claim]
    section = {1: ("lesson_section", "Why √d_k"), 2: ("lesson_section", "Heads specialise")}
    section[3] = ("pe_section", "Permutation lab")
    if claim in section:
        key, value = section[claim]
        assert at.session_state[key] == value
    at.switch_page(page).run()
    assert not at.exception and at.title[0].value == title
    assert at.get("plotly_chart"), title
    assert any(len(c.value) > 40 for c in at.caption)  # a computed caption under the figure


@pytest.mark.slow
def test_the_sink_lesson_opens_on_the_texts_strongest_sink_head(app):
    """Not on L0H0 (1 % on position 0 for SmolLM2): on the head the grid's caption names as the strongest; a
    head the user picks then stays picked, and the second panel follows it."""
    app.sidebar.text_area(key="text").set_value(EXAMPLES["Two sentences"]).run()
    app.switch_page("viz/pages/lessons.py").run()
    app.session_state["lesson_section"] = "Attention sinks"
    app.run()
    assert not app.exception
    named = re.search(r"the strongest: L(\d+)H(\d+)", " ".join(c.value for c in app.caption))
    chosen = (app.selectbox(key="sink_layer").value, app.selectbox(key="sink_head").value)
    assert chosen == (int(named[1]), int(named[2]))
    other = (chosen[1] + 1) % 4
    app.selectbox(key="sink_head").set_value(other).run()
    assert app.selectbox(key="sink_head").value == other
    assert any(f"Layer {chosen[0]}, head {other} with and without" in json.dumps(f) for f in figures(app))


def test_a_padded_batch_expected_to_take_long_waits_for_a_button_that_states_the_time(app, monkeypatch):
    """SmolLM2 at 512 tokens: the padded batch reruns the model on two rows of 512 (≈ 2.5 s), so the Masks page
    shows the causal mask at once and the batch after a click; then every layer follows without asking."""
    from model import experiments

    monkeypatch.setattr(experiments, "CPU_FLOPS", 1e6)  # this short text as slow as a long one
    app.sidebar.text_area(key="text").set_value("A text whose padded batch waits for a click.").run()
    app.switch_page("viz/pages/masks.py").run()
    assert not app.exception
    cfg, obs = app.session_state["_ctx"].loaded.model.cfg, app.session_state["_ctx"].obs
    assert len(app.get("plotly_chart")) == 2  # the causal mask and the change bars; no padded batch yet
    n_b = len(app.session_state["_ctx"].loaded.tokenizer.encode(app.text_input(key="pad_text_b").value).ids)
    estimate = experiments.forward_seconds(cfg, max(obs.n_tokens, n_b), 2)
    estimate += experiments.forward_seconds(cfg, min(obs.n_tokens, n_b))
    assert any(f"about {estimate:.1f} s" in i.value for i in app.info)
    app.button(key="pad_run").click().run()
    assert not app.exception and len(app.get("plotly_chart")) == 3
    app.session_state["layer"] = 1
    app.run()  # asked once for these texts: other layers come without asking again
    assert len(app.get("plotly_chart")) == 3 and "pad_run" not in {b.key for b in app.get("button")}
    app.text_input(key="pad_text_b").set_value("Another second text.").run()  # new texts: asked again
    assert len(app.get("plotly_chart")) == 2 and "pad_run" in {b.key for b in app.get("button")}


@pytest.mark.slow
def test_a_head_comparison_expected_to_take_long_waits_for_a_button_that_states_the_time(app, monkeypatch):
    """SmolLM2 at 512 tokens compares its 36,315 pairs of heads in ≈ 1.2 s more than the rest of Head metrics
    takes: past ASK_ABOVE_S the section states its estimate and waits; once compared, it is shown at once."""
    from model.analysis import similarity

    monkeypatch.setattr(similarity, "CELLS_PER_SECOND", 1_000)  # this short text as slow as a long one
    app.sidebar.text_area(key="text").set_value("A text no other test compares: the heads wait for a click.").run()
    app.switch_page("viz/pages/metrics.py").run()
    assert not app.exception
    assert len(app.get("plotly_chart")) == 1  # the gallery; no similarity yet
    obs = app.session_state["_ctx"].obs
    estimate = similarity.similarity_seconds(obs.n_layers * obs.n_heads, obs.n_tokens, obs.n_tokens, obs.causal)
    assert any(f"about {estimate:.1f} s" in i.value for i in app.info)
    app.button(key="metrics_compare").click().run()
    assert not app.exception and len(app.get("plotly_chart")) == 2
    app.switch_page("viz/pages/tokens.py").run()
    app.switch_page("viz/pages/metrics.py").run()  # compared already: no button
    assert len(app.get("plotly_chart")) == 2 and "metrics_compare" not in {b.key for b in app.get("button")}


@pytest.mark.slow
def test_context_mixing_of_a_long_text_waits_for_a_button_that_states_the_time(app):
    """MiniLM at 400 tokens: norm-based and ALTI take ≈ 3 s here, so the section says so and waits; the sinks
    section needs none of it; the button draws the panels and the choice is kept for the text."""
    from model.analysis.mixing import mixing_seconds

    app.sidebar.selectbox(key="model_kind").set_value("minilm").run()
    app.sidebar.text_area(key="text").set_value(" ".join(["the cat sat on the mat"] * 66)).run()
    app.switch_page("viz/pages/mixing.py").run()
    assert not app.exception
    assert not app.get("plotly_chart")
    estimate = mixing_seconds(app.session_state["_ctx"].loaded.model.cfg, app.session_state["_ctx"].obs.n_tokens, False)
    assert estimate > 2 and any(f"about {estimate:.0f} s" in i.value for i in app.info)
    app.session_state["mix_section"] = "Sinks and head types"
    app.run()
    assert len(app.get("plotly_chart")) == 2
    app.session_state["mix_section"] = "Context mixing"
    app.run()
    app.button(key="mix_run").click().run()
    assert not app.exception and len(app.get("plotly_chart")) == 2
    app.session_state["layer"] = 1
    app.run()  # asked once for this text: other layers come without asking again
    assert len(app.get("plotly_chart")) == 2


def test_the_permutation_lab_runs_with_the_mask_the_sidebar_chose(app):
    """The app's lab ran with the model's own mask whatever the sidebar chose (the CLI's with the sidebar's), so the
    bundled encoder with the causal mask switched on read "the causal mask alone tells the orders apart" beside a
    difference of 0.000."""
    app.session_state["causal_override"] = "on"
    app.switch_page("viz/pages/positional.py").run()
    app.session_state["pe_section"] = "Permutation lab"
    app.run()
    assert not app.exception, app.exception
    (said,) = [c.value.replace("\\", "") for c in app.caption if "the causal mask on" in c.value]  # unescaped
    gap = float(re.search(r"differs from the original by up to ([0-9.]+)", said).group(1))
    assert gap > 0.05, said


def test_beyond_the_weights_measures_the_run_with_the_mask_the_sidebar_chose(app):
    """The four measures ran on the model as built (no mask on the bundled encoder) while the caption counted the
    cells a causal query sees: with the mask forced on, no measure may give a later token anything."""
    from tests.app.test_post_checkpoint import matrix

    app.session_state["causal_override"] = "on"
    app.switch_page("viz/pages/mixing.py").run()
    assert not app.exception, app.exception
    four = figures(app)[0]
    assert four["layout"]["title"]["text"].startswith("Who reads from whom")
    for panel in four["data"][:4]:
        assert np.nanmax(np.triu(matrix(panel["z"]).astype(float), 1)) < 1e-6


def test_pages_that_run_the_model_as_built_say_so_when_the_attention_options_change_it(app):
    def said(page: str, **state) -> list[str]:
        for key, value in state.items():
            app.session_state[key] = value
        app.switch_page(page).run()
        assert not app.exception, app.exception
        return [i.value for i in app.info if "the model as built" in i.value]

    assert not said("viz/pages/causes.py")  # nothing changed: nothing to say
    (note,) = said("viz/pages/causes.py", causal_override="on")
    assert note.startswith("Every measure on this page runs the model as built") and "the causal mask on" in note
    assert not said("viz/pages/attention.py") and not said("viz/pages/mixing.py")  # those draw the changed run
    assert said("viz/pages/masks.py")[0].startswith("The padded batch runs the model as built")
    (note,) = said("viz/pages/causes.py", causal_override="off", scale_scores=False)
    assert "the causal mask" not in note and "scores not divided by √d_k" in note  # the bundled encoder has none
