"""The Causes page: the logit lens, direct logit attribution, activation patching and circuit cards, on the bundled
encoder, a tiny decoder, and (slow) SmolLM2 on the indirect-object prompt, where the known heads must come out."""

from __future__ import annotations

import re

import pytest

from tests.app.conftest import figures, new_app
from tests.security.gguf_files import write_tiny_gguf

PAGE = "viz/pages/causes.py"


def captions(at) -> str:
    return " ".join(c.value for c in at.caption).replace("\\", "")


def titles(at) -> list[str]:
    return [f["layout"]["title"]["text"] for f in figures(at)]


@pytest.mark.slow
def test_an_encoder_reads_its_answer_at_the_mask_and_patches_a_template():
    at = new_app()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert any("Put [MASK] where the answer goes" in i.value for i in at.info)
    at.sidebar.text_area(key="text").set_value("The cat sat on the [MASK].").run()
    grid, rank = titles(at)
    assert grid.startswith("Logit lens: the likeliest token at each position") and rank.startswith("Rank of")
    assert re.search(r"At position 6 \(“\[MASK\]”\) the output is “\w+”", captions(at))
    at.segmented_control(key="causes_section").set_value("Attribution").run()
    assert any("needs a linear unembedding" in i.value for i in at.info) and not figures(at)
    at.segmented_control(key="causes_section").set_value("Patching").run()
    assert any("Type a corrupted prompt" in i.value for i in at.info)
    at.button(key="causes_template").click().run()
    assert not at.exception, at.exception
    assert at.sidebar.text_area(key="text").value.endswith("gave a drink to [MASK].")
    assert "they differ at position" in captions(at)
    assert "causes_run" not in [b.key for b in at.button]  # a tiny model's sweep runs at once
    assert titles(at)[:2] == [
        "Patching each head's output (at every position)",
        "Patching the residual stream entering each layer",
    ]
    assert "“mary” − “john”" in captions(at)
    at.radio(key="causes_method").set_value("attribution patching (estimate)").run()
    assert not at.exception, at.exception
    assert titles(at)[:4] == [
        "Attribution patching: each head's output (at every position)",
        "The estimate against real patching, cell by cell",
        "Attribution patching: the residual stream entering each layer",
        "The estimate against real patching, cell by cell",
    ]
    assert re.search(
        r"Pearson's r = -?\d\.\d\d over 24 cells: here the estimate is a (good|rough|poor) guide", captions(at)
    )
    at.radio(key="causes_method").set_value("path patching").run()
    assert not at.exception, at.exception
    assert titles(at) == ["Path patching: each head straight to the logits"]
    assert "straight to the logits" in captions(at)
    at.radio(key="causes_receivers").set_value("queries").run()
    assert any("Name the receiver heads" in i.value for i in at.info)
    at.text_input(key="causes_receiver_heads").set_value("L1H0, L1H9").run()
    assert any("L1H9 is not in this model" in i.value for i in at.info)
    at.text_input(key="causes_receiver_heads").set_value("L1H0, L1H3").run()
    assert "only through the queries of L1H0, L1H3" in captions(at) and not at.exception
    at.radio(key="causes_method").set_value("activation patching").run()
    at.radio(key="causes_score").set_value("probability").run()
    assert not at.exception and re.search(r"\(probability “mary”: clean 0\.\d+, corrupted 0\.\d+\)", captions(at))
    at.segmented_control(key="causes_section").set_value("Circuits").run()
    assert titles(at) == ["Layer 0, head 0: its QK and OV circuits"] and "copying score is" in captions(at)
    assert any("A head of layer 0 reads only the embeddings" in i.value for i in at.info)
    at.selectbox(key="layer").set_value(2).run()
    assert titles(at)[1] == "What L2H0 reads through its keys: K-composition with each earlier head"
    assert re.search(
        r"The typical earlier head \(the median of the 12\) scores 0\.\d\d\. Strongest: L\dH\d", captions(at)
    )
    at.radio(key="causes_composition").set_value("V").run()
    assert not at.exception and titles(at)[1].startswith("What L2H0 reads through its values")


@pytest.mark.slow
def test_a_decoder_gets_every_section_and_the_attention_map_opens_a_heads_circuits(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_MODEL_DIRS", str(tmp_path))
    at = new_app()
    at.sidebar.selectbox(key="model_kind").set_value("folder").run()
    at.sidebar.text_input(key="folder_path").set_value(str(write_tiny_gguf(tmp_path / "tiny.gguf"))).run()
    at.sidebar.text_area(key="text").set_value("the then the then the").run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert "Logit lens: the likeliest next token after each position" in titles(at)[0]
    at.segmented_control(key="causes_section").set_value("Attribution").run()
    (title,) = titles(at)
    assert title.startswith("Direct logit attribution: who writes")
    said = captions(at)
    logit, total = (float(x) for x in re.search(r"at position \d+ is (-?[\d.]+);.* sum to (-?[\d.]+),", said).groups())
    assert logit == pytest.approx(total, abs=0.011)  # the parts add up to the logit (two decimals shown)
    at.segmented_control(key="causes_section").set_value("Patching").run()
    at.text_input(key="causes_corrupted").set_value("the then the the then").run()  # 8 tokens too
    assert "8 tokens each; they differ at position 6: “n” → “the”, 7: “the” → “n”" in captions(at)
    assert titles(at)[0] == "Patching each head's output (at every position)"
    at.text_input(key="causes_corrupted").set_value("the then the").run()
    assert any("must have the same length" in i.value for i in at.info)
    at.switch_page("viz/pages/attention.py").run()
    at.button(key="attn_circuits").click().run()
    assert not at.exception
    assert at.session_state["causes_section"] == "Circuits"


@pytest.mark.slow
def test_smollm2_on_the_indirect_object_prompt_finds_the_name_mover_heads():
    """The issue's known answer: on SmolLM2 and IOI, patching finds heads of the last layers, the logit lens
    shows where “ Mary” appears, and direct logit attribution ranks the same heads."""
    at = new_app()
    at.sidebar.selectbox(key="model_kind").set_value("smollm2").run()
    at.switch_page(PAGE).run()
    at.segmented_control(key="causes_section").set_value("Patching").run()
    at.button(key="causes_template").click().run()
    assert any("about" in i.value and "s here" in i.value for i in at.info)  # a sweep this size waits for its button
    at.button(key="causes_run").click().run(timeout=600)
    assert not at.exception, at.exception
    said = captions(at)
    assert "clean 6.12, corrupted -5.49" in said
    assert re.search(r"Alone, these bring the most back: L23H3 \(\+0\.5\d\), L29H1", said)
    assert re.search(r"layers 0–\d+: “John\*” .*layers \d+–29: “to·13”", said)  # the name moves to the end
    at.radio(key="causes_method").set_value("attribution patching (estimate)").run()
    said = captions(at)  # the estimate names the same name mover, and says how close it comes to real patching
    assert re.search(r"Alone, these bring the most back: L23H3 \(\+0\.\d\d\)", said)
    r = float(re.search(r"Pearson's r = (-?[\d.]+) over 270 cells", said).group(1))
    assert r > 0.8
    at.radio(key="causes_method").set_value("path patching").run()
    if any(b.key == "causes_run_paths" for b in at.button):
        at.button(key="causes_run_paths").click().run(timeout=600)
    said = captions(at)  # its direct path to the logits: most of L23H3's effect, a quarter of L29H1's
    assert re.search(r"Alone, these bring the most back: L23H3 \(\+0\.6\d\), L29H1 \(\+0\.2\d\)", said)
    at.segmented_control(key="causes_section").set_value("Attribution").run()
    said = captions(at)
    assert "The logit difference “Mary” − “John” at position 13 is 6.12" in said
    assert "Heads for it: L23H3 (+2.86), L29H1 (+1.73)" in said  # the same heads as patching
    at.segmented_control(key="causes_section").set_value("Circuits").run()
    at.selectbox(key="layer").set_value(23).run()
    at.selectbox(key="head").set_value(3).run()
    said = captions(at)  # the name mover's card through the effective embedding, and why not to trust it here
    assert "Through the effective embedding (each token read alone through block 0" in said
    assert "The text token “John” raises the vocabulary token “[0x95]” most" in said and "raw bytes" in said
    assert re.search(r"mean cosine of 0\.\d\d: after 23 layers .* the card is a poor guide", said)
    at.radio(key="causes_embedding").set_value("direct").run()
    assert "Through the token embedding itself" in captions(at) and not at.exception
    at.selectbox(key="layer").set_value(17).run()
    at.selectbox(key="head").set_value(4).run()
    said = captions(at)  # the induction head's keys read the previous-token head before it
    assert re.search(r"Strongest: L16H0 \(0\.16, 3\.\d× typical\)", said)
    assert "L17H4 puts 0.80 of its weight where an induction head looks" in said and "L16H0 0.90" in said
    at.segmented_control(key="causes_section").set_value("Logit lens").run()
    said = captions(at)
    assert "the output is “Mary” (92%)" in said and "“Mary” ranks 1,868 after the embeddings" in said


def test_a_sweep_of_more_kinds_runs_only_the_kinds_nobody_ran(monkeypatch):
    """Issue 49: "heads and residual stream" after "heads" runs the residual stream only (the heads' sweep is kept,
    for every user), and the whole is what one sweep over both kinds computes."""
    from model.analysis.patching import Metric, activation_patching
    from model.io.catalog import ModelSpec, load
    from viz.shell import research as services

    spec = ModelSpec("bundled")
    loaded = load(spec)
    tok = loaded.tokenizer
    clean = tuple(tok.encode("The cat sat on the mat because the cat was [MASK].").ids)
    corrupted = tuple(tok.encode("The dog sat on the mat because the dog was [MASK].").ids)
    mask = clean.index(tok.token_id("[MASK]"))
    metric = Metric(tok.token_id("tired"), tok.token_id("happy"), position=mask)
    ran: list[tuple] = []

    def counted(model, a, b, m, kinds, progress=None):
        ran.append(tuple(kinds))
        return activation_patching(model, a, b, m, kinds, progress)

    monkeypatch.setattr(services, "activation_patching", counted)
    args = (spec, "cpu", clean, corrupted, metric)
    heads = services.get_patching(*args, ("z",), loaded.model)
    assert services.patching_todo(*args, ("z", "resid_pre"), loaded.model) == ("resid_pre",)
    both = services.get_patching(*args, ("z", "resid_pre"), loaded.model)
    assert ran == [("z",), ("resid_pre",)]  # the heads' sweep ran once
    assert services.patching_todo(*args, ("z", "resid_pre"), loaded.model) == ()
    assert (both.raw["z"] == heads.raw["z"]).all() and both.clean == heads.clean
    whole = activation_patching(loaded.model, list(clean), list(corrupted), metric, ("z", "resid_pre"))
    assert abs(whole.raw["resid_pre"] - both.raw["resid_pre"]).max() < 1e-4
