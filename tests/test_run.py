"""`boopiter-run` (run.py): each cell announced as it starts, each reply printed as it streams (with what it waited
for), the totals at the end, and no warning about TCP: the kernel talks over local sockets."""

import os, subprocess, sys, time
from pathlib import Path
import nbformat, pytest
from boopiter_ext.faces.run import Printer, run_notebook

MODEL = 'qwen3:1.7b'


def reply_msg(kind, status, text='', did='d1', **md):
    return kind, dict(data={'text/plain': text}, transient=dict(display_id=did),
                      metadata=dict(boopiter=dict(reply=True, model=MODEL, status=status, **md)))


def printed(feed)->str:
    out = []
    p = Printer(out.append, total=3)
    feed(p)
    return ''.join(out)


def test_a_reply_is_printed_as_it_grows_after_what_it_waited_for():
    def feed(p):
        p.cell('%%prompt\nWhy twice?')
        p.message(*reply_msg('display_data', 'waiting', why='Ollama is not reachable', step='starting the engine'))
        p.message(*reply_msg('update_display_data', 'waiting', why='Ollama is not reachable', step='starting the engine'))
        p.message(*reply_msg('update_display_data', 'waiting', why='Ollama is not reachable', step='loading the weights'))
        for text in ('Because', 'Because the loop', 'Because the loop prints `total`.'):
            p.message(*reply_msg('update_display_data', 'streaming', text))
        p.message(*reply_msg('update_display_data', 'done', 'Because the loop prints `total`.', completion_tokens=9,
                             tokens_per_s=31.5, ttft_s=1.25))
        p.message(*reply_msg('update_display_data', 'done', 'Because the loop prints `total`.'))   # a late repeat
        p.message('stream', dict(name='stdout', text='not a reply'))
    assert printed(feed) == ('\n[1/3] %%prompt\n>>> Why twice?\n'
                             '... Ollama is not reachable\n... starting the engine\n... loading the weights\n'
                             f'--- reply ({MODEL}) ---\nBecause the loop prints `total`.\n'
                             '--- 9 tokens · 31.5 tok/s · first token 1.2 s ---\n')


def test_reused_replies_errors_and_the_totals():
    def feed(p):
        p.cell('x = 1')
        p.cell('%%prompt\nAgain?')
        p.message(*reply_msg('display_data', 'done', 'Saved answer.', reused=True, completion_tokens=3))
        p.cell('1/0')
        p.message('error', dict(ename='ZeroDivisionError', evalue='division by zero', traceback=[]))
        p.message(*reply_msg('display_data', 'interrupted', 'Partial', did='d2'))
        p.summary()
    out = printed(feed)
    assert f'--- reply ({MODEL}, reused) ---\nSaved answer.\n--- 3 tokens ---' in out
    assert '[3/3] 1/0\n\n!! ZeroDivisionError: division by zero\n' in out and '--- 0 tokens · interrupted ---' in out
    assert out.splitlines()[-1].startswith('3 cells run · 0 prompts answered, 1 reused · 1 error · ')


def notebook(path, *sources):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nbformat.write(nb, path)
    return path


@pytest.mark.slow
def test_the_run_streams_each_reply_while_its_cell_runs(srv, tmp_path, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    srv.script('one two three four five six', delay=0.15)   # a piece every 0.15 s
    nb = notebook(tmp_path/'nb.ipynb', '%load_ext boopiter_ext', 'x = 41', f'%%prompt -m {MODEL}\nWhat is x?', '1/0')
    pieces = []
    assert run_notebook(nb, tmp_path/'out.ipynb', write=lambda s: pieces.append((time.monotonic(), s))) is False
    text = ''.join(s for _,s in pieces)
    assert '[1/4] %load_ext boopiter_ext' in text and '[3/4] %%prompt -m qwen3:1.7b\n>>> What is x?' in text
    assert f'--- reply ({MODEL}) ---\none two three four five six\n--- ' in text and '!! ZeroDivisionError' in text
    words = [t for t,s in pieces if s.strip() in ('one', 'two', 'three', 'four', 'five', 'six')]
    assert len(words) >= 3 and words[-1] - words[0] > 0.3                  # printed piece by piece, as they came
    assert text.splitlines()[-1].startswith('4 cells run · 1 prompt answered, 0 reused · 1 error · ')
    saved = nbformat.read(tmp_path/'out.ipynb', as_version=4)
    assert saved.cells[2].outputs[-1]['data']['text/plain'] == 'one two three four five six'


@pytest.mark.slow
def test_boopiter_run_prints_no_tcp_warning_and_leaves_no_sockets(srv, tmp_path):
    "The kernel talks over local sockets (ipc): no port, nothing to encrypt, no warning; its socket files go with it."
    from jupyter_core.paths import jupyter_runtime_dir
    nb = notebook(tmp_path/'nb.ipynb', 'print("hello")')
    sockets = lambda: {p.name for p in Path(jupyter_runtime_dir()).glob('boopiter-*')}
    before = sockets()
    cmd = [str(Path(sys.executable).with_name('boopiter-run')), str(nb)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, 'OLLAMA_HOST': srv.host})
    assert res.returncode == 0, res.stdout + res.stderr
    assert 'without encryption' not in res.stderr and 'TCP' not in res.stderr, res.stderr
    assert '[1/1] print("hello")' in res.stdout and '1 cell run · 0 prompts answered' in res.stdout
    assert sockets() == before


def boopiter_run(*args, host, cwd):
    cmd = [str(Path(sys.executable).with_name('boopiter-run')), *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=cwd, env={**os.environ, 'OLLAMA_HOST': host})


@pytest.mark.slow
def test_record_then_replay_on_the_command_line_answers_offline_and_a_changed_prompt_fails(srv, tmp_path):
    from ollama_server import free_port
    nb = notebook(tmp_path/'nb.ipynb', '%load_ext boopiter_ext', f'%%prompt -m {MODEL}\nWhat is 6 x 7?')
    srv.script('It is 42.')
    rec = boopiter_run(nb, '--record', '-o', tmp_path/'recorded.ipynb', host=srv.host, cwd=tmp_path)
    assert rec.returncode == 0, rec.stdout + rec.stderr
    assert '--- reply (qwen3:1.7b) ---\nIt is 42.\n' in rec.stdout and len(srv.chats()) == 1
    cassette = tmp_path/'nb.cassette.json'
    assert cassette.is_file() and 'It is 42.' in cassette.read_text()
    dead = f'127.0.0.1:{free_port()}'   # nothing answers there: only the cassette can
    rep = boopiter_run(nb, '--replay', '-o', tmp_path/'replayed.ipynb', host=dead, cwd=tmp_path)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    assert '--- reply (qwen3:1.7b) ---\nIt is 42.\n' in rep.stdout and len(srv.chats()) == 1
    reply = lambda name: nbformat.read(tmp_path/name, as_version=4).cells[1].outputs[-1]['data']['text/plain']
    assert reply('replayed.ipynb') == reply('recorded.ipynb') == 'It is 42.'
    notebook(nb, '%load_ext boopiter_ext', f'%%prompt -m {MODEL}\nWhat is 6 x 9?')   # the prompt changed since
    drift = boopiter_run(nb, '--replay', host=dead, cwd=tmp_path)
    assert drift.returncode == 1 and 'CassetteDrift' in drift.stdout + drift.stderr and len(srv.chats()) == 1
    both = boopiter_run(nb, '--record', '--replay', host=dead, cwd=tmp_path)
    assert both.returncode == 2 and 'not allowed with argument' in both.stderr
    missing = boopiter_run(tmp_path/'nope.ipynb', host=dead, cwd=tmp_path)
    assert missing.returncode == 2 and 'no notebook at' in missing.stderr


@pytest.mark.slow
def test_a_usage_error_that_stops_the_run_is_printed_and_counted(tmp_path):
    "IPython sends a `UsageError` as stderr text, not as an error message: the run still says what stopped it."
    nb = notebook(tmp_path/'nb.ipynb', 'x = 1', '%no_such_magic', 'y = 2')
    out = []
    assert run_notebook(nb, write=out.append) is False
    text = ''.join(out)
    assert '!! UsageError: Line magic function `%no_such_magic` not found.' in text and '[3/3]' not in text
    assert text.splitlines()[-1].startswith('2 cells run · 0 prompts answered, 0 reused · 1 error · ')
