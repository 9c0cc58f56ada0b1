"""docs/python.md's notebook-style example: its ```python cells run in order in one namespace,
as a notebook would run them."""

import re

from conftest import SOURCE


def test_docs_python_cells_run_in_order(capsys, monkeypatch):
    monkeypatch.setenv("VOXRT_SOURCE_DIR", str(SOURCE))
    page = (SOURCE / "docs/python.md").read_text()
    cells = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    assert len(cells) >= 6, "docs/python.md lost its example cells"
    namespace = {"__name__": "docs_python_example"}
    for number, cell in enumerate(cells, 1):
        exec(compile(cell, f"docs/python.md cell {number}", "exec"), namespace)
    out = capsys.readouterr().out
    assert "ctc_streaming" in out
    assert "partial:" in out
    assert "play some music" in out
    assert "missing.engine" in out
