"""Reading ``.pt``/``.pth`` files safely: ``torch.load(weights_only=True)`` only, and when PyTorch refuses a
file, a reading of its pickle's opcodes (never running them) to say what the file holds and what to save
instead."""

from __future__ import annotations

import io
import pickle  # only for its exception type: nothing is ever unpickled
import pickletools
import zipfile
from typing import Any

import torch

from model.errors import CheckpointError

ACCEPTED = (
    "Attention Lab reads .pt/.pth files that hold only tensors, numbers, strings, lists and dicts: the post's "
    "torch.save(model.state_dict(), path), a dict such as {'model_state_dict': ..., 'config': {...}}, or its own "
    "{'config': {...}, 'state_dict': {...}}"
)
SAVE_STATE = "save the weights instead: torch.save(model.state_dict(), 'encoder.pt')"


def pickled_globals(data: bytes) -> list[str]:
    """The ``module.name`` of every class or function a torch.save archive's pickle refers to, read from its
    opcodes with :mod:`pickletools` (which parses, and never executes, them)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            name = next((n for n in archive.namelist() if n.endswith("data.pkl")), None)
            raw = archive.read(name) if name else b""
    except (zipfile.BadZipFile, OSError, KeyError):
        return []
    found: list[str] = []
    strings: list[str] = []
    try:
        for op, arg, _pos in pickletools.genops(raw):
            if op.name in ("GLOBAL", "INST") and isinstance(arg, str):
                found.append(arg.replace(" ", "."))
            elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                found.append(f"{strings[-2]}.{strings[-1]}")
            if isinstance(arg, str) and "UNICODE" in op.name:
                strings.append(arg)
    except Exception:  # a damaged pickle: report what was read up to there
        pass
    return list(dict.fromkeys(found))


_PLAIN = ("collections.OrderedDict", "torch._utils.", "torch.", "builtins.set", "builtins.frozenset")


def torch_load_problem(data: bytes, exc: Exception) -> str:
    """What is wrong with bytes that ``torch.load(weights_only=True)`` refused, and what to save instead, in our
    words (PyTorch's message suggests disabling the safety check, which is the wrong advice for an untrusted
    file)."""
    if data[:4] == b"PK\x03\x04":
        if isinstance(exc, pickle.UnpicklingError):
            names = pickled_globals(data)
            if any(n.startswith("torch.nn.modules.") for n in names):
                classes = [
                    n for n in names if not n.startswith(("torch.", "collections.", "builtins.", "__builtin__."))
                ]
                what = f" ({', '.join(classes[:3])})" if classes else ""
                return (
                    f"this file is a whole pickled model{what}, as torch.save(model, path) writes it; it is never "
                    f"unpickled here, because unpickling can run code. To open it, {SAVE_STATE}"
                )
            if "argparse.Namespace" in names:
                return (
                    "this PyTorch file holds an argparse.Namespace, which is never unpickled here, because "
                    "unpickling can run code; store vars(args), a plain dict, instead"
                )
            odd = [n for n in names if not n.startswith(_PLAIN)]
            what = f" ({', '.join(odd[:3])})" if odd else ""
            return (
                f"this PyTorch file holds Python objects beyond plain tensors and containers{what}; they are never "
                "unpickled here, because unpickling can run code"
            )
        return "this PyTorch file is damaged or cut short: its zip archive cannot be read"
    if data[:1] == b"\x80":
        return "this is a bare pickle, not a file written by torch.save; it is never unpickled here"
    return "this is not a PyTorch file: it has neither the zip archive of torch.save nor a pickle header"


def read_torch(data: bytes) -> Any:
    """``torch.load(weights_only=True)`` of untrusted bytes on the CPU; every refusal as a CheckpointError that
    says what the file holds and what Attention Lab reads."""
    if not data:
        raise CheckpointError("the file is empty")
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:  # PyTorch's own text would advise weights_only=False: never pass it on
        raise CheckpointError(f"{torch_load_problem(data, exc)}. {ACCEPTED}") from None
