"""Make tiny Hugging Face folders whose heads and tokenizer files the loader must not drop, and what `transformers`
computes on them (run once, offline, in the throwaway environment of scripts/make_hf_fixtures.py, plus sentencepiece):

    /tmp/hfenv/bin/pip install --no-deps sentencepiece protobuf
    /tmp/hfenv/bin/python scripts/make_head_fixtures.py [case …]   # all cases, or the ones named

Each case gets tests/fixtures/hf_heads/<case>/: the folder as ``save_pretrained`` writes it — with the tokenizer as
the files that case is about (vocab.txt; vocab.json + merges.txt; a SentencePiece tokenizer.model) and no
tokenizer.json, and the weights as safetensors, shards or pytorch_model.bin — and reference.safetensors with, per text,
the ids transformers' tokenizer gives *from those files*, every attention pattern (eager) and the head's logits: the
MLM head's (encoders) or the next-token head's (decoders). tests/model/test_heads.py compares on every run.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import sentencepiece as spm
import torch
from safetensors.torch import load_file, save_file
from transformers import (
    AlbertConfig,
    AlbertForMaskedLM,
    AutoTokenizer,
    BertConfig,
    BertForMaskedLM,
    DebertaV2Config,
    DebertaV2ForMaskedLM,
    DistilBertConfig,
    DistilBertForMaskedLM,
    ElectraConfig,
    ElectraForMaskedLM,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    ModernBertConfig,
    ModernBertForMaskedLM,
    MPNetConfig,
    MPNetForMaskedLM,
    PreTrainedTokenizerFast,
    RobertaConfig,
    RobertaForMaskedLM,
    XLMRobertaConfig,
    XLMRobertaForMaskedLM,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripts.make_hf_fixtures import DECODER, ENCODER, MODERNBERT, VOCAB, byte_bpe, corpus, enliven, wordpiece

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "hf_heads"
TEXTS = {
    "short": "The animal didn't cross the [MASK] because it was too tired.",
    "unicode": "Café naïve — déjà vu!  Two  spaces,\nthen a new line; 42 cats <mask> 🐈.",
}


def sentencepiece_model(folder: Path) -> None:
    """A LLaMA-style SentencePiece BPE (byte fallback, digits apart, no whitespace folding) trained on the README."""
    text = folder / "corpus.txt"
    text.write_text("\n".join(corpus()), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(folder / "tokenizer"),
        model_type="bpe",
        vocab_size=VOCAB,
        byte_fallback=True,
        split_digits=True,
        allow_whitespace_only_pieces=True,
        remove_extra_whitespaces=False,
        normalization_rule_name="identity",
        character_coverage=0.9995,
        unk_id=0,
        bos_id=1,
        eos_id=2,
        minloglevel=2,
    )
    text.unlink()
    (folder / "tokenizer.vocab").unlink()


def cases():
    """(name, model, how its tokenizer is saved, save options)."""
    bert_tok = wordpiece(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], "[CLS]", "[SEP]")
    roberta_tok = byte_bpe(["<s>", "<pad>", "</s>", "<unk>", "<mask>"], wrap=("<s>", "</s>"))
    gpt_tok = byte_bpe(["<|endoftext|>"])
    bert = BertConfig(vocab_size=VOCAB, max_position_embeddings=128, hidden_act="gelu_new", **ENCODER)
    yield "bert_mlm", BertForMaskedLM(bert), ("vocab.txt", bert_tok, "BertTokenizer"), {"bin": True}
    untied = BertConfig(vocab_size=VOCAB, max_position_embeddings=128, tie_word_embeddings=False, **ENCODER)
    yield "bert_mlm_untied", BertForMaskedLM(untied), ("vocab.txt", bert_tok, "BertTokenizer"), {"shard": "40KB"}
    rob = dict(vocab_size=VOCAB, max_position_embeddings=130, pad_token_id=1, bos_token_id=0, eos_token_id=2, **ENCODER)
    yield "roberta_mlm", RobertaForMaskedLM(RobertaConfig(**rob)), ("bpe", roberta_tok, "RobertaTokenizer"), {}
    xlmr = XLMRobertaConfig(tie_word_embeddings=False, **rob)
    yield "xlm-roberta_mlm_untied", XLMRobertaForMaskedLM(xlmr), ("json", roberta_tok, None), {}
    distil = DistilBertConfig(
        vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=128
    )
    yield "distilbert_mlm", DistilBertForMaskedLM(distil), ("vocab.txt", bert_tok, "DistilBertTokenizer"), {}
    modern = ModernBertConfig(**MODERNBERT)
    yield "modernbert_mlm", ModernBertForMaskedLM(modern), ("json", bert_tok, None), {}
    electra = ElectraConfig(vocab_size=VOCAB, embedding_size=16, max_position_embeddings=128, **ENCODER)
    yield "electra_generator", ElectraForMaskedLM(electra), ("vocab.txt", bert_tok, "ElectraTokenizer"), {}
    albert = AlbertConfig(vocab_size=VOCAB, embedding_size=16, max_position_embeddings=128, **ENCODER)
    yield "albert_mlm", AlbertForMaskedLM(albert), ("json", bert_tok, None), {}
    mpnet = MPNetConfig(**{**rob, "tie_word_embeddings": True})
    yield "mpnet_mlm", MPNetForMaskedLM(mpnet), ("json", roberta_tok, None), {}
    # DeBERTa-v2's shape: absolute positions too, position projections of its own, distances clamped at 6, the legacy
    # MLM head
    deberta = DebertaV2Config(vocab_size=VOCAB, max_position_embeddings=128, relative_attention=True,
                              max_relative_positions=6, pos_att_type="c2p|p2c", type_vocab_size=2, legacy=True,
                              **ENCODER)  # fmt: skip
    yield "deberta_v2_mlm", DebertaV2ForMaskedLM(deberta), ("json", bert_tok, None), {}
    gpt2 = GPT2Config(vocab_size=VOCAB, n_positions=128, n_embd=32, n_layer=2, n_head=4, tie_word_embeddings=False)
    yield "gpt2_untied", GPT2LMHeadModel(gpt2), ("bpe", gpt_tok, "GPT2Tokenizer"), {}
    llama = LlamaConfig(vocab_size=VOCAB, tie_word_embeddings=True, rms_norm_eps=1e-5, **DECODER)
    yield "llama_spm", LlamaForCausalLM(llama), ("spm", None, "LlamaTokenizer"), {}
    gemma = Gemma3TextConfig(
        vocab_size=VOCAB,
        head_dim=12,
        query_pre_attn_scalar=6,
        sliding_window=6,
        sliding_window_pattern=2,
        tie_word_embeddings=False,
        **{**DECODER, "num_hidden_layers": 2},
    )
    yield "gemma3_untied", Gemma3ForCausalLM(gemma), ("json", gpt_tok, None), {}


def save_tokenizer(folder: Path, kind: str, tok, cls: str | None) -> None:
    """The tokenizer as the files the case is about; tokenizer_config.json names the class transformers reads them
    with (and nothing else, so both sides build the tokenizer from the files alone)."""
    if kind == "spm":
        sentencepiece_model(folder)
        conf = {"tokenizer_class": cls, "add_bos_token": True, "add_eos_token": False, "legacy": True}
        (folder / "tokenizer_config.json").write_text(json.dumps(conf, indent=2))
        return
    fast = PreTrainedTokenizerFast(tokenizer_object=tok)
    fast.save_pretrained(folder)
    for extra in ("special_tokens_map.json", "generation_config.json"):
        (folder / extra).unlink(missing_ok=True)
    if kind == "json":
        return
    (folder / "tokenizer.json").unlink()
    model = json.loads(tok.to_str())["model"]
    if kind == "vocab.txt":
        by_id = sorted(model["vocab"].items(), key=lambda kv: kv[1])
        (folder / "vocab.txt").write_text("".join(f"{t}\n" for t, _ in by_id), encoding="utf-8")
        conf = {"tokenizer_class": cls, "do_lower_case": True}
    else:
        (folder / "vocab.json").write_text(json.dumps(model["vocab"], ensure_ascii=False), encoding="utf-8")
        merges = [" ".join(m) if isinstance(m, list) else m for m in model["merges"]]
        (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
        conf = {"tokenizer_class": cls, "add_prefix_space": False}
    (folder / "tokenizer_config.json").write_text(json.dumps(conf, indent=2))


def unigram() -> None:
    """A SentencePiece unigram model (T5's and ALBERT's kind: NFKC charsmap, whitespace folded) and sentencepiece's
    own ids for the texts, in tests/fixtures/hf_heads/spm_unigram/: the tokenizer alone, no model."""
    folder = OUT / "spm_unigram"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    text = folder / "corpus.txt"
    text.write_text("\n".join(corpus()), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(text), model_prefix=str(folder / "tokenizer"), model_type="unigram", vocab_size=VOCAB, minloglevel=2
    )
    text.unlink()
    (folder / "tokenizer.vocab").unlink()
    proc = spm.SentencePieceProcessor(model_file=str(folder / "tokenizer.model"))
    ids = {key: proc.encode(t) for key, t in TEXTS.items()}
    (folder / "spm_ids.json").write_text(json.dumps(ids))
    print(f"spm_unigram: {ids}")


def main() -> None:
    only = set(sys.argv[1:])
    if not only or "spm_unigram" in only:
        unigram()
    for seed, (name, model, (kind, tok, cls), how) in enumerate(cases(), start=100):
        if only and name not in only:
            continue
        folder = OUT / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        torch.manual_seed(seed)
        model.config._attn_implementation = "eager"
        enliven(model, seed)
        model.eval()
        model.save_pretrained(folder, max_shard_size=how.get("shard", "50GB"))
        if how.get("bin"):  # an older export: pytorch_model.bin, read with torch.load(weights_only=True)
            state = load_file(str(folder / "model.safetensors"))
            torch.save(state, folder / "pytorch_model.bin")
            (folder / "model.safetensors").unlink()
        save_tokenizer(folder, kind, tok, cls)
        hf_tok = AutoTokenizer.from_pretrained(folder)  # built from the files just written, as a user's would be
        reference = {}
        for key, text in TEXTS.items():
            ids = hf_tok(text, return_tensors="pt")["input_ids"]
            with torch.no_grad():
                out = model(ids, output_attentions=True)
            reference[f"{key}.ids"] = ids[0]
            reference[f"{key}.attentions"] = torch.stack([a[0] for a in out.attentions]).contiguous()  # (L, H, N, N)
            reference[f"{key}.logits"] = out.logits[0].contiguous()  # (N, V)
        if kind == "spm":
            proc = spm.SentencePieceProcessor(model_file=str(folder / "tokenizer.model"))
            for key, text in TEXTS.items():  # sentencepiece itself, the original implementation
                reference[f"{key}.spm_ids"] = torch.tensor([proc.bos_id(), *proc.encode(text)])
        save_file(reference, str(folder / "reference.safetensors"))
        size = sum(f.stat().st_size for f in folder.iterdir())
        print(f"{name}: {sorted(f.name for f in folder.iterdir())} ({size / 1024:.0f} KB)")


if __name__ == "__main__":
    main()
