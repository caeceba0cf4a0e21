"""The post's encoder, saved the ways its readers save it, opens with the numbers of its own forward pass."""

from __future__ import annotations

import io
import json

import pytest
import torch
from safetensors.torch import save as st_save
from safetensors.torch import save_file

from model.capture import capture
from model.errors import CheckpointError
from model.io.catalog import BUNDLED_TOKENIZER, ModelSpec, digest, load
from model.io.checkpoint import load_bytes, load_checkpoint, questions, questions_at, save_checkpoint
from model.io.post import from_module, read_layout
from model.io.tokenizer import Tokenizer
from model.positional import SINUSOIDAL_MIN_LEN, sinusoidal_table
from tests.reference import post_encoder as ref

PATTERN_TOL, HIDDEN_TOL = 1e-5, 1e-4


@pytest.fixture(scope="module")
def tok():
    return Tokenizer.from_file(BUNDLED_TOKENIZER)


@pytest.fixture(scope="module")
def post():
    return ref.make(seed=1)


def pt(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def tensors(model) -> dict[str, torch.Tensor]:
    return {k: v.contiguous() for k, v in model.state_dict().items()}


def assert_parity(loaded, reference, tok):
    ids, mask = ref.batch(tok)
    for attention_mask in (None, mask):  # the padded batch, and every row as if it were all real tokens
        hidden, pattern = ref.parity(loaded.model, reference, ids, attention_mask)
        assert pattern <= PATTERN_TOL and hidden <= HIDDEN_TOL, (hidden, pattern)


def test_state_dict_pt_with_heads_given(post, tok):
    loaded = load_bytes(pt(post.state_dict()), "encoder.pt", n_heads=4)
    cfg = loaded.model.cfg
    assert (cfg.vocab_size, cfg.d_model, cfg.n_heads, cfg.n_layers, cfg.d_ff, cfg.max_seq_len) == (
        30522,
        64,
        4,
        2,
        128,
        SINUSOIDAL_MIN_LEN,  # the reader's 128 stored positions, then the formula's (model/long.py reads long texts)
    )
    assert (cfg.positional, cfg.norm, cfg.activation, cfg.bias, cfg.ff_bias, cfg.use_final_layer_norm) == (
        "sinusoidal",
        "pre",
        "gelu",
        False,
        True,
        True,
    )
    assert loaded.warnings == [] and loaded.tokenizer is None
    assert_parity(loaded, post, tok)


def test_stored_table_is_used_as_it_is_and_the_formula_goes_on_after_it(post):
    loaded = load_bytes(pt(post.state_dict()), "encoder.pt", n_heads=4)
    table, stored = loaded.model.pos_enc.table, post.pos_enc.pe[0]
    assert torch.equal(table[: len(stored)], stored) and len(table) == SINUSOIDAL_MIN_LEN
    assert torch.allclose(table[len(stored) :], sinusoidal_table(SINUSOIDAL_MIN_LEN, 64)[len(stored) :])


def test_without_heads_the_posts_default_is_assumed_and_said(post):
    loaded = load_bytes(pt(post.state_dict()), "encoder.pt")
    assert loaded.model.cfg.n_heads == 8
    assert "not stored in the weights: 8 (the post's default) is assumed" in loaded.warnings[0]
    odd = ref.make(d_model=36, n_heads=4)
    with pytest.raises(CheckpointError, match="one of 1, 2, 3, 4, 6, 9, 12, 18, 36"):
        load_bytes(pt(odd.state_dict()), "odd.pt")
    with pytest.raises(CheckpointError, match="5 heads do not divide d_model 64; choose one of 1, 2, 4, 8"):
        load_bytes(pt(post.state_dict()), "encoder.pt", n_heads=5)


def test_safetensors_file_and_metadata_hint(post, tok):
    plain = st_save(tensors(post))
    assert_parity(load_bytes(plain, "encoder.safetensors", n_heads=4), post, tok)
    hinted = st_save(tensors(post), metadata={"n_heads": "4"})
    loaded = load_bytes(hinted, "encoder.safetensors")
    assert loaded.model.cfg.n_heads == 4 and loaded.warnings == []
    as_json = st_save(tensors(post), metadata={"config": json.dumps({"n_heads": 4, "d_model": 64})})
    assert load_bytes(as_json, "encoder.safetensors").model.cfg.n_heads == 4


def test_training_checkpoint_dict_with_optimizer_and_config(post, tok):
    opt = torch.optim.AdamW(post.parameters())
    data = pt(
        {
            "model_state_dict": post.state_dict(),
            "optimizer_state_dict": opt.state_dict(),
            "epoch": 3,
            "config": {"vocab_size": 30522, "d_model": 64, "n_heads": 4},
        }
    )
    loaded = load_bytes(data, "checkpoint.pt")
    assert loaded.model.cfg.n_heads == 4
    assert_parity(loaded, post, tok)
    wrong = pt({"model_state_dict": post.state_dict(), "config": {"d_model": 128, "n_heads": 4}})
    with pytest.raises(CheckpointError, match="the stored config says d_model 128, but the weights have 64"):
        load_bytes(wrong, "checkpoint.pt")


def test_wrapped_and_prefixed_state_dicts(post, tok):
    for prefix in ("module.", "_orig_mod."):  # DataParallel, torch.compile
        state = {prefix + k: v for k, v in post.state_dict().items()}
        assert_parity(load_bytes(pt(state), "encoder.pt", n_heads=4), post, tok)


def test_output_layer_on_top_is_left_out_and_named(post, tok):
    mlm = ref.WithHead(post, 30522)
    loaded = load_bytes(pt(mlm.state_dict()), "mlm.pt", n_heads=4)
    assert "Left out 2 tensor(s)" in loaded.warnings[0] and "head.bias, head.weight" in loaded.warnings[0]
    assert_parity(loaded, mlm, tok)


@pytest.mark.parametrize(
    "variant, answers, note",
    [
        ({"post_norm": True}, {"norm": "post"}, None),
        ({"learned_positions": True}, {}, None),
        ({"save_table": False, "max_seq_len": 512}, {}, "stores no position table"),
        ({"final_norm": False}, {}, "no final LayerNorm"),
        ({"bias": True}, {}, None),
    ],
)
def test_variants_readers_make(tok, variant, answers, note):
    model = ref.make(seed=2, **variant)
    loaded = load_bytes(pt(model.state_dict()), "variant.pt", n_heads=4, **answers)
    assert_parity(loaded, model, tok)
    assert (note is None and not loaded.warnings) or note in loaded.warnings[0]


def test_post_norm_from_a_hint_and_the_wrong_order_shows(tok):
    model = ref.make(seed=3, post_norm=True)
    hinted = load_bytes(st_save(tensors(model), metadata={"n_heads": "4", "norm": "post"}), "p.safetensors")
    assert hinted.model.cfg.norm == "post"
    assert_parity(hinted, model, tok)
    wrong = load_bytes(pt(model.state_dict()), "p.pt", n_heads=4)  # pre-norm read of post-norm weights
    ids, mask = ref.batch(tok)
    assert ref.parity(wrong.model, model, ids, mask)[0] > 1e-2  # the comparison can fail


def test_anything_else_lists_unexpected_and_missing_keys(post):
    state = dict(post.state_dict())
    state["layers.0.attn.rel_bias"] = torch.zeros(3)
    del state["layers.1.norm2.bias"]
    with pytest.raises(CheckpointError) as err:
        load_bytes(pt(state), "odd.pt", n_heads=4)
    text = str(err.value)
    assert "unexpected keys: layers.0.attn.rel_bias" in text and "missing keys: layers.1.norm2.bias" in text
    assert "Expected, per layer: layers.{i}.attn.W_q.weight" in text
    with pytest.raises(CheckpointError, match=r"neither the post's encoder nor an Attention Lab checkpoint\. Found: w"):
        load_bytes(st_save({"w": torch.zeros(2)}), "other.safetensors")


def test_pickled_module_refused_with_the_cure(post, tmp_path):
    data = pt(post)
    with pytest.raises(CheckpointError) as err:
        load_bytes(data, "whole.pt")
    text = str(err.value)
    assert "whole pickled model (tests.reference.post_encoder.TransformerEncoder" in text
    assert "torch.save(model.state_dict(), 'encoder.pt')" in text and "weights_only" not in text


def test_save_checkpoint_and_capture_say_how_to_convert(post, tok, tmp_path):
    with pytest.raises(TypeError, match=r"from model\.io\.post import from_module") as err:
        save_checkpoint(tmp_path / "x.safetensors", post)
    assert "TransformerEncoder has none of its hook points" in str(err.value)
    with pytest.raises(TypeError, match="capture needs an Attention Lab Transformer"):
        with capture(post):
            pass
    loaded = from_module(post)  # n_heads read from the module
    assert loaded.model.cfg.n_heads == 4
    assert_parity(loaded, post, tok)
    path = save_checkpoint(tmp_path / "converted.safetensors", loaded.model, tok)
    assert_parity(load_checkpoint(path), post, tok)


def test_api_local_files_and_folders(post, tok, tmp_path):
    torch.save(post.state_dict(), tmp_path / "encoder.pt")
    assert_parity(load_checkpoint(tmp_path / "encoder.pt", n_heads=4), post, tok)
    folder = tmp_path / "run"
    folder.mkdir()
    save_file(tensors(post), str(folder / "encoder.safetensors"))
    (folder / "tokenizer.json").write_text(tok.to_str())
    with_tok = load_checkpoint(folder, n_heads=4)  # the folder: its only weights file and its tokenizer
    assert with_tok.tokenizer is not None and with_tok.tokenizer.vocab_size == 30522
    assert_parity(with_tok, post, tok)
    (folder / "config.json").write_text(json.dumps({"n_heads": 4, "d_model": 64}))
    hinted = load_checkpoint(folder / "encoder.safetensors")  # the config.json beside a file is a hint
    assert hinted.model.cfg.n_heads == 4 and hinted.tokenizer is not None and not hinted.warnings


def test_questions_say_what_the_file_does_not(post, tmp_path):
    asked = questions(pt(post.state_dict()), "encoder.pt")
    assert asked.head_choices == (1, 2, 4, 8, 16, 32, 64) and asked.heads == 8 and asked.needs_tokenizer
    stored = questions(pt({"state_dict": post.state_dict(), "config": {"n_heads": 4}}), "c.pt")
    assert stored.head_choices == () and stored.heads == 4
    folder = tmp_path / "q"
    folder.mkdir()
    torch.save(post.state_dict(), folder / "encoder.pt")
    (folder / "tokenizer.json").write_text(Tokenizer.from_file(BUNDLED_TOKENIZER).to_str())
    assert not questions_at(folder).needs_tokenizer and questions_at(folder / "encoder.pt").heads == 8


def test_catalog_upload_with_each_tokenizer_choice(post, tok):
    data = pt(post.state_dict())
    spec = ModelSpec("upload", digest=digest(data), name="encoder.pt", heads=4)
    with pytest.raises(CheckpointError, match="choose one in the sidebar"):
        load(spec, data)
    bundled = load(ModelSpec("upload", digest=digest(data), name="encoder.pt", heads=4, tokenizer="bundled"), data)
    assert bundled.tokenizer.vocab_size == 30522
    assert_parity(bundled, post, tok)
    tok_bytes = tok.to_str().encode()
    uploads = {digest(data): data, digest(tok_bytes): tok_bytes}
    spec = ModelSpec("upload", digest=digest(data), name="encoder.pt", heads=4, tokenizer=f"upload:{digest(tok_bytes)}")
    assert load(spec, uploads).tokenizer.vocab_size == 30522
    ids = load(ModelSpec("upload", digest=digest(data), name="encoder.pt", heads=4, tokenizer="ids"), data)
    assert ids.tokenizer.encode("101 7592 102").ids == (101, 7592, 102)
    with pytest.raises(ValueError, match="token ids from 0 to 30,521"):
        ids.tokenizer.encode("hello")


def test_much_smaller_tokenizer_is_warned_about_larger_refused(post):
    small = Tokenizer.from_str(
        json.dumps(
            {
                "version": "1.0",
                "model": {"type": "WordLevel", "vocab": {f"w{i}": i for i in range(1000)}, "unk_token": "w0"},
                "pre_tokenizer": {"type": "WhitespaceSplit"},
            }
        )
    )
    loaded = from_module(post)
    loaded.attach_tokenizer(small)
    assert "The tokenizer has 1,000 tokens but the model's embedding table has 30,522 rows" in loaded.warnings[-1]
    tiny = ref.make(vocab_size=500)
    with pytest.raises(CheckpointError, match="embedding table has only 500 rows"):
        from_module(tiny).attach_tokenizer(Tokenizer.from_file(BUNDLED_TOKENIZER))


def test_half_precision_state_dict_keeps_the_sinusoidal_table(post, tok):
    for dtype in (torch.float16, torch.bfloat16):
        half = {k: v.to(dtype) for k, v in post.state_dict().items()}
        loaded = load_bytes(pt(half), "half.pt", n_heads=4)
        assert loaded.model.cfg.positional == "sinusoidal" and not loaded.warnings
        stored = half["pos_enc.pe"][0].float()
        assert torch.equal(loaded.model.pos_enc.table[: len(stored)], stored)


def test_layout_reads_every_size_from_the_shapes():
    model = ref.make(vocab_size=777, d_model=48, n_heads=6, n_layers=3, d_ff=96, max_seq_len=40)
    layout = read_layout(model.state_dict())
    assert (layout.vocab_size, layout.d_model, layout.n_layers, layout.d_ff, layout.max_seq_len) == (
        777,
        48,
        3,
        96,
        40,
    )
    assert layout.positional == "sinusoidal" and layout.final_norm and not layout.bias and layout.ff_bias
