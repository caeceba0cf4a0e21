"""``python -m model.profile corpus.jsonl --model minilm --out profiles/``: profile every head over a corpus.

Writes ``<out>/<model>__<corpus hash>/`` (heads.parquet, docs.parquet, meta.json), the folder the dashboard's
"Corpus profiles" page reads. ``--engine ray`` runs the batches on Ray Data actors (local, or a cluster with
``--address``); the result is the same table.
"""

from __future__ import annotations

import argparse
import sys

from model.errors import CheckpointError
from model.profile.corpus import CorpusError, bundled_documents, read_documents
from model.profile.job import BATCH_SIZE, MAX_LEN, head_means
from model.profile.run import ENGINES, run_profile, spec_from_arg


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m model.profile", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("corpus", help='a .txt or .jsonl file (up to 10 MB), or "bundled" for the held-out documents')
    p.add_argument("--model", default="minilm", help="bundled, minilm, smollm2, or a checkpoint file/folder path")
    p.add_argument("--out", default="profiles", help="folder the profile is written under")
    p.add_argument("--max-len", type=int, default=MAX_LEN, help="tokens per document (longer ones are cut)")
    p.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    p.add_argument("--limit", type=int, default=0, help="only the first N documents")
    p.add_argument("--device", default="cpu")
    p.add_argument("--engine", choices=ENGINES, default="local")
    p.add_argument("--address", default=None, help="Ray cluster address (default: a local Ray)")
    p.add_argument("--workers", type=int, default=1, help="Ray actors, one model each")
    p.add_argument("--force", action="store_true", help="recompute even if the profile exists")
    args = p.parse_args(argv)
    try:
        docs, ids = (bundled_documents(), None) if args.corpus == "bundled" else read_documents(args.corpus)
        if args.limit:
            docs, ids = docs[: args.limit], ids[: args.limit] if ids else None
        spec = spec_from_arg(args.model)

        def progress(done: int, total: int) -> None:
            print(f"\r{done}/{total} documents", end="", file=sys.stderr, flush=True)

        profile = run_profile(
            spec, docs, args.out, ids=ids, corpus_name=args.corpus, max_len=args.max_len, batch_size=args.batch_size,
            device=args.device, engine=args.engine, address=args.address, workers=args.workers,
            progress=progress, reuse=not args.force,
        )  # fmt: skip
    except (CorpusError, CheckpointError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    meta = profile.meta
    print(f"\n{profile.path}: {meta['documents']} documents, {meta['seconds']} s ({meta['engine']})", file=sys.stderr)
    means = head_means(profile.heads)
    for column in ("previous", "next", "share_cls", "share_sep", "share_pos0"):
        best = means.loc[means[column].idxmax()]
        print(f"strongest {column}: L{int(best['layer'])}H{int(best['head'])} {best[column]:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
