"""Make a tiny Gemma 3 GGUF file the way llama.cpp's converter writes one (norm weights stored as 1 + w, a
sentencepiece vocabulary with byte fallback and no merges, BOS added) and what `transformers` reads from it — its
GGUF loader is the reference for both the weights' conventions and the tokenizer it rebuilds (run once, offline,
in a throwaway environment; the project never imports transformers):

    /tmp/hfenv/bin/python scripts/make_gemma_gguf_fixture.py

Writes tests/fixtures/gguf/gemma3-tiny.gguf and gemma3-tiny.reference.safetensors (per text: the ids
transformers' tokenizer gives, every attention pattern, the logits). Heads are 256 wide, as in the real Gemma 3 sizes
(270M to 12B), so the attention scale llama.cpp uses (1/√key_length) equals transformers' query_pre_attn_scalar.
"""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer, Gemma3ForCausalLM, Gemma3TextConfig

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "gguf"
NAME = "gemma3-tiny.gguf"
TEXTS = {
    "short": "The animal didn't cross the street because it was too tired.",
    "long": "The query asks, the keys answer, and the values come back: café, 東京 and  two spaces.",
}
SPECIAL = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]


def vocabulary() -> tuple[list[str], list[int]]:
    """Special tokens, the 256 byte-fallback pieces, single characters, then every prefix of each "▁word" (so a
    word assembles by merges), and a token of two spaces stored as spaces, as Gemma's files store it."""
    tokens, types = list(SPECIAL), [3, 3, 3, 2, 3]  # control, control, control, unknown, control
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [6] * 256  # byte
    words = " ".join(TEXTS.values()).replace(",", " ,").replace(".", " .").split()
    chars = sorted({c for w in words for c in w if ord(c) < 128} | {"▁"})
    pieces = list(chars)
    for w in words:
        for end in range(2, len(w) + 2):
            piece = ("▁" + w)[:end]
            if piece not in pieces and all(ord(c) < 128 or c == "▁" for c in piece):
                pieces.append(piece)
    pieces.append("  ")
    tokens += pieces
    types += [1] * len(pieces)
    return tokens, types


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    tokens, types = vocabulary()
    cfg = Gemma3TextConfig(
        vocab_size=len(tokens),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=6,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=256,
        query_pre_attn_scalar=256,
        sliding_window=4,
        max_position_embeddings=128,
        rms_norm_eps=1e-6,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=2,
    )
    torch.manual_seed(0)
    model = Gemma3ForCausalLM(cfg).eval()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(torch.empty_like(p).uniform_(-0.5, 0.5, generator=g))  # scales 0.5 … 1.5
            p.copy_(p.half().float())  # exactly what the float16 file will hold
    path = OUT / NAME
    w = gguf.GGUFWriter(str(path), "gemma3")
    w.add_name("tiny gemma3")
    w.add_block_count(cfg.num_hidden_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_key_length(cfg.head_dim)
    w.add_value_length(cfg.head_dim)
    w.add_rope_freq_base(1_000_000.0)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_sliding_window(cfg.sliding_window)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores([-float(i) for i in range(len(tokens))])
    w.add_token_types(types)
    w.add_bos_token_id(2)
    w.add_eos_token_id(1)
    w.add_pad_token_id(0)
    w.add_unk_token_id(3)
    w.add_add_bos_token(True)
    state = model.state_dict()

    def put(name: str, t: torch.Tensor, norm: bool = False) -> None:
        t = t.float() + (1.0 if norm else 0.0)  # llama.cpp stores Gemma's norms as 1 + w
        w.add_tensor(name, t.numpy().astype(np.float32 if t.ndim == 1 else np.float16))

    put("token_embd.weight", state["model.embed_tokens.weight"])
    put("output_norm.weight", state["model.norm.weight"], norm=True)
    names = {
        "input_layernorm": ("attn_norm", True),
        "self_attn.q_proj": ("attn_q", False),
        "self_attn.k_proj": ("attn_k", False),
        "self_attn.v_proj": ("attn_v", False),
        "self_attn.o_proj": ("attn_output", False),
        "self_attn.q_norm": ("attn_q_norm", True),
        "self_attn.k_norm": ("attn_k_norm", True),
        "post_attention_layernorm": ("post_attention_norm", True),
        "pre_feedforward_layernorm": ("ffn_norm", True),
        "mlp.gate_proj": ("ffn_gate", False),
        "mlp.up_proj": ("ffn_up", False),
        "mlp.down_proj": ("ffn_down", False),
        "post_feedforward_layernorm": ("post_ffw_norm", True),
    }
    for i in range(cfg.num_hidden_layers):
        for src, (dst, norm) in names.items():
            put(f"blk.{i}.{dst}.weight", state[f"model.layers.{i}.{src}.weight"], norm)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    tok = AutoTokenizer.from_pretrained(str(OUT), gguf_file=NAME)
    ref_model = AutoModelForCausalLM.from_pretrained(
        str(OUT), gguf_file=NAME, dtype=torch.float32, attn_implementation="eager"
    ).eval()
    reference = {}
    for key, text in TEXTS.items():
        ids = tok(text, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            out = ref_model(ids, output_attentions=True)
        reference[f"{key}.ids"] = ids[0]
        reference[f"{key}.attentions"] = torch.stack([a[0] for a in out.attentions]).contiguous()
        reference[f"{key}.logits"] = out.logits[0].contiguous()
        print(key, tok.convert_ids_to_tokens(ids[0].tolist()))
    save_file(reference, str(OUT / "gemma3-tiny.reference.safetensors"))
    print(ref_model.config.layer_types, ref_model.config.query_pre_attn_scalar, path.stat().st_size)


if __name__ == "__main__":
    main()
