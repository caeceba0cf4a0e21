"""One definition per metric: two pages that show the same metric show the same number for the same head."""

from __future__ import annotations

import json

import pytest

from tests.app.conftest import new_app

TEXT = "The animal didn't cross the street because it was too tired."


def table_with(at, column: str):
    return next(df.value for df in at.dataframe if column in df.value.columns)


@pytest.mark.slow
def test_head_metrics_find_heads_and_the_gallery_agree_on_previous_and_next():
    at = new_app()
    at.sidebar.text_area(key="text").set_value(TEXT).run()
    at.switch_page("viz/pages/metrics.py").run()
    assert not at.exception
    metrics = table_with(at, "previous").set_index(["layer", "head"])
    gallery = json.loads(at.get("plotly_chart")[0].proto.spec)
    labels = [a["text"] for a in gallery["layout"]["annotations"]]
    rows = gallery["layout"]["yaxis"]["ticktext"]
    for relation in ("previous", "next"):
        at.switch_page("viz/pages/find.py").run()
        at.radio(key="find_relation").set_value(relation).run()
        assert not at.exception
        found = table_with(at, "weight on the pairs")
        assert any(f"Head metrics' “{relation}”" in c.value for c in at.caption)
        for head, weight in zip(found["head"], found["weight on the pairs"]):
            layer, h = (int(x) for x in head[1:].split("H"))
            assert abs(weight - metrics.loc[(layer, h), relation]) < 1e-6, (relation, head)
        kind = f"{relation} token"
        if any(r.startswith(kind) for r in rows):  # the gallery's thumbnails carry the same score
            shown = [lab for lab in labels if "·" in lab]
            best = found["head"][0]
            label = next(lab for lab in shown if lab.startswith(best + " "))
            assert label == f"{best} · {found['weight on the pairs'][0]:.2f}"


@pytest.mark.slow
def test_head_metrics_offer_clark_et_als_definitions_beside_the_labs():
    """The same page, the same heads, Clark et al.'s numbers (as their code computes them) on choice."""
    import numpy as np

    from model.analysis.clark import CLARK_METRICS, clark_metrics

    at = new_app()
    at.sidebar.text_area(key="text").set_value(TEXT).run()
    at.switch_page("viz/pages/metrics.py").run()
    lab = table_with(at, "previous").set_index(["layer", "head"])
    at.radio(key="metrics_definitions").set_value("Clark et al. 2019 (as their code computes)").run()
    assert not at.exception
    theirs = table_with(at, "entropy_cls").set_index(["layer", "head"])
    assert set(CLARK_METRICS) <= set(theirs.columns) and len(theirs) == len(lab)
    obs = at.session_state["_ctx"].obs
    expected = clark_metrics([(list(obs.tokens), obs.patterns)])
    assert np.allclose(theirs["self"].to_numpy(), expected["self"].ravel(), atol=1e-6)
    assert (theirs["self"] - lab["self"]).abs().max() > 0.01  # the definitions differ, and the page says how
    assert any("As their General_Analysis notebook computes them" in c.value for c in at.caption)
