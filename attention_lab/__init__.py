"""Attention Lab, as installed: ``pip install .`` puts the repository's ``model``, ``viz``, ``assets``, ``app.py`` and
``serve.py`` under this one name (``attention_lab.model``, ``attention_lab.viz``, …), so nothing generic reaches
the top level of anyone's environment and a researcher's own ``model.py`` never shadows it (setup.py rewrites the
package's imports as it builds). In a checkout, this folder holds only this file: there the code is imported as
``model`` and ``viz`` from the repository root, and ``streamlit run app.py`` runs it."""
