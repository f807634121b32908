"""The brain menu in real kernels: picks made through the widgets' comm messages (as a browser sends
them), the binding display they keep current, and the binding coming back from the saved notebook."""

import time
import nbformat
from nbclient import NotebookClient
from kernels import KernelSession
import pytest

pytestmark = pytest.mark.slow   # every test here starts a real kernel

MIME = 'application/vnd.boopiter.settings+json'


def labels(k, description):
    return k.widget(_model_name='DropdownModel', description=description)[1]['_options_labels']


def status(k):
    "The menu's status line."
    return k.widget(_model_name='HTMLModel', _dom_classes=['boopiter-status'])[1]['value']


def pick(k, description, starts):
    "Choose the dropdown option whose label starts with `starts`, as a user would; return the kernel's response."
    cid, state = k.widget(_model_name='DropdownModel', description=description)
    return k.set_widget(cid, index=next(i for i,l in enumerate(state['_options_labels']) if l.startswith(starts)))


def untimed(binding): return {k: v for k,v in binding.items() if k != 'picked_at'}


def binding_updates(res, timed=False):
    "The binding payloads the kernel sent as display updates (without the time of each pick, unless `timed`)."
    found = [c['data'][MIME] for t,kind,c in res.messages if kind == 'update_display_data' and MIME in c['data']]
    return found if timed else list(map(untimed, found))


def wait_for(cond, timeout=30.0):
    "Whether `cond()` comes true within `timeout` s: a wait, never a bound (true the moment it holds; a loaded CI is slow)."
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline: return False
        time.sleep(0.02)
    return True


def unloads(srv): return sorted(r.json['model'] for r in srv.requests if r.path == '/api/generate' and r.json.get('keep_alive') == 0)


def test_menu_lists_every_model_and_a_pick_binds_the_notebook(kernel, srv):
    assert kernel.run('%%prompt\nhello').reply['metadata']['boopiter']['model'] == 'smollm2:135m'   # auto: quick, small
    res = kernel.run('%boop')
    assert res.status == 'ok' and res.text == ''
    view, binding = res.outputs
    assert 'application/vnd.jupyter.widget-view+json' in view['data']
    assert binding['data'][MIME] == {'version': 1} and 'none' in binding['data']['text/plain']
    models = labels(kernel, 'model')
    assert models[1:4] == ['gemma3:4b 👁️ · 3.3 GB', 'qwen3:1.7b 🔧🧠 · 1.4 GB', 'smollm2:135m · 270.9 MB']
    assert any(l.startswith('smollm2-135m · tiny embedded model') for l in models)
    assert kernel.widget(_model_name='DropdownModel', description='')[1]['_options_labels'] == \
        ['no reasoning model', 'qwen3:1.7b 🔧🧠 · 1.4 GB']   # only thinking models
    assert 'answering: auto → <b>smollm2:135m</b> (the first of Ollama&#x27;s 3 chat models' in status(kernel)

    res = pick(kernel, 'model', 'qwen3:1.7b')
    assert binding_updates(res) == [{'version': 1, 'model': 'qwen3:1.7b'}]
    assert labels(kernel, 'context') == ['auto', '2k', '4k', '8k', '16k', '32k']   # sizes up to the model's context length
    assert 'answering: <b>qwen3:1.7b</b> (notebook binding)' in status(kernel)
    assert wait_for(lambda: unloads(srv) == ['smollm2:135m'])   # the old pick leaves Ollama's memory, off the main thread

    reply = kernel.run('%%prompt\nhello again').reply['metadata']['boopiter']
    assert srv.last_chat()['model'] == 'qwen3:1.7b'
    assert reply['model'] == 'qwen3:1.7b' and reply['model_source'] == 'notebook binding'
    assert kernel.run('%%prompt -m gemma3:4b\none cell only').reply['metadata']['boopiter']['model_source'] == 'cell option'

    res = kernel.run('%unload_ext boopiter_ext')
    assert res.status == 'ok' and res.count('comm_close') >= 10 and not kernel.widgets


def test_reasoning_toggle_effort_keep_alive_and_context_reach_the_wire(kernel, srv):
    kernel.run('%boop model smollm2:135m')
    kernel.run('%boop')
    pick(kernel, '', 'qwen3:1.7b')
    effort, state = kernel.widget(_model_name='ToggleButtonsModel')
    assert state['_options_labels'] == ['auto', 'L', 'M', 'H']
    kernel.set_widget(effort, index=3)
    res = kernel.set_widget(kernel.widget(_model_name='ToggleButtonModel', description='reasoning')[0], value=True)
    assert binding_updates(res)[-1] == dict(version=1, model='smollm2:135m', reasoning_model='qwen3:1.7b',
                                            reasoning=True, think='h')
    pick(kernel, 'keep', '15 min')
    pick(kernel, 'context', '16k')
    kernel.run('%%prompt\nthink hard')
    chat = srv.last_chat()
    assert chat['model'] == 'qwen3:1.7b' and chat['think'] in (True, 'high')
    assert chat['keep_alive'] == '15m' and chat['options']['num_ctx'] == 16384
    kernel.set_widget(kernel.widget(_model_name='ToggleButtonModel', description='reasoning')[0], value=False)
    kernel.run('%%prompt\nplain answer')
    chat = srv.last_chat()
    assert chat['model'] == 'smollm2:135m' and 'think' not in chat   # the effort belongs to the reasoning model
    assert kernel.widgets[effort]['index'] == 3   # and the menu still shows it


def test_refresh_redraws_only_when_the_listing_changed(kernel, srv):
    kernel.run('%boop')
    button = kernel.widget(_model_name='ButtonModel', icon='refresh')[0]
    res = kernel.click(button)
    assert res.count('comm_msg') == 0 and res.count('update_display_data') == 0
    srv.models.append(dict(srv.models[2], name='tinyllama:1.1b', model='tinyllama:1.1b', digest='sha256:' + '1' * 64))
    try:
        res = kernel.click(button)
        changed = [c['data']['state'] for t,kind,c in res.messages if kind == 'comm_msg' and '_options_labels' in c['data']['state']]
        assert len(changed) == 1 and 'tinyllama:1.1b · 270.9 MB' in changed[0]['_options_labels']
    finally: srv.models.pop()


def test_binding_from_code_and_bad_picks(kernel, srv):
    res = kernel.run('%boop model qwen3:1.7b')
    [out] = res.outputs
    assert untimed(out['data'][MIME]) == dict(version=1, model='qwen3:1.7b')
    assert out['metadata'] == {'boopiter': {'binding': True}}
    assert kernel.run('%boop model qwen3:1.7b').outputs == [out]   # re-running changes nothing: no diff when saved
    res = kernel.run('%boop model nope:1b')
    assert res.status == 'error' and res.text.startswith('UsageError: Ollama at') and res.text.count('\n') == 1
    assert 'ollama pull nope:1b' in res.text and 'qwen3:1.7b' in res.text
    res = kernel.run('%boop reasoning gemma3:4b')
    assert res.status == 'error' and 'not a thinking model' in res.text
    res = kernel.run('%boop reasoning qwen3:1.7b h')
    assert untimed(res.outputs[-1]['data'][MIME]) == dict(version=1, model='qwen3:1.7b', reasoning_model='qwen3:1.7b',
                                                          reasoning=True, think='h')
    assert untimed(kernel.run('%boop model --clear').outputs[-1]['data'][MIME]) == \
        dict(version=1, reasoning_model='qwen3:1.7b', reasoning=True, think='h')
    res = kernel.run('%boop model qwen3 h')
    assert res.status == 'error' and 'one model id' in res.text
    text = kernel.run('%boop models').text
    assert 'qwen3:1.7b          tools, thinking  40,960   1.4 GB' in text


def test_a_prompt_longer_than_the_model_window_warns_in_the_cell(kernel, srv):
    res = kernel.run('%%prompt -m smollm2:135m\n' + 'word ' * 40_000)
    md = res.reply['data']['text/markdown']
    assert md.startswith('*⚠ The prompt (\\~') and 'longer than the 8,192-token context window' in md
    assert res.reply['metadata']['boopiter']['context']['window'] == srv.last_chat()['options']['num_ctx'] == 8192


def _saved_notebook_with_a_pick(srv, tmp_path):
    "A notebook as a frontend saves it after the user picked smollm2:135m in the menu: picked for real, over comms."
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host}) as k:
        k.run('%load_ext boopiter_ext')
        shown = k.run('%boop').outputs
        [bound] = binding_updates(pick(k, 'model', 'smollm2:135m'), timed=True)
    view, binding = shown
    binding['data'][MIME] = {**bound, 'host': '127.0.0.1:1'}   # a key a notebook may not set is ignored on load
    nb = nbformat.v4.new_notebook(metadata=dict(kernelspec=dict(name='python3', display_name='Python 3', language='python')))
    nb.cells = [nbformat.v4.new_code_cell('%load_ext boopiter_ext'),
                nbformat.v4.new_code_cell('%boop', outputs=[nbformat.from_dict(view), nbformat.from_dict(binding)]),
                nbformat.v4.new_code_cell('x = 6 * 7'), nbformat.v4.new_code_cell('%%prompt\nWhat is x?')]
    path = tmp_path/'bound.ipynb'
    nbformat.write(nb, path)
    return path, bound


def test_headless_run_all_uses_the_binding_saved_in_the_notebook(srv, tmp_path, monkeypatch):
    path, bound = _saved_notebook_with_a_pick(srv, tmp_path)
    before = path.read_bytes()
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    monkeypatch.setenv('BOOPITER_NOTEBOOK', str(path))
    for run in range(2):   # Run All, then Run All again on the executed notebook (a fresh kernel each time)
        srv.reset()
        nb = nbformat.read(path, as_version=4)
        NotebookClient(nb, timeout=60, resources=dict(metadata=dict(path=str(tmp_path)))).execute()
        assert [c['model'] for c in srv.chats()] == ['smollm2:135m'][:1 - run]   # the second run reuses the saved reply
        reply = next(o for o in nb.cells[3].outputs if o['metadata'].get('boopiter', {}).get('reply'))
        assert reply['metadata']['boopiter']['model_source'] == 'notebook binding'
        assert reply['metadata']['boopiter'].get('reused', False) == bool(run) and reply['metadata']['boopiter']['model'] == 'smollm2:135m'
        binding = next(o for o in nb.cells[1].outputs if MIME in o.get('data', {}))
        assert binding['data'][MIME] == bound   # shown again as picked, time included, the host dropped
        assert path.read_bytes() == before   # the open notebook is never written by the extension
        out = tmp_path/'executed.ipynb'
        nbformat.write(nb, out)
        monkeypatch.setenv('BOOPITER_NOTEBOOK', str(out))
        path, before = out, out.read_bytes()


def _notebook_bound_to(tmp_path, binding):
    out = nbformat.v4.new_output('display_data', data={MIME: {'version': 1, **binding}, 'text/plain': 'bound'})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('%boop', outputs=[out])])
    nbformat.write(nb, tmp_path/'saved.ipynb')
    return tmp_path/'saved.ipynb'


def test_saved_picks_found_after_loading_are_kept_when_the_menu_changes_one(kernel, srv, tmp_path):
    path = _notebook_bound_to(tmp_path, dict(model='smollm2:135m', context_size=4096))
    kernel.run(f'%env BOOPITER_NOTEBOOK={path}')   # the path became known after loading (VS Code sets it late)
    res = kernel.run('%boop')
    assert 'model smollm2:135m · context 4,096 tokens' in res.outputs[1]['data']['text/plain']
    assert kernel.widgets[kernel.widget(_model_name='DropdownModel', description='model')[0]]['index'] == 3
    [bound] = binding_updates(pick(kernel, 'keep', '15 min'))
    assert bound == dict(version=1, model='smollm2:135m', keep_alive='15', context_size=4096)


def test_a_saved_binding_cannot_send_the_notebook_to_a_provider_you_did_not_configure(kernel, srv, tmp_path, monkeypatch):
    path = _notebook_bound_to(tmp_path, dict(model='anthropic/claude-opus-4'))
    kernel.run(f'%env BOOPITER_NOTEBOOK={path}')
    res = kernel.run('%%prompt\nsecret plans')
    assert res.status == 'ok' and srv.last_chat()['model'] == 'smollm2:135m'   # not Anthropic: the auto pick
    assert 'the saved binding names `anthropic/claude-opus-4`' in res.reply['data']['text/markdown']
    assert 'warning   the saved binding names `anthropic/claude-opus-4`' in kernel.run('%boop status').text


THREADS = "sorted(t.name for t in __import__('threading').enumerate() if t.name.startswith('boopiter-tidy'))"


def test_memory_is_tidied_on_one_thread_only_when_a_pick_changes(kernel, srv):
    kernel.run('%boop')
    for label in ('qwen3:1.7b', 'smollm2:135m', 'gemma3:4b', 'smollm2:135m'):   # scrolling through the list
        pick(kernel, 'model', label)
    assert kernel.value(THREADS) == "['boopiter-tidy-memory']"
    assert wait_for(lambda: any(r.path == '/api/ps' for r in srv.requests))
    kernel.run('tidier = get_ipython().magics_manager.registry["BoopMagics"].assistant._tidier\nasks = []\n'
               'tidier.ask = lambda ask=tidier.ask: (asks.append(1), ask())[1]')   # count the asks from here on
    kernel.run('%boop model smollm2:135m')   # the same pick again (Run All): nothing to tidy
    pick(kernel, 'keep', '5 min')            # not a model: nothing to tidy either
    assert kernel.value('len(asks)') == '0' and kernel.value('tidier.wait(10)') == 'True'   # the scrolling's passes ended
    n = len(srv.requests)
    pick(kernel, 'model', 'qwen3:1.7b')      # a real change, the marker: it is asked, and it reaches Ollama
    assert kernel.value('len(asks)') == '1' and kernel.value('tidier.wait(10)') == 'True'
    assert any(r.path == '/api/ps' for r in srv.requests[n:])
    kernel.run('%unload_ext boopiter_ext')
    assert kernel.value(THREADS) == '[]'
