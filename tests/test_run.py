"""`boopiter-run` (run.py): each cell shown as it starts with its first lines and its output, each reply printed whole
as it streams after what it waited for and for how long, the totals at the end, and no warning about TCP: the kernel
talks over local sockets. A headless run saves no Run / Copy-to-cell buttons; a frontend's run gets them."""

import os, re, shutil, subprocess, sys, time
from pathlib import Path
import nbformat, pytest
from hypothesis import given, settings as hsettings, strategies as st
import boopiter_ext.faces.run as run_mod
from boopiter_ext.faces.run import Printer, headings, run_notebook, shown

MODEL = 'qwen3:1.7b'
LOCAL = 'local/smollm2-135m'


def reply_msg(kind, status, text='', did='d1', model=MODEL, **md):
    return kind, dict(data={'text/plain': text}, transient=dict(display_id=did),
                      metadata=dict(boopiter=dict(reply=True, model=model, status=status, **md)))


def printed(feed, **kw)->str:
    out = []
    p = Printer(out.append, total=3, **kw)
    feed(p)
    return ''.join(out)


class Clock:
    "A clock the test moves: `run.monotonic` reads it."
    def __init__(self, monkeypatch): self.t = 1000.0; monkeypatch.setattr(run_mod, 'monotonic', lambda: self.t)


def test_a_reply_is_printed_as_it_grows_after_what_it_waited_for(monkeypatch):
    clock = Clock(monkeypatch)
    def feed(p):
        p.cell('%%prompt\nWhy twice?')
        p.message(*reply_msg('display_data', 'waiting', why='Ollama is not reachable', step='starting the engine'))
        clock.t += 1
        p.message(*reply_msg('update_display_data', 'waiting', why='Ollama is not reachable', step='starting the engine'))
        clock.t += 1
        p.message(*reply_msg('update_display_data', 'waiting', why='Ollama is not reachable', step='loading the weights'))
        for text in ('Because', 'Because the loop', 'Because the loop prints `total`.'):
            p.message(*reply_msg('update_display_data', 'streaming', text))
        p.message(*reply_msg('update_display_data', 'done', 'Because the loop prints `total`.', completion_tokens=9,
                             tokens_per_s=31.5, ttft_s=1.25))
        p.message(*reply_msg('update_display_data', 'done', 'Because the loop prints `total`.'))   # a late repeat
    assert printed(feed) == ('\n[1/3] %%prompt\n>>> Why twice?\n'
                             '... Ollama is not reachable\n... starting the engine\n... loading the weights · 2 s\n'
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


def test_a_cell_shows_its_first_lines_then_its_output_clipped_to_a_screenful():
    def feed(p):
        p.max_lines, p.width = 3, 20
        p.cell('\n'.join(f'x{i} = {i}' for i in range(9)) + '\n\n')
        p.message('stream', dict(name='stdout', text='one\ntw'))
        p.message('stream', dict(name='stdout', text='o\n' + 'x' * 30 + '\nfour\nfive\nsix'))
        p.cell('print(1, end="")')
        p.message('stream', dict(name='stdout', text='1'))
        p.message('execute_result', dict(data={'text/plain': '2'}))
        p.summary()
    out = printed(feed)
    assert out.startswith('\n[1/3] x0 = 0\n      x1 = 1\n      x2 = 2\n      x3 = 3\n      x4 = 4\n      x5 = 5\n'
                          '      … 3 more lines\n'
                          'one\ntwo\n' + 'x' * 19 + '…\n… 3 more lines of output\n\n[2/3] print(1, end="")\n1\n2\n')
    assert out.splitlines()[-1].startswith('2 cells run')


def test_images_widgets_and_html_are_one_line_and_display_objects_show_their_text():
    widget = {'application/vnd.boopiter.widget+json': dict(version=1, kind='code_actions'),
              'application/vnd.jupyter.widget-view+json': dict(model_id='x'), 'text/plain': 'boopiter Run and ...'}
    assert shown(widget) == '[Run and Copy-to-cell buttons: a widget, drawn in Jupyter]'
    assert shown({'application/vnd.jupyter.widget-view+json': {}, 'text/plain': 'VBox()'}) == '[a widget: a widget, drawn in Jupyter]'
    assert shown({'image/png': 'iVBOR', 'text/plain': '<Figure size 640x480 with 1 Axes>'}) == \
        '[image/png: <Figure size 640x480 with 1 Axes>]'
    assert shown({'image/jpeg': '...', 'text/plain': '<IPython.core.display.Image object>'}) == '[image/jpeg]'
    assert shown({'text/markdown': '**hi**', 'text/plain': '<IPython.core.display.Markdown object>'}) == '**hi**'
    assert shown({'text/html': '<b>x</b>', 'text/plain': '<IPython.core.display.HTML object>'}) == '[text/html]'
    assert shown({'text/plain': 'x\ny'}) == 'x\ny' and shown({}) == '[an empty output]'
    def feed(p):
        p.cell('plot()')
        p.message('display_data', dict(data={'image/png': 'iVBOR', 'text/plain': '<Figure>'}, metadata={}))
        p.message('update_display_data', dict(data={'text/plain': 'updated'}, transient=dict(display_id='b')))   # not again
    assert printed(feed).endswith('[1/3] plot()\n[image/png: <Figure>]\n')


def test_markdown_cells_show_their_headings_outside_code_fences():
    assert headings('# Title\ntext\n```\n# a comment\n```\n## Section two\n#not a heading') == ['# Title', '## Section two']
    assert printed(lambda p: p.markdown('Just prose.')) == ''
    assert printed(lambda p: p.markdown('## Next')) == '\n## Next\n'


def test_waiting_on_a_pipe_says_each_step_and_the_time_every_few_seconds(monkeypatch):
    "The embedded model's start, then how far the prompt is read: a line per step, and one every `every` seconds."
    clock = Clock(monkeypatch)
    steps = ['starting the engine', 'loading the weights'] + ['reading ~900 prompt tokens'] * 25 + \
            ['reading the prompt: 128 of ~900 tokens read', 'reading the prompt: 256 of ~900 tokens read']
    def feed(p):
        p.cell('%%prompt\nhi')
        for step in steps:
            p.message(*reply_msg('update_display_data', 'waiting', model=LOCAL, why='no Ollama', step=step))
            clock.t += 1
        p.message(*reply_msg('update_display_data', 'done', 'Hi.', model=LOCAL, completion_tokens=2))
    lines = printed(feed).splitlines()
    assert lines[3:11] == ['... no Ollama', '... starting the model: starting the engine',
                           '... starting the model: loading the weights · 1 s', '... reading ~900 prompt tokens · 2 s',
                           '... reading ~900 prompt tokens · 12 s', '... reading ~900 prompt tokens · 22 s',
                           '... reading the prompt: 128 of ~900 tokens read · 27 s', f'--- reply ({LOCAL}) ---']


def test_waiting_on_a_terminal_is_one_line_rewritten_each_second_then_cleared(monkeypatch):
    clock = Clock(monkeypatch)
    def feed(p):
        p.cell('%%prompt\nhi')
        for _ in range(3):
            p.message(*reply_msg('update_display_data', 'waiting', step='loading'))
            clock.t += 61
        p.message(*reply_msg('update_display_data', 'streaming', 'Hi'))
    out = printed(feed, live=True)
    assert out.endswith('>>> hi\n... loading\r\x1b[2K... loading · 1 min 01 s\r\x1b[2K... loading · 2 min 02 s'
                        f'\r\x1b[2K--- reply ({MODEL}) ---\nHi')


def test_a_usage_error_sent_as_stderr_is_counted_once_and_not_printed_twice():
    def feed(p):
        p.cell('%no_such_magic')
        p.message('stream', dict(name='stderr', text='UsageError: Line magic function `%no_such_magic` not found.\n'))
        p.stopped('UsageError', 'Line magic function `%no_such_magic` not found.')
        p.stopped('UsageError', 'Line magic function `%no_such_magic` not found.')   # already counted
        p.summary()
    out = printed(feed)
    assert out.count('`%no_such_magic` not found.') == 1 and '1 error' in out.splitlines()[-1]
    assert printed(lambda p: (p.stopped('NameError', 'x'), p.summary())).count('!! NameError: x') == 1


UNSAFE = re.compile(r'[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]')


NASTY = st.text(alphabet=st.sampled_from(list('ab #%`\n\r\t\x1b[]0;m\x07\x9b\u2028é…')), max_size=60)


@hsettings(max_examples=150, deadline=None)
@given(chunks=st.lists(NASTY, min_size=1, max_size=12), rich=st.text(max_size=80), source=NASTY, note=NASTY,
       lines=st.integers(1, 5), width=st.integers(2, 30))
@pytest.mark.heavy
def test_output_is_terminal_safe_and_bounded_whatever_it_holds(chunks, rich, source, note, lines, width):
    "Any cell source, Markdown, stream text in any chunks, and rich text: no escape sequence or control character; " \
    "`max_lines` output lines of at most `width` characters, and one line saying how many more there were."
    out = []
    p = Printer(out.append, total=1)
    p.max_lines, p.width = lines, width
    p.markdown('# ' + note)
    p.cell(source)
    p.cell('%%prompt\n' + source)
    head = len(''.join(out))
    p.cell('x')
    for c in chunks: p.message('stream', dict(name='stdout', text=c))
    p.message('execute_result', dict(data={'text/plain': rich}))
    p._end_cell()
    assert not UNSAFE.search(''.join(out).replace('\n', '').replace('\t', ''))
    body = ''.join(out)[head:].split('\n[3/1] x\n', 1)[1]
    rows = body.splitlines()
    clipped = [r for r in rows if re.fullmatch(r'… \d+ more lines? of output', r)]
    assert len(clipped) <= 1 and len(rows) - len(clipped) <= lines
    assert all(len(r) <= width for r in rows if r not in clipped)


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
    nb, runtime = notebook(tmp_path/'nb.ipynb', 'print("hello")'), tmp_path/'runtime'   # its own: tests run side by side
    sockets = lambda: {p.name for p in runtime.glob('boopiter-*')}
    before = sockets()
    cmd = [str(Path(sys.executable).with_name('boopiter-run')), str(nb)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                         env={**os.environ, 'OLLAMA_HOST': srv.host, 'JUPYTER_RUNTIME_DIR': str(runtime)})
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


def test_nbformat_is_imported_without_the_iri_parsers_and_still_validates():
    "A headless run's nbformat import: without rfc3987_syntax's 38 parsers (2.8 s), and nothing left in sys.modules."
    code = ("import sys; from boopiter_ext.faces.run import import_nbformat; nbformat = import_nbformat(); "
            "import jsonschema; "
            "nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('x = 1')]); nbformat.validate(nb); "
            "bad = nbformat.v4.new_notebook(); bad.cells.append({'cell_type': 'code'}); "
            "print(sorted(k for k in sys.modules if k.startswith('rfc3987')), nbformat.validator.isvalid(bad), "
            "'rfc3987_syntax' in sys.modules)")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.split() == ['[]', 'False', 'False'], out.stderr[-2000:]


@pytest.mark.slow
def test_a_usage_error_that_stops_the_run_is_printed_and_counted(tmp_path):
    "IPython sends a `UsageError` as stderr text, not as an error message: the run shows it once and counts it."
    nb = notebook(tmp_path/'nb.ipynb', 'x = 1', '%no_such_magic', 'y = 2')
    out = []
    assert run_notebook(nb, write=out.append) is False
    text = ''.join(out)
    assert '[2/3] %no_such_magic\nUsageError: Line magic function `%no_such_magic` not found.\n' in text
    assert text.count('`%no_such_magic` not found.') == 1 and '[3/3]' not in text
    assert text.splitlines()[-1].startswith('2 cells run · 0 prompts answered, 0 reused · 1 error · ')


TOUR_REPLIES = ['Because `total = sum(prices)` adds up the whole list on every pass, so each pass prints the same sum.\n\n'
                '```python\nfor p in prices:\n    total = sum(prices)\n    print(total)\n```\n\nMove the sum out, or add '
                '`p` to a running total.',
                'Keep a running total and add each price to it:\n\n```python\ntotal = 0\nfor p in prices:\n    total += p\n'
                '    print(total)\n```']
WIDGETS = ('application/vnd.jupyter.widget-view+json', 'application/vnd.boopiter.widget+json')


def widget_outputs(nb)->list:
    "Every output of `nb` that is a widget, or whose text says one was there (the placeholder a kernel-less reader gets)."
    return [o for c in nb.cells for o in c.get('outputs', []) if any(m in o.get('data', {}) for m in WIDGETS)
            or 'a live widget' in str(o.get('data', {}).get('text/plain', ''))]


@pytest.mark.slow
def test_the_tour_headless_shows_cells_outputs_status_progress_and_whole_replies(srv, tmp_path, monkeypatch):
    """The README's main job, on the test server (the printing is the claim; `test_notebooks` runs it on the embedded
    model): each cell and its output, `%boop status`'s text, what a reply waits for and for how long, whole replies
    (the repository's settings.ini bounds none), the totals; the saved notebook holds no buttons nobody can click."""
    from conftest import ROOT
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    (tmp_path/'nbs').mkdir()
    shutil.copy(ROOT/'settings.ini', tmp_path/'settings.ini')   # as nbs/ reads the repository's, one folder up
    tour = tmp_path/'nbs'/'00_tour.ipynb'
    shutil.copy(ROOT/'nbs'/'00_tour.ipynb', tour)
    srv.script(['', TOUR_REPLIES[0]], delay=2.2)   # an empty piece, then the reply 2.2 s later: the waiting line ticks
    srv.script(TOUR_REPLIES[1])
    out = []
    assert run_notebook(tour, tmp_path/'out.ipynb', write=out.append, live=True)
    text = ''.join(out)
    assert '[3/5] prices = [3.5, 2.0, 7.25]\n      for p in prices:\n          total = sum(prices)\n' in text
    assert '          print(total)\n12.75\n12.75\n12.75\n' in text                    # the loop, and what it printed
    assert '[2/5] %boop status\nmodel     auto → smollm2:135m (' in text and f'endpoint  Ollama at {srv.url}' in text
    assert '## The model sees your cells' in text                                   # where the run is
    assert re.search(r'\.\.\. waiting for the first token\r\x1b\[2K(\.\.\. waiting for the first token\r\x1b\[2K)*'
                     r'\.\.\. waiting for the first token · \d+ s', text), text[text.index('[4/5]'):]   # for how long (a loaded
    # machine may skip the 1 s tick: CI saw only the 2 s one)
    for reply in TOUR_REPLIES: assert '--- reply (smollm2:135m) ---\n' + reply + '\n--- ' in text
    assert 'cut at max_tokens' not in text and all('num_predict' not in c.get('options', {}) for c in srv.chats())
    assert text.splitlines()[-1].startswith('5 cells run · 2 prompts answered, 0 reused · 0 errors · ')
    saved = nbformat.read(tmp_path/'out.ipynb', as_version=4)
    replies = [o for c in saved.cells for o in c.get('outputs', []) if o.get('metadata', {}).get('boopiter', {}).get('reply')]
    assert [o['data']['text/plain'] for o in replies] == TOUR_REPLIES
    assert widget_outputs(saved) == []                                              # python blocks, and no buttons


@pytest.mark.slow
def test_a_frontend_gets_run_buttons_and_a_headless_request_none(srv, tmp_path):
    "The same reply with python blocks: buttons where a cell id comes with the request (a frontend), none without it."
    from kernels import KernelSession
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host}) as k:
        k.run('%load_ext boopiter_ext')
        for cell_id, answers in (('c1', None), (None, None), (None, [])):   # Lab/NB7/VS Code; nbclient; a console
            srv.script(TOUR_REPLIES[1])
            res = k.run(f'%%prompt -m {MODEL}\nrunning total?', cell_id=cell_id, answers=answers)
            buttons = [o for o in res.outputs if any(m in o.get('data', {}) for m in WIDGETS)]
            assert res.status == 'ok' and res.reply['data']['text/plain'] == TOUR_REPLIES[1]
            assert len(buttons) == (cell_id is not None or answers is not None), (cell_id, answers, res.outputs)
            assert buttons == [] or buttons[0]['data']['application/vnd.boopiter.widget+json']['kind'] == 'code_actions'


# -- what a prompt to the embedded model waits for: its start, then how far llama.cpp has read the prompt (/slots)

class Engine:
    "A stand-in for `LocalModel` (its start's step, its URL) in front of a stdlib server answering `/slots` as told."
    def __init__(self, answers):
        import http.server, json, threading
        self.step, self.answers, self.asked = 'loading the weights', list(answers), 0
        engine = self
        class Slots(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                engine.asked += 1
                body = json.dumps(engine.answers.pop(0) if len(engine.answers) > 1 else engine.answers[0]).encode()
                self.send_response(200)
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *a): pass
        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Slots)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f'http://127.0.0.1:{self.server.server_port}'

    def status(self): return self.step


def test_the_prompt_progress_says_the_start_then_how_far_the_prompt_is_read():
    from boopiter_ext.core.progress import PromptProgress
    slot = lambda read, cache: [dict(id=0, is_processing=True, n_prompt_tokens_processed=read, n_prompt_tokens_cache=cache)]
    engine = Engine([[dict(id=0, is_processing=False)], slot(0, 0), slot(384, 0), slot(12, 1046), slot(900, 0)])
    try:
        progress = PromptProgress(engine, tokens=856)
        progress.interval = 0
        assert progress() == 'loading the weights' and engine.asked == 0        # starting: the engine is not asked
        engine.step = ''
        said, deadline = [progress()], time.monotonic() + 10   # each answer is said at least once: the next is asked
        while 'reading the prompt: 384 of ~856 tokens read' not in said and time.monotonic() < deadline:   # only then
            time.sleep(0.05)
            said.append(progress())
        assert said[0] == '' and 'reading the prompt: 384 of ~856 tokens read' in said, said   # '' : the view says ~856
        assert until_said(progress, 'reading the prompt: 12 new tokens read, 1,046 from the cache')   # past the estimate
        assert until_said(progress, 'reading the prompt: 900 tokens read')        # more than the estimate: no "of"
    finally: engine.server.shutdown()
    with_cache = PromptProgress(engine, tokens=1080)
    with_cache.read, with_cache.cached = 12, 1046
    assert with_cache.text() == 'reading the prompt: 12 of ~34 new tokens read, 1,046 from the cache'


def until_said(progress, text, seconds=3.0)->bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if progress() == text: return True
        time.sleep(0.05)
    return False


JSONISH = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=5),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=30), inner, max_size=4),
                       max_leaves=12)
COUNT = st.integers(0, 5000) | st.integers(0, 5000) | st.integers(-5, 5000) | st.integers(2**40 - 2, 2**41) | JSONISH
SLOT = st.fixed_dictionaries({'is_processing': st.just(True) | st.just(True) | JSONISH, 'n_prompt_tokens_processed': COUNT},
                             optional={'n_prompt_tokens_cache': COUNT, 'id': JSONISH})
SLOTS = st.lists(SLOT, min_size=1, max_size=2)


@pytest.mark.heavy
def test_any_slots_answer_gives_counts_or_nothing_never_an_error():
    "Whatever `/slots` answers: None, or two whole numbers from 0 up taken from a slot that says it is reading."
    from collections import Counter
    from boopiter_ext.core.progress import slot_progress, PromptProgress
    ended = Counter()   # an answer with no counts checks nothing more: enough examples must give counts

    @hsettings(max_examples=300, deadline=None)
    @given(slots=SLOTS | SLOTS | JSONISH)   # most examples are slots, some of them reading a prompt
    def answers(slots):
        got = slot_progress(slots)
        ended['counts' if got is not None else 'nothing'] += 1
        if got is None: return
        read, cached = got
        slot = slots[0]
        assert slot['is_processing'] is True and read == slot['n_prompt_tokens_processed']
        assert all(type(n) is int and 0 <= n < 1 << 40 for n in got)
        p = PromptProgress(None, tokens=100)
        p.read, p.cached = got
        assert p.text() == '' if not read and not cached else p.text().startswith('reading the prompt: ')
    answers()
    assert ended['counts'] >= 0.1 * sum(ended.values()), ended   # about a quarter give counts
