"""One session-state setting: its default, type and allowed values, how an untrusted value (a link, a session
file) is cleaned, and how a model- or text-dependent value is fitted to the model and text in use. The registry of
every setting is :mod:`viz.settings`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from viz.figures.headview import WINDOW

MAX_TEXT = 200_000


def _index(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= 10**6


@dataclass(frozen=True)
class Shape:
    """What model- and text-dependent settings must fit: the model's size and the text's tokens."""

    n_layers: int
    n_heads: int
    d_model: int
    n_tokens: int
    ordinary: tuple[int, ...]  # positions of the non-special tokens


@dataclass(frozen=True)
class Setting:
    """One session-state key.

    ``fits``: "layer", "head", "heads", "pairs" (layer, head), "dims", "tokens", "token", "token_or_none" (-1 for
    none), "ordinary" (a non-special token), "window" (the head view's first token), "unset" (an index, or -1
    until the page chooses one from the text), "span" (query and key ranges [a, b, c, d], or []) or None.
    ``saved``: written to session files. ``page``: the url path of the page whose widget it is (its
    default is filled when that page is first drawn, so a default that follows the head in focus or the
    model's width takes them as they are then), None for shared settings. ``url``: kept in the URL."""

    key: str
    default: Any
    type: type
    allowed: tuple | None = None
    fits: str | None = None
    saved: bool = True
    page: str | None = None
    url: bool = False  # kept in the page's URL, so a reload or a shared link restores it
    bounds: tuple[float, float] | None = None  # a number's range, as its widget's: a value outside is clamped

    def initial(self, shape: Shape | None = None, state: Mapping[str, Any] | None = None) -> Any:
        """The default, or None when it needs a shape that is not known yet."""
        if callable(self.default):
            return None if shape is None else self.default(shape, state or {})
        return list(self.default) if isinstance(self.default, list) else self.default

    def clean(self, value: Any) -> tuple[Any, str | None]:
        """Validate an untrusted value: (clean value, note) or raise ValueError(note) when it must be ignored."""
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if (self.type is int and isinstance(value, bool)) or not isinstance(value, self.type):
            raise ValueError(f"ignored {self.key!r}: expected {self.type.__name__}")
        if self.type is list:
            if self.fits == "pairs":
                ok = all(isinstance(p, list | tuple) and len(p) == 2 and all(_index(x) for x in p) for p in value)
                value = [tuple(p) for p in value] if ok else None
            else:
                value = list(value) if all(_index(x) for x in value) else None
            if value is None:
                raise ValueError(f"ignored {self.key!r}: expected a list of indices")
        if self.allowed is not None and value not in self.allowed:
            raise ValueError(f"ignored {self.key!r}: {value!r} is not one of {self.allowed}")
        if self.type is float and not math.isfinite(value):
            raise ValueError(f"ignored {self.key!r}: {value!r} is not a finite number")
        if self.type is int and not (-1 if self.fits in ("token_or_none", "unset") else 0) <= value <= 10**9:
            raise ValueError(f"ignored {self.key!r}: out of range")
        if self.bounds is not None and not self.bounds[0] <= value <= self.bounds[1]:
            lo, hi = self.bounds
            clamped = self.type(min(max(value, lo), hi))
            return clamped, f"the {self.key} {value!r} was outside {lo:g}–{hi:g}: {clamped!r} is used"
        if self.type is str and len(value) > MAX_TEXT:
            return value[:MAX_TEXT], f"the {self.key} was cut to {MAX_TEXT:,} characters"
        return value, None

    def to_url(self, value: Any) -> str:
        """The value as a query-parameter string."""
        if isinstance(value, bool):
            return "1" if value else "0"
        if isinstance(value, list | tuple):
            return ",".join(str(v) for v in value)
        return str(value)

    def from_url(self, text: str) -> tuple[Any, str | None]:
        """A query-parameter string back to (a clean value, a note when it was clamped or cut); raises ValueError
        when it is not one."""
        try:
            if self.type is bool:
                if text not in ("1", "0", "true", "false"):
                    raise ValueError
                value: Any = text in ("1", "true")
            elif self.type is int:
                value = int(text)
            elif self.type is float:
                value = float(text)
            elif self.type is list:
                value = [int(v) for v in text.split(",") if v]
            else:
                value = text
        except ValueError:
            raise ValueError(f"ignored {self.key!r}: {text[:40]!r} is not a {self.type.__name__}") from None
        return self.clean(value)

    def fit(self, value: Any, shape: Shape, state: Mapping[str, Any]) -> Any:
        """``value`` made valid for ``shape`` (unchanged when it already is); ``state`` feeds defaults."""
        if value is None:
            return self.initial(shape, state)
        limit = {"layer": shape.n_layers, "head": shape.n_heads, "dims": shape.d_model, "token": shape.n_tokens}
        if self.fits == "token_or_none":
            return value if -1 <= value < shape.n_tokens else -1
        if self.fits in ("layer", "head", "token"):
            return value if 0 <= value < limit[self.fits] else self.initial(shape, state)
        if self.fits == "heads":
            return [h for h in value if 0 <= h < shape.n_heads]
        if self.fits == "dims":
            return [d for d in value if 0 <= d < shape.d_model]
        if self.fits == "tokens":
            return [t for t in value if 0 <= t < shape.n_tokens]
        if self.fits == "pairs":
            return [(lay, h) for lay, h in value if 0 <= lay < shape.n_layers and 0 <= h < shape.n_heads]
        if self.fits == "window":  # first token of the head view's window
            return min(max(value, 0), max(0, shape.n_tokens - WINDOW))
        if self.fits == "ordinary":
            return value if value in shape.ordinary or not shape.ordinary else self.initial(shape, state)
        if self.fits == "span":  # [a, b, c, d] within the tokens, or [] (none)
            return value if len(value) == 4 and value[0] < value[1] <= limit["token"] >= value[3] > value[2] else []
        return value
