"""Many users on one server: shared model, private uploads, own results; devices and out-of-memory."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

import model.io.catalog as catalog
from model import observe as observe_module
from model.io.catalog import ModelSpec
from model.io.checkpoint import to_bytes
from model.observe import Options, observe
from tests.app.conftest import figures, new_app

TEXTS = [
    "The cat sat on the mat.",
    "In the beginning was the word.",
    "Attention is all you need.",
    "A list comprehension builds a new list.",
    "And God said, let there be light.",
    "Teachers show students how transformers work.",
    "The return statement leaves the function.",
    "One two three four five six seven eight nine ten.",
]


@pytest.mark.slow
def test_eight_threads_share_one_model_and_get_their_own_attention(monkeypatch):
    from viz.shell.cache import CACHE
    from viz.shell.services import get_model, get_observation

    CACHE.clear()
    loads = {"n": 0}
    real_load = catalog.load

    def counting_load(spec, data=None):
        loads["n"] += 1
        return real_load(spec, data)

    monkeypatch.setattr("viz.shell.services.load", counting_load)
    reference = {}
    single = real_load(ModelSpec("bundled"))
    for text in TEXTS:
        reference[text] = observe(single.model, single.tokenizer, text).patterns

    barrier = threading.Barrier(len(TEXTS))
    results, errors = {}, []

    def user(text: str) -> None:
        try:
            barrier.wait()
            for _ in range(3):
                loaded = get_model(ModelSpec("bundled"), "cpu", None)
                got = observe(loaded.model, loaded.tokenizer, text, Options())  # uncached: real forwards
                np.testing.assert_allclose(got.patterns, reference[text], atol=1e-6)
            results[text] = get_observation(ModelSpec("bundled"), "cpu", text, Options(), loaded).patterns
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=user, args=(t,)) for t in TEXTS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert loads["n"] == 1, "the shared model must be loaded once"
    for text in TEXTS:
        np.testing.assert_allclose(results[text], reference[text], atol=1e-6)


@pytest.mark.slow
def test_uploads_belong_to_their_session():
    m = catalog.load(ModelSpec("random", n_layers=1, n_heads=2, d_model=32))
    data = to_bytes(m.model, m.tokenizer)
    alice, bob = new_app(), new_app()
    alice.sidebar.selectbox(key="model_kind").set_value("upload").run()
    alice.sidebar.file_uploader(key="upload_file").set_value(("alice.safetensors", data, "application/octet-stream"))
    alice.run()
    assert not alice.exception and not alice.sidebar.error
    assert len(alice.session_state["uploads"]) == 1
    assert alice.session_state["active_spec"].kind == "upload"
    bob.sidebar.selectbox(key="model_kind").set_value("upload").run()
    assert bob.session_state["uploads"] == {}  # nothing of Alice's is listed for Bob
    assert bob.session_state["active_spec"].kind == "bundled"  # Bob keeps his own model
    bob_fig = figures(bob)[0]
    assert "Layer 0, head 0" in bob_fig["layout"]["title"]["text"]
    # Bob cannot load Alice's cached model by guessing its key: the bytes must match the digest
    spec = alice.session_state["active_spec"]
    with pytest.raises(catalog.CheckpointError):
        catalog.load(spec, b"not alice's bytes")


def test_missing_device_falls_back_to_cpu_with_a_message():
    import json

    at = new_app()
    session = {"format": "attention-lab-session/1", "page": "", "settings": {"device": "cuda:7", "text": "Kept."}}
    at.sidebar.file_uploader(key="session_file").set_value(("s.json", json.dumps(session).encode(), "application/json"))
    at.run()
    assert not at.exception
    assert any("'cuda:7' is not available" in w.value for w in at.sidebar.warning)
    assert at.sidebar.selectbox(key="device").value == "cpu"
    assert at.sidebar.text_area(key="text").value == "Kept."
    assert figures(at)


def test_out_of_memory_during_forward_falls_back_to_cpu(monkeypatch):
    m = catalog.load(ModelSpec("bundled"))
    real = observe_module._forward

    def flaky(model, ids, kinds, options, device):
        if device != "cpu":
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(model, ids, kinds, options, device)

    monkeypatch.setattr(observe_module, "_forward", flaky)
    a = observe(m.model, m.tokenizer, "The cat sat on the mat.", device="cuda:0")
    assert a.device == "cpu"
    assert any("failed on cuda:0" in n and "OutOfMemoryError" in n for n in a.notices)
    expected = observe(m.model, m.tokenizer, "The cat sat on the mat.")
    np.testing.assert_allclose(a.patterns, expected.patterns)
