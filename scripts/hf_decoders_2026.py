"""The decoders of 2026 for scripts/make_hf_fixtures.py (run in its throwaway environment): Gemma 2, SmolLM3,
OLMo 2, Granite and the mixtures of experts Mixtral, Qwen3-MoE and gpt-oss, each tiny and random, with what makes
its feature show (a score cap that bends, experts each chosen somewhere, sinks that take a visible share)."""

from __future__ import annotations

import torch
from transformers import (
    Gemma2Config,
    Gemma2ForCausalLM,
    GptOssConfig,
    GptOssForCausalLM,
    GraniteConfig,
    GraniteForCausalLM,
    MixtralConfig,
    MixtralForCausalLM,
    Olmo2Config,
    Olmo2ForCausalLM,
    Qwen3MoeConfig,
    Qwen3MoeForCausalLM,
    SmolLM3Config,
    SmolLM3ForCausalLM,
)

VOCAB = 512
DECODER = dict(
    hidden_size=32,
    num_hidden_layers=3,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=64,
    max_position_embeddings=128,
)


def decoders_2026(llama_tok, gpt_tok):
    """(name, model, tokenizer, how) as make_hf_fixtures.families() yields them."""
    gemma2 = Gemma2Config(
        vocab_size=VOCAB,
        head_dim=12,
        query_pre_attn_scalar=6,
        sliding_window=6,
        attn_logit_softcapping=0.25,  # low enough that the cap bends this tiny model's scores (at most ~0.3 uncapped)
        final_logit_softcapping=3.0,
        **{**DECODER, "num_hidden_layers": 4},
    )
    yield "gemma2", Gemma2ForCausalLM(gemma2), llama_tok, {}
    four = {**DECODER, "num_hidden_layers": 4}
    # layers 1 and 3 without RoPE (SmolLM3's NoPE layers: 1 = rotate, 0 = no positions)
    smol = SmolLM3Config(
        vocab_size=VOCAB, no_rope_layers=[1, 0, 1, 0], tie_word_embeddings=True, pad_token_id=0, **four
    )
    yield "smollm3", SmolLM3ForCausalLM(smol), gpt_tok, {}
    olmo2 = Olmo2Config(vocab_size=VOCAB, tie_word_embeddings=False, pad_token_id=0, **DECODER)
    yield "olmo2", Olmo2ForCausalLM(olmo2), gpt_tok, {}
    granite = GraniteConfig(
        vocab_size=VOCAB,
        embedding_multiplier=12.0,
        residual_multiplier=0.22,
        attention_multiplier=0.5,  # not 1/√8
        logits_scaling=4.0,
        pad_token_id=0,
        attention_bias=True,
        tie_word_embeddings=True,
        **DECODER,
    )
    yield "granite", GraniteForCausalLM(granite), gpt_tok, {}
    # mixtures of experts: 4 experts, 2 per token, enough tokens in the longer text that each is chosen somewhere
    mixtral = MixtralConfig(vocab_size=VOCAB, num_local_experts=4, num_experts_per_tok=2, pad_token_id=0, **DECODER)
    yield "mixtral", MixtralForCausalLM(mixtral), llama_tok, {}
    qwen3_moe = Qwen3MoeConfig(
        vocab_size=VOCAB,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=48,  # experts narrower than the dense layer's 64
        decoder_sparse_step=1,
        mlp_only_layers=[1],  # layer 1 dense, 0 and 2 experts
        norm_topk_prob=False,  # the two chosen weights keep their share of the full softmax
        head_dim=16,
        tie_word_embeddings=False,
        pad_token_id=0,
        **DECODER,
    )
    yield "qwen3_moe", Qwen3MoeForCausalLM(qwen3_moe), gpt_tok, {}
    oss = GptOssConfig(
        vocab_size=VOCAB,
        num_local_experts=4,
        num_experts_per_tok=2,
        head_dim=8,
        sliding_window=6,
        layer_types=["sliding_attention", "full_attention"] * 2,
        swiglu_limit=0.1,  # low enough that this tiny model's gates are clamped
        rope_parameters={
            "rope_type": "yarn",
            "factor": 4.0,
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "truncate": False,
            "original_max_position_embeddings": 16,  # the longer text reads past it
            "rope_theta": 150000.0,
        },
        pad_token_id=0,
        **{**DECODER, "num_hidden_layers": 4, "max_position_embeddings": 64},  # 4 × the original 16
    )
    yield "gpt_oss", GptOssForCausalLM(oss), gpt_tok, {}


def liven_2026(model: torch.nn.Module, seed: int) -> None:
    """What make_hf_fixtures.enliven does not: gpt-oss's sinks, router and embeddings set so that they show."""
    with torch.no_grad():  # gpt-oss's learned sinks: logits around the scores', so each takes a visible share
        for param_name, p in model.named_parameters():
            if param_name.endswith(".sinks"):
                p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(seed)) * 1.5)
            if param_name.endswith("mlp.router.weight"):  # or its bias alone would pick the same two everywhere
                p.mul_(50.0)
            if param_name == "model.embed_tokens.weight" and model.config.model_type == "gpt_oss":
                # tokens that differ more than its attention biases do, so that the router tells them apart
                p.mul_(20.0)
