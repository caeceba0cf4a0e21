"""Streamlit pages (one file per page) and the shared sidebar/state helpers."""
