"""Attention Lab's model layer: a from-scratch PyTorch encoder and the tools to look inside it.

Imports torch only (never streamlit or plotly).
"""

from model.attention import MultiHeadAttention, attention_scores, masked_softmax, scaled_dot_product_attention
from model.capture import KINDS, Trace, capture, hook_name, run_with_cache
from model.config import TransformerConfig
from model.transformer import Transformer, TransformerBlock

__all__ = [
    "KINDS",
    "MultiHeadAttention",
    "Trace",
    "Transformer",
    "TransformerBlock",
    "TransformerConfig",
    "attention_scores",
    "capture",
    "hook_name",
    "masked_softmax",
    "run_with_cache",
    "scaled_dot_product_attention",
]
