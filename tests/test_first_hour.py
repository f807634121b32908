"""The first hour (issue 15): the model that answers when none is picked, saved replies kept when only the model
changed, and the small words on the way (`%boop status`, `%boop model`, `%%prompt?`, where the host came from)."""

import nbformat, pytest
from IPython.core.error import UsageError
from conftest import saved_replies as replies, write_code_notebook as notebook
from ollama_server import OllamaTestServer, free_port
from boopiter_ext.models.catalog import Catalog
from boopiter_ext.core.menu import answering
from boopiter_ext.models.router import Router, auto_order
from boopiter_ext.faces.run import run_notebook
from boopiter_ext.settings import load_settings

GB = 1_000_000_000
QUICK = dict(name='quick:3b', capabilities=['completion', 'tools'], size=2 * GB)
SMALL = dict(name='small:1b', capabilities=['completion'], size=1 * GB)
DEEP = dict(name='deep-r1:14b', capabilities=['completion', 'tools', 'thinking'], size=9 * GB)
EMBED = dict(name='a-embed:latest', capabilities=['embedding'], size=300_000_000)
MODELS = [DEEP, EMBED, SMALL, QUICK]


def names(order): return [n for n,_ in order]


def paths(srv): return [r.path for r in srv.requests]


def settings_for(host, **runtime): return load_settings(runtime=runtime, environ={'OLLAMA_HOST': host})


# -- which model answers when none is picked

def test_only_chat_models_count_and_a_quick_first_answer_comes_first():
    assert names(auto_order(MODELS)) == ['quick:3b', 'small:1b', 'deep-r1:14b']   # no thinking, then tools, smaller
    assert names(auto_order(MODELS, loaded=['deep-r1:14b'])) == ['deep-r1:14b', 'quick:3b', 'small:1b']   # in memory
    assert auto_order(MODELS, loaded=['a-embed'])[0][0] == 'quick:3b'   # a loaded embedding model is never picked
    assert auto_order([EMBED]) == [] and auto_order([]) == []
    assert dict(auto_order(MODELS))['quick:3b'] == ("the first of Ollama's 3 chat models: answers without thinking "
                                                   'first, calls tools, 2.0 GB')
    assert dict(auto_order(MODELS, ['deep-r1:14b:latest', 'deep-r1:14b']))['deep-r1:14b'] == 'already loaded in Ollama'
    same = [dict(name=n, capabilities=['completion'], size=GB) for n in ('b:1b', 'A:1b', 'c:1b')]
    assert names(auto_order(same)) == ['A:1b', 'b:1b', 'c:1b']   # then by name


def test_models_whose_capabilities_are_unknown_count_only_when_no_model_is_known_to_chat():
    unknown = dict(name='old:7b', capabilities=[], size=GB)
    assert names(auto_order([unknown, EMBED, QUICK])) == ['quick:3b']
    assert names(auto_order([unknown, EMBED, dict(unknown, name='older:1b', size=GB // 2)])) == ['older:1b', 'old:7b']
    assert 'capabilities are not known' in auto_order([unknown])[0][1]


def test_resolve_picks_a_loaded_chat_model_keeps_its_choice_and_asks_little():
    with OllamaTestServer(MODELS) as srv:
        router, s = Router(), settings_for(srv.host)
        try:
            srv.loaded = {'a-embed:latest', 'deep-r1:14b'}
            model, note = router.resolve(s)
            assert model == 'deep-r1:14b' and note.startswith('already loaded in Ollama; pick another with `-m`')
            srv.loaded = set()           # unloaded after its keep-alive: the kernel keeps its choice
            srv.reset()
            assert router.resolve(s)[0] == 'deep-r1:14b'
            assert paths(srv) == ['/api/tags']   # no /api/show (cached by digest), no /api/ps (choice kept)
            srv.models.pop(0)            # deleted: chosen afresh
            assert router.resolve(s)[0] == 'quick:3b'
            srv.loaded = {'small:1b'}
            assert router.resolve(s)[0] == 'quick:3b'   # and kept again
        finally: router.close()


def test_an_ollama_with_only_embedding_models_hands_over_to_the_embedded_model_saying_why():
    with OllamaTestServer([EMBED]) as srv:
        router, s = Router(), settings_for(srv.host)
        try:
            router.local.available = lambda: True
            model, note = router.resolve(s)
            assert model == 'local/smollm2-135m'
            assert note == (f'Ollama at {srv.url} has no chat model: a-embed:latest cannot chat, so the tiny embedded '
                            'model answers: fine for a demo, real work wants Ollama')
            listing = Catalog(router).refresh(s)
            assert answering(s, listing)['why'].startswith(f'auto: Ollama at {srv.url} has no chat model')
        finally: router.close()


def test_the_menu_says_auto_and_agrees_with_the_prompt():
    with OllamaTestServer(MODELS) as srv:
        router, s = Router(), settings_for(srv.host)
        try:
            listing = Catalog(router).refresh(s)
            a = answering(s, listing)
            assert a['model'] == router.resolve(s)[0] == 'quick:3b' and a['auto'] is True
            assert a['why'] == ("auto: the first of Ollama's 3 chat models: answers without thinking first, "
                                'calls tools, 2.0 GB')
            assert a['size'] == 2 * GB
            picked = answering(settings_for(srv.host, model='small:1b'), listing)
            assert picked['model'] == 'small:1b' and picked['auto'] is False and picked['why'] == '%config'
            srv.stop()
            router.local.available = lambda: True
            down = answering(s, Catalog(router).refresh(s))
            assert down['model'] == 'local/smollm2-135m'
            assert down['why'] == 'auto: Ollama is not reachable, so the tiny embedded model' and down['auto']
        finally: router.close()


def test_dead_drop_sessions_may_be_picked_as_the_reasoning_model(tmp_path):
    from boopiter_ext.models import deaddrop as dd
    root = dd.deaddrop_root(setting=str(tmp_path/'drop'))
    dd.new_session(root, 'review')
    router = Router()
    try:
        s = settings_for(f'127.0.0.1:{free_port()}', deaddrop_dir=str(tmp_path/'drop'), think='h')
        entry = Catalog(router).refresh(s).get('deaddrop/review')
        assert entry.thinking and 'thinking' in entry.capabilities   # both menus list thinking models as reasoners
        assert router.effort('deaddrop/review', s) == ('', '')       # and no effort is sent to one
    finally: router.close()


# -- the words on the way

def test_status_says_auto_and_never_that_the_tiny_model_answered_before_it_did(shell, capsys, monkeypatch):
    monkeypatch.setenv('OLLAMA_HOST', f'127.0.0.1:{free_port()}')
    shell.run_line_magic('load_ext', 'boopiter_ext')
    shell.magics_manager.registry['BoopMagics'].router.local.available = lambda: True
    shell.run_line_magic('boop', 'status')
    rows = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    assert rows['model'].startswith('auto → local/smollm2-135m (Ollama is not reachable at http://127.0.0.1:')
    assert rows['model'].endswith('so the tiny embedded model answers: fine for a demo, real work wants Ollama)')
    assert rows['endpoint'] == 'embedded llama.cpp, started by the first prompt that uses it'
    assert 'answered' not in rows['model'] and '))' not in rows['model'] and 'not started yet' not in rows['endpoint']


def test_status_names_the_automatic_choice(shell, capsys, monkeypatch):
    with OllamaTestServer(MODELS) as srv:
        monkeypatch.setenv('OLLAMA_HOST', srv.host)
        shell.run_line_magic('load_ext', 'boopiter_ext')
        shell.run_line_magic('boop', 'status')
        out = capsys.readouterr().out
    assert ("model     auto → quick:3b (the first of Ollama's 3 chat models: answers without thinking first, calls "
            'tools, 2.0 GB; pick another with `-m` or the brain menu)') in out


def test_binding_to_an_unreachable_ollama_says_so_in_one_line(shell, capsys, monkeypatch):
    port = free_port()
    monkeypatch.setenv('OLLAMA_HOST', f'127.0.0.1:{port}')
    shell.run_line_magic('load_ext', 'boopiter_ext')
    shell.run_line_magic('boop', 'model qwen3:1.7b')
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (f'Bound, but Ollama at http://127.0.0.1:{port} is not reachable now; the first '
                                   'prompt will say what to do.')
    assert 'boopiter binding · model qwen3:1.7b' in out
    shell.run_line_magic('boop', 'model local/smollm2-135m')   # not an Ollama model: nothing to say
    assert capsys.readouterr().out.splitlines()[0].startswith('boopiter binding')


def test_replaying_a_cassette_binds_the_model_it_recorded_whatever_this_ollama_has(shell, capsys, monkeypatch):
    with OllamaTestServer([QUICK]) as srv:
        monkeypatch.setenv('OLLAMA_HOST', srv.host)
        shell.run_line_magic('load_ext', 'boopiter_ext')
        with pytest.raises(UsageError, match="does not have the model 'smollm2:135m'"):   # live: Ollama has no such model
            shell.run_line_magic('boop', 'model smollm2:135m')
        capsys.readouterr()
        asked = len(srv.requests)
        shell.run_line_magic('config', "BoopMagics.cassette = 'replay'")
        shell.run_line_magic('boop', 'model smollm2:135m')   # replaying: the cassette answers, so no check is made
        assert capsys.readouterr().out.splitlines()[0] == 'boopiter binding · model smollm2:135m'
        assert not [r for r in srv.requests[asked:] if r.path == '/api/show']


@pytest.mark.parametrize('where, said', [('default', 'the default address'), ('env', 'OLLAMA_HOST'),
                                         ('user', 'your settings.ini'), ('project', "the project's settings.ini")])
def test_errors_say_where_the_host_came_from_in_words(tmp_path, where, said):
    from boopiter_ext.errors import OllamaUnreachable
    host = f'127.0.0.1:{free_port()}'
    env = {'XDG_CONFIG_HOME': str(tmp_path/'xdg')}
    if where == 'env': env['OLLAMA_HOST'] = host
    ini = dict(user=tmp_path/'xdg'/'boopiter'/'settings.ini', project=tmp_path/'proj'/'settings.ini').get(where)
    if ini:
        ini.parent.mkdir(parents=True)
        ini.write_text(f'[boopiter]\nhost = {host}\n')
    (tmp_path/'proj').mkdir(exist_ok=True)
    s = load_settings(start=tmp_path/'proj', environ=env)
    router = Router()
    try:
        with pytest.raises(OllamaUnreachable) as e: router.ollama(s).tags()
        assert f'(host from {said})' in str(e.value) and 'auto' not in str(e.value)
    finally: router.close()


def test_the_prompt_help_shows_the_cell_magic(shell):
    shell.run_line_magic('load_ext', 'boopiter_ext')
    doc = shell.find_cell_magic('prompt').__doc__
    assert '\n  %%prompt [-m MODEL]' in doc and '  %prompt ' not in doc


# -- Run All never silently replaces a saved reply

CELLS = ['%load_ext boopiter_ext', 'x = 6 * 7', '%%prompt\nWhat is x?', 'y = x + 1', '%%prompt\nAnd y?']


def edited(src, dst, **sources):
    "The notebook `src` with cell `i` given a new source (`c3='...'`), saved as `dst`."
    nb = nbformat.read(src, as_version=4)
    for k,v in sources.items(): nb.cells[int(k[1:])].source = v
    nbformat.write(nb, dst)
    return dst


@pytest.mark.slow
def test_run_all_keeps_saved_replies_when_only_the_automatic_choice_changed(tmp_path, monkeypatch):
    with OllamaTestServer([QUICK, DEEP]) as srv:
        monkeypatch.setenv('OLLAMA_HOST', srv.host)
        srv.script('x is 42.'); srv.script('y is 43.')
        assert run_notebook(notebook(tmp_path/'nb.ipynb', CELLS), tmp_path/'run1.ipynb', write=lambda s: None)
        assert [c['model'] for c in srv.chats()] == ['quick:3b', 'quick:3b']

        srv.reset()
        srv.loaded = {'deep-r1:14b'}   # loaded by something else: the automatic choice is now deep-r1:14b
        printed = []
        assert run_notebook(tmp_path/'run1.ipynb', tmp_path/'run2.ipynb', write=printed.append)
        assert srv.chats() == []                                  # asked nothing: the saved replies are kept
        printed = ''.join(printed)
        assert printed.count('--- reply (quick:3b, kept) ---') == 2 and printed.count('[Kept: answered by quick:3b;') == 2
        assert '0 prompts answered, 2 reused' in printed
        kept = replies(tmp_path/'run2.ipynb')
        assert [o['data']['text/plain'] for o in kept] == ['x is 42.', 'y is 43.']
        line = ("Kept: answered by quick:3b; this notebook now answers with deep-r1:14b; ask again with "
                "`%%prompt --fresh` (or the menu's reuse switch)")
        for o, before in zip(kept, replies(tmp_path/'run1.ipynb')):
            md = o['metadata']['boopiter']
            assert md['kept'] == 'deep-r1:14b' and md['model'] == 'quick:3b' and not md.get('reused')
            assert md['model_source'] == 'auto' and md['digest'] == before['metadata']['boopiter']['digest']
            markdown = o['data']['text/markdown']
            assert markdown.startswith('*↺ Kept: answered by quick:3b; this notebook now answers with deep-r1:14b')
            assert '<summary>Reply details · kept · quick:3b' in markdown and markdown.count('Kept: answered by') == 2
            data = o['data']['application/vnd.boopiter.reply+json']
            assert data['details'][0] == line and data['note'] == line and data['kept'] == 'deep-r1:14b'
        assert run_notebook(tmp_path/'run2.ipynb', tmp_path/'run3.ipynb', write=lambda s: None)
        assert srv.chats() == [] and replies(tmp_path/'run3.ipynb') == kept   # stable: no diff from run to run

        srv.script('y is 44.')   # a changed cell above the second prompt: its reply is kept, marked stale, not asked
        changed = edited(tmp_path/'run2.ipynb', tmp_path/'changed.ipynb', c3='y = x + 2')
        assert run_notebook(changed, tmp_path/'run4.ipynb', write=lambda s: None)
        assert srv.chats() == []
        got = [(o['metadata']['boopiter'].get('kept'), o['data']['text/plain']) for o in replies(tmp_path/'run4.ipynb')]
        assert got == [('deep-r1:14b', 'x is 42.'), ('deep-r1:14b', 'y is 43.')]
        stale = replies(tmp_path/'run4.ipynb')[1]['metadata']['boopiter']['stale']
        assert 'y = x + 2' in stale and '--fresh' in stale

        srv.reset(); srv.loaded = {'deep-r1:14b'}
        srv.script('Forty-two.')                                  # `--fresh` asks again, deliberately
        assert run_notebook(edited(tmp_path/'run2.ipynb', tmp_path/'fresh.ipynb', c2='%%prompt --fresh\nWhat is x?'),
                            tmp_path/'run5.ipynb', write=lambda s: None)
        assert [c['model'] for c in srv.chats()] == ['deep-r1:14b']   # only it: the prompt below keeps its reply,
        fresh, below = replies(tmp_path/'run5.ipynb')                  # marked stale (the answer above it changed)
        assert fresh['data']['text/plain'] == 'Forty-two.' and fresh['metadata']['boopiter']['previous']
        assert below['data']['text/plain'] == 'y is 43.' and below['metadata']['boopiter']['stale']

        srv.reset()
        srv.loaded = {'quick:3b'}                                 # back to the model that wrote them: plainly reused
        assert run_notebook(tmp_path/'run2.ipynb', tmp_path/'run6.ipynb', write=lambda s: None)
        assert srv.chats() == [] and all(o['metadata']['boopiter']['reused'] and 'kept' not in o['metadata']['boopiter']
                                         for o in replies(tmp_path/'run6.ipynb'))


@pytest.mark.slow
def test_in_a_live_kernel_a_new_binding_keeps_the_reply_and_a_cell_option_asks(kernel, srv):
    kernel.run('x = 6 * 7', cell_id='c1')
    srv.script('x is 42.')
    first = kernel.run('%%prompt\nWhat is x?', cell_id='p1').reply['metadata']['boopiter']
    assert first['model'] == 'smollm2:135m' and first['model_source'] == 'auto'
    kernel.run('%boop model qwen3:1.7b')
    res = kernel.run('%%prompt\nWhat is x?', cell_id='p1')   # re-run after the binding changed: kept, not asked
    md = res.reply['metadata']['boopiter']
    assert len(srv.chats()) == 1 and md['kept'] == 'qwen3:1.7b' and md['model'] == 'smollm2:135m'
    assert res.reply['data']['text/plain'] == 'x is 42.'
    srv.script('Forty-two.')
    res = kernel.run('%%prompt -m gemma3:4b\nWhat is x?', cell_id='p1')   # a model named in the cell: asked on purpose
    assert len(srv.chats()) == 2 and srv.last_chat()['model'] == 'gemma3:4b'
    assert 'kept' not in res.reply['metadata']['boopiter']
    srv.script('Still 42.')
    res = kernel.run('%%prompt --fresh\nWhat is x?', cell_id='p1')
    assert len(srv.chats()) == 3 and srv.last_chat()['model'] == 'qwen3:1.7b'


def test_the_terminal_marks_a_kept_reply_with_its_line_and_a_reused_one_as_reused(capsys):
    from boopiter_ext.render.reply import reply_bundle
    from boopiter_ext.models.stream import Reply
    from boopiter_ext.faces.view import TerminalView
    reply = Reply('quick:3b')
    reply.parts.append('x is 42.')
    reply.status = 'done'
    TerminalView(None).show(*reply_bundle(reply, dict(name='ollama', kept='deep-r1:14b')))
    TerminalView(None).show(*reply_bundle(reply, dict(name='ollama', reused=True)))
    kept, reused = capsys.readouterr().out.split('x is 42.')[1:]
    assert kept.strip() == ('[Kept: answered by quick:3b; this notebook now answers with deep-r1:14b; ask again with '
                            '`%%prompt --fresh` (or the menu\'s reuse switch)]')
    assert reused.strip() == '[reused: the saved reply to this same conversation]'
