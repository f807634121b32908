"""Finding the open notebook's file (notebook.py): every source a frontend sets, in order, and what each may name."""

import json
import pytest
from conftest import run
from boopiter_ext.context.nbfile import notebook_path


def nb_file(path, *sources):
    "A saved notebook: Markdown cells, and code cells for sources that start with `%%` (unrun)."
    def cell(i, s):
        if s.startswith('%%'): return dict(cell_type='code', id=f'c{i}', metadata={}, source=s, outputs=[], execution_count=None)
        return dict(cell_type='markdown', id=f'm{i}', metadata={}, source=s)
    cells = [cell(i, s) for i,s in enumerate(sources)]
    path.write_text(json.dumps(dict(cells=cells, metadata={}, nbformat=4, nbformat_minor=5)))
    return path


def test_each_source_in_order_vs_code_then_jupyter_server_then_the_session_variable_then_ours(tmp_path):
    vsc, jpy, sess, ours = (nb_file(tmp_path/f'{n}.ipynb') for n in ('vsc', 'jpy', 'sess', 'ours'))
    ns = dict(__vsc_ipynb_file__=str(vsc), __session__=str(sess))
    env = dict(JPY_SESSION_NAME=str(jpy), BOOPITER_NOTEBOOK=str(ours))
    assert notebook_path(ns, env) == vsc                                        # VS Code's variable first
    assert notebook_path(dict(ns, __vsc_ipynb_file__=None), env) == jpy         # then Jupyter Server's environment
    assert notebook_path(dict(__session__=str(sess)), dict(BOOPITER_NOTEBOOK=str(ours))) == sess   # then `__session__`
    assert notebook_path({}, dict(BOOPITER_NOTEBOOK=str(ours))) == ours         # then ours
    assert notebook_path({}, {}) is None


def test_a_source_that_names_no_notebook_on_disk_gives_way_to_the_next(tmp_path):
    real = nb_file(tmp_path/'real.ipynb')
    (tmp_path/'script.py').write_text('x = 1')
    for wrong in (str(tmp_path/'script.py'),       # VS Code's interactive window names a .py
                  str(tmp_path/'gone.ipynb'),      # deleted, or not saved yet
                  'Untitled Console 1',            # `__session__` of a console
                  42):                             # not even a string
        ns = dict(__vsc_ipynb_file__=wrong, __session__=wrong)
        assert notebook_path(ns, dict(BOOPITER_NOTEBOOK=str(real))) == real


def test_a_session_name_relative_to_the_server_is_found_in_the_kernels_folder(tmp_path, monkeypatch):
    "Jupyter Server gives `__session__` relative to its root; the kernel runs in the notebook's own folder."
    (d := tmp_path/'work'/'project').mkdir(parents=True)
    nb = nb_file(d/'analysis.ipynb')
    monkeypatch.chdir(d)
    assert notebook_path(dict(__session__='work/project/analysis.ipynb'), {}) == nb.resolve()
    assert notebook_path({}, dict(JPY_SESSION_NAME='project/analysis.ipynb')) == nb.resolve()
    assert notebook_path(dict(__vsc_ipynb_file__='~/nowhere/analysis.ipynb'), {}) == nb.resolve()


@pytest.mark.parametrize('var', ['__vsc_ipynb_file__', '__session__'])
def test_a_path_set_after_loading_is_read_at_the_next_prompt(shell, srv, monkeypatch, tmp_path, var):
    "VS Code sets its variable after start-up: the saved notebook's cells reach the model once it is there."
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    nb = nb_file(tmp_path/'saved.ipynb', '# Findings\nThe saved notebook speaks.', '%%prompt -m qwen3:1.7b\nAnd now?')
    shell.run_line_magic('load_ext', 'boopiter_ext')
    assert run(shell, '%%prompt -m qwen3:1.7b\nFirst?').success
    assert 'The saved notebook speaks.' not in json.dumps(srv.last_chat()['messages'])
    shell.user_ns[var] = str(nb)
    assert run(shell, '%%prompt -m qwen3:1.7b\nAnd now?').success
    assert 'The saved notebook speaks.' in json.dumps(srv.last_chat()['messages'])
    assert shell.magics_manager.registry['BoopMagics'].notebook() == nb.resolve()
