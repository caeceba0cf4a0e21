"""Speaker notes for a lecture deck: what each view shows and a question to ask the room. The numbers come
from the figure's computed caption; these sentences only say how to read it."""

from __future__ import annotations

#: view key (its part suffix dropped) -> (what it shows, a question to ask)
NOTES: dict[str, tuple[str, str]] = {
    "attention": (
        "One head's softmax weights: each row is a query token, each column a key; a row sums to 1.",
        "Pick a row: which key does this token take most of its information from, and why that one?",
    ),
    "heads": (
        "Every head of one layer side by side, on one colour scale.",
        "Which heads do the same thing? Which one looks different from all the others?",
    ),
    "mean": (
        "The layer's weights averaged over its heads: what the layer does on average hides what each head does.",
        "What is lost when we average the heads? Find a head whose pattern disappears in the mean.",
    ),
    "headview": (
        "Lines from each query (left) to the keys it attends to (right); opacity is the weight.",
        "Follow the highlighted token: where does it look, and who looks at it?",
    ),
    "overview": (
        "Every head of every layer as a thumbnail: the model's attention at a glance.",
        "How do patterns change from the first layers to the last?",
    ),
    "compare": (
        "Two attention patterns side by side and their difference.",
        "Where do the two patterns disagree most, and what could explain it?",
    ),
    "similarity": (
        "How far apart heads' patterns are (Jensen–Shannon distance), clustered.",
        "Which heads are redundant? Would removing one of them change the output much?",
    ),
    "corpus": (
        "Heads' behaviour measured over a whole corpus, not one sentence.",
        "Is what we saw on our sentence typical for this head, or an exception?",
    ),
    "next": (
        "What the decoder predicts next, and how attention led there.",
        "Which earlier tokens does the prediction depend on?",
    ),
    "lesson.sinks": (
        "How much weight goes to the first token (the attention sink) and what the head does without it.",
        "Why would a head put most of its weight on a token that carries no meaning?",
    ),
    "lesson.induction": (
        "A repeated random sequence: induction heads look at the token after the previous occurrence.",
        "On the second copy, which position should an induction head attend to, and why does that help predict?",
    ),
    "lesson.gqa": (
        "Grouped-query attention: several query heads share one key/value head.",
        "What does sharing K and V save, and what might it cost?",
    ),
    "find": (
        "Heads ranked by how well they match a relation (previous token, same word, …).",
        "Which head is the best match, and is its score convincing?",
    ),
    "qkv.x": ("The input vectors X of one layer: one row per token.", "What do the rows of X stand for?"),
    "qkv.projections": (
        "X times W_Q, W_K, W_V: every token gets a query, a key and a value.",
        "Why three different projections of the same token?",
    ),
    "qkv.scores": (
        "From Q·Kᵀ to scaled scores: the raw dot products, divided by √d_k, then masked.",
        "What would the softmax do to the unscaled scores on the left?",
    ),
    "qkv.softmax": (
        "The softmax turns each row of scores into weights that sum to 1.",
        "If one score is much larger than the rest, what does its row of weights look like?",
    ),
    "qkv.z": ("Each token's output: the weights times the values.", "Which value vectors dominate this output?"),
    "qkv.output": (
        "The heads' outputs concatenated and projected by W_O.",
        "Why project the concatenated heads at all?",
    ),
    "qkv.query": (
        "One query's scores against every key, and the weights they become.",
        "Which key wins, and by how much after the softmax?",
    ),
    "qkv.plane": (
        "Queries and keys in a 2-D projection: a large dot product means a key close in direction to the query.",
        "Which keys point the same way as the query?",
    ),
    "qkv.values": ("The value vectors being mixed.", "What would happen if every value were the same?"),
    "rollout": (
        "Attention rollout: weights multiplied through the layers (with the residual), an estimate of token mixing.",
        "Why does rollout spread out more than any single layer's attention?",
    ),
    "flow": (
        "Attention flow: the maximum flow through the layers' attention graph.",
        "How does flow differ from rollout?",
    ),
    "pe": (
        "Sinusoidal positional encodings: each dimension a sinusoid with its own wavelength.",
        "Why do some dimensions change quickly with position and others slowly?",
    ),
    "perm": (
        "The permutation lab: shuffle the tokens, run the model, un-shuffle the pattern and compare.",
        "Without positions, would the model notice the shuffle at all?",
    ),
    "lesson.predict": (
        "Predict first: where does the query look? The bars show its row of weights, the guess in blue.",
        "Before the answer: which token will it attend to most?",
    ),
    "lesson.scaling": (
        "Why attention divides by √d_k: the spread of dot products of random vectors grows with d_k.",
        "What happens to the softmax of scores that grow with the dimension?",
    ),
    "lesson.spread": (
        "A head metric for the trained model against the same model at random initialisation.",
        "Which behaviour did training create, and which was there from the start?",
    ),
    "lesson.ablation": (
        "Turn heads off and see how much the output changes.",
        "Is the head that looks most interesting also the one that matters most?",
    ),
    "lesson.mlm": (
        "The masked-word prediction and the attention behind it.",
        "Which tokens helped the model fill the blank?",
    ),
    "masks": (
        "Masks: what a query may not see (causal, padding) becomes −∞ before the softmax.",
        "What would go wrong in training without the causal mask?",
    ),
    "mixing": (
        "Beyond the weights: how much each token actually contributes, once value norms count.",
        "Why can a large attention weight contribute little?",
    ),
    "sinks": (
        "Where the attention sink's weight goes, and whether it carries information.",
        "Is attention to the sink a way of doing nothing?",
    ),
}
FALLBACK = ("The figure as it was on screen.", "What does this figure show that the previous one did not?")


def notes_for(key: str) -> tuple[str, str]:
    """(what it shows, a question) for a view key such as "qkv.scores" or "compare.heads.A"."""
    parts = key.split(".")
    for n in range(len(parts), 0, -1):
        found = NOTES.get(".".join(parts[:n]))
        if found:
            return found
    return FALLBACK


def speaker_notes(key: str, caption: str, source: str) -> str:
    """The notes of one slide: what it shows, the numbers (the computed caption), a question, where it comes from."""
    what, question = notes_for(key)
    lines = [f"What it shows: {what}"]
    if caption:
        lines.append(f"The numbers: {caption}")
    lines += [f"Ask: {question}", f"Source: {source}"]
    return "\n\n".join(lines)


def lecture_notes(item: dict) -> str:
    """A lecture slide's notes: what it shows, its numbers, the question for the room and the answer to expect
    (computed from the slide's numbers, viz/export/lecture_story.py), why this token and head, where it comes from."""
    what, _ = notes_for(item["key"])
    told = item.get("notes") or {}
    lines = [f"What it shows: {what}"]
    if item.get("caption"):
        lines.append(f"The numbers: {item['caption']}")
    if told.get("ask"):
        lines.append(f"Ask the room: {told['ask']}")
    if told.get("answer"):
        lines.append(f"Expected answer: {told['answer']}")
    if told.get("chosen"):
        lines.append(f"Why this token and head: {told['chosen']}.")
    lines.append(f"Source: {item['source']}")
    return "\n\n".join(lines)
