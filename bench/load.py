"""A classroom against one server: N real chromium sessions, each with its own text, visiting pages.

``python bench/load.py --sessions 1 10 30 --tokens 64 256 --models bundled minilm`` starts one Streamlit server
per (model, tokens, N), opens N browser sessions at once (one chromium, one context each), and in every session:
after one warm-up session (the teacher, not counted), opens the app with its own text, then with 1–3 s of
think time visits Model overview, Q / K / V, Tokens and the
Attention map. It times each action from the click to the page's charts drawn, checks that the Tokens page
shows this session's own text and no other's, and reads the server's peak RSS (VmHWM). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import re
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model.train.english import PROBE_SENTENCES
from scripts.browser import CHROMIUM, CHROMIUM_ARGS, streamlit_server

WORDS = tuple(" ".join(PROBE_SENTENCES).replace(".", "").replace(",", "").replace("?", "").split())
VISITS = [
    ("overview", "Model overview", True),
    ("qkv", "Q / K / V", True),
    ("tokens", "Tokens", False),
    ("", "Attention map", True),
]
STATUS = '[data-testid="stStatusWidget"]'
THINK = [1.0, 3.0]  # seconds between a session's actions (--think)


def session_text(i: int, tokens: int) -> str:
    """About ``tokens`` word-pieces of everyday words, marked with this session's number."""
    rng = random.Random(i)
    words = [rng.choice(WORDS) for _ in range(max(tokens - 6, 4))]
    return f"session {i + 100} says " + " ".join(words) + "."


async def settled(page, charts: bool, timeout: float = 120.0) -> None:
    """Wait until the script run an action started is over and the page's charts are drawn."""
    deadline = time.perf_counter() + timeout
    with contextlib.suppress(Exception):  # the run may have finished before the widget showed
        await page.wait_for_selector(STATUS, state="attached", timeout=1500)
    while time.perf_counter() < deadline:
        await page.wait_for_selector(STATUS, state="detached", timeout=timeout * 1000)
        if charts:
            await page.wait_for_selector(".js-plotly-plot .main-svg", timeout=timeout * 1000)
        await page.wait_for_timeout(150)
        if await page.locator(STATUS).count() == 0:
            return
    raise TimeoutError("the page kept running")


async def menu_link(page, title: str):
    """The page's link in the top bar, its section's menu opened (scripts/browser.nav_to, asynchronously)."""
    for section in await page.locator('[data-testid="stTopNavSection"]').all():
        await section.click()
        menu = page.locator('[data-testid="stTopNavPopoverBody"]')
        await menu.first.wait_for(state="visible", timeout=10_000)
        link = menu.locator('[data-testid="stTopNavDropdownLink"]', has_text=title)
        if await link.count():
            return link.first
        await page.keyboard.press("Escape")
        await menu.first.wait_for(state="hidden", timeout=10_000)
    raise LookupError(f"no page {title!r} in the navigation")


async def student(browser, url: str, i: int, tokens: int, model: str, results: dict) -> None:
    context = await browser.new_context(viewport={"width": 1300, "height": 900})
    page = await context.new_page()
    text = session_text(i, tokens)
    try:
        t0 = time.perf_counter()
        await page.goto(f"{url}/?model_kind={model}&text={quote(text)}")
        await page.wait_for_selector(".js-plotly-plot .main-svg", timeout=120_000)
        results["first_charts"].append(time.perf_counter() - t0)  # the first chart drawn
        await settled(page, charts=True)
        results["times"].append(time.perf_counter() - t0)
        results["openings"].append(results["times"][-1])
        for path, title, charts in VISITS:
            await asyncio.sleep(random.uniform(*THINK))
            link = await menu_link(page, title)  # open its section's menu in the top bar (drawn in the browser)
            t0 = time.perf_counter()
            await link.click()
            await page.wait_for_url(re.compile(re.escape(f"{url}/{path}") + r"(\?.*)?$"))
            await settled(page, charts=charts)
            results["times"].append(time.perf_counter() - t0)
            if path == "tokens":
                shown = await page.locator(".al-chip b").all_inner_texts()  # the token strings only
                others = {t for t in shown if re.fullmatch(r"1\d\d", t)} - {str(i + 100)}
                if str(i + 100) not in shown or others:
                    results["mixed"].append(i)
    except Exception as exc:  # counted, not raised: one failure must not hide the others' numbers
        results["errors"].append(f"session {i}: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
    finally:
        await context.close()


async def ws_student(url: str, i: int, tokens: int, model: str, results: dict) -> None:
    """The same visits over Streamlit's own websocket protocol (BackMsg/ForwardMsg protobufs), no browser: the
    time of an action is the server's, from the request to its ``script_finished`` message."""
    import websockets
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    async def act(ws, query: str = "", page: str = "", opening: bool = False) -> str:
        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_script_hash = page
        t0 = time.perf_counter()
        await ws.send(msg.SerializeToString())
        shown, first = [], None
        while True:
            fm, raw = ForwardMsg(), await ws.recv()
            fm.ParseFromString(raw)
            kind = fm.WhichOneof("type")
            if kind == "navigation":
                act.pages = {p.url_pathname: p.page_script_hash for p in fm.navigation.app_pages}
            elif kind == "delta" and b"al-chip" in raw:  # only these as text: the client shares the server's cores
                shown.append(str(fm.delta))
            elif first is None and kind == "delta" and fm.delta.new_element.WhichOneof("type") == "plotly_chart":
                first = time.perf_counter() - t0  # the page's first chart has gone out
            elif kind == "script_finished":
                results["times"].append(time.perf_counter() - t0)
                if opening:
                    results["openings"].append(results["times"][-1])
                    results["first_charts"].append(results["times"][-1] if first is None else first)
                return "".join(shown)

    text = session_text(i, tokens)
    try:
        async with websockets.connect(url.replace("http", "ws") + "/_stcore/stream", subprotocols=["streamlit"],
                                      max_size=None, open_timeout=120) as ws:  # fmt: skip
            await act(ws, query=f"model_kind={model}&text={quote(text)}", opening=True)
            for path, _title, _charts in VISITS:
                await asyncio.sleep(random.uniform(*THINK))
                chips = await act(ws, page=act.pages[path])
                if path == "tokens":
                    shown = set(re.findall(r"<b>([^<]*)</b>", chips))
                    others = {t for t in shown if re.fullmatch(r"1\d\d", t)} - {str(i + 100)}
                    if str(i + 100) not in shown or others:
                        results["mixed"].append(i)
    except Exception as exc:
        results["errors"].append(f"session {i}: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def server_pid(port: str) -> int:
    """The Streamlit process listening on ``port`` (found through /proc, no extra packages)."""
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"streamlit" in b" ".join(cmd) and port.encode() in cmd:
                return int(proc.name)
    return 0


async def bomber(url: str, bomb: Path | None, results: dict, delay: float = 1.0) -> None:
    """One more student, in chromium, who uploads ``bomb`` (bench/hostile.py's zip bomb) as the class arrives: the
    seconds until the page refuses it go to ``results["bomb"]``. ``bomb`` None: the same student, who opens the
    upload box and uploads nothing (the control: chromium's own cost on the same cores)."""
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = await browser.new_page(viewport={"width": 1300, "height": 900})
            await page.goto(url)
            await settled(page, charts=True)
            await asyncio.sleep(delay)
            await page.get_by_role("combobox", name="Model source", exact=True).click()
            await page.get_by_role("option", name="Upload a checkpoint file", exact=True).click()
            await settled(page, charts=False)
            if bomb is None:
                await asyncio.sleep(1.0)
                return
            t0 = time.perf_counter()
            await page.locator('input[type="file"][accept*=".zip"]').set_input_files(str(bomb))
            await page.get_by_text("any real one", exact=False).first.wait_for(timeout=300_000)
            results["bomb"] = time.perf_counter() - t0
        except Exception as exc:
            results["errors"].append(f"bomb: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
        finally:
            await browser.close()


def tally() -> dict:
    """What a class's sessions report: action times, openings' (whole, to the first chart), errors, mix-ups."""
    return {"times": [], "openings": [], "first_charts": [], "errors": [], "mixed": []}


async def one_class(
    url: str, n: int, tokens: int, model: str, client: str = "browser", bomb: Path | str | None = None
) -> dict:
    results = tally()
    if client == "ws":
        await ws_student(url, 99, tokens, model, tally())  # the teacher's warm-up
        extra = [bomber(url, None if bomb == "idle" else bomb, results)] if bomb is not None else []
        await asyncio.gather(*(ws_student(url, i, tokens, model, results) for i in range(n)), *extra)
        return results
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:  # the teacher opens every page once before the class arrives (not counted)
            await student(browser, url, 99, tokens, model, tally())
            await asyncio.gather(*(student(browser, url, i, tokens, model, results) for i in range(n)))
        finally:
            await browser.close()
    return results


def p95(values: list[float]) -> float:
    """The 95th percentile of sorted ``values`` (the nearest rank)."""
    return values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]


def list_minus(values: list[float], taken: list[float]) -> list[float]:
    """``values`` without one occurrence of each of ``taken`` (the visits after the openings)."""
    rest = list(values)
    for value in taken:
        rest.remove(value)
    return rest


def main(argv: list[str] | None = None) -> str:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, nargs="+", default=[1, 10, 30])
    p.add_argument("--tokens", type=int, nargs="+", default=[64, 256])
    p.add_argument("--models", nargs="+", default=["bundled", "minilm"])
    p.add_argument(
        "--client",
        default="ws",
        choices=("ws", "browser"),
        help="ws: Streamlit's websocket protocol, no browser (the server's time); browser: chromium per session",
    )
    p.add_argument("--think", type=float, nargs=2, default=THINK, metavar=("MIN", "MAX"), help="think time, s")
    p.add_argument("--script", default="app.py", choices=("app.py", "serve.py"), help="the server to load")
    p.add_argument(
        "--bomb",
        choices=("zip", "idle"),
        help="ws only: one more student (chromium) uploads a zip bomb as the class arrives; idle: opens the upload "
        "box and uploads nothing (the control)",
    )
    args = p.parse_args(argv)
    bomb: Path | str | None = "idle" if args.bomb == "idle" else None
    if args.bomb == "zip":
        import tempfile

        from bench.hostile import zip_of

        bomb = Path(tempfile.mkdtemp(prefix="load-bomb-")) / "zip-bomb.zip"
        bomb.write_bytes(zip_of("m/config.json", b" " * 2**26, 32))  # 2 GiB of spaces in a 9 MB .zip
    THINK[:] = args.think
    lines = [
        f"## A class on one server (`python bench/load.py --client {args.client} --script {args.script}"
        f"{' --bomb ' + args.bomb if args.bomb else ''}`, "
        f"{args.think[0]:g}–{args.think[1]:g} s think time)",
        "Each session opens the app with its own text, then visits Model overview, Q / K / V, Tokens and the "
        "Attention map; "
        + (
            "times run from the request to the server's last message (Streamlit's websocket protocol, no browser); "
            "an opening's first chart, to the message that draws it."
            if args.client == "ws"
            else "times run from the action to its charts drawn (one chromium context per session); an opening's "
            "first chart, to it drawn."
        ),
        "",
        "| model | tokens | sessions | actions | p50 s | p95 s | max s | openings p50 / p95 s | openings to the first "
        "chart p50 / p95 s | visits after p95 s | errors | saw another's text | server peak RSS MB |"
        + (" zip bomb refused in s |" if bomb is not None else ""),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
        + (" --- |" if bomb is not None else ""),
    ]
    for model in args.models:
        for tokens in args.tokens:
            for n in args.sessions:
                with streamlit_server(script=args.script) as url:
                    pid = server_pid(url.rsplit(":", 1)[1])
                    r = asyncio.run(one_class(url, n, tokens, model, args.client, bomb))
                    rss = peak_rss_mb(pid) if pid else float("nan")
                times = sorted(r["times"]) or [float("nan")]
                openings = sorted(r["openings"]) or [float("nan")]
                first = sorted(r["first_charts"]) or [float("nan")]
                after = sorted(list_minus(r["times"], r["openings"])) or [float("nan")]
                row = (
                    f"| {model} | {tokens} | {n} | {len(r['times'])} | {statistics.median(times):.2f} | "
                    f"{p95(times):.2f} | {times[-1]:.2f} | {statistics.median(openings):.2f} / {p95(openings):.2f} | "
                    f"{statistics.median(first):.2f} / {p95(first):.2f} | {p95(after):.2f} | {len(r['errors'])} | "
                    f"{len(r['mixed'])} | {rss:.0f} |"
                    + (f" {r['bomb']:.2f} |" if "bomb" in r else " – |" if bomb is not None else "")
                )
                lines.append(row)
                print(row, flush=True)
                for err in r["errors"][:3]:
                    print(f"  {err}", flush=True)
    text = "\n".join(lines)
    print(text)
    return text


if __name__ == "__main__":
    main()
