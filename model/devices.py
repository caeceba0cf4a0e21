"""Which compute devices exist here, and a safe way to pick one."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from model.transformer import Transformer


def available_devices() -> list[str]:
    """ "cpu", then each CUDA device ("cuda:0", ...), then "mps" when present."""
    devices = ["cpu"]
    try:
        if torch.cuda.is_available():
            devices += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    except Exception:  # a broken driver must not break the app
        pass
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
    return devices


def device_label(device: str) -> str:
    if device.startswith("cuda"):
        try:
            return f"{device} — {torch.cuda.get_device_name(torch.device(device))}"
        except Exception:
            return device
    return {"cpu": "CPU", "mps": "Apple MPS"}.get(device, device)


def resolve_device(requested: str) -> tuple[str, str | None]:
    """(device to use, message explaining a fallback to the CPU or None)."""
    if requested in available_devices():
        return requested, None
    return "cpu", f"Device {requested!r} is not available here; running on the CPU instead."


_cpu_copies: dict[int, torch.nn.Module] = {}


def model_on_cpu(model: Transformer) -> Transformer:
    """A CPU copy of a model that lives on an accelerator (the original is never moved)."""
    if next(model.parameters()).device.type == "cpu":
        return model
    key = id(model)
    if key not in _cpu_copies:
        from model.transformer import Transformer

        copy = Transformer(model.cfg)
        copy.load_state_dict({k: v.to("cpu") for k, v in model.state_dict().items()})
        copy_buffers(copy, model)
        _cpu_copies[key] = copy.eval()
    return _cpu_copies[key]


def copy_buffers(dst: Transformer, src: Transformer) -> None:
    """Give ``dst`` (on the CPU) every buffer of ``src``, those outside the state dict too: a sinusoidal table read
    from a checkpoint, a decoder's bound source (``TransformerBlock.memory``)."""
    with torch.no_grad():
        for name, theirs in src.named_buffers():
            owner, _, leaf = name.rpartition(".")
            setattr(dst.get_submodule(owner), leaf, theirs.to("cpu").clone())
