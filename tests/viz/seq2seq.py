"""The decoder of a small encoder–decoder trained on dates, reading a source: where the cross-attention views are
built and laid out (the other models have no cross-attention)."""

from __future__ import annotations

from functools import cache

from model.io.catalog import ModelSpec
from viz.views.source import DirectSource

CROSS_VIEWS = {"cross", "cross_overview", "cross_metrics"}  # only an encoder–decoder's decoder has cross-attention
#: position inside the scores, drawn on the tiny fixtures of the families that have it
RELATIVE_VIEWS = {"pe.split": "deberta-v2", "pe.bias": "mpnet"}


@cache
def decoder_source(source: str = "07mar1994", target: str = "1994-03-07") -> DirectSource:
    from model.learn.loop import TrainSpec, train
    from model.learn.store import loaded_model
    from model.observe import observe

    spec = TrainSpec(task="dates", n_layers=2, n_heads=4, d_model=32, steps=5, snapshot_every=5, batch=4)
    loaded = loaded_model(train(spec), "decoder", source)
    obs = observe(loaded.model, loaded.tokenizer, target)
    return DirectSource(ModelSpec("trained", path=spec.key, source_text=source), loaded, obs)
