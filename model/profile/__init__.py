"""Every head across a corpus: per-document head metrics in batches, stored as parquet, read back instantly.

corpus      reading a .txt/.jsonl corpus (size-limited) and the bundled held-out documents
job         the in-process job: batches, progress, cancel; one row per (document, layer, head)
store       the parquet files on disk, written atomically, keyed by model and corpus hash
ray_engine  the same job on Ray Data (optional: ``pip install "ray[data]"``)

``python -m model.profile corpus.jsonl --model minilm --out profiles/`` runs it from the command line.
"""
