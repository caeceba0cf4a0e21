import subprocess
import sys


def test_model_and_figures_do_not_import_ui_libraries():
    code = (
        "import sys, model, model.capture, model.checkpoint, model.bert_import, model.analysis, model.catalog\n"
        "assert 'streamlit' not in sys.modules and 'plotly' not in sys.modules, 'model imported UI code'\n"
        "import viz.figures\n"
        "assert 'streamlit' not in sys.modules, 'viz.figures imported streamlit'\n"
        "assert 'torch' in sys.modules\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=".")
    assert result.returncode == 0, result.stderr
