"""What every Hugging Face family importer shares: a folder's weights under normalised names (read by
:mod:`model.io.families.weights`), accounting for every tensor (:class:`model.io.report.Ledger`), deciding from the
tensors whether a head is tied, checking config values, and the translations several families use (activations,
RoPE base, per-layer attention types)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from model.config import TransformerConfig
from model.errors import CheckpointError
from model.io.families.weights import normalised, read_files, read_weights
from model.io.report import Ledger, LoadReport
from model.io.state import LoadedModel, build_from_state
from model.io.tokenizer_files import folder_tokenizer

__all__ = ["normalised", "read_files", "read_weights"]  # re-exported: where the families' readers were

#: Hugging Face hidden_act -> ours
ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}


def need(raw: Mapping[str, Any], key: str, kind: type = int) -> Any:
    """``raw[key]``, which must be there and be of ``kind``; a CheckpointError that names it otherwise."""
    if key not in raw:
        raise CheckpointError(f"config.json lacks {key!r}")
    value = raw[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
        raise CheckpointError(f"config.json's {key!r} must be {kind.__name__}, got {value!r}")
    return value


def activation(name: Any) -> str:
    if name not in ACTIVATIONS:
        raise CheckpointError(f"unsupported activation {name!r} (supported: {', '.join(ACTIVATIONS)})")
    return ACTIVATIONS[name]


def rope_base(raw: Mapping[str, Any]) -> float:
    """θ of RoPE: transformers 5 keeps it in rope_parameters, older configs in rope_theta; scaled variants are
    refused by name (their angles differ)."""
    params = raw.get("rope_parameters") or raw.get("rope_scaling") or {}
    kind = params.get("rope_type", params.get("type", "default")) if isinstance(params, dict) else "default"
    if kind != "default":
        raise CheckpointError(f"RoPE scaling {kind!r} is not supported yet (only the default rotary angles)")
    theta = params.get("rope_theta", raw.get("rope_theta", 10000.0)) if isinstance(params, dict) else 10000.0
    if isinstance(theta, bool) or not isinstance(theta, int | float) or theta <= 0:
        raise CheckpointError(f"invalid rope_theta {theta!r}")
    return float(theta)


#: transformers' rope_type -> ours (model/rope_scaling.py); "su" and "yarn"-like aliases of older configs included
ROPE_KINDS = {"linear": "linear", "dynamic": "dynamic", "llama3": "llama3", "yarn": "yarn", "longrope": "longrope",
              "su": "longrope"}  # fmt: skip


def rope_fields(raw: Mapping[str, Any]) -> dict[str, Any]:
    """θ and the scaled-RoPE fields of TransformerConfig from a config.json (transformers 5's ``rope_parameters`` or
    an older ``rope_scaling``); a kind we do not compute is refused by name."""
    params = raw.get("rope_parameters") or raw.get("rope_scaling") or {}
    params = params if isinstance(params, dict) else {}
    kind = params.get("rope_type", params.get("type", "default"))
    theta = params.get("rope_theta", raw.get("rope_theta", 10000.0))
    if isinstance(theta, bool) or not isinstance(theta, int | float) or theta <= 0:
        raise CheckpointError(f"invalid rope_theta {theta!r}")
    fields: dict[str, Any] = {"rope_base": float(theta)}
    if kind in (None, "default"):
        return fields
    if kind not in ROPE_KINDS:
        raise CheckpointError(
            f"RoPE scaling {kind!r} is not supported (supported: {', '.join(sorted(set(ROPE_KINDS)))})"
        )
    kind = ROPE_KINDS[kind]
    max_pos = raw.get("max_position_embeddings")
    original = params.get("original_max_position_embeddings") or (max_pos if kind == "dynamic" else None)
    factor = params.get("factor")
    if factor is None and kind in ("yarn", "longrope") and isinstance(max_pos, int) and original:
        factor = max_pos / original  # as transformers infers it
    take = {"factor": "rope_factor", "low_freq_factor": "rope_low_freq_factor",
            "high_freq_factor": "rope_high_freq_factor", "beta_fast": "rope_beta_fast", "beta_slow": "rope_beta_slow",
            "attention_factor": "rope_attention_factor", "mscale": "rope_mscale",
            "mscale_all_dim": "rope_mscale_all_dim"}  # fmt: skip
    values = {**params, "factor": factor}
    for key, name in take.items():
        value = values.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise CheckpointError(f"config.json's RoPE {key} must be a number, got {value!r}")
            fields[name] = float(value)
    if isinstance(params.get("truncate"), bool):
        fields["rope_yarn_truncate"] = params["truncate"]
    for key, name in (("short_factor", "rope_short_factor"), ("long_factor", "rope_long_factor")):
        if isinstance(params.get(key), list):
            fields[name] = tuple(float(v) for v in params[key])
    fields["rope_scaling"] = kind
    fields["rope_original_max"] = int(original) if isinstance(original, int | float) else 0
    return fields


def layer_types(raw: Mapping[str, Any], n_layers: int, window: int | None) -> tuple[tuple[str, ...], int]:
    """(per-layer "global"/"sliding", window) from ``layer_types`` ("full_attention"/"sliding_attention") or a
    ``sliding_window`` that applies to every layer."""
    names = raw.get("layer_types")
    if isinstance(names, list) and names:
        if len(names) != n_layers or set(names) - {"full_attention", "sliding_attention"}:
            raise CheckpointError(f"unsupported layer_types {names!r}")
        types = tuple("sliding" if n == "sliding_attention" else "global" for n in names)
        if "sliding" not in types:
            return (), 0
        if not window:
            raise CheckpointError("config.json has sliding layers but no sliding_window")
        return types, int(window)
    return (("sliding",) * n_layers, int(window)) if window else ((), 0)


@dataclass
class Folder:
    """A save_pretrained folder being read: its config, its tensors in a ledger and the report of the load."""

    path: Path
    raw: Mapping[str, Any]
    ledger: Ledger
    report: LoadReport = field(default_factory=LoadReport)


def open_folder(folder: Path, raw: Mapping[str, Any], anchor: str, base: str) -> Folder:
    """Read a folder's weights into a ledger under the family's plain names (see :func:`normalised`)."""
    tensors, files = read_files(folder)
    names = normalised(list(tensors), anchor, base)
    clash = len(set(names.values())) < len(names)
    if clash:
        raise CheckpointError("the file holds two tensors under one name once its wrapper prefixes are taken off")
    ledger = Ledger({names[k]: v for k, v in tensors.items()}, {v: k for k, v in names.items()})
    dtypes = sorted({str(t.dtype).removeprefix("torch.") for t in tensors.values() if t.is_floating_point()})
    report = LoadReport(files=["config.json", *files], dtypes=dtypes)
    return Folder(folder, raw, ledger, report)


def head_is_own(src: Folder, head: str, embedding: str, tied: bool, *, what: str = "the next-token head") -> bool:
    """Whether ``head`` (V, d) is a matrix of its own rather than the token embeddings, decided from the tensors as
    transformers 5 decides: a head in the file that differs from the embeddings is the model's own even when
    config.json ties them (said in the report's notes); one equal to them is a redundant copy; a head config.json
    unties but the file lacks refuses the load."""
    found, emb = src.ledger.peek(head), src.ledger.peek(embedding)
    if found is None:
        if not tied:
            raise CheckpointError(
                f"config.json says {what} is its own matrix (tie_word_embeddings: false), but the file has no "
                f"{src.ledger.original.get(head, head)}"
            )
        return False
    same = emb is not None and found.shape == emb.shape and torch.equal(found.float(), emb.float())
    if same:
        src.ledger.mark_redundant(head, f"{what}, tied: equal to the token embeddings")
        return False
    if tied:
        src.report.notes.append(
            f"config.json ties {what} to the token embeddings, but the file's {src.ledger.original.get(head, head)} "
            "differs from them: it is used as the model's own head, as transformers does"
        )
    return True


def rename(
    ledger: Ledger, n_layers: int, top: Mapping[str, str], layer: Mapping[str, str], prefix: str
) -> dict[str, torch.Tensor]:
    """Tensors taken onto our names by two maps — ``top``: whole names; ``layer``: names below ``prefix`` (formatted
    with the layer ``i``) to names below ``blocks.{i}.``, weight and bias."""
    out: dict[str, torch.Tensor] = {}
    for src, dst in top.items():
        if src in ledger:
            out[dst] = ledger.take(src)
    for i in range(n_layers):
        for src, dst in layer.items():
            for part in ("weight", "bias"):
                key = f"{prefix.format(i=i)}{src}.{part}"
                if key in ledger:
                    out[f"blocks.{i}.{dst}.{part}"] = ledger.take(key)
    return out


def check_rotary(src: Folder, cfg: TransformerConfig) -> None:
    """Rotary frequencies an older export saved (``rotary_emb.inv_freq``) are redundant when they equal those the
    config gives; different ones (a scaled RoPE) would change every pattern, so the load is refused."""
    from model.rope_scaling import frequencies

    d = cfg.rope_dims
    expected = [frequencies(cfg.rope_spec, d, cfg.rope_base)[0]]  # as transformers initialises its buffer
    if cfg.rope_local_base and cfg.rope_local_base != cfg.rope_base:
        expected.append(frequencies(None, d, cfg.rope_local_base)[0])
    for name in src.ledger.pending():
        if not name.endswith("inv_freq"):
            continue
        freq = src.ledger.peek(name).float()
        if any(freq.shape == e.shape and torch.allclose(freq, e, rtol=1e-5, atol=0) for e in expected):
            src.ledger.mark_redundant(name, "RoPE's frequencies, equal to those config.json gives (recomputed)")
        else:
            raise CheckpointError(
                f"the file's rotary frequencies ({src.ledger.original.get(name, name)}) differ from those config.json "
                f"gives (θ = {cfg.rope_base:g} over {d} dimensions): a RoPE scaling config.json does not describe"
            )


def described(src: Folder, family: str) -> tuple[Any, LoadReport, dict[str, Any]]:
    """(the folder's tokenizer or None, the load report filled in, the model's info) once every tensor is accounted
    for: what was read, what became of each tensor, which files were left unread, the family it was read as."""
    tokenizer, tok_source, tok_files = folder_tokenizer(src.path, src.raw)
    report = src.ledger.fill(src.report)
    report.family, report.tokenizer = family, tok_source
    report.files += [f for f in tok_files if f not in report.files]
    report.unread = sorted(
        p.name for p in src.path.iterdir() if p.is_file() and p.name not in report.files and not p.name.startswith(".")
    )
    name = src.raw.get("_name_or_path") or src.path.name
    info = {
        "name": name if isinstance(name, str) and name else src.path.name,
        "source": str(src.path),
        "model_type": src.raw.get("model_type"),
        "family": family,
    }
    return tokenizer, report, info


def build(src: Folder, cfg: TransformerConfig, state: dict[str, torch.Tensor], family: str) -> LoadedModel:
    """Account for every tensor (what no rule takes refuses the load, named), find the tokenizer, build, and say
    which family it was read as and what was read."""
    if cfg.positional == "rope":
        check_rotary(src, cfg)
    unexpected = src.ledger.settle()
    tokenizer, report, info = described(src, family)
    loaded = build_from_state(cfg, {**state, **unexpected}, tokenizer, info)
    loaded.report = report
    return loaded


def config(**fields: Any) -> TransformerConfig:
    try:
        return TransformerConfig(dropout=0.0, **fields)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"this model cannot be built: {exc}") from None


def family_loader(
    anchor: str,
    base: str,
    make: Callable[[Folder], tuple[TransformerConfig, dict[str, torch.Tensor], str]],
    check: Callable[[Mapping[str, Any]], Any],
) -> Callable[[Path, Mapping[str, Any]], LoadedModel]:
    """A family's ``load(folder, raw)``: ``check`` the config (a refusal comes before any weight is read), open the
    folder under its plain names, let ``make`` decide the config and take the tensors, then build."""

    def load(folder: Path, raw: Mapping[str, Any]) -> LoadedModel:
        check(raw)
        src = open_folder(folder, raw, anchor, base)
        cfg, state, family = make(src)
        return build(src, cfg, state, family)

    return load


@dataclass(frozen=True)
class MLMNames:
    """Where a family keeps its masked-language-model head (plain names): the transform's dense layer and norm, the
    vocabulary matrix (``decoder``, with its bias) and a vocabulary bias kept apart from it (BERT's
    ``cls.predictions.bias``; None when the decoder's own bias is it)."""

    dense: str
    norm: str
    decoder: str
    bias: str | None = None


def take_mlm(src: Folder, names: MLMNames, embedding: str, d_model: int) -> tuple[dict[str, torch.Tensor], bool]:
    """The MLM head's tensors under our names (``mlm.*``) and whether its vocabulary matrix is its own (untied). A
    head stored without a dense or norm bias (ModernBERT) gets zeros there: the same function."""
    led = src.ledger
    tied = src.raw.get("tie_word_embeddings", True) is not False
    own = head_is_own(src, f"{names.decoder}.weight", embedding, tied, what="the MLM head's vocabulary matrix")
    zeros = torch.zeros(d_model)
    out = {
        "mlm.dense.weight": led.take(f"{names.dense}.weight"),
        "mlm.dense.bias": led.take(f"{names.dense}.bias") if f"{names.dense}.bias" in led else zeros,
        "mlm.ln.weight": led.take(f"{names.norm}.weight"),
        "mlm.ln.bias": led.take(f"{names.norm}.bias") if f"{names.norm}.bias" in led else zeros,
    }
    # the decoder's own bias is what transformers adds; a bias kept apart (BERT's cls.predictions.bias) is only tied
    # to it, and stands in for it when the file holds no decoder bias
    bias, dec_bias = names.bias, f"{names.decoder}.bias"
    apart = led.peek(bias) if bias is not None else None
    if dec_bias in led:
        out["mlm.bias"] = led.take(dec_bias)
        if apart is not None and torch.equal(apart.float(), out["mlm.bias"].float()):
            led.mark_redundant(bias, f"the vocabulary bias again, equal to {led.original.get(dec_bias, dec_bias)}")
        elif apart is not None:
            led.mark_left_out(
                bias,
                "a vocabulary bias the head does not add: its decoder's own bias is added, as transformers computes",
            )
    elif apart is not None:
        out["mlm.bias"] = led.take(bias)
    else:
        vocab = led.peek(embedding)
        out["mlm.bias"] = torch.zeros(vocab.size(0) if vocab is not None else 0)
    if own:
        out["mlm.decoder.weight"] = led.take(f"{names.decoder}.weight")
    return {k: v for k, v in out.items() if v is not None}, own
