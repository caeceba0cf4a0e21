"""Decoder views: every caption states what its figure draws (sinks, induction, generation, predictions, GQA)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from model.analysis.decoder import SINK_THRESHOLD, group_distances, sink_mass
from model.io.catalog import ModelSpec
from tests.security.gguf_files import write_tiny_gguf
from viz.figures import Theme
from viz.figures.text import pct
from viz.views import ViewUnavailableError, build
from viz.views.source import DirectSource


@pytest.fixture(scope="module")
def encoder():
    return DirectSource.for_text(ModelSpec("bundled"), "The cat sat on the mat because it was tired.")


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    path = write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")
    return DirectSource.for_text(ModelSpec("folder", path=str(path)), "the then the then there the")


def numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"\d+(?:\.\d+)?", text)]


def test_sink_grid_and_caption_agree(encoder):
    grid, head = build("lesson.sinks", encoder, Theme(), layer=1, head=0)
    z = np.array(grid.figure.data[0].z, dtype=float)
    np.testing.assert_allclose(z, sink_mass(encoder.obs.patterns), atol=1e-6)
    count = int((z >= SINK_THRESHOLD).sum())  # at least the threshold, as the dots and the sinks section count
    assert grid.caption.startswith(f"{count} of {z.size} heads put at least 50%")
    best = np.unravel_index(z.argmax(), z.shape)
    assert f"L{best[0]}H{best[1]} ({z[best]:.2f})" in grid.caption
    right = np.array(head.figure.data[1].z, dtype=float)
    rows = right.sum(-1)
    assert np.all((np.abs(rows - 1) < 1e-5) | (rows == 0)) and np.all(right[:, 0] == 0)  # renormalised, no sink
    assert f"{pct(z[1, 0])}" in head.caption


def test_induction_caption_names_the_strongest_heads(encoder):
    grid, top = build("lesson.induction", encoder, Theme(), period=10, seed=1)
    z = np.array(grid.figure.data[0].z, dtype=float)
    order = np.argsort(-z, axis=None, kind="stable")[:3]
    for i in order:
        lay, hd = divmod(int(i), z.shape[1])
        assert f"L{lay}H{hd} ({z[lay, hd]:.2f})" in grid.caption
    assert f"{int((z >= 0.4).sum())} of {z.size} heads" in grid.caption
    labels = list(top.figure.layout.xaxis.ticktext)
    assert labels[0].startswith(f"L{order[0] // z.shape[1]}H{order[0] % z.shape[1]}")  # thumbnails, strongest first


def test_predictions_bars_and_caption(decoder):
    (view,) = build("next.predictions", decoder, Theme(), position=-1, temperature=0.7)
    bars = view.figure.data[0]
    probs = list(bars.x)
    assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-6
    assert f"“{bars.y[0].split('·')[0]}" in view.caption or bars.y[0] in view.caption
    assert f"{pct(probs[0])}" in view.caption and f"{pct(sum(probs))} of the probability" in view.caption


def test_generation_map_rows_are_the_cached_steps(decoder):
    (view,) = build("next.generation", decoder, Theme(), n_new=5, temperature=0.0, seed=0, layer=1, head=3)
    z = np.array(view.figure.data[0].z, dtype=float)
    prompt = decoder.obs.n_tokens
    assert z.shape == (5, prompt + 4)
    for i, row in enumerate(z):  # step i sees the prompt and the i tokens generated before it
        seen = row[~np.isnan(row)]
        assert len(seen) == prompt + i and abs(seen.sum() - 1) < 1e-5
    steps = decoder.generation(5, 0.0, 0)
    text = "".join(decoder.loaded.tokenizer.id_to_token(s.token) for s in steps)
    assert f"“{text}”" in view.caption
    last = steps[-1].rows[1, 3]
    assert f"{pct(last.max())} of its weight" in view.caption


@pytest.mark.parametrize("which", ["encoder", "decoder"])
def test_the_sink_lesson_and_the_sinks_section_give_position_0_the_same_number(which, request):
    """One definition of a head's share on position 0: the queries that can see it, itself aside (the lesson
    counted 23 of MiniLM's heads and the sinks section 25: one left out [CLS]'s own row and compared with >)."""
    from model.analysis.sinks import sink_shares

    src = request.getfixturevalue(which)
    obs = src.obs
    shares = sink_shares(obs.patterns, obs.tokens, obs.special, obs.causal)["position 0"]
    np.testing.assert_allclose(sink_mass(obs.patterns), shares, atol=1e-6)


def test_gqa_view_and_caption(decoder):
    group, layers = build("lesson.gqa", decoder, Theme(), layer=1, kv=1)
    assert [a.text for a in group.figure.layout.annotations][:2] == ["query head 2", "query head 3"]
    within, across = group_distances(decoder.obs.patterns, 2)
    assert f"{within[1]:.2f}" in group.caption and f"{across[1]:.2f}" in group.caption
    assert f"In {int((within < across).sum())} of 2 layers" in layers.caption


def test_gqa_caption_never_compares_two_equal_looking_numbers():
    """Means equal to four decimals read "0.0107 in both", never "0.01 vs 0.01" (the gpt-oss fixture)."""
    from tests.hf_fixtures import FIXTURES

    src = DirectSource.for_text(
        ModelSpec("folder", path=str(FIXTURES / "gpt_oss")),
        "The cat sat on the mat because it was tired, and the dog sat on the rug.",
    )
    _, layers = build("lesson.gqa", src, Theme())
    within, across = group_distances(src.obs.patterns, 2)
    assert f"{np.nanmean(within):.4f}" == f"{np.nanmean(across):.4f}"  # the case this is about
    assert f"(mean distance {np.nanmean(within):.3g} in both)" in layers.caption
    assert not re.search(r"(\d\.\d+) vs \1\b", layers.caption)


def test_decoder_views_explain_themselves_on_an_encoder(encoder):
    for key in ("next.predictions", "next.generation", "lesson.gqa"):
        with pytest.raises(ViewUnavailableError, match="SmolLM2"):
            build(key, encoder, Theme())


def test_what_the_mask_removes(decoder):
    (view,) = build("masks.causal", decoder, Theme(), layer=0, head=1)
    assert "removes" in view.figure.layout.title.text
    panels = [t for t in view.figure.data if t.name != "masked"]  # the blocked cells' grey overlay aside
    lifted = np.array(panels[1].z, dtype=float)
    masked = next(t for t in view.figure.data if t.name == "masked")
    assert np.nansum(np.array(masked.z, dtype=float)) == np.triu(np.ones(lifted.shape), 1).sum()  # as built: causal
    future = np.triu(np.nan_to_num(lifted), 1).sum(-1)
    assert f"{pct(future[:-1].mean())} of its weight on later tokens" in view.caption
