"""Head metrics figures: the similarity matrix and metric spreads."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.figures.common import Theme, as_array, style


def cluster_order(distance: np.ndarray) -> np.ndarray:
    """Leaf order of average-linkage clustering (optimal ordering): similar heads end up adjacent."""
    from scipy.cluster.hierarchy import leaves_list, linkage
    from scipy.spatial.distance import squareform

    d = as_array("distance", distance, 2).astype(np.float64)
    if d.shape[0] < 3:
        return np.arange(d.shape[0])
    d = 0.5 * (d + d.T)
    np.fill_diagonal(d, 0.0)
    return leaves_list(linkage(squareform(d, checks=False), method="average", optimal_ordering=True))


def similarity_matrix(
    distance, labels, *, title: str | None = None, theme: Theme | None = None, order: bool = True
) -> go.Figure:
    """Jensen–Shannon distances between heads, ordered by clustering. distance: (K, K)."""
    d = as_array("distance", distance, 2)
    labels = [str(x) for x in labels]
    if d.shape != (len(labels), len(labels)):
        raise ValueError(f"distance {d.shape} does not match {len(labels)} labels")
    idx = cluster_order(d) if order else np.arange(len(labels))
    ordered = [labels[i] for i in idx]
    theme = theme or Theme()
    fig = go.Figure(
        go.Heatmap(
            z=d[np.ix_(idx, idx)],
            x=ordered,
            y=ordered,
            colorscale=theme.colorscale + "_r",
            zmin=0,
            hovertemplate="%{y} vs %{x}<br>JS distance: %{z:.3f}<extra></extra>",
            colorbar={"title": {"text": "JS distance"}},
        )
    )
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", tickangle=-60)
    style(fig, theme, title=title, height=max(420, 14 * len(labels) + 160))
    return fig


def metric_spread(
    values: dict[str, np.ndarray], metric: str, *, title: str | None = None, theme: Theme | None = None
) -> go.Figure:
    """One strip per model: each dot a head's value of ``metric``. values: {model name: (K,)}."""
    theme = theme or Theme()
    fig = go.Figure()
    for name, v in values.items():
        v = np.asarray(v, dtype=float).ravel()
        fig.add_trace(
            go.Box(
                y=v,
                name=name,
                boxpoints="all",
                jitter=0.4,
                pointpos=0,
                marker={"size": 7 * theme.line_scale},
                hovertemplate=f"{name}<br>{metric}: %{{y:.3f}}<extra></extra>",
            )
        )
    fig.update_yaxes(title_text=metric)
    style(fig, theme, title=title, height=420)
    return fig
