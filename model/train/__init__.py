"""Training the bundled assets: corpus, tokenizer, masked-language model. Run with ``python -m model.train``."""
