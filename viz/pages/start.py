"""Start here: what an attention map shows, what to click first, and which model carries which lesson."""

import pandas as pd
import streamlit as st

from model.io.catalog import ModelSpec, available
from viz.figures.text import mask_fillers, pct
from viz.shell.claims import CLAIMS, open_claim
from viz.shell.context import page_context
from viz.shell.services import views
from viz.shell.widgets import follow_open_page, plain, show_view
from viz.views.captions import quoted_at
from viz.views.find import COREFERENCE, lesson_map

follow_open_page()
ctx = page_context()
obs = ctx.obs
st.title("Start here")
st.markdown(
    "Attention Lab shows what a transformer's **attention** does with a text. The text is cut into **tokens**; "
    "in every layer, each **head** lets every token — a **query** — look at every token — a **key** — and take "
    "a weighted mix of what it finds there. The weights form a square:\n\n"
    "- **rows are queries**: the token that looks;\n"
    "- **columns are keys**: the tokens it looks at;\n"
    "- each row sums to 1 (the colour is the share of that query's attention).\n\n"
    f"Here is layer 0, head 0 of **{ctx.model_name}** on your text:"
)
(fig,) = views(ctx, "attention", layer=0, head=0)
show_view(fig, "start_fig")
ordinary = [i for i in range(obs.n_tokens) if not obs.special[i]]
if ordinary:
    row = obs.patterns[0, 0, ordinary[0]]
    best = int(row.argmax())
    st.caption(
        plain(
            f"Read row {quoted_at(obs.tokens, ordinary[0])}: it puts {pct(row[best])} of its attention on "
            f"{quoted_at(obs.tokens, best)}, the brightest cell of that row."
        )
    )
st.markdown(
    "**What to click first**\n\n"
    "1. In the sidebar, pick a model and an example (or type your own text).\n"
    "2. **Attention map**: click a cell — its row's token becomes the *query in focus* on every page "
    "(Shift+click a token in the strip for the key).\n"
    "3. **Head view**: hover a token to see only its lines; switch heads on and off.\n"
    "4. **Model overview**: every head at once — click one to open it.\n"
    "5. **Find heads**: which head links two tokens (try “it” → “animal” with the Coreference example).\n"
    "6. **Q / K / V**: how one weight is computed, step by step.\n"
    "7. **Lessons**: predict first, then look; why √d_k; ablation; masked words."
)
st.subheader("The post's six claims, one click each")
claims = st.columns(3)
for i, claim in enumerate(CLAIMS):
    claims[i % 3].button(
        f"{i + 1}. {claim.text}", key=f"start_claim_{i}", on_click=open_claim, args=(i,), width="stretch"
    )
st.subheader("Which model carries which lesson")
specs = [ModelSpec(kind) for kind in ("bundled", "minilm") if available(kind)[0]]
if ctx.spec not in specs and ctx.spec.kind in ("random", "upload", "folder"):
    specs.append(ctx.spec)
rows = lesson_map(ctx.source, specs)
st.caption(plain(f"Measured on this server, on the sentence “{COREFERENCE}”:"))
st.dataframe(
    pd.DataFrame(rows),
    hide_index=True,
    key="start_lessons",
    column_config={c: st.column_config.NumberColumn(format="%.2f") for c in ("its weight", "its weight ")},
)
linking = [r for r in rows if r["a column pattern?"] is False]  # measured, and not a column pattern
if linking:
    best = max(linking, key=lambda r: r["its weight"])
    others = [r for r in rows if r is not best and r["a column pattern?"] is not None]
    st.markdown(
        plain(
            f"For “it” → “animal”, use {best['model']}: its head {best['“it” → “animal”: best head']} gives "
            f"{pct(best['its weight'])} of “it”'s attention to “animal”."
        )
        + "".join(
            plain(
                f" {r['model']}'s best is {r['“it” → “animal”: best head']} with {pct(r['its weight'])}"
                + (" (a column pattern)." if r["a column pattern?"] else ".")
            )
            for r in others
        )
        + plain(" " + mask_fillers([r["model"] for r in rows if r["fills in [MASK]"]]))
    )
