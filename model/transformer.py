"""The transformer: embeddings, positional encoding, pre-/post-norm blocks, an MLM or a next-token head.

The classic encoder and a LLaMA-style decoder (RMSNorm, SwiGLU, grouped-query attention, RoPE, causal mask,
tied LM head) are one class; :class:`model.config.TransformerConfig` says which pieces a model uses."""

from __future__ import annotations

import math

import torch
from torch import nn

from model import initialise, masks
from model.attention import KVCache, MultiHeadAttention
from model.config import TransformerConfig
from model.disentangled import RelativeEmbeddings
from model.feedforward import FeedForward
from model.heads import MLMHead
from model.hooks import HookPoint
from model.moe import MoE
from model.norms import make_norm
from model.positional import LearnedPositionalEmbedding, RelativeBias, RotaryEmbedding, SinusoidalPositionalEncoding


class TransformerBlock(nn.Module):
    """One layer.

    Pre-norm (default): x + drop(attn(LN(x))), then x + drop(FF(LN(x))). The residual path stays an
    identity, so gradients reach early layers unchanged and training needs no warm-up tricks.
    Post-norm (BERT): LN(x + attn(x)), then LN(x + FF(x)).
    """

    def __init__(self, cfg: TransformerConfig, rope: nn.Module | None = None, index: int = 0) -> None:
        super().__init__()
        self.norm = cfg.norm
        # QK-norm per head (d_k) or over the whole projection (OLMo 2: H·d_k for q, H_kv·d_k for k)
        whole = cfg.qk_norm_scope == "all"
        widths = (cfg.attn_width, cfg.kv_heads * cfg.d_k) if whole else (cfg.d_k, cfg.d_k)
        qk_norm = (make_norm(cfg, widths[0]), make_norm(cfg, widths[1])) if cfg.qk_norm else None
        self.attn = MultiHeadAttention(
            cfg.d_model,
            cfg.n_heads,
            cfg.dropout,
            cfg.bias,
            rope=rope,
            n_kv_heads=cfg.kv_heads,
            o_bias=cfg.o_bias,
            qk_norm=qk_norm,
            qk_norm_whole=whole,
            scale_factor=cfg.attn_scale,
            softcap=cfg.attn_softcap,
            sinks=cfg.attn_sinks,
            head_dim=cfg.head_dim,
            disentangled=cfg.disentangled,
            share_att_key=cfg.share_att_key,
        )
        # the seq2seq decoder's second sublayer: queries from the stream, keys and values from the encoder's output
        both, plain = cfg.cross_attention, dict(o_bias=cfg.o_bias, scale_factor=cfg.attn_scale, head_dim=cfg.head_dim)
        self.cross = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout, cfg.bias, **plain) if both else None
        self.ln_cross = make_norm(cfg) if both else nn.Identity()
        # (1 or B, S, d_model): an encoder's output bound to this block (model/encdec.bound_decoder), read
        # when a call passes no memory, so every page can run a finished decoder on the source it was opened with
        self.register_buffer("memory", None, persistent=False)
        self.parallel = cfg.parallel_residual
        inputs = cfg.input_norms  # OLMo 2: no norm on what a sublayer reads, only on what it writes
        self.ln1 = make_norm(cfg) if inputs and (cfg.first_attn_norm or index) else nn.Identity()
        self.ff = None if cfg.attn_only else MoE(cfg) if cfg.is_moe(index) else FeedForward(cfg)
        self.ln2 = nn.Identity() if cfg.attn_only or not inputs else make_norm(cfg)
        self.res = float(cfg.residual_multiplier)  # Granite: what a sublayer adds is scaled as it joins
        # Gemma's sandwich: a norm on each sublayer's output too, before it joins the residual stream
        self.ln1_post = make_norm(cfg) if cfg.sandwich_norm else None
        self.ln2_post = make_norm(cfg) if cfg.sandwich_norm else None
        self.drop = nn.Dropout(cfg.dropout)
        self.hook_resid_pre = HookPoint()  # (B, N, d_model)
        self.hook_attn_in = HookPoint()  # (B, N, d_model), what attention reads: LN(x) pre-norm, x post-norm
        self.hook_resid_mid = HookPoint()  # (B, N, d_model), after the attention sublayer
        self.hook_resid_post = HookPoint()  # (B, N, d_model)
        self.hook_mlp_in = HookPoint()  # (B, N, d_model), what the feed-forward reads (LN(x) pre-norm)
        self.hook_mlp_out = HookPoint()  # (B, N, d_model), the feed-forward's output, before any norm or addition
        if both:  # (B, N, d_model), after the cross-attention sublayer (TransformerLens's name for T5)
            self.hook_resid_mid_cross = HookPoint()

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        scale: bool = True,
        positions: bool = True,
        cache: KVCache | None = None,
        layer: int = 0,
        fused: bool = False,
        is_causal: bool = False,
        memory: torch.Tensor | None = None,
        bias: torch.Tensor | None = None,
        rel: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """x: (B, N, d_model); mask broadcastable to (B, H, N, M), 0 = blocked; ``memory`` (B, S, d_model): the
        encoder's output that cross-attention reads (a block with ``cross_attention`` only); ``bias`` (1, H, N, M):
        the relative-position bias self-attention adds to its scores (T5, MPNet); ``rel``: DeBERTa's relative
        embeddings and the row each pair reads (:class:`model.disentangled.RelativeEmbeddings`).

        ``positions=False`` skips RoPE (the permutation lab's switch); ``cache`` holds earlier positions;
        ``fused``/``is_causal``: attention in one fused kernel (:meth:`MultiHeadAttention.forward`)."""
        x = self.hook_resid_pre(x)

        def attend(h: torch.Tensor) -> torch.Tensor:
            kw = {"cache": cache, "layer": layer, "fused": fused, "is_causal": is_causal, "bias": bias, "rel": rel}
            return self.attn(h, mask=mask, scale=scale, positions=positions, **kw)

        if self.parallel:  # GPT-NeoX: both sublayers read the block's input; resid_mid holds x + attention
            h = self.hook_attn_in(self.ln1(x))
            mid = self.hook_resid_mid(x + self.join(attend(h)))
            return self.hook_resid_post(mid + self.join(self.mlp(self.ln2(x))))
        if self.ln1_post is not None and self.ln2_post is not None:
            h = self.hook_attn_in(self.ln1(x))
            x = self.hook_resid_mid(x + self.join(self.ln1_post(attend(h))))
            ff = self.mlp(self.ln2(x))
            return self.hook_resid_post(x + self.join(self.ln2_post(ff)))
        if self.cross is not None:
            memory = self.memory if memory is None else memory
            if memory is None:
                raise ValueError("a block with cross-attention needs the encoder's output (memory)")
            if memory.size(0) == 1 < x.size(0):  # one bound source for a batch of targets
                memory = memory.expand(x.size(0), -1, -1)  # (B, S, d_model)
        if self.norm == "pre":
            h = self.hook_attn_in(self.ln1(x))
            x = self.hook_resid_mid(x + self.join(attend(h)))
            if self.cross is not None:
                x = self.hook_resid_mid_cross(x + self.join(self.cross(self.ln_cross(x), context=memory)))
            return self.hook_resid_post(x + self.join(self.mlp(self.ln2(x))))
        h = self.hook_attn_in(x)
        x = self.hook_resid_mid(self.ln1(x + self.join(attend(h))))
        if self.cross is not None:
            x = self.hook_resid_mid_cross(self.ln_cross(x + self.join(self.cross(x, context=memory))))
        return self.hook_resid_post(self.ln2(x + self.join(self.mlp(x))))

    def join(self, t: torch.Tensor) -> torch.Tensor:
        """A sublayer's output (B, N, d_model) as it joins the stream: dropped out in training, × the residual
        multiplier (1 except Granite)."""
        t = self.drop(t)
        return t if self.res == 1.0 else t * self.res

    def mlp(self, h: torch.Tensor) -> torch.Tensor:
        """The feed-forward sublayer on what it reads, h (B, N, d_model), through its hooks; zeros (B, N, d_model)
        in an attention-only model, so every reader of ``hook_mlp_out`` works on it unchanged."""
        h = self.hook_mlp_in(h)
        return self.hook_mlp_out(torch.zeros_like(h) if self.ff is None else self.ff(h))


class Transformer(nn.Module):
    """Token ids (B, N) -> hidden states (B, N, d_model): the classic encoder or a decoder, by config."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        e = cfg.embed_width  # d_model, or narrower embeddings projected up (ELECTRA, ALBERT)
        self.tok_emb = nn.Embedding(cfg.vocab_size, e)
        self.type_emb = nn.Embedding(cfg.n_token_types, e) if cfg.n_token_types else None
        self.pos_enc: nn.Module | None = None
        rope = None
        if cfg.positional == "sinusoidal":
            self.pos_enc = SinusoidalPositionalEncoding(e, cfg.max_seq_len)
        elif cfg.positional == "learned":
            self.pos_enc = LearnedPositionalEmbedding(e, cfg.max_seq_len, cfg.position_offset)
        elif cfg.positional == "rope":
            rope = RotaryEmbedding(
                cfg.d_k, cfg.max_seq_len, cfg.rope_base, cfg.rope_style, cfg.rotary_dim, scaling=cfg.rope_spec
            )
        self.rope = rope  # one shared module; blocks hold a reference, not a copy
        local = None  # Gemma 3's sliding layers turn with their own, slower base
        if rope is not None and cfg.rope_local_base and cfg.rope_local_base != cfg.rope_base:
            local = RotaryEmbedding(cfg.d_k, cfg.max_seq_len, cfg.rope_local_base, cfg.rope_style, cfg.rotary_dim)
        self.rope_local = local
        rel = (cfg.n_heads, cfg.rel_buckets, cfg.rel_max_distance, not cfg.causal)  # T5, MPNet: one for all layers
        self.rel_bias = RelativeBias(*rel) if cfg.relative_bias else None
        span = (cfg.rel_span, cfg.rel_log_buckets, cfg.rel_log_max, cfg.rel_norm, cfg.layer_norm_eps)
        self.rel_pos = RelativeEmbeddings(cfg.d_model, *span) if cfg.disentangled else None  # DeBERTa
        self.emb_ln = make_norm(cfg, e) if cfg.embedding_layer_norm else None
        self.emb_proj = nn.Linear(e, cfg.d_model) if cfg.embedding_size else None  # (d_model, E)
        self.drop = nn.Dropout(cfg.dropout)
        self.hook_embed = HookPoint()  # (B, N, d_model), input to the first block
        self.blocks = nn.ModuleList(TransformerBlock(cfg, self.rope_of(i), i) for i in range(cfg.n_layers))
        self.ln_f = make_norm(cfg) if cfg.use_final_layer_norm else None
        self.hook_final = HookPoint()  # (B, N, d_model), the stream after the final norm: what the head reads
        self.mlm = MLMHead(cfg) if cfg.mlm_head else None
        untied = cfg.lm_head and not cfg.tie_lm_head
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False) if untied else None  # (V, d_model)
        self.lm_bias = nn.Parameter(torch.zeros(cfg.vocab_size)) if cfg.lm_head and cfg.lm_bias else None  # (V,)
        self.reset_parameters()
        if cfg.shared_layers:
            initialise.share_layers(self)

    def rope_of(self, layer: int) -> nn.Module | None:
        """The rotary embedding ``layer`` turns q and k with: Gemma 3's local one on its sliding layers, none on a
        NoPE layer (SmolLM3) or without RoPE."""
        if layer in self.cfg.nope_layers:
            return None
        return self.rope_local if self.rope_local is not None and self.cfg.is_sliding(layer) else self.rope

    def reset_parameters(self) -> None:
        """N(0, d_model^-0.5) embeddings, Xavier-uniform linears, zero biases (model/initialise.py)."""
        initialise.reset(self)

    def build_mask(
        self, n: int, attention_mask: torch.Tensor | None, causal: bool, device: torch.device, offset: int = 0
    ) -> torch.Tensor | None:
        """Padding (B, M) and causal masks as one (B or 1, 1, N, M), 0 = blocked (:func:`model.masks.mask`)."""
        return masks.mask(n, attention_mask, causal, device, offset)

    def build_masks(
        self, n: int, attention_mask: torch.Tensor | None, causal: bool, device: torch.device, offset: int = 0
    ) -> list[torch.Tensor | None]:
        """One mask per layer, sliding layers' with only their window left (:func:`model.masks.layer_masks`)."""
        return masks.layer_masks(self.cfg, n, attention_mask, causal, device, offset)

    def embed(
        self, ids: torch.Tensor, token_type_ids: torch.Tensor | None = None, positions: bool = True, offset: int = 0
    ) -> torch.Tensor:
        """ids (B, N) -> embeddings with position (and type) added (B, N, d_model); ``offset``: the position of the
        first id (a KV cache's newest tokens follow the cached ones)."""
        x = self.tok_emb(ids)
        if self.cfg.scale_embeddings:
            # Embeddings start at std d^-0.5; multiplying by sqrt(d) puts them on the same unit scale
            # as the sinusoidal table instead of letting position drown the token.
            x = x * math.sqrt(self.cfg.d_model)
        if self.cfg.embed_multiplier != 1.0:  # Granite
            x = x * self.cfg.embed_multiplier
        if self.type_emb is not None:
            types = torch.zeros_like(ids) if token_type_ids is None else token_type_ids
            x = x + self.type_emb(types)
        if self.pos_enc is not None and positions:
            x = self.pos_enc(x, offset)
        if self.emb_ln is not None:
            x = self.emb_ln(x)
        x = self.drop(x)
        return x if self.emb_proj is None else self.emb_proj(x)  # (B, N, E) -> (B, N, d_model)

    def direct_embedding(self) -> torch.Tensor:
        """The token embeddings as the stream's width (V, d_model): the table itself, or each row through the
        projection of narrower embeddings (its norm, which depends on position and type, left out)."""
        w = self.tok_emb.weight  # (V, E)
        return w if self.emb_proj is None else self.emb_proj(w)  # (V, d_model)

    def forward(
        self,
        ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        *,
        causal: bool | None = None,
        scale: bool = True,
        positions: bool = True,
        cache: KVCache | None = None,
        fused: bool = False,
        memory: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """ids: (B, N) int64; attention_mask: (B, M), 1 = real token, 0 = padding; ``memory`` (B, S, d_model): an
        encoder's output, read by the blocks' cross-attention (``cfg.cross_attention``).

        Teaching switches for one call: ``causal`` overrides the config; ``scale=False`` drops
        1/sqrt(d_k) everywhere; ``positions=False`` removes every positional signal (table or RoPE).
        ``cache``: a :class:`KVCache` holding the earlier positions (generation); ids are then the newest
        tokens only, and the cache grows by N. ``fused``: attention in torch's fused kernel, memory linear in N
        (no scores or pattern hooks fire; model/long.py computes shown patterns from the captured q and k).
        Returns hidden states (B, N, d_model).
        """
        if ids.dim() != 2:
            raise ValueError(f"ids must be (batch, length), got shape {tuple(ids.shape)}")
        n = ids.size(1)
        offset = cache.length if cache is not None else 0
        if offset + n > self.cfg.max_seq_len:
            raise ValueError(f"sequence of {offset + n} tokens is longer than max_seq_len {self.cfg.max_seq_len}")
        causal = self.cfg.causal if causal is None else causal
        if cache is not None and not causal:
            raise ValueError("a KV cache needs a causal model (a bidirectional one changes earlier keys)")
        # the fused kernel skips the plain causal triangle block by block instead of reading an (N, M) mask
        plain = fused and causal and attention_mask is None and offset == 0
        if plain and "sliding" not in self.cfg.layer_types:  # no layer reads a mask: none built (64 MB at 8,192)
            masks = [None] * self.cfg.n_layers
        else:
            masks = self.build_masks(n, attention_mask, causal, ids.device, offset)
        x = self.hook_embed(self.embed(ids, token_type_ids, positions, offset))
        inputs = self.block_inputs(n, offset) if positions else {"bias": None, "rel": None}
        for i, block in enumerate(self.blocks):
            tri = plain and not self.cfg.is_sliding(i)
            kw = {"cache": cache, "layer": i, "fused": fused, "is_causal": tri, "memory": memory, **inputs}
            x = block(x, mask=None if tri else masks[i], scale=scale, positions=positions, **kw)
        return self.hook_final(self.ln_f(x) if self.ln_f is not None else x)

    def block_inputs(self, n: int, offset: int = 0) -> dict[str, torch.Tensor | tuple | None]:
        """What :meth:`forward` gives every block of n tokens from position ``offset`` besides the stream and its
        mask — the relative bias (T5, MPNet) and DeBERTa's relative embeddings (offset 0 only) — for analyses that
        run blocks themselves."""
        if offset and self.rel_pos is not None:
            raise ValueError("DeBERTa's relative embeddings are for a whole text (offset 0)")
        return {"bias": self.position_bias(n, offset), "rel": self.rel_pos(n) if self.rel_pos is not None else None}

    def position_bias(self, n: int, offset: int = 0) -> torch.Tensor | None:
        """The relative-position bias (1, H, N, offset + N) every layer's self-attention adds to its scores, for N
        queries from position ``offset``; None without one (``cfg.relative_bias``)."""
        return None if self.rel_bias is None else self.rel_bias(n, offset + n, offset)

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden (B, N, d_model) -> next-token logits (B, N, V) (``cfg.lm_head``), + BART's bias, ÷ T5's √d_model."""
        if not self.cfg.lm_head:
            raise ValueError("this model has no next-token head")
        logits = hidden @ (self.tok_emb.weight if self.lm_head is None else self.lm_head.weight).t()  # (B, N, V)
        logits = logits if self.lm_bias is None else logits + self.lm_bias
        if self.cfg.logit_divisor != 1.0:  # Granite's logits_scaling
            logits = logits / self.cfg.logit_divisor
        c = self.cfg.logit_softcap
        return torch.tanh(logits / c) * c if c else logits

    def mlm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden (B, N, d_model) -> vocabulary logits (B, N, V); needs ``cfg.mlm_head``."""
        if self.mlm is None:
            raise ValueError("this model has no masked-language-model head")
        return self.mlm(hidden, self.tok_emb.weight)
