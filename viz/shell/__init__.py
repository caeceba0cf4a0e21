"""The Streamlit shell around the pages: session state, cached services, the page context, shared widgets,
the sidebar and the export panel. Pages (viz/pages/) use it; nothing in model/ or viz/figures/ does.

state         session state initialised from viz.settings, kept across pages, fitted to the model
services      every cache (models, observations, page computations) and the views' cached Source
prepare       from the sidebar's request to the page context: load (keeping the last model on failure), device
context       the PageContext every page reads (model, observation, theme, options)
widgets       show_chart (with export buttons), pickers, token chips, CSS
sidebar       the sidebar's widgets
export_panel  "Export this page" and session files
"""
