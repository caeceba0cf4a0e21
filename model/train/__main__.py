"""``python -m model.train tokenizer|mlm ...``: rebuild the bundled tokenizer and model (see the README)."""

from __future__ import annotations

import argparse
from pathlib import Path

from model.train.mlm import train_mlm
from model.train.tokenizer import train_tokenizer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m model.train", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tokenizer", help="train the WordPiece tokenizer")
    t.add_argument("--out", default="assets/tokenizer.json")
    t.add_argument("--vocab-size", type=int, default=8192)
    m = sub.add_parser("mlm", help="train the masked-language model")
    m.add_argument("--tokenizer", default="assets/tokenizer.json")
    m.add_argument("--out", default="assets/bundled.safetensors")
    m.add_argument("--layers", type=int, default=2)
    m.add_argument("--heads", type=int, default=4)
    m.add_argument("--d-model", type=int, default=128)
    m.add_argument("--max-seq-len", type=int, default=512)
    m.add_argument("--seq-len", type=int, default=64)
    m.add_argument("--batch", type=int, default=64)
    m.add_argument("--steps", type=int, default=6000)
    m.add_argument("--warmup", type=int, default=300)
    m.add_argument("--lr", type=float, default=1e-3)
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--threads", type=int, default=2)
    m.add_argument("--stop-at", type=float, default=0.0, help="stop once a head puts this much mass on a fixed offset")
    m.add_argument("--check-every", type=int, default=250)
    m.add_argument("--check-docs", type=int, default=24, help="held-out documents for the --stop-at check")
    m.add_argument("--min-steps", type=int, default=1000)
    m.add_argument("--init-from", default="", help="continue training this checkpoint (same config)")
    m.add_argument("--dropout", type=float, default=0.1)
    args = parser.parse_args(argv)
    if args.cmd == "tokenizer":
        tok = train_tokenizer(args.vocab_size)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(tok.to_str(), encoding="utf-8")
        print(f"wrote {args.out} ({tok.vocab_size} tokens)")
    else:
        train_mlm(args)


if __name__ == "__main__":
    main()
