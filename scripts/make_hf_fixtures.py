"""Make tiny Hugging Face folders of every supported family and what `transformers` computes on them (run once,
offline, in a throwaway environment; the project never imports transformers):

    python -m venv --system-site-packages /tmp/hfenv
    /tmp/hfenv/bin/pip install --no-deps "transformers>=5,<6" huggingface-hub regex typer tqdm pyyaml
    /tmp/hfenv/bin/python scripts/make_hf_fixtures.py [family …]   # all families, or the ones named

Each family gets tests/fixtures/hf/<family>/: the folder as ``save_pretrained`` writes it (config.json, weights,
tokenizer.json) and reference.safetensors with, per input, the token ids transformers' tokenizer gives, every
attention pattern (eager attention) and the last hidden state (encoders) or logits (decoders). The models are
random with non-trivial norms and biases, so a misplaced norm or a dropped bias shows. Sizes are tiny (d_model
32, 2-3 layers, a 512-token vocabulary) to keep the files small. tests/model/test_hf_families.py compares on every
run.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import (
    AlbertConfig,
    AlbertModel,
    BertConfig,
    BertModel,
    DebertaV2Config,
    DebertaV2Model,
    DistilBertConfig,
    DistilBertModel,
    ElectraConfig,
    ElectraModel,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    GPT2Config,
    GPT2LMHeadModel,
    GPTNeoXConfig,
    GPTNeoXForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    ModernBertConfig,
    ModernBertModel,
    MPNetConfig,
    MPNetModel,
    Phi3Config,
    Phi3ForCausalLM,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
    RobertaConfig,
    RobertaModel,
    XLMRobertaConfig,
    XLMRobertaModel,
)

from scripts.hf_decoders_2026 import DECODER, VOCAB, decoders_2026, liven_2026

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "hf"
TEXTS = {
    "short": "The animal didn't cross the street because it was too tired.",
    "long": "The query asks, the keys answer, and the values come back weighted by how well each key fits the query.",
}


def corpus() -> list[str]:
    return [line for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines() if line.strip()]


def wordpiece(specials: list[str], cls: str, sep: str) -> Tokenizer:
    tok = Tokenizer(models.WordPiece(unk_token=specials[1]))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(corpus(), trainers.WordPieceTrainer(vocab_size=VOCAB, special_tokens=specials))
    tok.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}", special_tokens=[(cls, tok.token_to_id(cls)), (sep, tok.token_to_id(sep))]
    )
    return tok


def byte_bpe(specials: list[str], wrap: tuple[str, str] | None = None) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(corpus(), trainer)
    if wrap:
        bos, eos = wrap
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A {eos}", special_tokens=[(bos, tok.token_to_id(bos)), (eos, tok.token_to_id(eos))]
        )
    return tok


def enliven(model: torch.nn.Module, seed: int) -> None:
    """Norm weights away from 1 and biases away from 0 (initialised so, a dropped one would go unseen)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name.lower() or name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
                p.copy_(
                    torch.empty_like(p).uniform_(0.5, 1.5, generator=g)
                    if name.endswith("weight")
                    else torch.randn(p.shape, generator=g) * 0.2
                )
            elif name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)


ENCODER = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)


#: a tiny ModernBERT: local layers of 8 keys between global ones, its special tokens in the 512-word vocabulary
MODERNBERT = dict(
    vocab_size=VOCAB,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=64,
    max_position_embeddings=128,
    local_attention=8,
    global_attn_every_n_layers=2,
    pad_token_id=0,
    bos_token_id=2,
    eos_token_id=3,
    cls_token_id=2,
    sep_token_id=3,
)


def families():
    bert_tok = wordpiece(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], "[CLS]", "[SEP]")
    roberta_tok = byte_bpe(["<s>", "<pad>", "</s>", "<unk>", "<mask>"], wrap=("<s>", "</s>"))
    gpt_tok = byte_bpe(["<|endoftext|>"])
    llama_tok = byte_bpe(["<s>", "</s>", "<unk>"], wrap=None)
    yield "bert", BertModel(BertConfig(vocab_size=VOCAB, max_position_embeddings=128, **ENCODER)), bert_tok, {}
    rob = dict(vocab_size=VOCAB, max_position_embeddings=130, pad_token_id=1, bos_token_id=0, eos_token_id=2, **ENCODER)
    yield "roberta", RobertaModel(RobertaConfig(**rob)), roberta_tok, {}
    yield "xlm-roberta", XLMRobertaModel(XLMRobertaConfig(**rob)), roberta_tok, {}
    distil = DistilBertConfig(
        vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=128
    )
    yield "distilbert", DistilBertModel(distil), bert_tok, {}
    gpt2 = GPT2Config(vocab_size=VOCAB, n_positions=128, n_embd=32, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0)
    yield "gpt2", GPT2LMHeadModel(gpt2), gpt_tok, {"shard": "40KB"}
    llama = LlamaConfig(vocab_size=VOCAB, tie_word_embeddings=False, rms_norm_eps=1e-5, **DECODER)
    yield "llama", LlamaForCausalLM(llama), llama_tok, {"dtype": torch.bfloat16}
    mistral = MistralConfig(vocab_size=VOCAB, sliding_window=6, tie_word_embeddings=False, **DECODER)
    yield "mistral", MistralForCausalLM(mistral), llama_tok, {}
    qwen2 = Qwen2Config(vocab_size=VOCAB, tie_word_embeddings=True, **DECODER)
    yield "qwen2", Qwen2ForCausalLM(qwen2), gpt_tok, {"dtype": torch.float16}
    # ELECTRA-small's shape in miniature: embeddings narrower than the encoder, lifted by embeddings_project
    electra = ElectraConfig(vocab_size=VOCAB, embedding_size=16, max_position_embeddings=128, **ENCODER)
    yield "electra", ElectraModel(electra), bert_tok, {}
    qwen3 = Qwen3Config(vocab_size=VOCAB, head_dim=16, tie_word_embeddings=False, **DECODER)  # 4 × 16 ≠ 32
    yield "qwen3", Qwen3ForCausalLM(qwen3), gpt_tok, {}
    phi3 = Phi3Config(vocab_size=VOCAB, sliding_window=6, pad_token_id=0, **DECODER)
    yield "phi3", Phi3ForCausalLM(phi3), llama_tok, {}
    neox = {k: v for k, v in DECODER.items() if k != "num_key_value_heads"}
    neox = GPTNeoXConfig(vocab_size=VOCAB, rotary_pct=0.5, use_parallel_residual=True, **neox)
    yield "gpt_neox", GPTNeoXForCausalLM(neox), gpt_tok, {}
    gemma = Gemma3TextConfig(
        vocab_size=VOCAB,
        head_dim=12,  # 4 heads × 12 ≠ hidden 32, as Gemma's heads do not tile d_model
        query_pre_attn_scalar=6,
        sliding_window=6,
        sliding_window_pattern=2,
        final_logit_softcapping=30.0,
        **{**DECODER, "num_hidden_layers": 4},
    )
    yield "gemma3_text", Gemma3ForCausalLM(gemma), llama_tok, {}
    modern = ModernBertConfig(**{**MODERNBERT, "num_hidden_layers": 4})
    yield "modernbert", ModernBertModel(modern), bert_tok, {}
    # ALBERT: 16-wide embeddings and one layer run three times
    albert = AlbertConfig(
        vocab_size=VOCAB, embedding_size=16, max_position_embeddings=128, **{**ENCODER, "num_hidden_layers": 3}
    )
    yield "albert", AlbertModel(albert), bert_tok, {}
    mpnet = MPNetConfig(
        vocab_size=VOCAB, max_position_embeddings=130, pad_token_id=1, bos_token_id=0, eos_token_id=2, **ENCODER
    )
    yield "mpnet", MPNetModel(mpnet), roberta_tok, {}
    # DeBERTa-v3's shape: relative positions only (8 log buckets), shared key projections, normed relative embeddings
    deberta = DebertaV2Config(vocab_size=VOCAB, max_position_embeddings=128, relative_attention=True,
                              position_buckets=8, pos_att_type=["p2c", "c2p"], share_att_key=True,
                              norm_rel_ebd="layer_norm", position_biased_input=False, type_vocab_size=0,
                              **ENCODER)  # fmt: skip
    yield "deberta-v2", DebertaV2Model(deberta), bert_tok, {}
    yield from decoders_2026(llama_tok, gpt_tok)


def main() -> None:
    only = set(sys.argv[1:])  # families to write again (all when none is named)
    for seed, (name, model, tok, how) in enumerate(families()):
        if only and name not in only:
            continue
        folder = OUT / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        torch.manual_seed(seed)
        model.config._attn_implementation = "eager"
        enliven(model, seed)
        liven_2026(model, seed)
        dtype = how.get("dtype")
        if dtype is not None:  # weights exactly representable in the stored dtype; computed in float32
            with torch.no_grad():
                for p in model.parameters():
                    p.copy_(p.to(dtype).float())
        model.eval()
        fast = PreTrainedTokenizerFast(tokenizer_object=tok)
        reference = {}
        for key, text in TEXTS.items():
            ids = fast(text, return_tensors="pt")["input_ids"]
            with torch.no_grad():
                moe = (
                    {"output_router_logits": True}
                    if getattr(model.config, "output_router_logits", None) is not None
                    else {}
                )
                out = model(ids, output_attentions=True, output_hidden_states=True, **moe)
            reference[f"{key}.ids"] = ids[0]
            reference[f"{key}.attentions"] = torch.stack([a[0] for a in out.attentions]).contiguous()  # (L, H, N, N)
            if hasattr(out, "logits"):
                reference[f"{key}.logits"] = out.logits[0].contiguous()  # (N, V)
            reference[f"{key}.hidden"] = out.hidden_states[-1][0].contiguous()  # (N, d)
            if getattr(out, "router_logits", None):  # mixtures of experts: (L_moe, N, E), the router of each MoE layer
                reference[f"{key}.router_logits"] = torch.stack([r.reshape(len(ids[0]), -1) for r in out.router_logits])
        if dtype is not None:
            model = model.to(dtype)
        model.save_pretrained(folder, max_shard_size=how.get("shard", "50GB"))
        fast.save_pretrained(folder)
        for extra in ("tokenizer_config.json", "special_tokens_map.json", "generation_config.json"):
            (folder / extra).unlink(missing_ok=True)  # what the test needs is tokenizer.json
        save_file(reference, str(folder / "reference.safetensors"))
        size = sum(f.stat().st_size for f in folder.iterdir())
        print(f"{name}: {sorted(f.name for f in folder.iterdir())} ({size / 1024:.0f} KB)")


if __name__ == "__main__":
    main()
