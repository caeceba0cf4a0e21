"""The corpus job on Ray Data (optional: ``pip install "ray[data]==2.60.0"``): documents become a dataset,
``map_batches`` sends batches to a pool of actors that each load the model once, and the rows come back as one
DataFrame equal to the in-process job's. Local by default; ``address`` joins a running cluster."""

from __future__ import annotations

import pandas as pd

from model.io.catalog import ModelSpec, load
from model.profile.job import Batch, run_batch, table


class ProfileActor:
    """One model per Ray worker; a batch of documents in, their (document, layer, head) rows out."""

    def __init__(self, spec: ModelSpec, max_len: int) -> None:
        self.loaded = load(spec)
        self.limit = min(max_len, self.loaded.model.cfg.max_seq_len)

    def __call__(self, batch: pd.DataFrame) -> pd.DataFrame:
        tok = self.loaded.tokenizer
        encoded = [tok.encode(text, max_len=self.limit) for text in batch["text"]]
        rows = run_batch(self.loaded.model, Batch([int(d) for d in batch["doc"]], encoded), tok.pad_id)
        return table(rows)


def profile_with_ray(
    spec: ModelSpec, docs: list[str], *, max_len: int, batch_size: int, address: str | None = None, workers: int = 1
) -> pd.DataFrame:
    """The same table as :func:`model.profile.job.profile_corpus`, computed by ``workers`` Ray actors."""
    try:
        import ray
    except ImportError:
        raise RuntimeError('the Ray engine needs Ray: pip install "ray[data]==2.60.0"') from None
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        blocks = max(1, -(-len(docs) // batch_size))  # one block per batch, so every actor gets work
        items = [{"doc": i, "text": text} for i, text in enumerate(docs)]
        ds = ray.data.from_items(items, override_num_blocks=blocks)
        out = ds.map_batches(
            ProfileActor,
            fn_constructor_kwargs={"spec": spec, "max_len": max_len},
            batch_size=batch_size,
            batch_format="pandas",
            concurrency=workers,
        )
        frame = out.to_pandas()
    finally:
        if started:
            ray.shutdown()
    return table([{c: frame[c].to_numpy() for c in frame.columns}])
