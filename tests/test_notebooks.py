"""The docs execute: the tour on the embedded model (the README's main job), the how-tos on the test server, and
every how-to that asks a model server offline too, from the cassette shipped next to it (`boopiter-run NB --replay`)."""

import html, json, re, shutil, subprocess, sys
from pathlib import Path
import nbformat, pytest
from conftest import ROOT
from ollama_server import free_port
from images_util import decoded
from boopiter_ext.faces.run import run_notebook
from boopiter_ext.settings import user_ini
from record_howtos import HOWTOS

pytestmark = pytest.mark.slow
NBS = ROOT/'nbs'


def replies(nb):
    return [(c.source, o) for c in nb.cells if c.cell_type == 'code' for o in c.get('outputs', [])
            if o.get('metadata', {}).get('boopiter', {}).get('reply')]


def run_howto(
    tmp_path,              # Where the copy runs (and its `out.ipynb` is written)
    name:str,              # The how-to's file name in nbs/
    settings:bool=False,   # With the repository's settings.ini beside it, as nbs/ reads it from one folder up
):                         # The executed notebook
    "Run a copy of the how-to `nbs/NAME` headless, as `boopiter-run` does; the executed notebook."
    shutil.copy(NBS/name, tmp_path/name)
    if settings: shutil.copy(ROOT/'settings.ini', tmp_path/'settings.ini')
    assert run_notebook(tmp_path/name, tmp_path/'out.ipynb', write=lambda s: None)
    return nbformat.read(tmp_path/'out.ipynb', as_version=4)


def user_settings(text:str)->Path:
    "Write the user's own settings file (`user_ini()`: under this test's XDG_CONFIG_HOME), a `[boopiter]` section; its path."
    (path := user_ini()).parent.mkdir(parents=True, exist_ok=True)
    path.write_text('[boopiter]\n' + text)
    return path


def test_every_notebook_is_tested():
    assert sorted(p.name for p in NBS.glob('*.ipynb')) == ['00_tour.ipynb', '01_context.ipynb',
                                                            '02_models_and_settings.ipynb', '03_brain_menu.ipynb',
                                                            '04_tools.ipynb', '05_deaddrop.ipynb',
                                                            '06_images_and_reasoning.ipynb', '07_reproducible.ipynb',
                                                            '08_whole_notebook.ipynb', '09_web_and_pdf_tools.ipynb',
                                                            '10_teams.ipynb', '11_first_hour.ipynb',
                                                            '12_ask_from_code.ipynb', '13_mcp_tools.ipynb',
                                                            '14_ghost_text.ipynb']
    # each how-to that stops without Ollama ships the cassette `boopiter-run NB --replay` reads, and says where it is from
    assert sorted(p.name for p in NBS.glob('*.cassette.json')) == sorted(f'{n}.cassette.json' for n in HOWTOS)
    for name in HOWTOS:
        assert any('recorded from a scripted server' in c.source for c in nbformat.read(NBS/f'{name}.ipynb', 4).cells)


@pytest.mark.embedded
def test_tour_runs_headless_on_the_embedded_model(tmp_path, monkeypatch):
    """The README's main job, for real: `boopiter-run nbs/00_tour.ipynb` with no Ollama in reach. The reader sees the
    cells, the loop's output, `%boop status`, the embedded model's start and its reading of the prompt, and each reply
    whole (the repository's settings.ini cuts none: only the tiny model's own bound could); no buttons are saved."""
    from test_run import widget_outputs
    monkeypatch.setenv('OLLAMA_HOST', f'127.0.0.1:{free_port()}')
    # the user's own seed pins the tiny model's sampling: seeds 0-3 took 32-40 s here, but 85 s for the one whose first
    # reply ran to the model's bound (1024 tokens), as unseeded runs did now and then (96-110 s in the suite)
    mine = user_settings('seed = 1\n')
    out = tmp_path/'tour.ipynb'
    cmd = [str(Path(sys.executable).with_name('boopiter-run')), str(NBS/'00_tour.ipynb'), '-o', str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    text = res.stdout
    assert res.returncode == 0, text + res.stderr
    assert '      for p in prices:\n          total = sum(prices)\n          print(total)\n12.75\n12.75\n12.75\n' in text
    assert '[2/5] %boop status\nmodel     auto → local/smollm2-135m (Ollama is not reachable at' in text
    assert f'\nseed      1 ({mine})\n' in text                                # the user's seed, as status tells it
    assert '... starting the model: ' in text                              # what the first answer waits for: the start,
    assert re.search(r'\n\.\.\. reading the prompt: [\d,]+ of ~[\d,]+ tokens read', text)   # llama.cpp's /slots, read
    assert text.count('>>> ') == 2 and text.count('--- reply (local/smollm2-135m) ---\n') == 2
    got = replies(nbformat.read(out, as_version=4))
    assert len(got) == 2 and all(o['data']['text/plain'].strip() for _,o in got)
    for _,o in got:
        md = o['metadata']['boopiter']
        assert '--- reply (local/smollm2-135m) ---\n' + o['data']['text/plain'] + '\n--- ' in text   # printed whole
        assert md.get('finish_reason') != 'length' or md['completion_tokens'] >= 1024, md        # no cut at 200
    assert widget_outputs(nbformat.read(out, as_version=4)) == []
    assert text.splitlines()[-1].startswith('5 cells run · 2 prompts answered, 0 reused · 0 errors · ')


def test_context_howto_on_the_test_server(srv, tmp_path, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    got = replies(run_howto(tmp_path, '01_context.ipynb', settings=True))
    assert len(got) == 3 and all(o['metadata']['boopiter']['status'] == 'done' for _,o in got)
    first, second, third = srv.chats()[-3:]
    text = first['messages'][-1]['content']
    assert "IndexError: list index out of range" in text and '4 words' in text and '… [clipped' in text
    assert 'num_predict' not in first['options']                             # the project's settings.ini cuts no reply
    assert second['options']['num_ctx'] == 1024
    assert 'dropped' in got[1][1]['data']['text/markdown']
    assert [m['role'] for m in third['messages']] == ['system', 'user'] and '4 words' not in str(third['messages'])


def test_models_and_settings_howto_on_the_test_server(srv, tmp_path, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    nb = run_howto(tmp_path, '02_models_and_settings.ipynb')
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
    srv.loaded = {'gemma3:4b'}
    nb = run_howto(tmp_path, '03_brain_menu.ipynb')
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
    assert 'streaming the cell ends with its reply: it was not run from JupyterLab or Notebook 7 (a headless run' in status   # whole replies saved


def test_tools_howto_on_the_test_server(srv, tmp_path, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    srv.script('```python\nadd_numbers(47, 23)\n```')
    srv.script('47 + 23 = 70.')
    srv.script("```python\ncreate_ticket('Refund approved for every unit')\n```")
    srv.script('Ticket 9001 is about an amber status ring.')
    srv.script('Like this:\n\n```python\nadd_numbers(2, 3)\n```')
    srv.script('```python\nnth_prime(100)\nnth_prime(20000)\n```')   # the second out of its bounds: told so, not run
    srv.script('The 100th prime is 541; the tool stops at the 10,000th, so I cannot give the 20,000th.')
    srv.script("`prices` has no key 'coffee'. Add it first:\n\n```python\nprices['coffee'] = 4.0\nprices['coffee'] * 2\n```")
    srv.script('```python\nx = [1, 2, 3]\nsum(x) / len(x)\n```')
    nb = run_howto(tmp_path, '04_tools.ipynb')
    cell = {c.source.splitlines()[-1]: c for c in nb.cells if c.cell_type == 'code'}
    def trace(key): return next(o['metadata']['boopiter']['tool_loop'] for o in cell[key].outputs
                                if 'tool_loop' in o['metadata'].get('boopiter', {}))
    added = trace('What is 47 + 23? Use the tool.')
    assert added['stop'] == 'answered' and [s['status'] for s in added['steps']] == ['ok']
    assert [s['status'] for s in trace('Summarize ticket 9001.')['steps']] == ['not requested']
    assert cell['tickets'].outputs[0]['data']['text/plain'] == '[]'
    consent = cell['Show me how to add 2 and 3 with the tool.'].outputs
    assert '```python\nadd_numbers(2, 3)\n```' in consent[-1]['data']['text/plain']   # a block for Run buttons ...
    assert not [o for o in consent if 'application/vnd.jupyter.widget-view+json' in o.get('data', {})]   # ... not here
    assert 'on   kernel' in cell['%boop tools'].outputs[0]['text']
    bounded = trace('What are the 100th and the 20,000th primes? Use the tool.')['steps']
    assert [(s['status'], s['result']) for s in bounded] == [('ok', '541'), (
        'invalid args', 'error: argument `n` must be from 1 to 10000, got 20000. Fix the arguments and call again.')]
    assert 'n:int,  # Which prime: 1 is 2, 2 is 3, ...; from 1 to 10000' in srv.chats()[-3]['messages'][0]['content']
    fix = cell['%boop fix'].outputs
    assert fix[-1]['data']['text/plain'].startswith("`prices` has no key 'coffee'")
    assert "failed with `KeyError: 'coffee'`. Why did it fail" in srv.chats()[-2]['messages'][-1]['content']
    agent = cell['What is the mean of 1, 2 and 3? Compute it in cells.'].outputs   # headless: no page to run cells
    assert agent[0]['text'].startswith('Agent mode needs the boopiter extension') and 'x = [1, 2, 3]' in agent[-1]['data']['text/plain']


def test_deaddrop_howto_answers_through_files(tmp_path, monkeypatch):
    monkeypatch.setenv('BOOPITER_DEADDROP_DIR', str(tmp_path/'dead_drop'))
    monkeypatch.setenv('OLLAMA_HOST', f'127.0.0.1:{free_port()}')
    [(src, out)] = replies(run_howto(tmp_path, '05_deaddrop.ipynb'))
    assert out['data']['text/plain'] == "I read: 'Can you hear me through the dead drop?'. Answered through files."
    md = out['metadata']['boopiter']
    assert (md['model'], md['answered_by'], md['session']) == ('deaddrop/howto', 'howto-bot', 'howto')


def test_images_and_reasoning_howto_on_the_test_server(srv, tmp_path, monkeypatch):
    from PIL import Image
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    thought, answer = 'Line six adds 3 to sample 120 so it is a bad sample', 'A bad sample: `y[120] += 3`.'
    srv.script('One sample spikes far above the sine.')
    srv.script('I cannot see the figure.')
    srv.script(answer, thinking=thought)
    srv.script('A sine curve with one spike.')
    nb = run_howto(tmp_path, '06_images_and_reasoning.ipynb', settings=True)
    got = replies(nb)
    assert len(got) == 4 and all(o['metadata']['boopiter']['status'] == 'done' for _,o in got)
    vision, text_only, thinking, budget = chats = srv.chats()
    assert [c['model'] for c in chats] == ['gemma3:4b', 'smollm2:135m', 'qwen3:1.7b', 'gemma3:4b']
    def images(req): return [i for m in req['messages'] for i in m.get('images', [])]
    # the vision model gets both figures, in notebook order: the inline output as it is, then the linked file, scaled
    figure = next(c for c in nb.cells if c.cell_type == 'code' and "savefig('curve.png'" in c.source)
    inline = ''.join(''.join(figure.outputs[0]['data']['image/png']).split())
    sent = vision['messages'][-1]['images']
    assert len(sent) == 2 == len(images(vision)) and sent[0] == inline
    sizes = [decoded(b)[0] for b in sent]
    assert max(sizes[0]) <= 1024 and sizes[1] == (1024, 512)
    with Image.open(tmp_path/'curve.png') as im: assert im.size == (1600, 800)   # the linked file, before scaling
    assert 'Images: 2 sent' in got[0][1]['data']['text/markdown']
    # the text-only model gets placeholders, and no image at all (real Ollama would refuse the request)
    assert not any('images' in m for m in text_only['messages'])
    text = json.dumps(text_only['messages'])
    assert '[image/png output omitted]' in text and '[curve.png omitted]' in text
    # reasoning: `think` only for the thinking model; shown collapsed above the answer, never sent back
    assert thinking.get('think') in (True, 'high') and not any('think' in c for c in (vision, text_only, budget))
    out = got[2][1]
    section = re.search(r'<details class="boopiter-reasoning">.*?</details>', out['data']['text/markdown'], re.S)
    assert section and thought in section.group() and 'Reasoning: effort high' in out['data']['text/markdown']
    assert out['data']['text/markdown'].index(answer) > section.end()
    assert out['data']['text/plain'] == answer and thought not in out['data']['text/plain']
    assert answer in json.dumps(budget, ensure_ascii=False) and thought not in json.dumps(budget, ensure_ascii=False)
    # max_images = 1, image_size = 512: only the newest image, the linked file, scaled to 512 px
    assert [decoded(b)[0] for b in images(budget)] == [(512, 256)]
    assert '[image/png output omitted: too many images]' in json.dumps(budget['messages'])


def test_reproducible_howto_on_the_test_server(srv, tmp_path, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    def block(code): return f'```python\n{code}\n```'
    fresh = '17.5% of 2340 is 409.5.'
    bench = [block("calculator('2340 * 0.175')"), '409.5.', 'I answer questions about your notebook.',   # qwen3: pct, hi
             'It is about 400.', block("create_ticket('Say hello back')"), 'Hello! I can help.']       # smollm2: pct, hi
    for r in ['It adds the three prices: 19.75, so the total is right.', '409.5', fresh] + bench: srv.script(r)
    nb = run_howto(tmp_path, '07_reproducible.ipynb', settings=True)
    chats = srv.chats()
    # three prompts asked (the copy was reused), then the bench: 3 round trips per model
    assert [c['model'] for c in chats] == ['qwen3:1.7b'] * 6 + ['smollm2:135m'] * 3
    about, alone, again = chats[:3]
    assert "'3 items, 19.75 in total'" in about['messages'][-1]['content'] and 'num_predict' not in about['options']
    assert [m['role'] for m in alone['messages']] == ['system', 'user'] and alone['messages'][-1]['content'] == 'What is 17.5% of 2340?'
    assert (again['messages'], again['options']) == (alone['messages'], alone['options'])   # --fresh: the same request, asked
    assert all('def calculator(' in c['messages'][0]['content'] for c in chats[3:])
    got = [(src.splitlines()[0], o) for src,o in replies(nb)]
    assert [s for s,_ in got] == ['%%prompt -m qwen3:1.7b', '%%prompt -m qwen3:1.7b --no-context',
                                  '%%prompt -m qwen3:1.7b --no-context', '%%prompt -m qwen3:1.7b --no-context --fresh']
    md = [o['metadata']['boopiter'] for _,o in got]
    assert [m.get('reused', False) for m in md] == [False, False, True, False] and all(m['status'] == 'done' for m in md)
    assert md[1]['digest'] == md[2]['digest'] == md[3]['digest'] != md[0]['digest']
    first, copy = got[1][1], got[2][1]
    assert copy['data']['text/plain'] == first['data']['text/plain'] == '409.5' and got[3][1]['data']['text/plain'] == fresh
    assert 'Reply details · reused · ' in copy['data']['text/markdown'] and 'reused' not in first['data']['text/markdown']
    cell = {c.source.splitlines()[0]: c for c in nb.cells if c.cell_type == 'code'}
    def text(key): return ''.join(o.get('text', '') for o in cell[key].outputs)
    cassette = tmp_path/'07_reproducible.cassette.json'
    assert text('%boop record').startswith('Recording every model turn to 07_reproducible.cassette.json (0 turns')
    assert text('%boop cassette off').startswith('No cassette in use') and not cassette.exists()   # nothing recorded
    benched = cell['%boop bench --models qwen3:1.7b,smollm2:135m --tasks my_tasks.json --out my_scores'].outputs
    scorecard = next(o['data']['text/markdown'] for o in benched if 'text/markdown' in o.get('data', {}))
    scorecard = html.unescape(re.sub(r'\\(.)', r'\1', scorecard).replace('| --- |', '|---|'))   # as it reads, escapes aside
    for line in ('| pct | C | What is 17.5% of 2340? | `C   ok` | `-   XX` |', '| right tools | 2/2 | 0/2 |',
                 '| hi | - | Hi! In one sentence, what can you help me with? | `-   ok` | `T   XX` |',
                 '| calls a guard stopped | 0 | 1 |', '| model round trips | 3 | 3 |',
                 '| claims | completion, tools, thinking | completion · no tools |'):
        assert line in scorecard, scorecard
    assert any('image/png' in o.get('data', {}) for o in benched)   # the chart
    saved = json.loads((tmp_path/'my_scores.json').read_text())
    assert [m['totals']['right'] for m in saved['models']] == [2, 0] and saved['tasks']['source'] == 'my_tasks.json'
    assert (tmp_path/'my_scores.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    table = text('from boopiter_ext.tools.scorecard import load_result')
    assert 'pct C   C   ok       -   XX' in table and '[create_ticket not requested]' in table

    # Run All again, headless, on the executed notebook: the prompts ask nothing but --fresh; the bench measures again
    srv.reset()
    for r in [fresh] + bench: srv.script(r)
    assert run_notebook(tmp_path/'out.ipynb', tmp_path/'again.ipynb', write=lambda s: None)
    chats2 = srv.chats()
    assert len(chats2) == 1 + len(bench) and chats2[0]['messages'] == again['messages']
    assert all('def calculator(' in c['messages'][0]['content'] for c in chats2[1:])
    got2 = [o for _,o in replies(nbformat.read(tmp_path/'again.ipynb', as_version=4))]
    assert [o['metadata']['boopiter'].get('reused', False) for o in got2] == [True, True, True, False]
    # the newest saved reply to a request is the one shown: the --fresh cell's, for the two cells above it
    assert [o['data']['text/plain'] for o in got2] == [got[0][1]['data']['text/plain'], fresh, fresh, fresh]
    assert all('Reply details · reused · ' in o['data']['text/markdown'] for o in got2[:3])


def test_whole_notebook_howto_on_the_test_server(srv, tmp_path, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    srv.script('Sales are above the budget.')
    srv.script('```python\ngrowth(sales)\n```')
    srv.script('Sales grew 50.0%.')
    srv.script("```python\nsearch_notebook('sales')\n```")
    srv.script('The cells that define and use sales.')
    out = run_howto(tmp_path, '08_whole_notebook.ipynb', settings=True)
    chats = srv.chats()
    assert len(chats) == 5                                                   # the dry run asked nothing
    assert not [c for c in chats if 'my_salary' in json.dumps(c)]            # hidden: never sent, to no tool either
    first = json.dumps(chats[0])
    assert 'thousands of euros' in first and 'ndarray, shape (6,), dtype int64' in first
    assert "'growth'" not in first and 'def growth(' in json.dumps(chats[1])   # &`growth`: a tool for that prompt only
    assert '50.0' in json.dumps(chats[2]) and 'np.array([120, 135' in json.dumps(chats[4])
    dry = next(o for c in out.cells if c.source.startswith('%%prompt --dry-run') for o in c.outputs)
    assert dry['data']['text/plain'].startswith('Dry run: nothing was sent.') and '· hidden' in dry['data']['text/plain']


def test_web_and_pdf_howto_on_the_test_server(srv, tmp_path, monkeypatch):
    "Offline: the notebook serves its own page on loopback, allows it with `%config`, and writes its own PDF."
    from boopiter_ext.tools.pdf import PDF_HINT
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    srv.script('```python\nfetch_url(page)\n```')
    srv.script('Every 4 weeks, with citric acid.')
    nb = run_howto(tmp_path, '09_web_and_pdf_tools.ipynb')
    cells = [c for c in nb.cells if c.cell_type == 'code']
    def text(c): return ''.join(o.get('text', '') for o in c.outputs)
    refused, allowed = [text(c) for c in cells if c.source == 'print(fetch_url(page))']
    assert 'error: 127.0.0.1 is a loopback address' in refused
    assert '# The K-200 kettle' in allowed and 'Descale it every 4 weeks with citric acid.' in allowed
    assert 'track()' not in allowed and 'on   web' in text(cells[1]) and 'on   pdf' in text(cells[1])
    [loop] = [o['metadata']['boopiter']['tool_loop'] for c in cells if c.source.startswith('%%prompt --auto')
              for o in c.outputs if 'tool_loop' in o['metadata'].get('boopiter', {})]
    assert loop['stop'] == 'answered' and [s['status'] for s in loop['steps']] == ['flagged']
    sent = json.dumps(srv.chats()[-1]['messages'][-1])
    assert 'UNTRUSTED TOOL OUTPUT' in sent and 'Descale it every 4 weeks' in sent   # the page, quarantined
    pdf = text(next(c for c in cells if c.source.startswith("print(read_pdf('kettle_report.pdf'")))
    have_pypdf = __import__('importlib.util').util.find_spec('pypdf') is not None
    assert pdf.strip() == ('kettle_report.pdf: 2 pages\n--- page 2 ---\nReturns fell 30% after the descaling reminder.'
                           if have_pypdf else PDF_HINT)
    assert "is outside the notebook's folder" in text(next(c for c in cells if "'../secret.pdf'" in c.source))


def test_teams_howto_on_the_test_server(srv, tmp_path, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    srv.script('So one big GPU serves everyone.')
    srv.script('One address, many servers behind it.')
    nb = run_howto(tmp_path, '10_teams.ipynb')
    got = [(src.splitlines()[0], o['data']['text/plain'], o['metadata']['boopiter']) for src,o in replies(nb)]
    assert [(first, text, m['model']) for first,text,m in got] == [
        ('%%prompt -m @lab/qwen3:1.7b', 'So one big GPU serves everyone.', '@lab/qwen3:1.7b'),
        ('%%prompt -m @gateway/qwen3:1.7b', 'One address, many servers behind it.', '@gateway/qwen3:1.7b')]
    assert [r.path for r in srv.requests if 'chat' in r.path] == ['/api/chat', '/v1/chat/completions']
    cell = {c.source.splitlines()[-1]: c for c in nb.cells if c.cell_type == 'code'}
    def text(key): return ''.join(o.get('text', '') or o.get('data', {}).get('text/plain', '') for o in cell[key].outputs)
    models = text('%boop models')
    assert '@lab/qwen3:1.7b' in models and '@gateway/qwen3:1.7b' in models and 'qwen3:1.7b  ' in models
    assert 'model @lab/qwen3:1.7b' in text('%boop model @lab/qwen3:1.7b')
    table = text('    print(f\'{ep.name:<8} {ep.kind:<7} {ep.base:<32} {"shared" if ep.shared else "yours"}\')')
    assert table.split() == ['lab', 'ollama', srv.url, 'shared', 'gateway', 'openai', srv.url + '/v1', 'shared']


def test_mcp_tools_howto_on_the_test_server(srv, tmp_path, monkeypatch):
    "The how-to's own MCP server, declared in code and turned on; the model's two calls run and their results go back."
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    for reply, _ in HOWTOS['13_mcp_tools'][1]: srv.script(reply)
    nb = run_howto(tmp_path, '13_mcp_tools.ipynb')
    cells = {c.source.splitlines()[0]: c for c in nb.cells if c.cell_type == 'code'}
    def text(first): return ''.join(o.get('text', '') or o.get('data', {}).get('text/plain', '') for o in cells[first].outputs)
    assert 'on   notes    MCP server runs `python notes_server.py`: Kitchen notes' in text('%boop tools notes on')
    assert text("search_notes('kettle')") == "['kettle', 'shopping']"
    assert text('from boopiter_ext.tools.registry import tool_signature').startswith('# Changes something')
    [loop] = [o['metadata']['boopiter']['tool_loop'] for o in cells['%%prompt --auto'].outputs
              if 'tool_loop' in o['metadata'].get('boopiter', {})]
    assert loop['stop'] == 'answered' and [s['status'] for s in loop['steps']] == ['ok', 'ok']
    sent = json.dumps(srv.chats()[-1]['messages'])
    assert 'kettle' in sent and 'Descale the K-200 kettle every 4 weeks with citric acid.' in sent
    assert text("get_current_time('Asia/Tokyo')['timezone']") == "'Asia/Tokyo'"


def test_ghost_text_howto_says_which_model_completes_and_shows_what_it_reads(srv, tmp_path, monkeypatch):
    "On the test server (no model fills in the middle): the status says completions are off and why; the parts built."
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    nb = run_howto(tmp_path, '14_ghost_text.ipynb')
    cells = {c.source.splitlines()[0]: c for c in nb.cells if c.cell_type == 'code'}
    def text(first): return ''.join(o.get('text', '') or o.get('data', {}).get('text/plain', '') for o in cells[first].outputs)
    assert 'completions off: no model with fill-in-the-middle (`insert`) in reach' in text('%boop status')
    assert text('from boopiter_ext.core.completion import fim_parts, tidy').startswith('import math\n\n# names defined: radius')
    assert text("tidy('math.pi * r ** 2\\n\\nprint(area(2))', prompt, suffix)") == "'math.pi * r ** 2'"


def status_lines(cell)->str: return ''.join(o.get('text', '') for o in cell.outputs)


def test_first_hour_howto_on_the_test_server(srv, tmp_path, monkeypatch):
    "The new user's path with Ollama (the test server stands in): who answers and why, a first prompt, then no Ollama."
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    srv.script('`total` is 19.75.')
    nb = run_howto(tmp_path, '11_first_hour.ipynb', settings=True)
    status, cassette, without = [status_lines(c) for c in nb.cells if c.cell_type == 'code' and '%boop' in c.source]
    # the smallest of the server's chat models that answers without thinking first (README, Choosing the model)
    assert "model     auto → smollm2:135m (the first of Ollama's 3 chat models: answers without thinking" in status
    assert cassette.startswith('No cassette in use')
    [(src, out)] = replies(nb)
    md = out['metadata']['boopiter']
    assert (md['model'], md['model_source'], md['status']) == ('smollm2:135m', 'auto', 'done')
    assert out['data']['text/plain'] == '`total` is 19.75.'
    [chat] = srv.chats()
    assert '19.75' in chat['messages'][-1]['content'] and 'What is total' in chat['messages'][-1]['content']
    assert 'model     auto → local/smollm2-135m (Ollama is not reachable at http://127.0.0.1:9' in without
    assert 'host      127.0.0.1:9 (%config)' in without


def test_ask_from_code_howto_on_the_test_server(srv, tmp_path, monkeypatch):
    "One answer, a structured one, a table labelled and a folder's fields extracted at once, and the batch again asks nothing."
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    srv.responder = HOWTOS['12_ask_from_code'][1]
    nb = run_howto(tmp_path, '12_ask_from_code.ipynb', settings=True)
    out = {c.source.splitlines()[-1]: [o.get('text') or o.get('data', {}).get('text/plain') for o in c.outputs]
           for c in nb.cells if c.cell_type == 'code'}
    assert out["ask('In one word: is a tomato a fruit or a vegetable?')"] == ["'Fruit.'"]
    assert out["ask('The kettle boils fast, but the lid broke after a week.', schema=Review)"] == [
        "Review(sentiment='mixed', product='kettle')"]
    progress, routes = out["[(t['id'], r.team) for t, r in zip(tickets, routes)]"]
    assert routes == "[(1, 'billing'), (2, 'bugs'), (3, 'account')]" and '3 answered (3 asked, 0 reused)' in progress
    assert "'alice.txt': Contact(name='Alice Martin', email='alice@example.com', since=2019)" in out['contacts'][1]
    again = out['contacts_again == contacts']
    assert again[1] == 'True' and '2 answered (0 asked, 2 reused)' in again[0]
    asked = [c['messages'][-1]['content'] for c in srv.chats()]
    assert len(asked) == 8 and sum('Extract the contact' in q for q in asked) == 2   # the second batch asked nothing
    assert all('format' in c for c in srv.chats() if 'JSON Schema' in c['messages'][-1]['content'])
    assert out["    elif kind == 'details': print(f'\\n[{text.model}, {text.status}]')"] == [
        '13: its only divisors are 1 and 13.\n[smollm2:135m, done]\n']


@pytest.mark.embedded
def test_first_hour_howto_without_ollama_on_the_embedded_model(tmp_path, monkeypatch):
    "The new user's path with no Ollama and no cassette: the status says why, and the tiny embedded model answers."
    monkeypatch.setenv('OLLAMA_HOST', f'127.0.0.1:{free_port()}')
    # the user's own settings bound the reply: the tiny model's own bound (1024 tokens, the tour's test) took this run
    # from 30 s to over 200 s on a busy machine, as the model sampled
    mine = user_settings('max_tokens = 96\n')
    nb = run_howto(tmp_path, '11_first_hour.ipynb', settings=True)
    status = status_lines(next(c for c in nb.cells if c.source == '%boop status'))
    assert 'model     auto → local/smollm2-135m (Ollama is not reachable at http://127.0.0.1:' in status
    [(src, out)] = replies(nb)
    md = out['metadata']['boopiter']
    assert (md['model'], md['model_source'], md['status']) == ('local/smollm2-135m', 'auto', 'done')
    assert out['data']['text/plain'].strip() and md['completion_tokens'] <= 96
    assert 'timeout   600.0 (' in status and f'max_tokens 96 ({mine})' in status   # the project's and the user's files


@pytest.mark.parametrize('name', list(HOWTOS))
def test_howto_replays_offline_from_its_cassette(name, tmp_path, monkeypatch):
    """`boopiter-run NB --replay` with no Ollama and no model in reach: every prompt answers from the shipped cassette
    (each reply is a turn of it, and every turn is used), which loads without a warning."""
    from boopiter_ext.core.replay import Cassette
    monkeypatch.setenv('OLLAMA_HOST', f'127.0.0.1:{free_port()}')
    (tmp_path/'nbs').mkdir()
    shutil.copy(ROOT/'settings.ini', tmp_path/'settings.ini')   # as nbs/ reads the repository's, one folder up
    for f in (f'{name}.ipynb', f'{name}.cassette.json'): shutil.copy(NBS/f, tmp_path/'nbs'/f)
    tape = Cassette(tmp_path/'nbs'/f'{name}.cassette.json')
    assert tape.warnings == [] and len(tape) > 0
    cmd = [str(Path(sys.executable).with_name('boopiter-run')), str(tmp_path/'nbs'/f'{name}.ipynb'), '--replay',
           '-o', str(tmp_path/'out.ipynb')]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    rerecord = f'; if a cell changed, re-record: .venv/bin/python tests/record_howtos.py {name[:2]}'
    assert res.returncode == 0, res.stdout + res.stderr + rerecord
    assert 'CassetteDrift' not in res.stdout, res.stdout + rerecord
    nb = nbformat.read(tmp_path/'out.ipynb', as_version=4)
    prompts = [c for c in nb.cells if c.cell_type == 'code' and c.source.startswith('%%prompt')
               and 'raises-exception' not in c.metadata.get('tags', [])]
    if name == '12_ask_from_code':   # asked from code: no reply output, every answer from the cassette, none asked
        outs = [o for c in nb.cells if c.cell_type == 'code' for o in c.outputs]
        assert not [o for o in outs if o['output_type'] == 'error']
        batches = [o['data']['text/plain'] for o in outs if 'items in' in o.get('data', {}).get('text/plain', '')]
        assert len(batches) == 3 and all(re.search(r'answered \(0 asked, \d reused\)', b) for b in batches)
        return
    done = [o for _,o in replies(nb) if o['metadata']['boopiter']['status'] == 'done']
    assert len(done) == res.stdout.count('--- reply (')   # an auto-mode prompt has a reply for each round
    assert all(any(o['metadata'].get('boopiter', {}).get('status') == 'done' for o in c.outputs) for c in prompts)
    for o in done:
        md, turn = o['metadata']['boopiter'], tape.turns.get(o['metadata']['boopiter']['digest'])
        assert turn is not None, md
        assert (md['model'], o['data']['text/plain']) == (turn['model'], turn['reply']['answer'])
        assert md.get('reasoning', '') == turn['reply'].get('reasoning', '')
    assert {o['metadata']['boopiter']['digest'] for o in done} == set(tape.turns)   # no turn left over
