"""Make the integrated-gradients reference: Captum's LayerIntegratedGradients on Hugging Face's own LLaMA code for
SmolLM2-135M-Instruct (run once, offline).

Needs a throwaway environment with transformers, gguf and captum (captum imports matplotlib):

    python -m venv --system-site-packages /tmp/igvenv
    /tmp/igvenv/bin/pip install "transformers==5.25.*" gguf matplotlib accelerate
    /tmp/igvenv/bin/pip install --no-deps captum
    /tmp/igvenv/bin/python scripts/make_ig_fixture.py

It reads the same GGUF file as the app and shares nothing of ours: the model is transformers', the path, the
quadrature and the scaling by (input − baseline) are Captum's (its default Gauss–Legendre rule at 4,096 points, a
path SmolLM2's output climbs in steep steps along). The baseline is the padding token's embedding at every
position, as model/analysis/gradients.py has it; the outputs are the next-token logit of the model's top guess and
the final state projected on its own direction. tests/model/test_ig_reference.py compares against the file this
writes (tests/fixtures/ig_reference.safetensors).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from captum.attr import LayerIntegratedGradients
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_smollm_fixture import hf_smollm

TEXT = "The cat sat on the mat because it was tired and the dog"
STEPS = 4096
OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "ig_reference.safetensors"


def main() -> None:
    tok, model = hf_smollm()
    ids = torch.tensor([tok(TEXT, add_special_tokens=False)["input_ids"]])  # (1, N)
    position, pad = ids.size(1) - 2, int(model.config.pad_token_id)
    baseline = torch.full_like(ids, pad)
    with torch.no_grad():
        out = model(ids, output_hidden_states=True)
    token = int(out.logits[0, position].argmax())
    h = out.hidden_states[-1][0, position]  # after the final RMSNorm
    u = h / h.norm()
    outputs = {
        "next": lambda x: model(x).logits[:, position, token],
        "state": lambda x: model(x, output_hidden_states=True).hidden_states[-1][:, position] @ u,
    }
    tensors = {"ids": ids[0], "position": torch.tensor(position), "pad": torch.tensor(pad)}
    tensors["token"] = torch.tensor(token)
    for key, f in outputs.items():
        lig = LayerIntegratedGradients(f, model.model.embed_tokens)
        attributions, delta = lig.attribute(
            ids, baselines=baseline, n_steps=STEPS, internal_batch_size=64, return_convergence_delta=True
        )
        with torch.no_grad():
            value, base_value = float(f(ids)[0]), float(f(baseline)[0])
        tensors[f"{key}.integrated"] = attributions[0].sum(-1).detach().contiguous()  # (N,)
        tensors[f"{key}.value"] = torch.tensor(value)
        tensors[f"{key}.baseline_value"] = torch.tensor(base_value)
        tensors[f"{key}.delta"] = delta.detach().reshape(()).float()
        print(key, value, base_value, float(delta), tensors[f"{key}.integrated"].tolist())
    save_file(tensors, str(OUT))
    print("wrote", OUT)


if __name__ == "__main__":
    main()
