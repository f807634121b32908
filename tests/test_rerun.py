"""A notebook that uses boopiter runs top to bottom headless too (issue 22.1): `boopiter-run` loads boopiter before
running a notebook with prompt cells, load cell or not; nbclient (papermill, CI, VS Code's runner) runs one with its
load cell, as the brain menu leaves it; a rerun shows the saved replies again and asks nothing."""

import nbformat, pytest
from nbclient import NotebookClient
from boopiter_ext.faces.run import run_notebook

pytestmark = pytest.mark.slow
MODEL = 'qwen3:1.7b'


def notebook(path, *sources):
    nb = nbformat.v4.new_notebook(metadata={'kernelspec': {'name': 'python3', 'display_name': 'Python 3',
                                                            'language': 'python'}})
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, path)
    return path


def errors(nb): return [o for c in nb.cells for o in c.get('outputs', []) if o.output_type == 'error' or o.get('name') == 'stderr']


def test_boopiter_run_loads_boopiter_for_a_notebook_without_a_load_cell(srv, tmp_path, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    nb = notebook(tmp_path/'old.ipynb', 'x = 6 * 7', f'%%prompt -m {MODEL}\nWhat is x?',
                  "print('BoopMagics' in get_ipython().magics_manager.registry)")
    srv.script('x holds 42.')
    out = []
    assert run_notebook(nb, tmp_path/'out.ipynb', write=out.append) is True, ''.join(out)
    text = ''.join(out)
    assert f'--- reply ({MODEL}) ---\nx holds 42.' in text and 'not found' not in text
    ran = nbformat.read(tmp_path/'out.ipynb', as_version=4)
    assert not errors(ran) and ran.cells[1].outputs[-1]['data']['text/plain'] == 'x holds 42.'
    assert ran.cells[2].outputs[0]['text'] == 'True\n'                  # loaded quietly: no output anywhere
    assert [len(c.outputs) for c in ran.cells] == [0, 1, 1]
    assert 'x = 6 * 7' in srv.last_chat()['messages'][-1]['content']


def test_boopiter_run_loads_nothing_into_a_notebook_without_prompt_cells(tmp_path):
    nb = notebook(tmp_path/'plain.ipynb', "print('BoopMagics' in get_ipython().magics_manager.registry)")
    assert run_notebook(nb, tmp_path/'out.ipynb', write=lambda s: None) is True
    assert nbformat.read(tmp_path/'out.ipynb', as_version=4).cells[0].outputs[0]['text'] == 'False\n'


def test_nbclient_reruns_a_notebook_with_its_load_cell_and_shows_its_saved_reply_again(srv, tmp_path, monkeypatch):
    "As the brain menu leaves a notebook: its `%load_ext boopiter_ext` cell at the top, run twice (the second reuses)."
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    path = notebook(tmp_path/'menu.ipynb', '%load_ext boopiter_ext', 'x = 6 * 7', f'%%prompt -m {MODEL}\nWhat is x?')
    monkeypatch.setenv('BOOPITER_NOTEBOOK', str(path))
    srv.script('x holds 42.')
    for _ in range(2):
        nb = nbformat.read(path, as_version=4)
        NotebookClient(nb, timeout=120, resources={'metadata': {'path': str(tmp_path)}}).execute()
        nbformat.write(nb, path)
        assert not errors(nb) and nb.cells[2].outputs[-1]['data']['text/plain'] == 'x holds 42.'
        assert nb.cells[0].outputs == []                                 # no "already loaded" either
    assert len(srv.chats()) == 1 and nb.cells[2].outputs[-1]['metadata']['boopiter'].get('reused')
