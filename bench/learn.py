"""Watch it learn: how soon an induction head forms, what snapshots cost, and how the page responds while a run
trains (issue 32).

    python bench/learn.py [--seeds 0 1 2 3 4] [--browser]

For each seed of the default run (induction, 2 layers × 4 heads, d_model 64, RoPE, attention-only, 1,500 steps):
the training seconds until the first head's induction score reaches 0.5 on held-out repeated sequences (and
holds), that head, the phase change the detector finds, and the share of training time spent on snapshots.
``--browser``: in chromium, the seconds from a step-slider key press on the finished run until the page is drawn
(median of 6), first with nothing else running, then while another run trains on the same server. Prints a
Markdown table (bench/RESULTS.md, "Watch it learn").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import torch

from model.learn.loop import TrainSpec, train
from model.learn.phase import formed, phase_change


def formation(seed: int) -> dict:
    run = train(TrainSpec(seed=seed))
    steps = np.array([s.step for s in run.snapshots])
    heads = formed(steps, np.stack([s.scores["task"].numpy() for s in run.snapshots]))
    first = next(iter(heads.items()), None)
    at = {s.step: s.seconds for s in run.snapshots}
    change = phase_change(np.array(run.losses))
    return {
        "seed": seed,
        "head": f"L{first[0][0]}H{first[0][1]}" if first else "none",
        "step": first[1] if first else None,
        "seconds": at[first[1]] if first else None,
        "heads": len(heads),
        "phase": change.step if change else None,
        "total": run.seconds,
        "snapshots": run.snapshot_seconds / run.seconds,
        "accuracy": run.snapshots[-1].accuracy,
    }


def slider_times(repeat: int = 6) -> tuple[float, float, float]:
    """Medians of a step change on a finished run: idle; while another spec trains on the same server, watched live
    in a second tab (chromium on the same 2 cores); and with that tab closed (the run trains on)."""
    from bench.pages import timed
    from scripts.browser import chromium, streamlit_server, wait_idle

    runs = tempfile.mkdtemp(prefix="bench-learn-")
    with streamlit_server(env={"ATTENTION_LAB_RUNS": runs}) as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        page.goto(f"{url}/learn")
        wait_idle(page)
        page.get_by_role("button", name="Train").click()
        page.get_by_role("button", name="Open this model on every page").wait_for(timeout=300_000)
        wait_idle(page)

        def changes() -> float:
            slider = page.get_by_role("slider").last
            slider.focus()
            times = [timed(page, lambda k=key: slider.press(k)) for key in ("ArrowLeft", "ArrowRight") * (repeat // 2)]
            return statistics.median(times)

        idle = changes()
        other = browser.new_page(viewport={"width": 1400, "height": 1100})
        other.goto(f"{url}/learn?learn_seed=7&learn_steps=20000")  # a long run of another spec
        wait_idle(other)
        other.get_by_role("button", name="Train").click()
        other.get_by_text("Training: step").first.wait_for(timeout=60_000)
        busy = changes()
        other.close()  # the run goes on, watched by nobody
        alone = changes()
        return idle, busy, alone


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2, 3, 4])
    p.add_argument("--browser", action="store_true")
    args = p.parse_args(argv)
    torch.set_num_threads(2)
    print("| seed | first induction head | at step | training seconds to it | heads formed | phase change (step) "
          "| whole run (s) | snapshots' share | held-out accuracy |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for seed in args.seeds:
        r = formation(seed)
        step = f"{r['step']:,}" if r["step"] is not None else "—"
        secs = f"{r['seconds']:.1f}" if r["seconds"] is not None else "—"
        phase = f"{r['phase']:,}" if r["phase"] is not None else "none found"
        print(f"| {seed} | {r['head']} | {step} | {secs} | {r['heads']} | {phase} | {r['total']:.1f} | "
              f"{r['snapshots']:.1%} | {r['accuracy']:.0%} |")  # fmt: skip
    if args.browser:
        idle, busy, alone = slider_times()
        print(f"\nA step change on the finished run: {idle:.2f} s (median); while another run trains and a second "
              f"tab watches it live: {busy:.2f} s; with that tab closed: {alone:.2f} s.")  # fmt: skip


if __name__ == "__main__":
    main()
