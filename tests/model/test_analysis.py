import math

import numpy as np
import pytest
import torch

from model.analysis import diagonal_mass, head_metrics, js_distance_matrix


def previous_token(n):
    p = torch.zeros(n, n)
    p[0, 0] = 1.0
    for i in range(1, n):
        p[i, i - 1] = 1.0
    return p


def test_pure_previous_token_pattern():
    n = 10
    m = head_metrics(previous_token(n)[None], query_mask=torch.arange(n) > 0)
    assert m["previous"].item() == pytest.approx(1.0)
    assert m["entropy"].item() == pytest.approx(0.0, abs=1e-6)
    assert m["next"].item() == 0 and m["self"].item() == 0
    assert m["mean_distance"].item() == pytest.approx(1.0)
    assert m["max_weight"].item() == pytest.approx(1.0)


def test_uniform_pattern_metrics():
    n = 8
    p = torch.full((1, 2, n, n), 1 / n)
    special = torch.zeros(n, dtype=torch.bool)
    special[[0, -1]] = True
    m = head_metrics(p, special=special)
    assert m["entropy"].shape == (1, 2)
    assert m["entropy"][0, 0].item() == pytest.approx(math.log(n), rel=1e-5)
    assert m["special"][0, 0].item() == pytest.approx(2 / n)
    assert m["self"][0, 1].item() == pytest.approx(1 / n)
    # mean |i - j| over a uniform n x n grid: (n^2 - 1) / (3n)
    assert m["mean_distance"][0, 0].item() == pytest.approx((n * n - 1) / (3 * n), rel=1e-5)


def test_diagonal_mass_offsets():
    p = torch.eye(4)
    assert diagonal_mass(p, 0).tolist() == [1, 1, 1, 1]
    assert diagonal_mass(p, 1).tolist() == [0, 0, 0, 0]


def test_js_distance_properties():
    n = 6
    a, b = previous_token(n), torch.eye(n)
    d = js_distance_matrix(torch.stack([a, b, a]))
    assert torch.allclose(d, d.t()) and torch.all(d.diagonal() == 0)
    assert d[0, 2].item() == pytest.approx(0.0, abs=1e-6)
    # disjoint one-hot rows (except row 0, identical): JS = ln 2 on n - 1 of n rows
    assert d[0, 1].item() == pytest.approx(math.sqrt(math.log(2) * (n - 1) / n), rel=1e-4)
    assert np.all(d.numpy() <= math.sqrt(math.log(2)) + 1e-6)
