"""The parts of a model and how they connect, read from its config (pure Python; drawn by viz/figures/block.py).

One block stands for all L: where the norm sits (on each branch: pre-norm; on the stream: post-norm), the
residual additions, sandwich norms, a parallel residual, grouped K/V heads, RoPE and the mask are all read from
:class:`model.config.TransformerConfig`, so the diagram is the model's, not a textbook's.

Lanes: 0 is the residual stream; 1 (and 2 for a parallel residual) the branches that read it and add to it.
Rows count upward from the input.
"""

from __future__ import annotations

from dataclasses import dataclass

from model.config import TransformerConfig


@dataclass(frozen=True)
class Part:
    key: str  # unique: "embed", "ln1", "attn", "add1", …
    label: str  # what the box says
    detail: str  # one line for the hover: sizes and options
    kind: str  # "input" | "embed" | "norm" | "attention" | "ff" | "add" | "head"
    lane: int  # 0: the residual stream; 1, 2: a branch
    row: int  # from the bottom
    page: str  # url path of the page that shows this part
    in_block: bool = False  # one of the L repeated blocks


@dataclass(frozen=True)
class Anatomy:
    parts: tuple[Part, ...]
    edges: tuple[tuple[str, str], ...]  # (from key, to key): data flows upward
    n_layers: int
    block_rows: tuple[int, int]  # first and last row of the repeated block
    summary: str  # one sentence: where the norms sit and what that does to the stream

    def part(self, key: str) -> Part:
        return next(p for p in self.parts if p.key == key)


def _norm_name(cfg: TransformerConfig) -> str:
    return "RMSNorm" if cfg.norm_kind == "rmsnorm" else "LayerNorm"


def _attention_detail(cfg: TransformerConfig) -> str:
    heads = f"{cfg.n_heads} heads × d_k {cfg.d_k}"
    if cfg.group_size > 1:
        heads += f", {cfg.kv_heads} shared K/V heads (GQA, {cfg.group_size} queries each)"
    extras = []
    if cfg.positional == "rope" and cfg.nope_layers:
        nope = ", ".join(map(str, cfg.nope_layers))
        extras.append(f"RoPE on q and k except in layer {nope} (NoPE: no positions there)")
    elif cfg.positional == "rope":
        extras.append("RoPE on q and k")
    if cfg.qk_norm:
        extras.append("q/k norm over the whole projection" if cfg.qk_norm_scope == "all" else "q/k norm per head")
    if cfg.attn_scale and abs(cfg.attn_scale * cfg.d_k**0.5 - 1) > 1e-6:
        extras.append(f"q·k × {cfg.attn_scale:.3g} (not ÷√{cfg.d_k})")
    if cfg.attn_softcap:
        extras.append(f"scores capped at ±{cfg.attn_softcap:g}")
    if cfg.relative_bias:
        extras.append(f"+ a learned bias per head and relative distance ({cfg.rel_buckets} buckets, every layer)")
    if cfg.disentangled:
        names = {"c2p": "content→position", "p2c": "position→content"}
        extras.append(f"+ {' and '.join(names[t] for t in cfg.disentangled)} terms from relative embeddings")
    extras.append("causal mask" if cfg.causal else "sees every token")
    sliding = sum(cfg.is_sliding(i) for i in range(cfg.n_layers))
    if sliding:
        extras.append(f"{sliding} of {cfg.n_layers} layers see a window of {cfg.sliding_window} keys")
    return " · ".join([heads, *extras])


def _ff_detail(cfg: TransformerConfig) -> str:
    names = {
        "swiglu": "SwiGLU",
        "geglu": "GeGLU",
        "geglu_tanh": "GeGLU",
        "relu": "ReLU",
        "swiglu_oss": "clamped SwiGLU",
    }
    act = names.get(cfg.activation, "GELU")
    if not cfg.n_experts:
        return f"{cfg.d_model} → {cfg.d_ff} → {cfg.d_model}, {act}"
    layers = sum(cfg.is_moe(i) for i in range(cfg.n_layers))
    where = (
        "" if layers == cfg.n_layers else f" in {layers} of {cfg.n_layers} layers (the others dense, d_ff {cfg.d_ff})"
    )
    mix = "renormalised" if cfg.router_norm_topk else "their softmax shares"
    return (
        f"a router scores {cfg.n_experts} experts per token and runs the top {cfg.experts_per_token}, mixed by "
        f"{mix}: each {cfg.d_model} → {cfg.expert_width} → {cfg.d_model}, {act}{where}"
    )


def _embed_detail(cfg: TransformerConfig) -> tuple[str, str]:
    label = "token embedding"
    bits = [f"{cfg.vocab_size:,} × {cfg.d_model}"]
    if cfg.scale_embeddings:
        bits.append(f"× √{cfg.d_model}")
    if cfg.embed_multiplier != 1.0:
        bits.append(f"× {cfg.embed_multiplier:g} (embedding multiplier)")
    if cfg.positional in ("sinusoidal", "learned"):
        label += " + positions"
        bits.append(f"+ {cfg.positional} position table")
    elif cfg.positional == "rope":
        bits.append("positions enter as RoPE inside attention")
    elif cfg.relative_bias or cfg.disentangled:
        bits.append("positions enter inside attention, as relative distances")
    else:
        bits.append("no positional signal")
    if cfg.n_token_types:
        bits.append(f"+ {cfg.n_token_types} token types")
    if cfg.embedding_size:
        bits[0] = f"{cfg.vocab_size:,} × {cfg.embedding_size}, projected to {cfg.d_model}"
    return label, " · ".join(bits)


def anatomy(cfg: TransformerConfig) -> Anatomy:
    """The parts and edges of ``cfg``'s model, bottom to top: input, embedding, one block (× L), final norm,
    head."""
    norm = _norm_name(cfg)
    parts: list[Part] = [Part("tokens", "tokens", "token ids from the tokenizer", "input", 0, 0, "tokens")]
    label, detail = _embed_detail(cfg)
    parts.append(Part("embed", label, detail, "embed", 0, 1, "positional"))
    edges = [("tokens", "embed")]
    row, last = 2, "embed"
    if cfg.embedding_layer_norm:
        parts.append(Part("emb_norm", norm, "on the embedding sum", "norm", 0, row, "mixing"))
        edges.append((last, "emb_norm"))
        row, last = row + 1, "emb_norm"
    attn = ("attn", "multi-head attention", _attention_detail(cfg), "attention")
    ff = ("ff", "mixture of experts" if cfg.n_experts else "feed-forward", _ff_detail(cfg), "ff")

    def add(key, label, detail, kind, lane, r, page=""):
        page = page or {"attention": "attention", "ff": "mixing", "norm": "mixing", "add": "mixing"}[kind]
        parts.append(Part(key, label, detail, kind, lane, r, page, in_block=True))

    cross = ("cross", "cross-attention", f"queries from the target, keys and values from the encoder's output · "
             f"{cfg.n_heads} heads × d_k {cfg.d_k}", "attention")  # fmt: skip
    subs = (attn, cross) if cfg.cross_attention else (attn,)  # a decoder of an encoder–decoder reads the source too
    subs = subs if cfg.attn_only else (*subs, ff)  # an attention-only model has no feed-forward sublayer
    first = row
    if cfg.parallel_residual:  # GPT-NeoX: both branches read x; one addition
        add("ln1", norm, "before attention", "norm", 1, row)
        add("ln2", norm, "before the feed-forward", "norm", 2, row)
        add(*attn, 1, row + 1)
        add(*ff, 2, row + 1)
        add("add", "+", "x + attention(LN₁(x)) + FF(LN₂(x))", "add", 0, row + 2)
        edges += [(last, "ln1"), (last, "ln2"), ("ln1", "attn"), ("ln2", "ff"), ("attn", "add"), ("ff", "add")]
        edges.append((last, "add"))
        row, last = row + 3, "add"
    elif cfg.norm == "pre":
        for i, (key, label, detail, kind) in enumerate(subs):
            n, a = f"ln{i + 1}", f"add{i + 1}"
            where = {"attn": "before attention", "cross": "before cross-attention"}.get(key, "before the feed-forward")
            if i == 0 and not cfg.first_attn_norm:
                where += " (not in layer 0: the embedding already ends in a norm)"
            below = row  # OLMo 2: no norm on what the branch reads
            if cfg.input_norms:
                what = f"{where}: the branch reads a normalised copy; the stream is not rescaled"
                add(n, norm, what, "norm", 1, row)
                below = row + 1
            add(key, label, detail, kind, 1, below)
            top = key
            if cfg.sandwich_norm:
                add(f"{n}_post", norm, "on the sublayer's output, before it joins the stream", "norm", 1, below + 1)
                top = f"{n}_post"
            r_add = below + (2 if cfg.sandwich_norm else 1)
            scaled = f" × {cfg.residual_multiplier:g} (residual multiplier)" if cfg.residual_multiplier != 1 else ""
            add(a, "+", f"the residual addition: stream + sublayer output{scaled}", "add", 0, r_add)
            edges += [(last, n), (n, key)] if cfg.input_norms else [(last, key)]
            edges += [(top, a), (last, a)]
            if top != key:
                edges.append((key, top))
            row, last = r_add + 1, a
    else:  # post-norm (BERT): the norm sits on the stream after each addition
        for i, (key, label, detail, kind) in enumerate(subs):
            a, n = f"add{i + 1}", f"ln{i + 1}"
            add(key, label, detail, kind, 1, row)
            add(a, "+", "the residual addition: stream + sublayer output", "add", 0, row + 1)
            add(n, norm, "on the stream itself: the sum is rescaled after every sublayer", "norm", 0, row + 2)
            edges += [(last, key), (key, a), (last, a), (a, n)]
            row, last = row + 3, n
    if cfg.cross_attention:  # what cross-attention reads besides the stream: the encoder's output, beside it
        at = next(p.row for p in parts if p.key == "cross")
        add("source", "encoder output", "the source, read once by the encoder: keys and values of every layer's "
            "cross-attention", "input", 2, at, "attention")  # fmt: skip
        edges.append(("source", "cross"))
    block_rows = (first, row - 1)
    if cfg.use_final_layer_norm:
        parts.append(Part("final_norm", f"final {norm}", "once, after the last block", "norm", 0, row, "mixing"))
        edges.append((last, "final_norm"))
        row, last = row + 1, "final_norm"
    if cfg.lm_head:
        tied = "tied to the token embedding" if cfg.tie_lm_head else "its own matrix"
        scaled = f", ÷ {cfg.logit_divisor:g}" if cfg.logit_divisor != 1 else ""
        capped = f", capped at ±{cfg.logit_softcap:g}" if cfg.logit_softcap else ""
        head = ("next-token logits", f"d_model → {cfg.vocab_size:,} ({tied}{scaled}{capped})", "next-token")
    elif cfg.mlm_head:
        head = ("masked-word logits", "dense → GELU → LayerNorm → vocabulary (tied)", "lessons")
    else:
        head = ("hidden states", f"{cfg.d_model} numbers per token (no prediction head)", "overview")
    parts.append(Part("head", head[0], head[1], "head", 0, row, head[2]))
    edges.append((last, "head"))
    shared = " One set of weights serves every layer (ALBERT): the block runs L times." if cfg.shared_layers else ""
    return Anatomy(tuple(parts), tuple(edges), cfg.n_layers, block_rows, _summary(cfg, norm) + shared)


def _summary(cfg: TransformerConfig, norm: str) -> str:
    if cfg.parallel_residual:
        return (
            f"Parallel residual: attention and the feed-forward both read the same {norm}-ed copy of the stream and "
            "their outputs are added together; the stream itself is never rescaled until the final norm."
        )
    if cfg.norm == "pre" and not cfg.input_norms:
        return (
            f"Norms on the outputs: each sublayer reads the stream as it is and its output goes through {norm} "
            "before it is added — the stream itself is never rescaled until the final norm."
        )
    if cfg.norm == "pre":
        sandwich = f", and a second {norm} on each output (sandwich)" if cfg.sandwich_norm else ""
        return (
            f"Pre-norm: each sublayer reads a {norm}-ed copy of the stream{sandwich} and adds its output to the "
            "stream, which is never rescaled until the final norm — so it can grow layer by layer."
        )
    return (
        f"Post-norm: each sublayer's output is added to the stream and the sum goes through {norm} — the stream "
        "itself is rescaled after every sublayer, so its size is reset each time."
    )
