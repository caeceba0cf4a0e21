"""Print the bundled model's card (Markdown) from the metadata stored in its checkpoint.

python scripts/model_card.py [assets/bundled.safetensors]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from model.io.checkpoint import load_checkpoint


def card(path: str) -> str:
    loaded = load_checkpoint(path)
    info, cfg = loaded.info, loaded.model.cfg
    held, base = info["held_out_mlm"], info["unigram_baseline"]
    size_mb = Path(path).stat().st_size / 2**20
    lines = [
        f"- **Architecture**: the classic pre-norm encoder, sinusoidal positions, {cfg.n_layers} layers × "
        f"{cfg.n_heads} heads, d_model {cfg.d_model}, d_ff {cfg.d_ff}, GELU, MLM head tied to the embeddings; "
        f"{cfg.parameter_count():,} parameters, {size_mb:.1f} MB.",
        f"- **Tokenizer**: lower-cased WordPiece, {cfg.vocab_size} tokens (`assets/tokenizer.json`, made by "
        "`python -m model.train tokenizer`).",
        f"- **Corpus**: {info['corpus']}; {info['train_tokens']:,} training tokens.",
        f"- **Command**: `{info['command']}` — {info['steps']} steps of {info['batch']} × {info['seq_len']} tokens, "
        f"{info['train_minutes']} minutes on 2 CPU cores ({info['torch_threads']} torch threads), seed 0.",
        *(
            [
                f"  It continued (`--init-from`) a checkpoint made by `{info['previous']['command']}` "
                f"({info['previous']['steps']} steps, {info['previous']['train_minutes']} minutes)."
            ]
            if info.get("previous")
            else []
        ),
        "",
        "| held-out masked tokens | loss (nats) | accuracy |",
        "| --- | --- | --- |",
        f"| this model | {held['loss']:.2f} | {held['accuracy']:.1%} |",
        f"| unigram baseline (always the most frequent token / unigram distribution) | {base['loss']:.2f} | "
        f"{base['accuracy']:.1%} |",
        "",
        "Per-head attention mass on held-out text (200 documents, up to 128 tokens each), against a random init "
        "of the same config:",
        "",
        "| head | previous | next | self | special | entropy | random init: previous / next / self |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row, rnd in zip(info["heads"], info["random_init_heads"]):
        lines.append(
            f"| L{row['layer']}H{row['head']} | {row['previous']:.2f} | {row['next']:.2f} | {row['self']:.2f} | "
            f"{row['special']:.2f} | {row['entropy']:.2f} | {rnd['previous']:.2f} / {rnd['next']:.2f} / "
            f"{rnd['self']:.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(card(sys.argv[1] if len(sys.argv) > 1 else "assets/bundled.safetensors"))
