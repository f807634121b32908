"""A rerun never asks again behind your back (issue 22.2): a saved reply whose context changed is kept, marked with
what changed and how to ask again; asking again is deliberate, and the replaced reply stays recoverable; empty cells
and cells that never ran add nothing to a context. Fast: no kernel (the bare shell and the test server)."""

import json
from types import SimpleNamespace
import pytest
from hypothesis import given, settings as hsettings, strategies as st
from conftest import run
from strategies import awkward_text, json_values
from boopiter_ext.context.build import Cell, build_context
from boopiter_ext.core.assistant import Assistant
from boopiter_ext.core.replay import (PREVIOUS_CHARS, cell_hash, clean_fingerprint, clean_previous, context_changes,
                                      context_fingerprint, stale_line)
from boopiter_ext.render.reply import REPLY_MIME, reply_bundle
from boopiter_ext.models.stream import Reply
from boopiter_ext.settings import load_settings

MODEL = 'qwen3:1.7b'


def out(text): return dict(output_type='stream', name='stdout', text=text)


def sent(cells, question='And?'): return build_context(cells, question)


# ---- what a context holds

def test_empty_cells_and_cells_that_never_ran_add_nothing_to_a_context():
    ran = [Cell('x = 1', exec_count=1, outputs=[out('1\n')], cell_id='a')]
    idle = [Cell('', cell_id='e1'), Cell('   \n', 'markdown', cell_id='e2'), Cell('', exec_count=4, cell_id='e3'),
            Cell('y = 2', origin='file', cell_id='n'), Cell('z = 3', origin='frontend', cell_id='f')]
    msgs, ledger = sent(ran + idle)
    assert msgs == sent(ran)[0]                                          # not a word of them reaches the model
    assert [c.cell_id for c in ledger['sent']] == ['a'] and len(ledger['items']) == 1
    now_ran = Cell('y = 2', exec_count=2, cell_id='n')                  # once it runs, it is part of the context
    assert 'y = 2' in sent(ran + [now_ran])[0][-1]['content']
    saved_run = Cell('w = 4', origin='file', exec_count=7, outputs=[out('4\n')])   # ran before it was saved: it counts
    assert 'w = 4' in sent([saved_run])[0][-1]['content']


def test_a_cells_hash_ignores_run_counters_and_addresses_and_sees_source_outputs_and_images():
    a = Cell('print(f)', exec_count=3, outputs=[out('<F object at 0x7f3a12>\n')])
    assert cell_hash(a) == cell_hash(Cell('print(f)', exec_count=41, outputs=[out('<F object at 0x55aa00>\n')]))
    assert cell_hash(a) != cell_hash(Cell('print(g)', exec_count=3, outputs=[out('<F object at 0x7f3a12>\n')]))
    assert cell_hash(a) != cell_hash(Cell('print(f)', exec_count=3, outputs=[out('2\n')]))
    img = lambda b: Cell('show()', exec_count=1, outputs=[dict(output_type='display_data', data={'image/png': b},
                                                                   metadata={})])
    assert cell_hash(img('A' * 80)) != cell_hash(img('A' * 79 + 'B'))   # an image by its bytes, not its placeholder
    q = lambda reply: Cell('%%prompt\nWhy?', 'prompt', outputs=[dict(output_type='display_data', data={'text/plain': reply},
                                                                  metadata={'boopiter': {'reply': True}})])
    assert cell_hash(q('Because.')) != cell_hash(q('No idea.'))          # an earlier prompt: its question and reply
    assert len(cell_hash(a)) == 12 and context_fingerprint([a]) == [['', cell_hash(a)]]


def test_what_changed_is_named_changed_new_or_gone_by_id_and_without_ids():
    before = [Cell('x = 1', exec_count=1, cell_id='a'), Cell('## Data', 'markdown', cell_id='m'),
              Cell('del y', exec_count=2, cell_id='g')]
    saved = clean_fingerprint(json.loads(json.dumps(context_fingerprint(before))))   # as read back from a file
    after = [Cell('x = 2', exec_count=5, cell_id='a'), before[1], Cell('nums = [1, 2]', exec_count=6, cell_id='n')]
    ch = context_changes(saved, after)
    assert [c.cell_id for c in ch['changed']] == ['a'] and [c.cell_id for c in ch['new']] == ['n'] and ch['gone'] == 1
    line = stale_line(ch)
    assert line == ('Stale: since this reply, In [5] `x = 2` changed; In [6] `nums = [1, 2]` is new or ran; 1 cell it saw '
                    'is gone. Kept as it was; run `%%prompt --fresh` to ask again.')
    anon = [Cell(c.source, c.kind, exec_count=c.exec_count) for c in before]   # headless: no ids at all
    assert context_changes(context_fingerprint(anon), before) == dict(changed=[], new=[], gone=0, unknown=False)
    moved = context_changes(context_fingerprint(anon), [anon[1], anon[0], Cell('x = 9', exec_count=8)])
    assert [c.source for c in moved['new']] == ['x = 9'] and moved['gone'] == 1
    assert 'not recorded' in stale_line(context_changes(None, after))   # a reply without a (valid) fingerprint
    many = context_changes([], [Cell(f'v{i} = {i}', exec_count=i + 1) for i in range(7)])
    assert stale_line(many).count('`v') == 4 and 'and 3 more are new or ran' in stale_line(many)


# ---- what a file says of a reply's context and of the reply it replaced: untrusted

good_pairs = st.lists(st.tuples(st.from_regex(r'[\w.:-]{0,20}', fullmatch=True), st.from_regex(r'[0-9a-f]{12}', fullmatch=True))
                      .map(list), max_size=6)


@hsettings(max_examples=300, deadline=None)
@given(st.one_of(json_values(), good_pairs, good_pairs.map(lambda ps: ps + [[1, 'x']]),
                 good_pairs.map(lambda ps: ps + [['<img src=x>', 'a' * 12]]), good_pairs.map(lambda ps: ps + [['a', 'A' * 12]])))
@pytest.mark.heavy
def test_a_hostile_fingerprint_is_refused_whole_never_half_read(value):
    got = clean_fingerprint(value)
    ok = isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], str)
                                         and len(p[1]) == 12 and all(ch in '0123456789abcdef' for ch in p[1])
                                         and len(p[0]) <= 256 and all(ch.isalnum() or ch in '_.:-' for ch in p[0])
                                         for p in value)
    assert (got == value) if ok else (got is None), value
    now = [Cell('x = 1', exec_count=1, cell_id='a')]
    stale_line(context_changes(got, now))                                 # whatever was read: one line, no exception


def test_the_fingerprint_checker_sees_both_kinds_of_input():
    "The property above reaches both branches: examples that are read and examples that are refused."
    assert clean_fingerprint([['c1', 'ab' * 6], ['', '0' * 12]]) == [['c1', 'ab' * 6], ['', '0' * 12]]
    assert clean_fingerprint([['c1', 'ab' * 6], ['c2', 'AB' * 6]]) is None
    assert clean_fingerprint([['c1', 'ab' * 6]] * 5001) is None and clean_fingerprint({'c1': 'ab' * 6}) is None


@hsettings(max_examples=200, deadline=None)
@given(st.one_of(json_values(), st.fixed_dictionaries({'model': st.one_of(awkward_text(), json_values(4)),
                                                      'answer': st.one_of(awkward_text(40), st.text(min_size=1))})))
def test_a_replaced_reply_read_back_is_text_bounded_or_nothing(value):
    got = clean_previous(value)
    if got is None: return
    assert set(got) == {'model', 'answer'} and isinstance(got['model'], str) and isinstance(got['answer'], str)
    assert len(got['answer']) <= PREVIOUS_CHARS + 2 and got['answer'].strip()
    got['answer'].encode('utf-8')                                         # lone surrogates made encodable
    data, md = reply_bundle(done('Now.'), dict(previous=got))
    assert data[REPLY_MIME]['previous'] == got and md['boopiter']['previous'] == got


def test_a_long_replaced_reply_is_cut_and_its_fence_cannot_be_closed_by_it():
    prev = clean_previous(dict(model=MODEL, answer='```\n</details><script>x()</script>\n' + 'y' * PREVIOUS_CHARS))
    assert prev['answer'].endswith(' …') and len(prev['answer']) == PREVIOUS_CHARS + 2
    md = reply_bundle(done('Now.'), dict(previous=prev))[0]['text/markdown']
    assert '<summary>Previous answer · qwen3:1.7b</summary>' in md and '````' in md   # a fence longer than any inside


def done(text):
    r = Reply(MODEL)
    r.add_content(text)
    r.finish('done', {})
    return r


# ---- who may make a rerun ask again: you, never a notebook or a project

def assistant(current=None):
    return Assistant(SimpleNamespace(current=current, cells=lambda: []), {})


def test_only_your_own_choice_makes_a_rerun_ask_again(tmp_path, monkeypatch):
    monkeypatch.setenv('XDG_CONFIG_HOME', str(tmp_path/'config'))
    a = assistant(Cell('%%prompt\nWhy?', 'prompt', cell_id='p1'))
    assert a.asks_again(load_settings()) == ''
    assert a.asks_again(load_settings(binding=dict(reuse=False))) == ''          # a notebook's binding: no
    (tmp_path/'proj').mkdir()
    (tmp_path/'proj'/'settings.ini').write_text('[boopiter]\nreuse = off\n')
    assert a.asks_again(load_settings(start=tmp_path/'proj')) == ''              # a cloned project's settings: no
    assert a.asks_again(load_settings(cell=dict(reuse=False))) == '`--fresh`'
    assert a.asks_again(load_settings(runtime=dict(reuse=False))) == '`reuse` is off (%config)'
    (tmp_path/'config'/'boopiter').mkdir(parents=True)
    (tmp_path/'config'/'boopiter'/'settings.ini').write_text('[boopiter]\nreuse = off\n')
    assert a.asks_again(load_settings()).startswith('`reuse` is off (settings.ini')   # your own settings file
    a.set_binding(reuse=False)                                                   # the menu's switch, clicked here
    assert a.asks_again(load_settings(binding=a.binding())) == "the menu's reuse switch is off"
    (tmp_path/'config'/'boopiter'/'settings.ini').unlink()
    b = assistant(Cell('%%prompt\nWhy?', 'prompt', cell_id='p1'))
    b.ask_again('p2')
    assert b.asks_again(load_settings()) == ''                                   # another cell's Ask again
    b.ask_again('p1')
    assert b.asks_again(load_settings()) == 'Ask again'


# ---- a rerun in a shell: kept and marked, then asked again on purpose, the old reply kept

def cell(shell, code, cell_id):
    "Run `code` as the notebook cell `cell_id` (a rerun of the same id replaces its record, as in Jupyter)."
    return shell.run_cell(code, store_history=True, cell_id=cell_id)


def last_reply(a, cell_id):
    c = next(c for c in a.cells.cells() if c.cell_id == cell_id)
    return next(o for o in reversed(c.outputs) if o['metadata'].get('boopiter', {}).get('reply'))


def loaded(shell, srv, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    run(shell, '%load_ext boopiter_ext')
    return shell.magics_manager.registry['BoopMagics'].assistant


def test_a_rerun_over_a_changed_context_keeps_the_reply_marked_and_fresh_asks_keeping_the_old_one(shell, srv, capsys,
                                                                                                  monkeypatch):
    a = loaded(shell, srv, monkeypatch)
    cell(shell, 'x = 6 * 7', 'c1')
    srv.script('x is 42.')
    cell(shell, f'%%prompt -m {MODEL}\nWhat is x?', 'p1')
    first = last_reply(a, 'p1')
    assert len(srv.chats()) == 1 and first['metadata']['boopiter']['context']['cells']
    cell(shell, 'x = 43', 'c1')                                           # the context changes
    cell(shell, '', 'e1')                                                 # an empty cell adds nothing
    capsys.readouterr()
    res = cell(shell, f'%%prompt -m {MODEL}\nWhat is x?', 'p1')
    printed = capsys.readouterr().out
    assert res.success and len(srv.chats()) == 1                         # no model asked
    kept = last_reply(a, 'p1')
    md = kept['metadata']['boopiter']
    assert kept['data']['text/plain'] == 'x is 42.'
    assert md['stale'] == 'Stale: since this reply, In [4] `x = 43` changed. Kept as it was; run `%%prompt --fresh` to ask again.'
    assert md['stale'] in printed                                         # a terminal says it too
    assert md['digest'] == first['metadata']['boopiter']['digest']       # as it was made: the context it saw
    assert md['context']['cells'] == first['metadata']['boopiter']['context']['cells']
    assert kept['data'][REPLY_MIME]['stale'] == md['stale'] and 'Reply details · stale · ' in kept['data']['text/markdown']
    cell(shell, f'%%prompt -m {MODEL}\nWhat is x?', 'p1')                # again: still kept, still stale
    assert len(srv.chats()) == 1 and last_reply(a, 'p1')['metadata']['boopiter']['stale'].endswith(md['stale'][-70:])
    srv.script('x is 43.')
    cell(shell, f'%%prompt -m {MODEL} --fresh\nWhat is x?', 'p1')       # asked on purpose
    new = last_reply(a, 'p1')
    assert len(srv.chats()) == 2 and new['data']['text/plain'] == 'x is 43.' and 'stale' not in new['metadata']['boopiter']
    assert new['metadata']['boopiter']['previous'] == dict(model=MODEL, answer='x is 42.')   # recoverable
    assert new['data'][REPLY_MIME]['previous'] == dict(model=MODEL, answer='x is 42.')
    assert '<summary>Previous answer · qwen3:1.7b</summary>' in new['data']['text/markdown']
    cell(shell, f'%%prompt -m {MODEL}\nWhat is x?', 'p1')                # and now it is the reply to this context
    assert len(srv.chats()) == 2 and last_reply(a, 'p1')['metadata']['boopiter']['reused']


def test_a_new_question_asks_and_a_model_named_with_m_asks_that_model(shell, srv, monkeypatch):
    loaded(shell, srv, monkeypatch)
    cell(shell, 'x = 6 * 7', 'c1')
    srv.script('x is 42.')
    cell(shell, f'%%prompt -m {MODEL}\nWhat is x?', 'p1')
    cell(shell, 'x = 1', 'c1')
    srv.script('One.')
    cell(shell, f'%%prompt -m {MODEL}\nWhat is x now?', 'p1')           # another question: asked
    srv.script('x is 1.')
    cell(shell, '%%prompt -m gemma3:4b\nWhat is x now?', 'p1')           # another model named for it: asked
    assert len(srv.chats()) == 3 and srv.chats()[-1]['model'] == 'gemma3:4b'


def saved_notebook(path, reply_output):
    "A notebook as another run saved it: `x = 5` then a prompt cell with `reply_output`."
    import nbformat
    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell('x = 5', id='c1', execution_count=1)
    prompt = nbformat.v4.new_code_cell(f'%%prompt -m {MODEL}\nWhat is x?', id='p1', execution_count=2)
    prompt.outputs = [nbformat.from_dict(reply_output)]
    nb.cells = [code, prompt]
    nbformat.write(nb, path)
    return path


@pytest.mark.parametrize('fault', ['none', 'digest', 'cells', 'asked'])
def test_a_saved_notebooks_reply_is_kept_over_a_changed_context_and_the_dry_run_says_so(shell, srv, capsys, monkeypatch,
                                                                                        tmp_path, fault):
    r = done('x is 5.')
    fp = context_fingerprint([Cell('x = 5', exec_count=1, cell_id='c1')])
    _, ledger = build_context([Cell('x = 5', exec_count=1, cell_id='c1')], 'What is x?')
    ledger = dict(ledger, window=4096, cells=fp)
    data, md = reply_bundle(r, dict(digest='sha256:' + 'a' * 64, cell_id='p1'), ledger)
    if fault == 'digest': md['boopiter']['digest'] = '<script>alert(1)</script>'
    if fault == 'cells': md['boopiter']['context']['cells'] = [['<b onclick=x>', 'zz'], {'a': 1}]
    if fault == 'asked': md['boopiter']['context']['asked'] = {'$': ['<script>']}
    path = saved_notebook(tmp_path/'nb.ipynb', dict(output_type='display_data', data=data, metadata=md))
    monkeypatch.setenv('BOOPITER_NOTEBOOK', str(path))
    a = loaded(shell, srv, monkeypatch)
    cell(shell, 'x = 6', 'c1')                                            # Run All: the cell above differs now
    capsys.readouterr()
    cell(shell, f'%%prompt -m {MODEL} --dry-run\nWhat is x?', 'p1')
    dry = capsys.readouterr().out.splitlines()[0]
    assert 'Run for real, it keeps its saved reply, marked stale, and asks no model' in dry
    assert ('`x = 6` changed' in dry) == (fault != 'cells') and ('not recorded' in dry) == (fault == 'cells')
    cell(shell, f'%%prompt -m {MODEL} --dry-run --fresh\nWhat is x?', 'p1')
    assert 'Run for real, it asks the model again (`--fresh`)' in capsys.readouterr().out
    res = cell(shell, f'%%prompt -m {MODEL}\nWhat is x?', 'p1')
    kept = last_reply(a, 'p1')['metadata']['boopiter']
    assert res.success and srv.chats() == [] and kept['stale'].startswith('Stale: since this reply, ')
    assert '<' not in json.dumps(kept)                                     # nothing the file made up is kept
    assert ('digest' in kept) == (fault != 'digest') and ('cells' in kept['context']) == (fault != 'cells')


def test_status_says_which_prompts_a_rerun_keeps_stale_shows_again_or_asks(shell, srv, capsys, monkeypatch, tmp_path):
    import nbformat
    r = done('x is 5.')
    _, ledger = build_context([Cell('x = 5', exec_count=1, cell_id='c1')], 'What is x?')
    fp = context_fingerprint([Cell('x = 5', exec_count=1, cell_id='c1')])
    data, md = reply_bundle(r, dict(digest='sha256:' + 'a' * 64, cell_id='p1'), dict(ledger, window=4096, cells=fp))
    path = saved_notebook(tmp_path/'nb.ipynb', dict(output_type='display_data', data=data, metadata=md))
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(f'%%prompt -m {MODEL}\nAnd twice x?', id='p2'))
    nbformat.write(nb, path)
    monkeypatch.setenv('BOOPITER_NOTEBOOK', str(path))
    loaded(shell, srv, monkeypatch)
    def status():
        capsys.readouterr()
        run(shell, '%boop status')
        return next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith('replies'))
    assert status() == ('replies   Run All asks 1 prompt: 1 saved reply shown again; 1 asked: `And twice x?` '
                        '(no saved reply)')
    cell(shell, 'x = 6', 'c1')                                            # the cell above the first prompt changes
    assert status() == ('replies   Run All asks 1 prompt: 1 kept but marked stale: `What is x?` (In [3] `x = 6` changed); '
                        '1 asked: `And twice x?` (no saved reply) (`--fresh` or Ask again asks)')
    run(shell, '%config BoopMagics.reuse = False')
    assert status() == 'replies   every prompt asks the model again: `reuse` is off (%config)'


class Shown:
    "Stands in for a reply's display: what it was asked to show."
    def show(self, data, md):
        self.data, self.md = data, md
        return dict(output_type='display_data', data=data, metadata=md)


STALE_KEYS = ('model', 'model_source', 'status', 'effort', 'reasoning_model', 'model_info', 'reasoning', 'note', 'digest',
              'context', 'previous', 'completion_tokens', 'ttft_s', 'tokens_per_s', 'stale', 'kept', 'reused')


@hsettings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(STALE_KEYS), json_values(8), max_size=10),
       st.dictionaries(st.sampled_from(['window', 'asked', 'cells', 'tokens']), json_values(6), max_size=4),
       st.one_of(awkward_text(30), json_values(4)))
@pytest.mark.heavy
def test_a_hostile_saved_reply_kept_stale_is_drawn_from_checked_values_only(md, ctx, answer):
    from boopiter_ext.core.replay import clean_snapshot
    from boopiter_ext.context.nbfile import clean_output
    md = {**md, 'reply': True, 'status': 'done', 'model': MODEL, 'context': {**ctx, 'cells': ctx.get('cells')}}
    out = clean_output(dict(output_type='display_data', data={'text/plain': answer}, metadata={'boopiter': md}))
    a, shown = assistant(), Shown()   # every example reaches the asserts: no early return
    _, ledger = build_context([Cell('x = 1', exec_count=1, cell_id='a')], 'What is x?')
    ledger.update(cells=context_fingerprint(ledger['sent']), window=4096)
    reply = a._keep(out, None, 'Stale: since this reply, it changed.', MODEL, load_settings(), {}, ledger, shown)
    data, got = shown.data[REPLY_MIME], shown.md['boopiter']
    json.dumps(data); json.dumps(got)                                     # plain JSON: nothing a file made up that is not
    assert data['stale'] == got['stale'] == 'Stale: since this reply, it changed.' and reply.answer == clean_snapshot(
        dict(answer=out['data'].get('text/plain', ''))).get('answer', '')
    assert got.get('effort') in (None, 'l', 'm', 'h', 'off') and 'previous' not in got   # a kept reply replaced none
    cells = got['context'].get('cells')
    assert cells is None or cells == clean_fingerprint(cells) == clean_fingerprint(ctx.get('cells'))
    window = got['context'].get('window')
    assert window is None or isinstance(window, int) and 1 <= window
