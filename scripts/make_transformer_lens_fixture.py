"""What TransformerLens computes for direct logit attribution, the logit lens and activation patching on a tiny
random GPT-2 (run once, offline, in a throwaway environment; the project never imports transformer_lens):

    python -m venv --system-site-packages /tmp/hfenv
    /tmp/hfenv/bin/pip install --no-deps "transformers>=5,<6" huggingface-hub regex typer tqdm pyyaml packaging \
        accelerate psutil transformer_lens==4.3.0 einops fancy_einsum jaxtyping wadler_lindig beartype typeguard \
        rich markdown-it-py mdurl pygments sentencepiece protobuf datasets pyarrow dill xxhash multiprocess fsspec
    HF_HUB_OFFLINE=1 /tmp/hfenv/bin/python scripts/make_transformer_lens_fixture.py

Writes tests/fixtures/transformer_lens/gpt2/ (the model as ``save_pretrained`` writes it: 3 layers, d_model 32,
weights large enough that the two prompts give different answers, norms with non-trivial weights and biases) and
tests/fixtures/transformer_lens/reference.safetensors: the prompts (token ids), the clean and corrupted logit
differences, TransformerLens's patching sweeps (``transformer_lens.patching``: resid_pre, attn_out, mlp_out per
layer × position, head outputs z per layer × head, as raw logit differences), its per-head and per-MLP direct
logit attribution (``stack_head_results`` / ``decompose_resid`` through ``logit_attrs``, which applies the final
norm's cached scale) and its logit lens (``accumulated_resid(apply_ln=True)`` through W_U) at the last position;
the gradient of the logit difference at every head's output z in the corrupted run (``run_with_hooks`` with
``bwd_hooks``), attribution patching of z computed from it as Nanda's demo does, and the Q-, K- and V-composition
scores between all heads (``all_composition_scores``). tests/model/test_transformer_lens.py compares on every run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformer_lens import patching
from transformer_lens.model_bridge import TransformerBridge
from transformers import GPT2Config, GPT2LMHeadModel

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "tests" / "fixtures" / "transformer_lens" / "gpt2"
OUT = FOLDER.parent / "reference.safetensors"
# two prompts of 12 tokens that differ at positions 3 and 8 (a name swapped, as in IOI), answer and foil tokens
CLEAN = [17, 201, 33, 90, 141, 7, 260, 58, 301, 77, 412, 65]
CORRUPTED = [17, 201, 33, 301, 141, 7, 260, 58, 90, 77, 412, 65]


def make_model() -> tuple[int, int]:
    """Save the random GPT-2; returns (answer, foil): the clean run's likeliest last token and the corrupted's."""
    torch.manual_seed(0)
    cfg = GPT2Config(
        vocab_size=512,
        n_positions=64,
        n_embd=32,
        n_layer=3,
        n_head=4,
        initializer_range=0.25,
        bos_token_id=0,
        eos_token_id=0,
    )
    hf = GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
                p.copy_(1 + 0.3 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn_like(p))
        clean = hf(torch.tensor([CLEAN])).logits[0, -1]
        corrupted = hf(torch.tensor([CORRUPTED])).logits[0, -1]
    shutil.rmtree(FOLDER, ignore_errors=True)
    hf.save_pretrained(FOLDER)
    shutil.copy(ROOT / "tests" / "fixtures" / "hf" / "gpt2" / "tokenizer.json", FOLDER / "tokenizer.json")
    answer, foil = int(clean.argmax()), int(corrupted.argmax())
    if answer == foil:
        raise SystemExit("both prompts give the same answer: change the seed or the prompts")
    return answer, foil


def gradients(bridge, clean_cache, corrupted: torch.Tensor, logit_diff) -> dict[str, torch.Tensor]:
    """TransformerLens's backward hooks on every hook_z of the corrupted run, and attribution patching of z from
    them: Σ over positions and d_head of (clean z − corrupted z) · ∂ logit diff / ∂ z."""
    grads: dict[str, torch.Tensor] = {}
    acts: dict[str, torch.Tensor] = {}

    def keep_grad(grad, hook):
        grads[hook.name] = grad.detach()

    def keep(z, hook):
        acts[hook.name] = z.detach()

    is_z = lambda name: name.endswith("attn.hook_z")  # noqa: E731
    bridge.reset_hooks()
    bridge.add_hook(is_z, keep, "fwd")
    bridge.add_hook(is_z, keep_grad, "bwd")
    try:
        logit_diff(bridge(corrupted)).backward()
    finally:
        bridge.reset_hooks()
    names = sorted(grads, key=lambda n: int(n.split(".")[1]))
    grad_z = torch.stack([grads[n][0] for n in names])  # (L, N, H, d_head)
    delta = torch.stack([clean_cache[n][0] - acts[n][0] for n in names])  # (L, N, H, d_head)
    return {"grad_z": grad_z, "attribution_z": (delta * grad_z).sum(dim=(1, 3))}  # (L, H)


def main() -> None:
    answer_id, foil_id = make_model()
    bridge = TransformerBridge.boot_transformers(str(FOLDER), device="cpu", dtype=torch.float64)
    bridge.enable_compatibility_mode()
    clean, corrupted = torch.tensor([CLEAN]), torch.tensor([CORRUPTED])

    def logit_diff(logits: torch.Tensor) -> torch.Tensor:
        return logits[0, -1, answer_id] - logits[0, -1, foil_id]

    clean_logits, clean_cache = bridge.run_with_cache(clean)
    corrupted_logits = bridge(corrupted)
    sweeps = {
        "resid_pre": patching.get_act_patch_resid_pre,
        "attn_out": patching.get_act_patch_attn_out,
        "mlp_out": patching.get_act_patch_mlp_out,
        "z": patching.get_act_patch_attn_head_out_all_pos,
    }
    out = {f"patch_{k}": fn(bridge, corrupted, clean_cache, logit_diff) for k, fn in sweeps.items()}
    # logit_attrs applies the final norm's cached scale itself: the stacks go in as they are (apply_ln=False)
    heads = clean_cache.stack_head_results(layer=-1, pos_slice=-1)  # (L·H, 1, d_model)
    layers, labels = clean_cache.decompose_resid(layer=-1, pos_slice=-1, return_labels=True)
    mlps = torch.stack([layers[i] for i, name in enumerate(labels) if name.endswith("_mlp_out")])
    answer, foil = torch.tensor([answer_id]), torch.tensor([foil_id])
    out["dla_heads"] = clean_cache.logit_attrs(heads, answer, foil, pos_slice=-1).reshape(
        bridge.cfg.n_layers, bridge.cfg.n_heads
    )
    out["dla_mlps"] = clean_cache.logit_attrs(mlps, answer, foil, pos_slice=-1).reshape(-1)
    out["dla_total"] = clean_cache.logit_attrs(layers, answer, foil, pos_slice=-1).sum().reshape(1)
    lens = clean_cache.accumulated_resid(layer=None, pos_slice=-1, apply_ln=True)  # (L + 1, 1, d_model)
    out["lens_logits"] = lens[:, 0] @ bridge.W_U + bridge.b_U  # (L + 1, V)
    out.update(gradients(bridge, clean_cache, corrupted, logit_diff))
    for mode in "QKV":
        out[f"composition_{mode}"] = bridge.all_composition_scores(mode).scores  # (L, H, L, H)
    out["clean_logit_diff"] = logit_diff(clean_logits).reshape(1)
    out["corrupted_logit_diff"] = logit_diff(corrupted_logits).reshape(1)
    out["clean_ids"], out["corrupted_ids"] = clean[0], corrupted[0]
    out["answer_foil"] = torch.tensor([answer_id, foil_id])
    tensors = {k: v.detach().contiguous() for k, v in out.items()}
    save_file(tensors, OUT, metadata={"transformer_lens": "4.3.0"})
    for k, v in tensors.items():
        print(k, tuple(v.shape), v.flatten()[:4].tolist())


if __name__ == "__main__":
    main()
