"""Every way a reader of the post saves its encoder, opened by Attention Lab and compared with the post's own
forward pass (the reference in tests/reference/post_encoder.py): prints a Markdown table of what happens and the
largest differences in the final hidden state and in any attention weight, on three texts, padded and not.

    python scripts/post_parity.py
"""

from __future__ import annotations

import io
import json
import sys
import tempfile
import time
from pathlib import Path

import torch
from safetensors.torch import save as st_save

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model.errors import CheckpointError
from model.io.catalog import BUNDLED_TOKENIZER
from model.io.checkpoint import load_bytes, load_checkpoint
from model.io.tokenizer import Tokenizer
from tests.reference import post_encoder as ref


def pt(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def flat(model) -> dict[str, torch.Tensor]:
    return {k: v.contiguous() for k, v in model.state_dict().items()}


def cases():
    post = ref.make(seed=1)
    opt = torch.optim.AdamW(post.parameters())
    yield (
        "torch.save(model.state_dict(), 'enc.pt'), n_heads=4",
        post,
        lambda: load_bytes(pt(post.state_dict()), "enc.pt", n_heads=4),
    )
    yield (
        "safetensors save_file(model.state_dict()), n_heads=4",
        post,
        lambda: load_bytes(st_save(flat(post)), "enc.safetensors", n_heads=4),
    )
    yield (
        "safetensors with metadata {'n_heads': '4'}",
        post,
        lambda: load_bytes(st_save(flat(post), metadata={"n_heads": "4"}), "enc.safetensors"),
    )
    yield (
        "{'model_state_dict', 'optimizer_state_dict', 'epoch', 'config': {'n_heads': 4}}",
        post,
        lambda: load_bytes(
            pt(
                {
                    "model_state_dict": post.state_dict(),
                    "optimizer_state_dict": opt.state_dict(),
                    "epoch": 3,
                    "config": {"n_heads": 4},
                }
            ),
            "ckpt.pt",
        ),
    )
    yield (
        "DataParallel ('module.' prefix), n_heads=4",
        post,
        lambda: load_bytes(pt({f"module.{k}": v for k, v in post.state_dict().items()}), "dp.pt", n_heads=4),
    )
    mlm = ref.WithHead(post, 30522)
    yield (
        "encoder + output layer ('encoder.', 'head.'), n_heads=4",
        mlm,
        lambda: load_bytes(pt(mlm.state_dict()), "mlm.pt", n_heads=4),
    )
    for label, kwargs, answers in [
        ("post-norm blocks, norm='post'", {"post_norm": True}, {"norm": "post"}),
        ("learned positions (pos_enc.weight)", {"learned_positions": True}, {}),
        ("table not saved (persistent=False)", {"save_table": False, "max_seq_len": 512}, {}),
        ("no final LayerNorm", {"final_norm": False}, {}),
        ("biases on W_q/W_k/W_v/W_o", {"bias": True}, {}),
    ]:
        variant = ref.make(seed=2, **kwargs)
        yield label, variant, (lambda v=variant, a=answers: load_bytes(pt(v.state_dict()), "v.pt", n_heads=4, **a))
    folder = Path(tempfile.mkdtemp())
    (folder / "tokenizer.json").write_text(Tokenizer.from_file(BUNDLED_TOKENIZER).to_str())
    (folder / "config.json").write_text(json.dumps({"n_heads": 4}))
    torch.save(post.state_dict(), folder / "enc.pt")
    yield "a folder: enc.pt + config.json + tokenizer.json", post, lambda: load_checkpoint(folder)
    yield "torch.save(model, 'enc.pt') (a pickled module)", post, lambda: load_bytes(pt(post), "whole.pt")
    yield "no n_heads anywhere", post, lambda: load_bytes(pt(post.state_dict()), "enc.pt")


def main() -> None:
    tok = Tokenizer.from_file(BUNDLED_TOKENIZER)
    ids, mask = ref.batch(tok)
    print("| saved as | what happens | max Δ hidden | max Δ attention | load |")
    print("| --- | --- | --- | --- | --- |")
    for label, reference, load in cases():
        start = time.perf_counter()
        try:
            loaded = load()
        except CheckpointError as exc:
            print(f"| {label} | refused: {str(exc).split('. ')[0]} | — | — | — |")
            continue
        ms = (time.perf_counter() - start) * 1e3
        if loaded.model.cfg.n_heads != 4:
            print(f"| {label} | loads with {loaded.model.cfg.n_heads} heads and a warning | — | — | {ms:.0f} ms |")
            continue
        worst = [ref.parity(loaded.model, reference, ids, m) for m in (None, mask)]
        hidden, pattern = max(w[0] for w in worst), max(w[1] for w in worst)
        said = "; ".join(w.split(":")[0].split(" (")[0] for w in loaded.warnings) or "loads"
        print(f"| {label} | {said} | {hidden:.1e} | {pattern:.1e} | {ms:.0f} ms |")


if __name__ == "__main__":
    main()
