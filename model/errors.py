"""The one error type for things a user can get wrong when loading weights or tokenizers."""


class CheckpointError(ValueError):
    """A checkpoint, config or tokenizer could not be used; the message says why and what to do."""
