"""Tokens shown with others hidden keep their text position, through every copy a cache or session makes."""

from __future__ import annotations

import copy
import json
import pickle

from model.text import Placed
from viz.figures.text import position_of, token_labels


def test_a_placed_token_is_its_text_and_keeps_its_position_through_copies():
    token = Placed("the", 5)
    for again in (pickle.loads(pickle.dumps(token)), copy.deepcopy(token), copy.copy(token)):
        assert again == "the" and again.position == 5
    assert json.dumps([token]) == '["the"]' and hash(token) == hash("the")


def test_labels_number_repeated_tokens_by_their_text_positions():
    shown = [Placed("the", 1), Placed("cat", 2), Placed("the", 5), Placed(".", 7)]  # [CLS] 0 and others hidden
    assert token_labels(shown) == ["the·1", "cat", "the·5", "."]
    assert token_labels(["the", "cat", "the"]) == ["the·0", "cat", "the·2"]
    assert position_of(shown, 2) == 5 and position_of(["a", "b"], 1) == 1
