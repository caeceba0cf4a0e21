"""Attention Lab for a class: `streamlit run serve.py --server.address 0.0.0.0`. The same app as `streamlit run
app.py`, served by a server that first imports the app's code (torch among it) and loads the default model, before
it accepts a browser: students who arrive after the lecturer started it do not wait for either (a cold server's first
chart 3.6 s instead of 4.5 s, bench/cold_start.py). It starts 2 s later; ``ATTENTION_LAB_WARM=0`` skips the warming."""

import logging
import os
from contextlib import asynccontextmanager
from pathlib import Path

import streamlit as st


def warm() -> None:
    """Import what the first page imports and load the default model into the shared cache. A failure here only
    leaves the work to the first visit, where it says what went wrong."""
    quiet = logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # the cache's spinner has no page to show on here: nothing to warn about
    try:
        from viz.shell.boot import import_once

        import_once()  # torch, pandas, the model code, the views: before anyone arrives
        from model.io.catalog import ModelSpec
        from viz.shell.services import get_model

        get_model(ModelSpec("bundled"), "cpu")
    except Exception:  # the first page reports what went wrong to the user
        pass
    finally:
        quiet.setLevel(level)
        _idle()


def _idle() -> None:
    """This thread stays in asyncio's pool, idle: it hands back the OpenMP threads the model's loading made, or
    every page's torch work would run with its threads sleeping between operations (model/openmp.py)."""
    try:
        from model.openmp import release_pool

        release_pool()
    except ImportError:
        pass


@asynccontextmanager
async def lifespan(_app):
    if os.environ.get("ATTENTION_LAB_WARM", "1") != "0":
        import asyncio

        await asyncio.to_thread(warm)
    yield


app = st.App(Path(__file__).with_name("app.py"), lifespan=lifespan)  # beside this file, installed or not
