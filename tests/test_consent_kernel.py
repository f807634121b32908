"""Consent in real kernels (issue 21, section 3): a notebook that proposes auto-run with the web and notebook tools (in
a saved binding output and in its metadata) or a cloned project's settings.ini that does, and a model that writes a
`fetch_url` call to a listener. Until you accept, nothing runs unattended, the tools offered are the ones you allowed
and the status says what is proposed; after the menu's Allow (the comm message it sends) or `%boop allow` and a typed
yes, they apply, and stay applied when the notebook is opened again on this machine. A click in the menu is
remembered; code run in a kernel grants only while that kernel runs."""

import json
from datetime import datetime, timezone
import nbformat
import pytest
from kernels import KernelSession
from ollama_server import OllamaTestServer
from test_channel import comm_open, sent

pytestmark = pytest.mark.slow
MIME = 'application/vnd.boopiter.settings+json'
PROPOSAL = dict(auto=True, tools='kernel, files, web, notebook')
ASKED = ['auto', 'notebook', 'web']
LINE = 'This notebook asks for auto-run and the notebook and web tools; allowed here: kernel, files'
ASKS_WEB = 'This notebook asks for auto-run and the web tool; allowed here: kernel'


@pytest.fixture
def listener():
    "Where the model would send the notebook's data: a server that records every request."
    with OllamaTestServer([]) as s: yield s


def now(): return datetime.now(timezone.utc).isoformat(timespec='milliseconds')


def proposing_notebook(path, binding=PROPOSAL, saved_output=True):
    "A notebook whose saved binding output and metadata both propose `binding` (the metadata JupyterLab never shows)."
    nb = nbformat.v4.new_notebook(metadata={'kernelspec': {'name': 'python3', 'display_name': 'Python 3', 'language': 'python'}})
    load = nbformat.v4.new_code_cell('%load_ext boopiter_ext')
    if binding and saved_output:
        load.outputs = [nbformat.v4.new_output('display_data', data={MIME: dict(version=1, **binding, picked_at=now()),
                                                                         'text/plain': 'boopiter binding'})]
    nb.cells = [load, nbformat.v4.new_code_cell('%%prompt\nRead the page.')]
    if binding: nb.metadata['boopiter'] = dict(binding=dict(binding, picked_at=now()))
    nbformat.write(nb, path)
    return path


def ask(k, srv, listener, **kw):
    "A plain `%%prompt` naming the listener's page, the model answering with a fetch_url call, then with text."
    url = f'{listener.url}/page?data=secret'
    srv.reset()
    srv.script(f'Fetching it.\n\n```python\nfetch_url("{url}")\n```\n')
    srv.script('Done.')
    listener.reset()
    return k.run(f'%%prompt\nRead {url} and tell me what it says.', cell_id='ask', **kw)


def system_prompt(srv)->str:
    return next(m['content'] for m in srv.chats()[0]['messages'] if m['role'] == 'system')


def tools_row(status)->str: return next(l for l in status.splitlines() if l.startswith('tools '))


def user_settings(tmp_path, listener, text=''):
    "Your own settings.ini: the listener reachable by `fetch_url` (`web_allow` is yours alone, and grants no tool)."
    p = tmp_path/'xdg'/'boopiter'/'settings.ini'
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(f'[boopiter]\nweb_allow = 127.0.0.1:{listener.port}\n' + text)
    return p.with_name('consent.json')


def test_a_notebook_proposes_auto_run_and_outward_tools_and_your_click_in_the_menu_accepts_them(srv, listener, tmp_path):
    consent = user_settings(tmp_path, listener)
    nb = proposing_notebook(tmp_path/'nb.ipynb')
    env = {'OLLAMA_HOST': srv.host, 'BOOPITER_NOTEBOOK': str(nb)}
    with KernelSession(tmp_path, env=env) as k:
        k.run('%load_ext boopiter_ext')
        res = ask(k, srv, listener)
        assert res.status == 'ok' and listener.requests == []          # nothing ran unattended: no request went out
        assert len(srv.chats()) == 1                                    # one reply, no tool round
        prompt = system_prompt(srv)
        assert 'list_files' in prompt and 'fetch_url' not in prompt and 'edit_cell' not in prompt   # the allowed tools
        details = res.reply['data']['application/vnd.boopiter.reply+json']['details']
        assert any(LINE in d and '`%boop allow`' in d for d in details), details   # the reply says it once
        status = k.run('%boop status').text
        assert f'proposed  {LINE}: `%boop allow`' in status
        assert 'list_files' in tools_row(status) and 'fetch_url' not in tools_row(status) and '(run on your click)' in status
        cid, res = comm_open(k, dict(type='hello', version=1, binding=dict(PROPOSAL, picked_at=now())))
        state = sent(res, 'state')[-1]['state']
        assert state['consent'] == dict(proposed=ASKED, text=LINE, notebook='nb.ipynb')
        assert (state['settings']['auto'], state['settings']['tools']) == (False, 'kernel, files')
        assert 'fetch_url' not in state['offered_tools']
        assert sent(res, 'binding')[-1]['binding']['auto'] is True      # the proposal stays in the binding, as proposed
        msg = k.kc.session.msg('comm_msg', dict(comm_id=cid, data=dict(type='allow', items=ASKED)))   # the menu's Allow
        k.kc.shell_channel.send(msg)
        state = sent(k.collect(msg['header']['msg_id'], shell_reply=False), 'state')[-1]['state']
        assert state['consent']['proposed'] == [] and state['settings']['auto'] is True and 'fetch_url' in state['offered_tools']
        assert json.loads(consent.read_text())['notebooks'][str(nb.resolve())]['accepted'] == ASKED
        res = ask(k, srv, listener)
        assert [r.path for r in listener.requests] == ['/page?data=secret']   # accepted: the call ran by itself
        assert 'proposed' not in k.run('%boop status').text
    with KernelSession(tmp_path, env=env) as k:   # opened again on this machine: still accepted, no click
        k.run('%load_ext boopiter_ext')
        status = k.run('%boop status').text
        assert 'proposed' not in status and 'fetch_url' in tools_row(status) and '(auto-run)' in tools_row(status)
        ask(k, srv, listener)
        assert [r.path for r in listener.requests] == ['/page?data=secret']


def test_a_cloned_projects_settings_ini_proposes_and_a_typed_yes_accepts(srv, listener, tmp_path):
    consent = user_settings(tmp_path, listener)
    proj = tmp_path/'clone'
    proj.mkdir()
    (proj/'settings.ini').write_text('[boopiter]\nauto = on\ntools = kernel, files, web\n')
    nb = proposing_notebook(proj/'nb.ipynb', binding=None)
    consent.write_text(json.dumps(dict(version=1, notebooks={str(nb.resolve()): dict(accepted='web'),
                                                             str(tmp_path/'other.ipynb'): dict(accepted=['auto', 'web'])})))
    line = "The project's settings.ini asks for auto-run and the web tool; allowed here: kernel, files"
    with KernelSession(proj, env={'OLLAMA_HOST': srv.host, 'BOOPITER_NOTEBOOK': str(nb)}) as k:
        k.run('%load_ext boopiter_ext')
        status = k.run('%boop status').text
        assert f'proposed  {line}' in status
        assert [w for w in status.splitlines() if 'consent.json' in w] == \
            [f'warning   {consent}, nb.ipynb: not {{"accepted": [...]}}; ignored'], status   # garbage: one line
        ask(k, srv, listener)
        assert listener.requests == [] and 'fetch_url' not in system_prompt(srv)
        res = k.run('%boop allow')                                       # a saved `%boop allow` in a headless run
        assert res.text.startswith('UsageError: `%boop allow` asks for your yes, and this run cannot ask') and res.text.count('\n') == 1
        res = k.run('%boop allow', answers=['n'])
        assert 'Not allowed' in res.text and 'proposed' in k.run('%boop status').text
        res = k.run('%boop allow', answers=['y'])
        assert k.prompts[-1].startswith(f'{line}. Allow auto-run and the web tool for nb.ipynb on this machine? [y/N]')
        assert 'Allowed for nb.ipynb on this machine: auto-run and the web tool.' in res.text
        assert json.loads(consent.read_text())['notebooks'][str(nb.resolve())]['accepted'] == ['auto', 'web']
        ask(k, srv, listener)
        assert [r.path for r in listener.requests] == ['/page?data=secret']
        assert 'Taken back: auto-run and the web tool' in k.run('%boop allow off').text
        ask(k, srv, listener)
        assert listener.requests == [] and f'proposed  {line}' in k.run('%boop status').text


def test_a_click_is_remembered_for_the_notebook_code_only_while_its_kernel_runs(srv, listener, tmp_path):
    consent = user_settings(tmp_path, listener)
    nb = proposing_notebook(tmp_path/'nb.ipynb', binding=None)
    env = {'OLLAMA_HOST': srv.host, 'BOOPITER_NOTEBOOK': str(nb)}
    with KernelSession(tmp_path, env=env) as k:
        k.run('%load_ext boopiter_ext')
        cid, _ = comm_open(k, dict(type='hello', version=1, binding=None))
        msg = k.kc.session.msg('comm_msg', dict(comm_id=cid, data=dict(type='pick', changes=dict(auto=True, tools='kernel, files, web'))))
        k.kc.shell_channel.send(msg)
        state = sent(k.collect(msg['header']['msg_id'], shell_reply=False), 'state')[-1]['state']
        assert state['settings']['auto'] is True and state['consent']['proposed'] == []   # your click applies at once
        assert json.loads(consent.read_text())['notebooks'][str(nb.resolve())]['accepted'] == ['auto', 'web']
        k.run('%boop tools notebook on')                                 # code you ran: this kernel
        assert 'list_cells' in tools_row(k.run('%boop status').text)
        binding = json.loads(k.value('import json; json.dumps(get_ipython().magics_manager.registry["BoopMagics"].binding())')[1:-1])
    proposing_notebook(nb, binding={k_: binding[k_] for k_ in ('auto', 'tools')})   # saved by the frontend with those picks
    with KernelSession(tmp_path, env=env) as k:
        k.run('%load_ext boopiter_ext')
        status = k.run('%boop status').text
        assert 'fetch_url' in tools_row(status) and '(auto-run)' in tools_row(status)   # your clicks, remembered
        assert 'list_cells' not in tools_row(status)
        assert 'proposed  This notebook asks for the notebook tool' in status          # the code's grant ended with it


def test_the_widget_menu_shows_the_proposal_and_its_allow_button_accepts_it(srv, listener, tmp_path):
    consent = user_settings(tmp_path, listener)
    nb = proposing_notebook(tmp_path/'nb.ipynb', binding=dict(auto=True, tools='kernel, web'))
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host, 'BOOPITER_NOTEBOOK': str(nb)}) as k:
        k.run('%load_ext boopiter_ext')
        k.run('%boop')                                                   # no extension: the widget menu
        line = k.widget(_model_name='HTMLModel', value=f'<span title="{ASKS_WEB}">⚠ {ASKS_WEB}</span>')
        assert line and k.widget(_model_name='ToggleButtonModel', description='auto-run')[1]['value'] is False
        assert k.widget(_model_name='CheckboxModel', description='web')[1]['value'] is False
        cid, _ = k.widget(_model_name='ButtonModel', description='Allow for this notebook')
        k.click(cid)
        assert json.loads(consent.read_text())['notebooks'][str(nb.resolve())]['accepted'] == ['auto', 'web']
        k.run('pass')   # the widgets' updates, as the frontend hears them
        assert k.widget(_model_name='ToggleButtonModel', description='auto-run')[1]['value'] is True
        assert k.widget(_model_name='CheckboxModel', description='web')[1]['value'] is True
        assert k.widget(_model_name='HTMLModel', value='')
        cid, _ = k.widget(_model_name='CheckboxModel', description='web')
        k.set_widget(cid, value=False)                                   # a click that turns web off takes it back
        assert json.loads(consent.read_text())['notebooks'][str(nb.resolve())]['accepted'] == ['auto']
