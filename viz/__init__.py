"""Everything the user sees: pure figure builders (viz.figures) and Streamlit pages (viz.pages)."""
