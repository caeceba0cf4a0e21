"""A head's QK and OV circuits (Elhage et al., 2021, "A Mathematical Framework for Transformer Circuits").

A head is two low-rank matrices over the residual stream: W_Q W_Kᵀ (d × d, rank ≤ d_k) decides where it looks,
W_V W_O (d × d, rank ≤ d_k) what it writes. Their singular values say how many directions each really uses.
Through the embeddings they become token × token tables (Dar et al., 2023, "Analyzing Transformers in Embedding
Space"): E W_V W_O Uᵀ says which output token a source token pushes up; E W_Q W_Kᵀ Eᵀ which key token a query
token looks for. Elhage et al.'s copying score is Σλ / Σ|λ| over the eigenvalues λ of the full OV circuit
E W_V W_O U: near 1 when a head raises the logit of the token it attends to (a copying head).

The norms are folded in as TransformerLens folds them: the block's attention-norm weight γ scales the rows of
W_Q, W_K, W_V and the final norm's weight scales U; the division by the stream's scale and RoPE's rotation are
left out (they depend on the text and on the positions). Under grouped-query attention the query heads of a
group share W_K and W_V; each query head still has its own circuit.

Which embedding: a head after the first layer never reads the bare token embedding E. The **effective embedding**
(the default there) is what the stream holds after block 0 when the model reads the token alone — its own
attention and the first MLP applied, as Nanda and Wang et al. use for the IOI heads — normalised as the head's
attention norm does. ``embedding="direct"`` keeps E. Either way the vocabulary's mean embedding is taken out: every
token shares it and a head moves it alike for all (in SmolLM2's effective embedding it is 0.7 of a row's norm and
would make every source token raise the same output). Either way the card reports how much the head's real input on
this text resembles it (``reads_like``: the mean cosine between the normalised stream entering the head's layer and
the embedding of the token at each position): 23 layers deep it can be near 0, and then the token pairs say little
about what the head does on this text.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from model.intervene import hooks
from model.norms import gain
from model.transformer import Transformer

TOP = 10
EMBEDDINGS = ("effective", "direct")
CHUNK = 4096  # vocabulary rows per pass through block 0


@dataclass(frozen=True)
class Circuit:
    layer: int
    head: int
    kv_head: int  # the key/value head it reads (its own under multi-head attention)
    qk_singular: np.ndarray  # (d_k,) singular values of W_Q W_Kᵀ, largest first
    ov_singular: np.ndarray  # (d_k,) of W_V W_O
    copying: float  # Σλ / Σ|λ| over the full OV circuit's eigenvalues
    ov_pairs: list[tuple[int, int, float]]  # (source token, the output token it raises most, score)
    qk_pairs: list[tuple[int, int, float]]  # (query token, the key token it looks for most, score)
    embedding: str = "direct"  # which embedding the tables read: "effective" or "direct"
    reads_like: float = float("nan")  # mean cosine of the head's real input on the text with that embedding
    self_in_top5: tuple[int, int] = (0, 0)  # text tokens whose own token is among the 5 its OV row raises most, of


def _gamma(norm: torch.nn.Module | None, d: int) -> torch.Tensor:
    if norm is None or not hasattr(norm, "weight"):
        return torch.ones(d, dtype=torch.float64)
    return gain(norm)


def head_matrices(model: Transformer, layer: int, head: int) -> dict[str, torch.Tensor]:
    """W_Q, W_K, W_V (d_model, d_k) with the attention norm folded in, W_O (d_k, d_model), in float64."""
    block = model.blocks[layer]
    attn = block.attn
    if not 0 <= head < attn.n_heads:
        raise ValueError(f"head {head} does not exist; layer {layer} has {attn.n_heads}")
    d_k, kv = attn.d_k, head // attn.group
    gamma = _gamma(block.ln1 if model.cfg.norm == "pre" else None, attn.d_model)[:, None]  # (d_model, 1)

    def cols(lin: torch.nn.Linear, h: int) -> torch.Tensor:
        return lin.weight.detach().double()[h * d_k : (h + 1) * d_k].t()  # (d_model, d_k)

    w_o = attn.w_o.weight.detach().double()[:, head * d_k : (head + 1) * d_k].t()  # (d_k, d_model)
    w_o = w_o * model.cfg.residual_multiplier  # what the head writes as it joins the stream (Granite: × m)
    return {
        "q": gamma * cols(attn.w_q, head),
        "k": gamma * cols(attn.w_k, kv),
        "v": gamma * cols(attn.w_v, kv),
        "o": w_o,
        "kv": torch.tensor(kv),
    }


def unembedding(model: Transformer) -> torch.Tensor:
    """U (d_model, V) with the final norm's weight folded in: the decoder's unembedding, or a masked-language
    model's vocabulary matrix (the tied embeddings, or its head's own untied one; the head's dense layer and norm
    left out)."""
    problem = circuit_problem(model)
    if problem:
        raise ValueError(problem)
    u = _gamma(model.ln_f, model.cfg.d_model)[:, None] * _vocabulary_matrix(model).detach().double().t()
    return u / model.cfg.logit_divisor  # Granite's logits_scaling


def _vocabulary_matrix(model: Transformer) -> torch.Tensor:
    """(V, width) the matrix the model's head reads the vocabulary through."""
    if model.lm_head is not None:
        return model.lm_head.weight
    if model.mlm is not None and model.mlm.decoder is not None:
        return model.mlm.decoder.weight
    return model.tok_emb.weight


def circuit_problem(model: Transformer) -> str | None:
    """Why a head's circuits cannot be read through the vocabulary in this model, or None."""
    width = _vocabulary_matrix(model).size(1)
    if width != model.cfg.d_model:
        return (
            f"its vocabulary matrix is {width} wide and its stream {model.cfg.d_model}: the head reaches the "
            "vocabulary through its dense layer and activation, so no linear path joins a head's output to a token "
            "(the narrow embeddings of ALBERT and ELECTRA)"
        )
    return None


_round_trips: weakref.WeakKeyDictionary[Transformer, dict] = weakref.WeakKeyDictionary()


def _unit(x: torch.Tensor, centre: bool) -> torch.Tensor:
    """Rows normalised as a norm does before its weight: centred (LayerNorm) and divided by their RMS."""
    x = x - x.mean(-1, keepdim=True) if centre else x
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-12)


def _centres(model: Transformer) -> bool:
    return model.cfg.norm_kind == "layernorm"


def effective_embedding(model: Transformer, ids: Sequence[int] | torch.Tensor) -> torch.Tensor:
    """(S, d_model) float64: the stream after block 0 when the model reads each token alone, normalised as a norm
    does before its weight."""
    ids = torch.as_tensor(list(ids) if not isinstance(ids, torch.Tensor) else ids, dtype=torch.long)
    device = next(model.parameters()).device
    with torch.no_grad():
        x = model.hook_embed(model.embed(ids.to(device)[:, None]))  # (S, 1, d_model): each token at position 0
        masks = model.build_masks(1, None, model.cfg.causal, device)
        x = model.blocks[0](x, mask=masks[0], layer=0, **model.block_inputs(1))[:, 0]  # (S, d_model)
    return _unit(x.double().cpu(), _centres(model))


def _vocabulary(model: Transformer, embedding: str) -> dict[str, torch.Tensor]:
    """The embedding's mean over the vocabulary (d_model,) and the round trip U (Ê − mean) (d_model × d_model), the
    unembedding after the centred embedding summed over the vocabulary (once per model: for SmolLM2 a 49,152-long
    sum, a second direct, three through block 0)."""
    kept = _round_trips.setdefault(model, {})
    if embedding not in kept:
        u = unembedding(model).float()  # (d_model, V)
        V = u.size(1)
        if embedding == "direct":
            e = model.direct_embedding().detach().float().cpu()  # (V, d_model)
            mean = e.double().mean(0)
            trip = (u @ e).double() - u.double().sum(1, keepdim=True) * mean[None]  # Σ_t u_t (e_t − mean)ᵀ
            unit_mean = _unit(e.double(), _centres(model)).mean(0)
        else:
            mean = torch.zeros(u.size(0), dtype=torch.float64)
            trip = torch.zeros(u.size(0), u.size(0), dtype=torch.float64)
            for lo in range(0, V, CHUNK):
                rows = torch.arange(lo, min(V, lo + CHUNK))
                e = effective_embedding(model, rows)  # (S, d_model)
                mean += e.sum(0) / V
                trip += u[:, rows].double() @ e
            trip -= u.double().sum(1, keepdim=True) * mean[None]
            unit_mean = mean  # its rows are normalised already
        kept[embedding] = {"mean": mean, "trip": trip, "unit_mean": unit_mean}
    return kept[embedding]


def reads_like(
    model: Transformer, layer: int, tokens: Sequence[int], source: torch.Tensor, mean: torch.Tensor
) -> float:
    """The mean cosine, over the text's positions, between the normalised stream entering ``layer`` and ``source``
    (N, d_model): each position's token's embedding as the card uses it, both normalised as a norm does and less
    the vocabulary's normalised ``mean``. 1: the head reads the bare tokens."""
    kept = {}
    with torch.no_grad(), hooks(model, [(f"blocks.{layer}.hook_resid_pre", lambda x, h: kept.update(x=x))]):
        model(torch.tensor([list(tokens)], device=next(model.parameters()).device))
    stream = _unit(kept["x"][0].double().cpu(), _centres(model))  # (N, d_model)
    source = _unit(source, _centres(model))
    return float(torch.nn.functional.cosine_similarity(stream - mean, source - mean, dim=-1).mean())


def _best_pairs(table: torch.Tensor, rows: Sequence[int], cols: Sequence[int] | None, k: int) -> list:
    """Each row's strongest column, the k strongest rows first: (row id, column id, score). One pair per source
    token, so that one token with a large embedding does not fill the list."""
    values, where = table.max(dim=1)  # (S,)
    order = values.argsort(descending=True)[:k]
    return [
        (int(rows[r]), int(cols[where[r]] if cols is not None else where[r]), float(values[r])) for r in order.tolist()
    ]


def circuit(
    model: Transformer, layer: int, head: int, tokens: Sequence[int], k: int = TOP, embedding: str | None = None
) -> Circuit:
    """The head's circuit card. ``tokens``: the text's token ids: each OV pair is a text token and the vocabulary
    token it raises most; each QK pair a text token and the text token it looks for most. Strongest first, one pair
    per source token. ``embedding``: "effective" (the default after layer 0) or "direct" (see the module)."""
    embedding = embedding or ("effective" if layer > 0 else "direct")
    if embedding not in EMBEDDINGS:
        raise ValueError(f"embedding must be one of {', '.join(EMBEDDINGS)}, not {embedding!r}")
    with torch.no_grad():
        m = head_matrices(model, layer, head)
        u = unembedding(model)  # (d_model, V)
        # W_Q W_Kᵀ and W_V W_O share their nonzero singular values with small d_k × d_k products
        qk = torch.linalg.svdvals(m["q"] @ m["k"].t())[: m["q"].size(1)]
        ov = torch.linalg.svdvals(m["v"] @ m["o"])[: m["v"].size(1)]
        # the full OV circuit Ê W_V W_O U (V × V) has the nonzero eigenvalues of W_O U Ê W_V (d_k × d_k)
        vocab = _vocabulary(model, embedding)
        lam = torch.linalg.eigvals(m["o"] @ vocab["trip"] @ m["v"])
        copying = float(lam.real.sum() / lam.abs().sum()) if float(lam.abs().sum()) > 0 else float("nan")
        ids = list(dict.fromkeys(int(t) for t in tokens))
        if embedding == "direct":
            src = model.direct_embedding().detach().double().cpu()[ids]  # (S, d_model)
        else:
            src = effective_embedding(model, ids)  # (S, d_model)
        at = src[[ids.index(int(t)) for t in tokens]]  # (N, d_model): each position's
        like = reads_like(model, layer, tokens, at, vocab["unit_mean"])
        src = src - vocab["mean"]  # what every token shares, every head moves alike: out
        ov_table = (src @ m["v"] @ m["o"]) @ u  # (S, V)
        qk_table = (src @ m["q"]) @ (src @ m["k"]).t()  # (S, S)
        own = ov_table.gather(1, torch.tensor(ids)[:, None])  # (S, 1)
        in_top5 = int(((ov_table > own).sum(1) < 5).sum())
    return Circuit(
        layer,
        head,
        int(m["kv"]),
        qk.numpy(),
        ov.numpy(),
        copying,
        _best_pairs(ov_table, ids, None, k),
        _best_pairs(qk_table, ids, ids, k),
        embedding,
        like,
        (in_top5, len(ids)),
    )
