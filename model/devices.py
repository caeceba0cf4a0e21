"""Which compute devices exist here, and a safe way to pick one."""

from __future__ import annotations

import torch


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
