"""Every view of the app, built in one place: ``build(key, source, theme, **selection) -> [View]``.

base        the registry, View, Source, export names
source      DirectSource: a Source that runs everything directly (CLI, benchmark, tests)
attention   attention map, all heads, mean, overview, head similarity
compare     two maps side by side and their difference: heads, texts, models
headview    the head view's static figure (the focus token's lines stand out)
kinds       the gallery of specialised heads; trained vs random init
find        heads ranked by their weight on chosen (query, key) pairs
inside      Q/K/V step by step, one query, the Q/K plane, value norms, rollout and flow
masks       the causal mask switched on or lifted, a padded batch
lessons     positional encodings, the permutation lab, the lessons page
relative    position inside the scores: DeBERTa's score split, T5's and MPNet's relative bias
decoder     next-token predictions, generation, attention sinks, induction heads, grouped K/V heads
cross       an encoder–decoder's cross-attention: one head, every head
corpus      a corpus profile: every head on two metrics, a metric's spread per head, a head's top documents
animate     one head step by step, frame by frame (the page plays them, the export renders them)
block       the block drawn from the config, the residual stream, pre- or post-norm
mixing      beyond weights: norm-based, ALTI, value zeroing, rollout per layer, gradients
sinks       where heads park their weight, and every head's type (over the whole of a long text)
captions    the sentences under figures, computed from the numbers drawn
head_captions  the same for heads: their spread, ablation, Find heads' ranking, a prediction check
finite      heads with NaN or Inf weights: not computable, with the reason
causes      which parts cause the answer: logit lens, direct logit attribution
circuits    a head's QK/OV circuit card through the effective or direct embedding, and how far to trust it
composition which earlier heads a head reads through its queries, keys or values (Elhage et al.)
patching    activation patching: which clean activations bring the answer back into a corrupted run
paths       attribution patching (the one-pass estimate, against real patching) and path patching
needle      needle in a haystack: retrieval heads over lengths × depths, sinks as the length grows
long        a text read whole: block means, windows, every head, the overview
"""

from viz.views import (  # noqa: F401
    animate,
    attention,
    block,
    causes,
    circuits,
    compare,
    composition,
    corpus,
    cross,
    decoder,
    find,
    headview,
    inside,
    kinds,
    lessons,
    masks,
    mixing,
    needle,
    patching,
    paths,
    relative,
    sinks,
)
from viz.views.base import REGISTRY, Source, View, ViewUnavailableError, build, page_views

__all__ = ["REGISTRY", "Source", "View", "ViewUnavailableError", "build", "page_views"]
