"""Getting weights and text in: tokenizers, checkpoints, importers (BERT) and the catalog of loadable models.

Import order (no circles): ``tokenizer`` and ``state`` are the base; ``checkpoint`` and ``bert`` build on
them; ``catalog`` builds on everything.
"""
