"""Pure figure builders: numpy arrays + token labels -> plotly Figure. No streamlit, no torch.

theme       Theme: colours and font sizes (presentation scales them together)
text        token labels (escaped, unique, with positions), thinned ticks, titles that fit
common      validation, styling with margins that fit the labels, export sizes and modebar options
heatmaps    one matrix: attention weights/scores, differences, any labelled matrix, head distances
grids       several matrices in one figure: every head of a layer, weights beside contributions
headview    BertViz-style lines from query tokens to key tokens
overview    every layer × head as a thumbnail; chosen heads' thumbnails in a row
query       one query's weights term by term; queries and keys in one PCA plane
positional  positional-encoding tables, curves and similarity
charts      bars and lines: per-token changes, predictions, metric spreads, the √d_k curves
"""

from viz.figures.charts import change_bars, metric_spread, prediction_bars, scaling_figure
from viz.figures.common import Theme, plotly_config
from viz.figures.grids import heads_grid, heatmap_panels, weights_vs_contributions
from viz.figures.headview import head_view
from viz.figures.heatmaps import attention_heatmap, difference_heatmap, matrix_heatmap, similarity_matrix
from viz.figures.overview import model_overview, ranked_heads
from viz.figures.positional import encoding_curves, encoding_heatmap, position_similarity
from viz.figures.query import qk_scatter, query_explained

__all__ = [
    "Theme",
    "attention_heatmap",
    "change_bars",
    "difference_heatmap",
    "encoding_curves",
    "encoding_heatmap",
    "head_view",
    "heads_grid",
    "heatmap_panels",
    "matrix_heatmap",
    "metric_spread",
    "model_overview",
    "plotly_config",
    "position_similarity",
    "prediction_bars",
    "qk_scatter",
    "query_explained",
    "ranked_heads",
    "scaling_figure",
    "similarity_matrix",
    "weights_vs_contributions",
]
