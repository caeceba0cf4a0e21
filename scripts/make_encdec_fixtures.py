"""Make tiny encoder–decoder folders — T5 v1.0 (ReLU, tied head scaled by d_model^-½), T5 v1.1 / FLAN (gated GELU, a
head of its own), BART (post-norm) and mBART (pre-norm) — and what `transformers` computes on them (run once, offline,
in the throwaway environment of scripts/make_hf_fixtures.py):

    PYTHONPATH=. /tmp/hfenv/bin/python scripts/make_encdec_fixtures.py [case …]

Each case gets tests/fixtures/hf_encdec/<case>/: the folder (config.json, weights, tokenizer.json) and
reference.safetensors with, per source/target pair, the source's ids, the decoder's input (the target's labels
shifted right, as transformers trains), the encoder's, the decoder's and the cross-attention's patterns (eager), the
encoder's last hidden state and the decoder's logits. Norms, biases, the relative-position tables and BART's logit
bias are random, so a dropped one shows. The reference is checked against the folder reloaded by transformers.
tests/model/test_encdec.py compares on every run.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import (
    BartConfig,
    BartForConditionalGeneration,
    MBartConfig,
    MBartForConditionalGeneration,
    PreTrainedTokenizerFast,
    T5Config,
    T5ForConditionalGeneration,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripts.make_hf_fixtures import VOCAB, byte_bpe, corpus, enliven

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "hf_encdec"
PAIRS = {
    "short": ("The animal didn't cross the street because it was too tired.", "The animal was tired."),
    # more than 16 tokens apart: T5's and the decoder's log-spaced buckets are read
    "long": (
        "The query asks, the keys answer, and the values come back weighted by how well each key fits the query.",
        "Each key answers the query, and the values come back weighted.",
    ),
}


def unigram() -> Tokenizer:
    """T5's kind of tokenizer: a SentencePiece-style unigram with "▁" for spaces, "$A </s>"."""
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace(" ", "▁")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    trainer = trainers.UnigramTrainer(vocab_size=VOCAB, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>")
    tok.train_from_iterator(corpus(), trainer)
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    return tok


T5 = dict(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=3, num_heads=4,
          relative_attention_num_buckets=16, relative_attention_max_distance=20, pad_token_id=0, eos_token_id=1,
          decoder_start_token_id=0)  # fmt: skip
BART = dict(vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
            decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=48, max_position_embeddings=128,
            pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)  # fmt: skip


def cases():
    t5_tok, bart_tok = unigram(), byte_bpe(["<s>", "<pad>", "</s>", "<unk>", "<mask>"], wrap=("<s>", "</s>"))
    yield "t5", T5ForConditionalGeneration(T5Config(feed_forward_proj="relu", **T5)), t5_tok
    yield "t5_v1_1", T5ForConditionalGeneration(T5Config(feed_forward_proj="gated-gelu", **T5)), t5_tok
    yield "bart", BartForConditionalGeneration(BartConfig(scale_embedding=True, **BART)), bart_tok
    yield "mbart", MBartForConditionalGeneration(MBartConfig(**BART)), bart_tok


def liven(name: str, model: torch.nn.Module, seed: int) -> None:
    """Norms, biases, the relative tables, BART's logit bias random; v1.1's head a matrix of its own."""
    g = torch.Generator().manual_seed(seed)
    enliven(model, seed)
    with torch.no_grad():
        for key, p in model.named_parameters():
            if "relative_attention_bias" in key:
                p.copy_(torch.randn(p.shape, generator=g) * 2.0)
        if hasattr(model, "final_logits_bias"):
            model.final_logits_bias.copy_(torch.randn(model.final_logits_bias.shape, generator=g))
    if name == "t5_v1_1":  # FLAN's head: its own matrix, the decoder's output unscaled
        model.lm_head.weight = torch.nn.Parameter(torch.randn(model.lm_head.weight.shape, generator=g) * 0.2)
        model.config.scale_decoder_outputs = False


def shift_right(labels: torch.Tensor, start: int) -> torch.Tensor:
    return torch.cat([torch.tensor([[start]]), labels[:, :-1]], dim=1)


def main() -> None:
    only = set(sys.argv[1:])
    for seed, (name, model, tok) in enumerate(cases(), start=200):
        if only and name not in only:
            continue
        folder = OUT / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        torch.manual_seed(seed)
        model.set_attn_implementation("eager")
        liven(name, model, seed)
        model.eval()
        fast = PreTrainedTokenizerFast(tokenizer_object=tok)
        start = model.config.decoder_start_token_id
        reference = {}
        for key, (source, target) in PAIRS.items():
            ids = fast(source, return_tensors="pt")["input_ids"]
            labels = fast(target, return_tensors="pt")["input_ids"]
            dec = shift_right(labels, start)
            with torch.no_grad():
                out = model(input_ids=ids, decoder_input_ids=dec, output_attentions=True, output_hidden_states=True)
            reference[f"{key}.ids"] = ids[0]
            reference[f"{key}.decoder_ids"] = dec[0]
            reference[f"{key}.encoder_attentions"] = torch.stack([a[0] for a in out.encoder_attentions]).contiguous()
            reference[f"{key}.decoder_attentions"] = torch.stack([a[0] for a in out.decoder_attentions]).contiguous()
            reference[f"{key}.cross_attentions"] = torch.stack([a[0] for a in out.cross_attentions]).contiguous()
            reference[f"{key}.encoder_hidden"] = out.encoder_last_hidden_state[0].contiguous()
            reference[f"{key}.logits"] = out.logits[0].contiguous()
        if name == "t5_v1_1":  # as FLAN-T5's files are: the head saved apart, config.json untying it
            state = {k: v.contiguous() for k, v in model.state_dict().items()}
            state.pop("encoder.embed_tokens.weight"), state.pop("decoder.embed_tokens.weight")
            save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
            conf = model.config.to_dict()
            conf.update(tie_word_embeddings=False, architectures=["T5ForConditionalGeneration"])
            conf.pop("scale_decoder_outputs", None)
            (folder / "config.json").write_text(json.dumps(conf, indent=2))
        else:
            model.save_pretrained(folder)
        fast.save_pretrained(folder)
        for extra in ("tokenizer_config.json", "special_tokens_map.json", "generation_config.json"):
            (folder / extra).unlink(missing_ok=True)
        again = type(model).from_pretrained(folder, attn_implementation="eager").eval()  # what a user's load gives
        with torch.no_grad():
            ids, dec = reference["long.ids"][None], reference["long.decoder_ids"][None]
            logits = again(input_ids=ids, decoder_input_ids=dec).logits
        diff = float((logits[0] - reference["long.logits"]).abs().max())
        assert diff < 1e-5, (name, diff)
        save_file(reference, str(folder / "reference.safetensors"))
        size = sum(f.stat().st_size for f in folder.iterdir())
        print(f"{name}: {sorted(f.name for f in folder.iterdir())} ({size / 1024:.0f} KB), reloaded within {diff:.1e}")


if __name__ == "__main__":
    main()
