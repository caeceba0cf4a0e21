"""T5 folders (``model_type: t5``): an encoder–decoder in which position enters only as a learned bias per head and
bucketed relative distance (held by each stack's first layer, shared by all its layers; bidirectional in the encoder,
backward-only in the decoder), with no 1/√d_k on the scores, RMSNorm without centring (eps 1e-6), pre-norm blocks
without biases, a final norm per stack, and the decoder's cross-attention after its self-attention. Its feed-forward
is ReLU (v1.0) or gated (v1.1, FLAN: ``gated-gelu``, GELU's tanh form). The next-token head is the shared embedding
with the decoder's output scaled by d_model^-½ (v1.0) or a matrix of its own, unscaled (v1.1: the file's
``lm_head``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.families.common import Folder, config, head_is_own, need, open_folder
from model.io.families.encdec import build_pair

ANCHOR = "shared.weight"
PLAIN = {"relu": "relu", "gelu": "gelu", "gelu_new": "gelu_tanh"}
GATED = {"gelu": "geglu_tanh", "gelu_new": "geglu_tanh", "gelu_pytorch_tanh": "geglu_tanh", "silu": "swiglu"}
ATTN = {"q": "w_q", "k": "w_k", "v": "w_v", "o": "w_o"}


def activation(raw: Mapping[str, Any]) -> str:
    proj = raw.get("feed_forward_proj", "relu")
    parts = proj.split("-") if isinstance(proj, str) else []
    gated = len(parts) == 2 and parts[0] == "gated"
    table = GATED if gated else PLAIN
    act = parts[-1] if parts else None
    if act not in table or len(parts) > 2 or (len(parts) == 2 and not gated):
        raise CheckpointError(f"unsupported feed_forward_proj {proj!r} (supported: relu, gelu, gated-gelu, gated-silu)")
    return table[act]


def scaled_head(raw: Mapping[str, Any]) -> bool:
    """Whether the decoder's output is scaled by d_model^-½ before the head (T5 v1.0's tied head; not v1.1)."""
    scale = raw.get("scale_decoder_outputs")
    return scale if isinstance(scale, bool) else raw.get("tie_word_embeddings", True) is not False


def configs(raw: Mapping[str, Any], own_head: bool = False) -> tuple[TransformerConfig, TransformerConfig]:
    """The encoder's and the decoder's configs."""
    d, heads, d_kv = need(raw, "d_model"), need(raw, "num_heads"), need(raw, "d_kv")
    eps = raw.get("layer_norm_epsilon", 1e-6)
    pad = raw.get("pad_token_id", 0)
    common = dict(
        vocab_size=need(raw, "vocab_size"),
        d_model=d,
        n_heads=heads,
        head_dim=0 if d_kv * heads == d else d_kv,
        d_ff=need(raw, "d_ff"),
        n_layers=need(raw, "num_layers"),
        max_seq_len=2048,
        norm="pre",
        norm_kind="rmsnorm",
        positional="none",
        relative_bias=True,
        rel_buckets=raw.get("relative_attention_num_buckets", 32),
        rel_max_distance=raw.get("relative_attention_max_distance", 128),
        activation=activation(raw),
        bias=False,
        ff_bias=False,
        layer_norm_eps=float(eps) if isinstance(eps, int | float) and not isinstance(eps, bool) else 1e-6,
        scale_embeddings=False,
        attn_scale=1.0,  # T5 folds 1/√d_k into its initialisation: the scores are q·k as they are
        pad_token_id=pad if isinstance(pad, int) and not isinstance(pad, bool) else 0,
    )
    enc = config(**common)
    layers = raw.get("num_decoder_layers") or common["n_layers"]
    divisor = math.sqrt(d) if scaled_head(raw) else 1.0
    dec = config(**{**common, "n_layers": layers}, causal=True, cross_attention=True, lm_head=True,
                 tie_lm_head=not own_head, logit_divisor=divisor)  # fmt: skip
    return enc, dec


def _stack(src: Folder, which: str, cfg: TransformerConfig) -> dict[str, torch.Tensor]:
    """One stack's tensors under EncoderDecoder's names (``encoder.…`` / ``decoder.…``)."""
    led, out = src.ledger, {}
    ff = 2 if which == "decoder" else 1  # the decoder's layer 1 is its cross-attention
    for i in range(cfg.n_layers):
        here, ours = f"{which}.block.{i}.layer.", f"{which}.blocks.{i}."
        for a, b in ATTN.items():
            out[f"{ours}attn.{b}.weight"] = led.take(f"{here}0.SelfAttention.{a}.weight")
            if which == "decoder":
                out[f"{ours}cross.{b}.weight"] = led.take(f"{here}1.EncDecAttention.{a}.weight")
        out[f"{ours}ln1.weight"] = led.take(f"{here}0.layer_norm.weight")
        if which == "decoder":
            out[f"{ours}ln_cross.weight"] = led.take(f"{here}1.layer_norm.weight")
        names = {"wi_0": "gate", "wi_1": "fc1", "wo": "fc2"} if cfg.gated else {"wi": "fc1", "wo": "fc2"}
        for a, b in names.items():
            out[f"{ours}ff.{b}.weight"] = led.take(f"{here}{ff}.DenseReluDense.{a}.weight")
        out[f"{ours}ln2.weight"] = led.take(f"{here}{ff}.layer_norm.weight")
    out[f"{which}.rel_bias.embedding.weight"] = led.take(
        f"{which}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"
    )
    out[f"{which}.ln_f.weight"] = led.take(f"{which}.final_layer_norm.weight")
    emb = f"{which}.embed_tokens.weight"  # an older export's copy of the shared table
    if emb in led:
        same = torch.equal(led.peek(emb), led.peek(ANCHOR))
        if not same:
            raise CheckpointError(f"{emb} differs from shared.weight: the stacks would read different tables")
        led.mark_redundant(emb, "the shared token embeddings again")
    out[f"{which}.tok_emb.weight"] = led.peek(ANCHOR)
    missing = [k for k, v in out.items() if v is None]
    if missing:
        raise CheckpointError(f"the file lacks {len(missing)} of T5's tensors, such as {missing[0]}")
    return out


def load(folder, raw: Mapping[str, Any]):
    enc, dec = configs(raw)
    src = open_folder(folder, raw, ANCHOR, "")
    own = head_is_own(src, "lm_head.weight", ANCHOR, raw.get("tie_word_embeddings", True) is not False)
    if own:
        enc, dec = configs(raw, own_head=True)
    state = {**_stack(src, "encoder", enc), **_stack(src, "decoder", dec)}
    src.ledger.take(ANCHOR)
    if own:
        state["decoder.lm_head.weight"] = src.ledger.take("lm_head.weight")
    kind = "v1.1 / FLAN: gated feed-forward" if enc.gated else "v1.0: ReLU feed-forward"
    head = "its own next-token head" if own else "the shared embeddings as head (× d_model^-½)"
    family = f"T5 ({kind}; a relative-position bias, no 1/√d_k; {head})"
    start = raw.get("decoder_start_token_id", enc.pad_token_id)
    return build_pair(src, enc, dec, state, family, [int(start)] if isinstance(start, int) else [0])
