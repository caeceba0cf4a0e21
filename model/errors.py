"""The one error type for things a user can get wrong when loading weights or tokenizers, and the cure for the
commonest: handing a module that is not ours to a function that needs ours."""


class CheckpointError(ValueError):
    """A checkpoint, config or tokenizer could not be used; the message says why and what to do."""


def foreign_module(module: object, needed_by: str) -> str:
    """What to say when ``needed_by`` is given a module that is not an Attention Lab Transformer (the post's own
    TransformerEncoder, say): it has none of our hook points, so convert it, or save its weights as they are."""
    return (
        f"{needed_by} needs an Attention Lab Transformer; this {type(module).__name__} has none of its hook points "
        "(blocks.{i}.attn.hook_pattern, …). Convert it first — the post's encoder converts as it is:\n"
        "    from model.io.post import from_module\n"
        "    loaded = from_module(model)          # n_heads is read from the module; pass n_heads=… otherwise\n"
        "    loaded.model                         # an Attention Lab Transformer with the same weights\n"
        "or save its weights, torch.save(model.state_dict(), 'encoder.pt'), and open that file."
    )
