"""Maths on captured arrays (numpy in, numpy out), one module per family; nothing here runs a model.

metrics     per-head summary statistics (entropy, distance, mass on self/previous/next/special, ...)
similarity  how alike two heads attend (Jensen–Shannon distance) and a clustering order for display
flow        attention rollout and attention flow across layers (Abnar & Zuidema, 2020)
norms       norm-based measures: value contributions (Kobayashi et al., 2020), relative change of outputs
steps       one head's computation step by step, and one query's weights term by term
projection  PCA of points to a 2-D plane
scaling     the √d_k demonstration on random vectors
"""
