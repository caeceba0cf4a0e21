"""``python -m model.train tokenizer|mlm ...``: rebuild the bundled tokenizer and model (see docs/models.md)."""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from model.train.corpus import held_out_records
from model.train.mlm import store, train_mlm
from model.train.tokenizer import minilm_tokenizer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m model.train", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tokenizer", help="write the bundled tokenizer (BERT uncased, from all-MiniLM-L6-v2)")
    t.add_argument("--out", default="assets/tokenizer.json")
    h = sub.add_parser("held-out", help="write the held-out documents (assets/corpus/held_out.json.gz)")
    h.add_argument("--out", default="assets/corpus/held_out.json.gz")
    w = sub.add_parser("store", help="write a float32 checkpoint in the smallest storage within 1e-3 of float32")
    w.add_argument("source")
    w.add_argument("--out", default="assets/bundled.safetensors")
    m = sub.add_parser("mlm", help="train the masked-language model")
    m.add_argument("--tokenizer", default="assets/tokenizer.json")
    m.add_argument("--out", default="assets/bundled.safetensors")
    m.add_argument("--layers", type=int, default=4)
    m.add_argument("--heads", type=int, default=6)
    m.add_argument("--d-model", type=int, default=192)
    m.add_argument("--max-seq-len", type=int, default=512)
    m.add_argument("--seq-len", type=int, default=128)
    m.add_argument("--batch", type=int, default=32)
    m.add_argument("--steps", type=int, default=20000)
    m.add_argument("--warmup", type=int, default=500)
    m.add_argument("--lr", type=float, default=1e-3)
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--threads", type=int, default=2)
    m.add_argument("--dropout", type=float, default=0.1)
    m.add_argument("--init-from", default="", help="continue training this checkpoint (same config)")
    m.add_argument(
        "--init-embeddings",
        default="minilm",
        choices=("minilm", "random"),
        help="start token embeddings from MiniLM's (PCA to d_model) or at random",
    )
    m.add_argument(
        "--freeze-embeddings", type=int, default=1000, help="keep the token embeddings fixed this many steps"
    )
    m.add_argument("--eval-every", type=int, default=1000, help="evaluate and save every this many steps")
    m.add_argument("--eval-windows", type=int, default=256)
    m.add_argument("--check-docs", type=int, default=100, help="held-out documents for the positional-head check")
    m.add_argument("--stop-at", type=float, default=0.0, help="stop once a head puts this much mass on a fixed offset")
    m.add_argument("--min-steps", type=int, default=1000)
    m.add_argument(
        "--distill",
        default="",
        help="student heads that copy all-MiniLM-L6-v2 heads, as student=teacher layer.head pairs: 0.0=0.2,1.0=1.8",
    )
    m.add_argument("--distill-weight", type=float, default=1.0, help="weight of the distillation loss")
    m.add_argument("--distill-rows", type=int, default=8, help="sequences of each batch the teacher also reads")
    m.add_argument(
        "--stop-step", type=int, default=0, help="stop after this step (the learning-rate schedule still spans --steps)"
    )
    m.add_argument("--half", action="store_true", help="store the weights in float16")
    m.add_argument("--sources", default="", help="train only on these corpus sources (comma-separated; default all)")
    m.add_argument(
        "--round-embeddings",
        action="store_true",
        help="with --init-from: round the token embeddings to float16 values first (freeze them for the whole run, "
        "and the rest of the model adapts; the embedding is then stored in float16 without loss)",
    )
    args = parser.parse_args(argv)
    if args.cmd == "tokenizer":
        tok = minilm_tokenizer()
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(tok.to_str(), encoding="utf-8")
        print(f"wrote {args.out} ({tok.vocab_size} tokens)")
    elif args.cmd == "store":
        info = store(args.source, args.out)
        print(f"wrote {args.out}: {info['storage']}, largest hidden difference {info['float16']['hidden']:.1e}")
    elif args.cmd == "held-out":
        records = held_out_records()
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_bytes(gzip.compress(json.dumps(records).encode(), mtime=0))
        print(f"wrote {args.out} ({len(records)} documents)")
    else:
        train_mlm(args)


if __name__ == "__main__":
    main()
