"""Indirect-object prompts (Wang et al., 2022) for batched patching: "When Mary and John went to the store, John
gave a drink to" → " Mary", and its corruption with the repeated name swapped ("…, Mary gave a drink to" → " John").

Every prompt of a batch has one template and single-token names, places and objects, so all prompts have the same
number of tokens and the answer at the same position. The tokenizer is any ``encode(text) -> ids`` function.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from model.analysis.patching import Metric

TEMPLATE = "When {a} and {b} went to the {place}, {b} gave a {thing} to"
NAMES = [
    "Mary",
    "John",
    "Tom",
    "James",
    "Dan",
    "Sid",
    "Martin",
    "Amy",
    "Lisa",
    "Michael",
    "Anna",
    "Paul",
    "Mark",
    "Sarah",
    "Kate",
    "Peter",
    "David",
    "Emma",
    "Jack",
    "Alice",
    "Robert",
    "Laura",
    "Steve",
    "Rachel",
    "Kevin",
    "Jane",
    "Chris",
    "Helen",
    "Eric",
    "George",
    "Frank",
    "Andrew",
    "Ben",
    "Sam",
    "Max",
    "Ryan",
    "Adam",
    "Luke",
    "Ann",
    "Joe",
]
PLACES = [
    "store",
    "park",
    "school",
    "garden",
    "office",
    "house",
    "station",
    "market",
    "hospital",
    "beach",
    "restaurant",
    "church",
]
THINGS = [
    "drink",
    "book",
    "ring",
    "kiss",
    "bone",
    "basket",
    "snack",
    "necklace",
    "ball",
    "computer",
    "bottle",
    "letter",
]


@dataclass(frozen=True)
class IOIBatch:
    """``clean`` and ``corrupted``: (B, N) id lists; ``metric``: logit(indirect object) − logit(subject) per prompt
    at the last position (the clean answer against the corrupted one)."""

    clean: list[list[int]]
    corrupted: list[list[int]]
    texts: list[str]
    metric: Metric


def single(encode: Callable[[str], Sequence[int]], words: Sequence[str], space: bool = True) -> list[str]:
    """The words that are one token (after a space, as they stand in the template)."""
    return [w for w in words if len(encode((" " if space else "") + w)) == 1]


def ioi_batch(encode: Callable[[str], Sequence[int]], n: int = 50, seed: int = 0) -> IOIBatch:
    """``n`` prompt pairs of equal length, with the answers' token ids taken from ``encode`` (" Mary")."""
    names, places, things = single(encode, NAMES), single(encode, PLACES), single(encode, THINGS)
    if len(names) < 2 or not places or not things:
        raise ValueError("this tokenizer splits the template's names, places or objects into several tokens")
    rng = random.Random(seed)
    clean, corrupted, texts, answers, foils = [], [], [], [], []
    base = None
    while len(clean) < n:
        a, b = rng.sample(names, 2)
        fill = {"place": rng.choice(places), "thing": rng.choice(things)}
        good, bad = (
            TEMPLATE.format(a=a, b=b, **fill),
            TEMPLATE.format(a=a, b=a, **fill).replace(f"When {a} and {a}", f"When {a} and {b}"),
        )
        ids, other = list(encode(good)), list(encode(bad))
        base = base or len(ids)
        if len(ids) != base or len(other) != base:  # a name merged with its neighbour: skip the pair
            continue
        clean.append(ids)
        corrupted.append(other)
        texts.append(good)
        answers.append(encode(" " + a)[0])
        foils.append(encode(" " + b)[0])
    return IOIBatch(clean, corrupted, texts, Metric(tuple(answers), tuple(foils)))
