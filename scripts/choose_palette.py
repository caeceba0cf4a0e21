"""Choose the head view's 12 colours: the farthest-point search (then swaps that raise the worst pair) over the sRGB
colours visible on white and on the dark theme (CIELAB lightness 35 to 75), maximising the smallest CIEDE2000
distance between any two heads as seen with typical vision, protanopia, deuteranopia and tritanopia (Machado et al.
2009). Prints the palette and its distances; viz/figures/headview.py keeps the result, tests/viz/test_palette.py
measures it again.

    python scripts/choose_palette.py
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from viz.figures.palette import CVD, ciede2000, lab, rgb_hex, simulate

N = 12
VISIONS = (None, *CVD)


def main() -> None:
    steps = np.linspace(0, 1, 18)
    grid = np.array(list(itertools.product(steps, steps, steps)))
    light = lab(grid)[:, 0]
    cand = grid[(light >= 35) & (light <= 75)]
    seen = [lab(cand if v is None else simulate(cand, v)) for v in VISIONS]  # (K, 3) per vision

    def dist_to(i: int) -> np.ndarray:  # (K,) the distance of every candidate to candidate i, worst vision
        return np.min([ciede2000(s, s[i][None]) for s in seen], axis=0)

    rows = {}

    def row(i: int) -> np.ndarray:
        if i not in rows:
            rows[i] = dist_to(i)
        return rows[i]

    start = int(np.argmax(row(0)))
    chosen = [start, int(np.argmax(row(start)))]
    while len(chosen) < N:
        nearest = np.min([row(i) for i in chosen], axis=0)
        chosen.append(int(np.argmax(nearest)))
    for _ in range(3):  # swap each colour for the candidate that most raises the worst pair
        for j in range(N):
            others = [c for k, c in enumerate(chosen) if k != j]
            nearest = np.min([row(i) for i in others], axis=0)
            chosen[j] = int(np.argmax(nearest))
    colours = [rgb_hex(cand[i]) for i in chosen]
    colours.sort(key=lambda c: float(lab(np.array([int(c[k : k + 2], 16) / 255 for k in (1, 3, 5)]))[0]))
    print(colours)
    from viz.figures.palette import min_distance

    for v in VISIONS:
        print(v or "typical", round(min_distance(colours, v), 1))


if __name__ == "__main__":
    main()
