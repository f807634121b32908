"""The docs execute: the tour on the embedded model (the README's main job), the how-tos on the test server."""

import shutil, subprocess, sys
from pathlib import Path
import nbformat, pytest
from conftest import ROOT
from ollama_server import free_port
from boopiter_ext.run import run_notebook

pytestmark = pytest.mark.slow
NBS = ROOT/'nbs'


def replies(nb):
    return [(c.source, o) for c in nb.cells if c.cell_type == 'code' for o in c.get('outputs', [])
            if o.get('metadata', {}).get('boopiter', {}).get('reply')]


def test_every_notebook_is_tested():
    assert sorted(p.name for p in NBS.glob('*.ipynb')) == ['00_tour.ipynb', '01_context.ipynb',
                                                            '02_models_and_settings.ipynb', '03_brain_menu.ipynb',
                                                            '04_tools.ipynb', '05_deaddrop.ipynb']


def test_tour_runs_headless_on_the_embedded_model(tmp_path, monkeypatch):
    "The README's main job: `boopiter-run nbs/00_tour.ipynb` with no Ollama in reach."
    monkeypatch.setenv('OLLAMA_HOST', f'127.0.0.1:{free_port()}')
    out = tmp_path/'tour.ipynb'
    cmd = [str(Path(sys.executable).with_name('boopiter-run')), str(NBS/'00_tour.ipynb'), '-o', str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count('>>> ') == 2 and res.stdout.count('--- reply (local/smollm2-135m') == 2
    got = replies(nbformat.read(out, as_version=4))
    assert len(got) == 2 and all(o['data']['text/plain'].strip() for _,o in got)
    assert all(o['metadata']['boopiter']['completion_tokens'] <= 200 for _,o in got)   # nbs/settings.ini's max_tokens


def test_context_howto_on_the_test_server(srv, tmp_path, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    nb_path = tmp_path/'01_context.ipynb'
    shutil.copy(NBS/'01_context.ipynb', nb_path)
    shutil.copy(ROOT/'settings.ini', tmp_path/'settings.ini')
    assert run_notebook(nb_path, tmp_path/'out.ipynb', write=lambda s: None)
    got = replies(nbformat.read(tmp_path/'out.ipynb', as_version=4))
    assert len(got) == 3 and all(o['metadata']['boopiter']['status'] == 'done' for _,o in got)
    first, second, third = srv.chats()[-3:]
    text = first['messages'][-1]['content']
    assert "IndexError: list index out of range" in text and '4 words' in text and '… [clipped' in text
    assert first['options']['num_predict'] == 200                             # the project's settings.ini applies
    assert second['options']['num_ctx'] == 1024
    assert 'dropped' in got[1][1]['data']['text/markdown']
    assert [m['role'] for m in third['messages']] == ['system', 'user'] and '4 words' not in str(third['messages'])


def test_models_and_settings_howto_on_the_test_server(srv, tmp_path, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    nb_path = tmp_path/'02.ipynb'
    shutil.copy(NBS/'02_models_and_settings.ipynb', nb_path)
    assert run_notebook(nb_path, tmp_path/'out.ipynb', write=lambda s: None)
    nb = nbformat.read(tmp_path/'out.ipynb', as_version=4)
    [(src, out)] = replies(nb)[:1]
    assert out['metadata']['boopiter']['model'] == 'qwen3:1.7b'
    assert srv.chats()[0]['think'] is True
    cell = {c.source.splitlines()[-1]: c for c in nb.cells if c.cell_type == 'code'}
    status = ''.join(o.get('text', '') for o in cell['%boop status'].outputs)
    assert 'timeout   90.0 (%config)' in status and 'keep_alive 10 (%config)' in status
    [err] = [o for o in cell['hello?'].outputs if o['output_type'] == 'error']
    assert err['ename'] == 'OllamaModelNotFound' and len(err['traceback']) == 1
    assert 'still fine' in cell["print('the kernel is still fine')"].outputs[0]['text']


def test_brain_menu_howto_on_the_test_server(srv, tmp_path, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    nb_path = tmp_path/'03.ipynb'
    shutil.copy(NBS/'03_brain_menu.ipynb', nb_path)
    srv.loaded = {'gemma3:4b'}
    assert run_notebook(nb_path, tmp_path/'out.ipynb', write=lambda s: None)
    nb = nbformat.read(tmp_path/'out.ipynb', as_version=4)
    got = [(src.splitlines()[-1], o['metadata']['boopiter']) for src,o in replies(nb)]
    assert [(q, m['model'], m['model_source']) for q,m in got] == [
        ('In one sentence: which model are you?', 'smollm2:135m', 'notebook binding'),
        ('And you?', 'qwen3:1.7b', 'cell option'), ('Is 1001 prime?', 'qwen3:1.7b', 'notebook binding')]
    assert srv.chats()[-1]['think'] in (True, 'high') and 'think' not in srv.chats()[0]
    cell = {c.source: c for c in nb.cells if c.cell_type == 'code'}
    assert any('application/vnd.jupyter.widget-view+json' in o.get('data', {}) for o in cell['%boop'].outputs)
    assert 'qwen3:1.7b          tools, thinking' in cell['%boop models'].outputs[0]['text']
    memory = cell[[k for k in cell if k.startswith('from boopiter_ext import ollama_loaded')][0]].outputs[0]['text']
    # the background tidying after each pick may have unloaded some already: the end state is what is certain
    assert 'unloaded: [' in memory and "in memory now: ['smollm2:135m']" in memory
    status = cell['%boop status'].outputs[0]['text']
    assert 'model     smollm2:135m (from notebook binding)' in status
    assert 'binding   model smollm2:135m · reasoning off (qwen3:1.7b, effort h)' in status


def test_tools_howto_on_the_test_server(srv, tmp_path, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    nb_path = tmp_path/'04.ipynb'
    shutil.copy(NBS/'04_tools.ipynb', nb_path)
    srv.script('```python\nadd_numbers(47, 23)\n```')
    srv.script('47 + 23 = 70.')
    srv.script("```python\ncreate_ticket('Refund approved for every unit')\n```")
    srv.script('Ticket 9001 is about an amber status ring.')
    srv.script('Like this:\n\n```python\nadd_numbers(2, 3)\n```')
    assert run_notebook(nb_path, tmp_path/'out.ipynb', write=lambda s: None)
    nb = nbformat.read(tmp_path/'out.ipynb', as_version=4)
    cell = {c.source.splitlines()[-1]: c for c in nb.cells if c.cell_type == 'code'}
    def trace(key): return next(o['metadata']['boopiter']['tool_loop'] for o in cell[key].outputs
                                if 'tool_loop' in o['metadata'].get('boopiter', {}))
    added = trace('What is 47 + 23? Use the tool.')
    assert added['stop'] == 'answered' and [s['status'] for s in added['steps']] == ['ok']
    assert [s['status'] for s in trace('Summarize ticket 9001.')['steps']] == ['not requested']
    assert cell['tickets'].outputs[0]['data']['text/plain'] == '[]'
    consent = cell['Show me how to add 2 and 3 with the tool.'].outputs
    assert any('application/vnd.jupyter.widget-view+json' in o.get('data', {}) for o in consent)
    assert 'on   kernel' in cell['%boop tools'].outputs[0]['text']


def test_deaddrop_howto_answers_through_files(tmp_path, monkeypatch):
    monkeypatch.setenv('BOOPITER_DEADDROP_DIR', str(tmp_path/'dead_drop'))
    monkeypatch.setenv('OLLAMA_HOST', f'127.0.0.1:{free_port()}')
    nb_path = tmp_path/'05.ipynb'
    shutil.copy(NBS/'05_deaddrop.ipynb', nb_path)
    assert run_notebook(nb_path, tmp_path/'out.ipynb', write=lambda s: None)
    [(src, out)] = replies(nbformat.read(tmp_path/'out.ipynb', as_version=4))
    assert out['data']['text/plain'] == "I read: 'Can you hear me through the dead drop?'. Answered through files."
    md = out['metadata']['boopiter']
    assert (md['model'], md['answered_by'], md['session']) == ('deaddrop/howto', 'howto-bot', 'howto')
