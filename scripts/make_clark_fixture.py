"""Make the reference for Clark et al.'s head statistics with their own code (run once, offline).

    git clone https://github.com/clarkkev/attention-analysis /tmp/attention-analysis
    python scripts/make_clark_fixture.py /tmp/attention-analysis

Executes the two cells of their General_Analysis.ipynb that compute the statistics (the per-token-type averages
"self", "right", "left", "sep", "sep_sep", "rest_sep", "cls", "punct", and the entropies) as they are, on the bundled
model's attention over five bundled held-out documents (their `data` list of {"tokens", "attns"}); the only edit is
their hard-coded BERT-base shape np.zeros((12, 12)), replaced by the bundled model's (layers, heads). Writes
tests/fixtures/clark_reference.safetensors: each document's token ids and their results, which
tests/model/test_clark.py compares with model/analysis/clark.py on the bundled model's attention over the same ids.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
OUT = ROOT / "tests" / "fixtures" / "clark_reference.safetensors"
KEYS = {"self": "self", "right": "next", "left": "previous", "sep": "sep", "sep_sep": "sep_sep",
        "rest_sep": "rest_sep", "cls": "cls", "punct": "punct"}  # fmt: skip


def their_cells(repo: Path) -> list[str]:
    """The notebook cells that compute the statistics, as written."""
    cells = json.loads((repo / "General_Analysis.ipynb").read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    return [next(c for c in code if c.startswith("avg_attns = {")), next(c for c in code if "entropies_cls" in c)]


def main(repo: Path) -> None:
    from model.io.catalog import ModelSpec, load
    from model.observe import Options, observe
    from model.profile.corpus import bundled_documents

    loaded = load(ModelSpec("bundled"))
    cfg = loaded.model.cfg
    data, tensors = [], {}
    for i, text in enumerate(bundled_documents()[::200][:5]):
        obs = observe(loaded.model, loaded.tokenizer, text, Options(max_len=64))
        data.append({"tokens": list(obs.tokens), "attns": obs.patterns.astype(np.float64)})
        tensors[f"doc{i}.ids"] = torch.tensor(loaded.tokenizer.encode(text, max_len=64).ids)  # the test reruns them

    def data_iterator():  # theirs prints progress; the documents are the same
        for doc in data:
            yield doc["tokens"], np.array(doc["attns"])

    scope = {"np": np, "data": data, "n_docs": len(data), "data_iterator": data_iterator}
    for cell in their_cells(repo):
        exec(cell.replace("np.zeros((12, 12))", f"np.zeros(({cfg.n_layers}, {cfg.n_heads}))"), scope)
    for theirs, ours in KEYS.items():
        tensors[f"clark.{ours}"] = torch.from_numpy(scope["avg_attns"][theirs])
    tensors["clark.entropy"] = torch.from_numpy(scope["entropies"])
    tensors["clark.entropy_cls"] = torch.from_numpy(scope["entropies_cls"])
    save_file(tensors, str(OUT), metadata={"documents": str(len(data)), "source": "clarkkev/attention-analysis"})
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size / 1024:.0f} KB)")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
