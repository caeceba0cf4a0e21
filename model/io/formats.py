"""Weight formats Attention Lab does not read, named as what they are, with what to do instead: ONNX graphs, TensorFlow
/ Keras HDF5 and .keras files, Flax msgpack, CTranslate2's model.bin, a GGUF under another name, nanochat's
checkpoints. Each check reads only a file's first bytes (or, for a state dict, its tensor names); nothing is parsed
further, nothing executed."""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Iterable
from pathlib import Path

EXPORT = (
    "Attention Lab reads PyTorch weights: a Hugging Face folder (model.safetensors or pytorch_model.bin, with "
    "config.json), a .safetensors or .pt state dict, or a LLaMA-family .gguf"
)
HDF5 = b"\x89HDF\r\n\x1a\n"


def _keras_zip(data: bytes) -> bool:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, OSError):
        return False
    return "model.weights.h5" in names or ("config.json" in names and "metadata.json" in names)


def _ctranslate2(data: bytes) -> bool:
    """CTranslate2's model.bin: a uint32 format version (1 to 10), then the spec's name ("TransformerSpec", …)."""
    if len(data) < 8:
        return False
    (version,) = struct.unpack("<I", data[:4])
    return 1 <= version <= 10 and b"Spec" in data[4:200]


def _onnx(data: bytes) -> bool:
    """An ONNX ModelProto starts with its ir_version (field 1, a varint) and a producer (field 2, a string)."""
    return len(data) > 4 and data[0] == 0x08 and data[1] < 0x80 and data[2] == 0x12


def foreign_format(data: bytes, name: str) -> str | None:
    """What a file is when it is a weight format Attention Lab does not read (and what to do), else None."""
    suffix = Path(name).suffix.lower()
    head = data[:256]
    if head.startswith(HDF5) or suffix in (".h5", ".hdf5"):
        return (
            "this is a TensorFlow/Keras HDF5 file (.h5), which Attention Lab does not read. With transformers, open "
            "it with from_tf=True and save it again (model.save_pretrained(folder) writes model.safetensors). " + EXPORT
        )
    if suffix == ".keras" or (head.startswith(b"PK\x03\x04") and suffix != ".zip" and _keras_zip(data)):
        return "this is a Keras model file (.keras), which Attention Lab does not read. " + EXPORT
    if suffix == ".onnx" or (suffix not in (".pt", ".pth", ".safetensors") and _onnx(head)):
        return (
            "this is an ONNX file: a computation graph for inference runtimes, not weights Attention Lab can "
            "rebuild its transformer from. Open the PyTorch model it was exported from and save its weights instead "
            "(safetensors.torch.save_file(model.state_dict(), 'model.safetensors')). " + EXPORT
        )
    if suffix == ".msgpack":
        return (
            "this is a Flax checkpoint (msgpack), which Attention Lab does not read. With transformers, open it "
            "with from_flax=True and save it again (model.save_pretrained(folder)). " + EXPORT
        )
    if head.startswith(b"GGUF") and suffix != ".gguf":
        return f"this is a GGUF file under the name {Path(name).name}: give it the .gguf extension to open it"
    if suffix == ".bin" and not head.startswith((b"PK\x03\x04", b"\x80")) and _ctranslate2(head):
        return (
            "this is a CTranslate2 model.bin (a converted model for fast inference), which Attention Lab does not "
            "read. Open the Hugging Face model it was converted from instead. " + EXPORT
        )
    return None


def foreign_folder(folder: Path) -> str | None:
    """What a folder's weights are when they are in a format Attention Lab does not read, else None."""
    names = {p.name for p in folder.iterdir()} if folder.is_dir() else set()
    if "model.bin" in names and names & {"shared_vocabulary.json", "vocabulary.json", "vocabulary.txt"}:
        return "this folder holds a CTranslate2 model (model.bin and its vocabulary), which Attention Lab does not read"
    for weights, what in (("tf_model.h5", "TensorFlow weights (tf_model.h5)"), ("flax_model.msgpack", "Flax weights")):
        if weights in names:
            flag = "from_tf=True" if weights.endswith(".h5") else "from_flax=True"
            return (
                f"this folder holds only {what}, which Attention Lab does not read. With transformers, open it with "
                f"{flag} and save it again (model.save_pretrained(folder) writes model.safetensors)"
            )
    if "model.onnx" in names or "onnx" in names:
        return "this folder holds an ONNX export, a graph rather than weights; open the folder it was exported from"
    return None


def nanochat_state(names: Iterable[str]) -> str | None:
    """A refusal for nanochat's checkpoints (its GPT's blocks name c_q, c_k, c_v), else None."""
    names = set(names)
    if any(n.startswith("transformer.h.") and ".attn.c_q." in n for n in names) and "transformer.wte.weight" in names:
        return (
            "this is a nanochat checkpoint (transformer.h.{i}.attn.c_q / c_k / c_v, parameter-free RMSNorm, QK-norm, "
            "ReLU² MLPs): a family Attention Lab does not carry yet. " + EXPORT
        )
    return None
