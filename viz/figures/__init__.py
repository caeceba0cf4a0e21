"""Pure figure builders: numpy arrays + token labels -> plotly Figure. No streamlit, no torch."""

from viz.figures.common import Theme, plotly_config
from viz.figures.headview import head_view
from viz.figures.heatmaps import attention_heatmap, difference_heatmap, heads_grid
from viz.figures.metrics import metric_spread, similarity_matrix
from viz.figures.overview import model_overview

__all__ = [
    "Theme",
    "attention_heatmap",
    "difference_heatmap",
    "head_view",
    "heads_grid",
    "metric_spread",
    "model_overview",
    "plotly_config",
    "similarity_matrix",
]
