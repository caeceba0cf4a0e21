"""Teaching export, no Streamlit: static images, offline HTML, data files, export packs and the CLI.

render   PNG/SVG through kaleido on the system Chromium (one render server per process)
offline  interactive HTML with plotly.js inlined
data     labelled CSVs and the captured arrays
pack     the zip of a page: figures, HTML, data, README
cli      ``python -m viz.export``
"""
