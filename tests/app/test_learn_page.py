"""Watch it learn, headless: train in the background, see what formed, open the model on every page, cancel
without leaving anything behind, and one run shared by two sessions."""

from __future__ import annotations

import time

import pytest

from model.learn.loop import TrainSpec, train
from model.learn.store import write
from tests.app.conftest import figures, new_app
from viz.shell import training

PAGE = "viz/pages/learn.py"
SMALL = {"learn_layers": 1, "learn_heads": 2, "learn_d_model": 16, "learn_steps": 100}


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_RUNS", str(tmp_path))
    return tmp_path


def small_page():
    at = new_app()
    at.switch_page(PAGE).run()
    for key, value in SMALL.items():
        at.number_input(key=key).set_value(value)
    at.run()
    assert not at.exception, at.exception
    return at


def spec_of_small() -> TrainSpec:
    return TrainSpec(n_layers=1, n_heads=2, d_model=16, steps=100, lr=0.003, positional="rope")


def wait_for(job, timeout: float = 120.0) -> None:
    end = time.time() + timeout
    while job.running and time.time() < end:
        time.sleep(0.2)
    assert job.finished


@pytest.mark.slow  # a background run polled until done
def test_train_in_the_background_then_see_what_formed(runs):
    at = small_page()
    train_button = at.button(key="learn_train")
    assert "about" in train_button.label and not at.get("plotly_chart")
    train_button.click().run()
    job = training.job_of(spec_of_small())
    assert job is not None
    wait_for(job)
    at.run()
    assert not at.exception, at.exception
    assert [p.name for p in runs.iterdir()] == [f"{spec_of_small().key}.safetensors"]
    text = " ".join(m.value for m in at.markdown)
    assert "after 100 of 100 steps" in text
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert titles[0].startswith("Loss and each head") and "step 100" in titles[1]
    fresh = small_page()  # another session: the same spec shows the same run, no training
    assert "learn_train" not in {b.key for b in fresh.button}
    assert len(fresh.get("plotly_chart")) == len(at.get("plotly_chart"))


@pytest.mark.slow
def test_cancel_keeps_nothing(runs):
    at = small_page()
    at.number_input(key="learn_steps").set_value(20000).run()
    at.button(key="learn_train").click().run()
    spec = TrainSpec(n_layers=1, n_heads=2, d_model=16, steps=20000)
    job = training.job_of(spec)
    time.sleep(1.0)
    training.cancel(spec)
    wait_for(job, 30)
    assert job.cancelled and list(runs.iterdir()) == []
    at.run()
    assert not at.exception
    assert any("was cancelled" in i.value for i in at.info)


@pytest.mark.slow
def test_open_the_trained_model_on_the_attention_map(runs):
    run = train(spec_of_small())
    write(run, runs)
    at = small_page()
    at.button(key="learn_open").click().run()
    assert not at.exception, at.exception
    assert at.session_state["model_kind"] == "trained"
    assert at.session_state["trained_run"] == run.spec.key
    ctx = at.session_state["_ctx"]
    assert ctx.loaded.name.startswith("Trained here: induction, 1 layer × 2 heads")
    assert ctx.obs.tokens[0] == "[BOS]" and ctx.obs.n_tokens == 33


@pytest.mark.slow  # every page on the trained model
def test_every_page_works_on_a_trained_attention_only_model(runs):
    from tests.app.conftest import PAGES

    run = train(spec_of_small())
    write(run, runs)
    at = small_page()
    at.button(key="learn_open").click().run()
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
        assert not at.error, (page, [e.value for e in at.error])


@pytest.mark.slow
def test_an_encoder_decoder_run_shows_its_cross_attention(runs):
    at = small_page()
    at.selectbox(key="learn_task").set_value("dates").run()
    assert at.session_state["learn_positional"] == "sinusoidal"  # the task brings its usual model
    at.button(key="learn_train").click().run()
    spec = TrainSpec(task="dates", n_layers=1, n_heads=2, d_model=16, steps=100, positional="sinusoidal")
    wait_for(training.job_of(spec))
    at.run()
    assert not at.exception, at.exception
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert titles[1].startswith("Every cross-attention head") and " cross-attention at step " in titles[2]
    assert "alignment" in " ".join(m.value for m in at.markdown)
    at.button(key="learn_open").click().run()  # its decoder, on the probe's date, on the attention map
    assert not at.exception, at.exception
    assert at.session_state["trained_stack"] == "decoder"
    source = at.session_state["trained_source"]
    assert len(source) == 9 and source[2:5].isalpha()  # 07mar1994
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert any("cross-attention, target on source" in t for t in titles), titles
    assert "Every head's cross-attention" in titles
    assert any("Strongest per row" in c.value for c in at.caption)
    at.button(key="attn_cross__deck").click().run()  # a slide says which source its cross-attention read
    assert at.session_state["deck"][-1]["provenance"]["options"]["source the encoder read"] == source
    at.switch_page("viz/pages/overview.py").run()
    assert "Every head's cross-attention" in [f["layout"]["title"]["text"] for f in figures(at)]


@pytest.mark.slow  # every page on both stacks of an encoder–decoder
def test_every_page_works_on_either_stack_of_an_encoder_decoder(runs):
    from tests.app.conftest import PAGES

    spec = TrainSpec(task="dates", n_layers=1, n_heads=2, d_model=16, steps=30, positional="sinusoidal")
    write(train(spec), runs)
    at = new_app()
    at.session_state["model_kind"], at.session_state["trained_run"] = "trained", spec.key
    at.session_state["text"] = "1994-03-07"
    at.session_state["trained_source"] = "07mar1994"
    at.run()
    assert at.session_state["_ctx"].loaded.info["source_tokens"] == ["[BOS]", *"07mar1994"]
    stacks = (("decoder", "1994-03-07"), ("encoder", "07mar1994"), ("decoder", "1994-03-07"))
    for i, (stack, text) in enumerate(stacks):
        at.radio(key="trained_stack").set_value(stack).run()  # the text follows: the encoder reads the source
        assert at.session_state["text"] == text and at.session_state["trained_source"] == "07mar1994"
        ctx = at.session_state["_ctx"]
        assert ctx.obs.causal == (stack == "decoder") and (ctx.obs.cross is not None) == (stack == "decoder")
        for page in PAGES if i < 2 else ():
            at.switch_page(page).run()
            assert not at.exception, (stack, page, at.exception)
            assert not at.error, (stack, page, [e.value for e in at.error])


@pytest.mark.slow
def test_a_learning_figure_goes_to_the_deck_with_its_run_as_source(runs):
    run = train(spec_of_small())
    write(run, runs)
    at = small_page()
    at.button(key="learn_curves_fig__deck").click().run()
    assert not at.exception, at.exception
    (item,) = at.session_state["deck"]
    assert item["title"] == "Loss and each head's score as it trains"
    assert item["provenance"]["model"].startswith("trained on Watch it learn: induction, 1 layer × 2 heads")
    assert item["provenance"]["selection"]["run"] == run.spec.key and item["provenance"]["text"] == ""
    at.switch_page("viz/pages/deck.py").run()
    assert not at.exception, at.exception


@pytest.mark.slow
def test_a_training_run_is_rewritten_for_other_replicas_as_it_goes(runs, monkeypatch):
    from model.learn.store import from_bytes

    monkeypatch.setattr(training, "LIVE_EVERY", 0.0)
    monkeypatch.setattr(training, "LIVE_SHARE", float("inf"))  # no pause after a rewrite: one for every snapshot
    spec = spec_of_small()
    seen: list[int] = []
    original = training.Shown.update

    def update(self) -> None:  # what another replica reads after each rewrite
        original(self)
        path = runs / f"{spec.key}.live.safetensors"
        if path.is_file():
            seen.append(len(from_bytes(path.read_bytes()).losses))

    monkeypatch.setattr(training.Shown, "update", update)
    wait_for(training.start_training(spec))
    # rewritten as it went: at each new snapshot (steps 0, 40, 80 and 100), read after steps 1, 40, 80 and 100
    assert sorted(seen) == seen and sorted(set(seen)) == [1, 40, 80, 100], sorted(set(seen))
    assert sorted(p.name for p in runs.iterdir()) == [f"{spec.key}.safetensors"]  # the live file is gone


@pytest.mark.slow
def test_a_run_training_on_another_replica_is_watched_not_trained_again(runs):
    import os

    from model.learn.loop import start
    from model.learn.store import to_bytes
    from model.long import Cancelled

    spec = spec_of_small()
    run = start(spec)  # another replica's run, stopped here at step 40 of 100
    with pytest.raises(Cancelled):
        train(spec, run=run, cancel=lambda: len(run.losses) >= 40)
    live = runs / f"{spec.key}.live.safetensors"
    live.write_bytes(to_bytes(run))
    at = small_page()
    assert not at.exception, at.exception
    assert "learn_train" not in {b.key for b in at.button}
    assert "Training on another replica of this server: step 40 of 100" in str(at.get("progress")[0].proto)
    assert figures(at)[0]["layout"]["title"]["text"].startswith("Loss and each head")
    os.utime(live, (1, 1))  # its server stopped long ago: the run can be trained here
    at.run()
    assert "learn_train" in {b.key for b in at.button}
