"""MCP servers as tool sources, without a kernel: real servers built on the official SDK (tests/mcp_servers.py) over
stdio and streamable HTTP, the published `mcp-server-time` run offline, the settings sections that declare them, and
generated schemas, results and sections."""

import http.server, json, os, socket, subprocess, sys, threading, time
from pathlib import Path
import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st
from boopiter_ext.settings import McpSpec, load_settings, read_mcp_servers
from boopiter_ext.settings import _SECRET as SECRET
from boopiter_ext.tools import mcp
from boopiter_ext.tools.guards import INTENT_ATTR, OUTBOUND_ATTR, check_call, plan_calls
from boopiter_ext.tools.mcp import McpResult, McpServer, _function, _result, server_tools, stop_servers, sync_sources
from boopiter_ext.tools.mcp_client import McpError
from boopiter_ext.tools.registry import SOURCES, get_tool_list, needs_consent, tool_signature

SERVER = Path(__file__).with_name('mcp_servers.py')


def spec(folder, name='t', **kw): return McpSpec(name, command=('python', str(SERVER)), folder=str(folder), **kw)
def by_name(server): return {f.__name__: f for f in server_tools(server)}


@pytest.fixture(scope='module')
def served(tmp_path_factory):
    "One stdio server for the tests that only read: (server, its folder)."
    folder = tmp_path_factory.mktemp('srv')
    s = McpServer(spec(folder))
    yield s, folder
    s.close()


@pytest.fixture(autouse=True)
def no_servers_left():
    yield
    stop_servers()


def test_a_stdio_servers_tools_are_plain_functions_with_signatures(served):
    fns = by_name(served[0])
    assert {'add', 'shout', 'weather', 'remember', 'fail', 'dot', 'slow', 'crash'} <= set(fns)
    shown = tool_signature(fns['shout'])
    assert 'def shout(\n    text:str,  # What to say, loudly; at most 50 long' in shown
    assert "style:Literal['plain', 'stars']='plain'" in shown and 'times:int=1,  # How often; at least 1, at most 3' in shown
    assert fns['add'](2, 3) == 5 and fns['add'](a=40, b=2) == 42
    assert fns['shout']('hi') == 'HI' and fns['shout']('hi', 2, 'stars') == '*HI HI*'   # only given arguments sent
    assert fns['weather']('Oslo') == {'city': 'Oslo', 'celsius': 21.5, 'sky': 'clear'}   # structured: a Python value
    assert fns['fail']('why not').startswith('error: ') and 'failed on purpose: why not' in fns['fail']('why not')
    dot = fns['dot']()   # text that names it, and the image: shown in the cell, handed to vision models
    assert repr(dot) == '[image image/png, 75 bytes]' and dot.images[0][0] == 'image/png'
    assert set(dot._repr_mimebundle_()) == {'text/plain', 'image/png'}
    assert by_name(served[0])['add'] is fns['add']   # the same functions while the server keeps its tools


def test_what_a_tool_may_do_follows_the_servers_annotations(served):
    fns = by_name(served[0])
    assert getattr(fns['add'], INTENT_ATTR, None) is None and getattr(fns['add'], OUTBOUND_ATTR, ()) == ()
    assert getattr(fns['remember'], INTENT_ATTR)   # not read-only: the user's words must ask for it
    assert getattr(fns['remember'], OUTBOUND_ATTR) == ('note',)   # open world unless the server says otherwise
    assert '# Changes something' in tool_signature(fns['remember'])


def test_every_call_passes_the_same_guards(served):
    fns = by_name(served[0])
    def guard(code, prompt):
        (call,), problem = plan_calls(code, {})
        assert problem is None
        return check_call(call, fns, prompt, confirm=lambda *a: True)
    assert guard("shout('hi', 2)", 'shout')[0] == 'ok'
    status, msg = guard("shout('hi', 5)", 'shout')   # the schema's maximum, checked before anything is sent
    assert status != 'ok' and 'at most 3' in msg
    assert guard("add('x', 1)", 'add')[0] != 'ok'
    assert guard("remember('buy milk')", 'What is 2 + 2?')[0] != 'ok'   # nobody asked for a write
    assert not (served[1] / 'notes.txt').exists()
    assert guard("remember('buy milk')", 'Remember that I need to buy milk')[0] == 'ok'


def test_a_server_is_reused_restarted_when_it_dies_and_stopped(tmp_path):
    log = tmp_path / 'starts.log'
    warnings = sync_sources({'demo': spec(tmp_path, 'demo', env=(('BOOP_MCP_LOG', str(log)),))})
    assert warnings == [] and 'demo' in SOURCES and needs_consent('demo')   # a notebook may propose it, never grant it
    assert 'runs `python ' in SOURCES['demo'][2]
    for _ in range(20): tools = {f.__name__: f for f in get_tool_list({'demo': True, 'kernel': False, 'files': False})}
    assert tools['add'](1, 2) == 3 and len(log.read_text().split()) == 1   # 20 looks, one process
    pid = int(log.read_text().split()[0])
    assert 'stopped before answering (exit code 3' in tools['crash']()
    assert tools['add'](2, 2) == 4 and len(log.read_text().split()) == 2   # started again
    pid2 = int(log.read_text().split()[1])
    sync_sources({})   # no longer declared: its source goes, its process stops
    assert 'demo' not in SOURCES
    for p in (pid, pid2):
        with pytest.raises(ProcessLookupError):
            for _ in range(50):
                os.kill(p, 0)
                time.sleep(0.05)


def test_a_server_that_does_not_start_costs_one_bounded_wait_and_one_line(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(mcp, 'START_S', 1.0)
    hangs = McpSpec('hangs', command=('python', '-c', 'import time; time.sleep(60)'))
    t = time.monotonic()
    with pytest.raises(McpError, match=r'MCP server `hangs`: initialize: `python -c .*` did not answer in 1 s'):
        server_tools(s := McpServer(hangs))
    assert time.monotonic() - t < 5   # its 1 s, and closing it (a loaded machine takes its time)
    t = time.monotonic()
    with pytest.raises(McpError, match='did not answer'): server_tools(s)   # not tried again at once: no second wait
    assert time.monotonic() - t < 0.5
    s.close()
    for command, said in ((('no-such-program-boop',), 'could not start'),
                          (('python', '-c', 'import sys; print("bye", file=sys.stderr); sys.exit(4)'),
                           'stopped before answering (exit code 4; it last wrote: bye)')):
        with pytest.raises(McpError, match=said.replace('(', r'\(').replace(')', r'\)')):
            server_tools(McpServer(McpSpec('x', command=command)))
    sync_sources({'hangs': hangs})
    caplog.set_level('WARNING')
    for _ in range(3): tools = get_tool_list({'hangs': True, 'kernel': False, 'files': False})
    assert tools == [] and caplog.text.count("tool source 'hangs' failed and was skipped") == 1


def test_a_call_that_takes_too_long_is_one_line_and_the_server_goes_on(tmp_path):
    fns = by_name(s := McpServer(spec(tmp_path, timeout=1)))
    t = time.monotonic()
    assert fns['slow'](5) == 'error: MCP server `t`: tools/call: `python ' + str(SERVER) + '` did not answer in 1 s'
    assert time.monotonic() - t < 2 and fns['add'](1, 1) == 2
    s.close()


def _free_port():
    with socket.socket() as so:
        so.bind(('127.0.0.1', 0))
        return so.getsockname()[1]


def test_a_server_over_streamable_http(tmp_path):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), '--http', str(port)], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60   # uvicorn starts in its own time on a loaded machine
        while True:
            s = McpServer(McpSpec('web1', url=f'http://127.0.0.1:{port}/mcp'))
            try:
                fns = by_name(s)
                break
            except McpError:
                if time.monotonic() > deadline: raise
                time.sleep(0.2)
        assert fns['add'](20, 22) == 42 and fns['weather']('Rome')['city'] == 'Rome'
        assert fns['fail']('x').startswith('error: ')
        s.close()
    finally: proc.kill(); proc.wait()


class _Echo(http.server.BaseHTTPRequestHandler):
    "A hand-written MCP endpoint that tells what headers it got (and says the token back in an error)."
    seen, forget = [], False
    def log_message(self, *a): pass
    def _status(self, code):
        self.send_response(code)
        self.end_headers()
    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
        self.seen.append(dict(self.headers))
        if _Echo.forget and self.headers.get('Mcp-Session-Id') and msg.get('method') != 'initialize':
            _Echo.forget = False   # as a restarted server: the session it gave is unknown now
            return self._status(404)
        if 'id' not in msg:
            return self._status(202)
        result = {'initialize': {'protocolVersion': '2025-06-18', 'capabilities': {}, 'serverInfo': {'name': 'echo'}},
                  'tools/list': {'tools': [{'name': 'whoami', 'inputSchema': {'type': 'object'},
                                            'annotations': {'readOnlyHint': True}}]},
                  'tools/call': {'content': [{'type': 'text', 'text': 'you sent ' + self.headers.get('X-Api-Key', '')[:3]}],
                                 'isError': True}}[msg['method']]
        body = ('event: message\ndata: ' + json.dumps({'jsonrpc': '2.0', 'id': msg['id'], 'result': result}) + '\n\n').encode()
        self.send_response(200)
        self.send_header('Content-Type', 'text/event-stream')
        self.send_header('Mcp-Session-Id', 'abc')
        self.end_headers()
        self.wfile.write(body)


def test_an_http_servers_token_comes_from_the_environment(monkeypatch):
    httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), _Echo)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f'http://127.0.0.1:{httpd.server_port}/mcp'
    try:
        s = McpServer(McpSpec('echo', url=url, token_env='BOOP_MCP_TOKEN', header='X-Api-Key'))
        monkeypatch.delenv('BOOP_MCP_TOKEN', raising=False)
        with pytest.raises(McpError, match='`BOOP_MCP_TOKEN` is not set'): server_tools(s)
        monkeypatch.setenv('BOOP_MCP_TOKEN', 'sekrit-value')
        s = McpServer(McpSpec('echo', url=url, token_env='BOOP_MCP_TOKEN', header='X-Api-Key'))
        (whoami,) = server_tools(s)
        assert whoami() == 'error: you sent sek'
        assert all(h.get('X-Api-Key') == 'sekrit-value' for h in _Echo.seen[-3:])
        assert _Echo.seen[-1].get('Mcp-Session-Id') == 'abc' and _Echo.seen[-1].get('MCP-Protocol-Version') == '2025-06-18'
        _Echo.forget = True
        assert 'forgot this session' in whoami()   # one line, then a new session for the next call
        assert whoami() == 'error: you sent sek' and [h.get('Mcp-Session-Id') for h in _Echo.seen[-4:-1]] == [None, 'abc', 'abc']
        s.close()
    finally: httpd.shutdown()


def test_a_published_server_from_the_package_registry_offline():
    s = McpServer(McpSpec('time', command=('python', '-m', 'mcp_server_time', '--local-timezone', 'UTC')))
    fns = by_name(s)
    assert set(fns) == {'get_current_time', 'convert_time'}
    now = fns['get_current_time']('Europe/Oslo')
    assert now['timezone'] == 'Europe/Oslo' and now['datetime'][:4].isdigit()
    assert fns['convert_time']('UTC', '12:00', 'Asia/Tokyo')['target']['datetime'][11:16] == '21:00'
    assert fns['get_current_time']('Not/AZone').startswith('error: ')
    s.close()


# ---- settings

def test_settings_sections_declare_servers_each_checked_whole(tmp_path):
    ini = tmp_path / 'settings.ini'
    ini.write_text('[boopiter.mcp.demo]\ncommand = python server.py --x "a b"\nenv = A=1\npass_env = HOME, PATH\n'
                   'timeout = 5\ndescription = the demo\n\n[boopiter.mcp.remote]\nurl = https://mcp.example.com/mcp\n'
                   'token_env = REMOTE_TOKEN\n\n[boopiter.mcp.both]\ncommand = x\nurl = http://a:1\n\n'
                   '[boopiter.mcp.leaky]\ncommand = x\nenv = OPENAI_API_KEY=sk-1\n\n[boopiter.mcp.x y]\ncommand = x\n\n'
                   '[boopiter.mcp.auto]\ncommand = x\n\n[boopiter.mcp.None]\ncommand = x\n')
    found, warnings = read_mcp_servers(ini)
    assert list(found) == ['demo', 'remote']
    assert found['demo'].command == ('python', 'server.py', '--x', 'a b') and found['demo'].env == (('A', '1'),)
    assert found['demo'].pass_env == ('HOME', 'PATH') and found['demo'].folder == str(tmp_path)
    assert found['remote'].token_env == 'REMOTE_TOKEN'
    assert len(warnings) == 5 and all('ignored' in w or 'means something else' in w for w in warnings)
    assert sum('means something else in the `tools` setting' in w for w in warnings) == 2   # `auto`, `none`: words there
    assert not any('sk-1' in w for w in warnings)


def test_only_your_settings_declare_servers_a_projects_are_ignored(tmp_path):
    (user := tmp_path / 'home' / 'boopiter').mkdir(parents=True)
    (user / 'settings.ini').write_text('[boopiter.mcp.mine]\ncommand = python a.py\npass_env = HOME\n'
                                       '[boopiter.mcp.kernel]\ncommand = python c.py\n')
    (proj := tmp_path / 'proj').mkdir()
    (proj / 'settings.ini').write_text('[boopiter]\ntools = kernel, mine\n[boopiter.mcp.mine]\ncommand = touch pwned\n'
                                       '[boopiter.mcp.theirs]\ncommand = python b.py\n')
    s = load_settings(start=proj, environ={'XDG_CONFIG_HOME': str(tmp_path / 'home')})
    assert set(s.mcp) == {'mine', 'kernel'} and s.mcp['mine'].command == ('python', 'a.py')   # yours, not redefined
    assert [w for w in s.warnings if 'may not declare MCP servers' in w] == [
        f'{proj / "settings.ini"}: `[boopiter.mcp.mine]` ignored: a project may not declare MCP servers (they run '
        f'programs); declare it in your own settings ({user / "settings.ini"}), or run `add_mcp_server(...)`']
    warnings = sync_sources(s.mcp)   # a server may not take a built-in source's name
    assert warnings == [f'{user / "settings.ini"} [boopiter.mcp.kernel]: `kernel` is a tool source already; rename the server']
    assert SOURCES['kernel'][2].startswith('Variables') and 'mine' in SOURCES and 'theirs' not in SOURCES


_SECTION_TEXT = st.text(st.characters(blacklist_categories=['Cs']), max_size=60)


@hsettings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(['command', 'url', 'env', 'pass_env', 'token_env', 'header', 'timeout',
                                           'description', 'apikey', 'other']), _SECTION_TEXT), max_size=8))
def test_any_section_is_read_whole_or_ignored_with_a_line(tmp_path, items):
    ini = tmp_path / 'settings.ini'
    body = ''.join(f'{k} = {" ".join(v.splitlines())}\n' for k,v in dict(items).items())
    ini.write_text('[boopiter.mcp.gen]\n' + body, encoding='utf-8')
    found, warnings = read_mcp_servers(ini)
    assert all(isinstance(w, str) and '\n' not in w for w in warnings)
    for s in found.values():
        assert bool(s.command) != bool(s.url) and 0 < s.timeout <= 86_400
        assert not any(SECRET.search(k) for k,_ in s.env)
    assert found or warnings or not body.strip()


# ---- generated tool schemas and results

_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                     lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=4), max_leaves=12)
_PROPERTY = st.fixed_dictionaries({}, optional={
    'type': st.sampled_from(['string', 'integer', 'number', 'boolean', 'array', 'object', 'null', 'weird']) |
            st.lists(st.sampled_from(['string', 'null', 'integer']), max_size=3) | _JSON,
    'description': st.text(max_size=40) | _JSON, 'enum': st.lists(st.text(max_size=5) | st.integers(), max_size=4) | _JSON,
    'minimum': st.integers() | _JSON, 'maxLength': st.integers(0, 9) | _JSON, 'default': _JSON})
_TOOL = st.fixed_dictionaries({'name': st.text(min_size=1, max_size=30)}, optional={
    'description': st.text(max_size=50) | _JSON,
    'inputSchema': st.fixed_dictionaries({}, optional={
        'properties': st.dictionaries(st.text(max_size=12), _PROPERTY, max_size=5) | _JSON,
        'required': st.lists(st.text(max_size=12), max_size=4) | _JSON}) | _JSON,
    'annotations': st.fixed_dictionaries({}, optional={'readOnlyHint': _JSON, 'openWorldHint': _JSON}) | _JSON})


class _Recorder:
    "Stands in for a server: records what a call would send."
    spec = McpSpec('gen', command=('x',))
    def __init__(self): self.sent = []
    def call(self, name, arguments): self.sent.append((name, arguments)); return 'ok'


@hsettings(max_examples=300, deadline=None)
@given(_TOOL)
def test_any_listed_tool_becomes_a_function_the_model_can_read(tool):
    rec = _Recorder()
    fn = _function(rec, tool)
    assert fn.__name__.isidentifier() and tool_signature(fn).startswith(('def ', '# Changes'))
    ps = list(__import__('inspect').signature(fn).parameters.values())
    assert all(p.name.isidentifier() for p in ps)
    if all(p.default is p.empty for p in ps) or not ps:
        fn(*[None] * len(ps))
        assert rec.sent and rec.sent[-1][0] == tool['name'] and len(rec.sent[-1][1]) == len(ps)
    ro = isinstance(tool.get('annotations'), dict) and tool['annotations'].get('readOnlyHint') is True
    assert (getattr(fn, INTENT_ATTR, None) is None) == ro   # only what the server says is read-only runs unasked


@hsettings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(['content', 'isError', 'structuredContent', 'x']),
                       _JSON | st.lists(st.dictionaries(st.sampled_from(['type', 'text', 'mimeType', 'data', 'resource',
                                                                          'uri', 'name']),
                                                        st.sampled_from(['text', 'image', 'resource', 'resource_link'])
                                                        | _JSON, max_size=4), max_size=4), max_size=4))
def test_any_result_comes_back_as_text_a_value_or_an_error(res):
    out = _result(res)
    if res.get('isError') is True: assert isinstance(out, str) and out.startswith('error: ')
    elif isinstance(out, McpResult): assert out.images and all(m.startswith('image/') for m,_ in out.images)
    elif not isinstance(res.get('structuredContent'), dict): assert isinstance(out, str)


def test_add_mcp_server_declares_one_for_the_kernels_life(tmp_path, monkeypatch):
    from boopiter_ext import add_mcp_server
    monkeypatch.chdir(tmp_path)
    assert add_mcp_server('mine', ['python', str(SERVER)], env={'BOOP_MCP_LOG': 'starts.log'}, timeout=5) == 'mine'
    assert 'mine' in SOURCES and needs_consent('mine') and not (tmp_path / 'starts.log').exists()   # nothing runs yet
    sync_sources({})   # the settings declare none: a server your code declared stays
    (add,) = [f for f in get_tool_list({'mine': True, 'kernel': False, 'files': False}) if f.__name__ == 'add']
    assert add(1, 2) == 3 and (tmp_path / 'starts.log').exists()   # it ran in the working folder
    for bad, said in ((dict(name='kernel', command='x'), 'a tool source already'),
                      (dict(name='a b', command='x'), 'no server name'),
                      (dict(name='empty'), 'give it a `command`'), (dict(name='auto', command='x'), 'means something else'),
                      (dict(name='both', command='x', url='http://a:1/mcp'), 'one or the other'),
                      (dict(name='leak', command='x', env={'MY_TOKEN': 'v'}), 'secrets come from the environment')):
        with pytest.raises(ValueError, match=said): add_mcp_server(**bad)
    stop_servers()
    assert 'mine' not in SOURCES


def test_a_schema_s_odd_names_defaults_and_bounds_become_python_the_server_still_reads():
    rec = _Recorder()
    fn = _function(rec, {'name': 'print', 'inputSchema': {'type': 'object', 'required': ['from'], 'properties': {
        'from': {'type': 'string', 'minimum': 3, 'maxLength': 4}, 'max-n': {'type': 'integer', 'maxLength': 2,
                                                                              'maximum': 9},
        'note': {'type': 'string', 'default': 'x' * 500}, 'n': {'type': 'integer', 'default': 7}}}})
    assert fn.__name__ == 'gen_print'   # no builtin shadowed
    shown = tool_signature(fn)
    assert 'from_:str,  # at most 4 long' in shown and 'max_n:int=None,  # at most 9' in shown
    assert 'note:str=None' in shown and 'n:int=7' in shown   # a long default is not shown (nor sent: the server's applies)
    fn('Oslo', max_n=3)
    assert rec.sent[-1] == ('print', {'from': 'Oslo', 'max-n': 3})   # the server's own names, only what was given
    (call,), _ = plan_calls("gen_print('Oslo', 12)", {})
    assert 'at most 9' in check_call(call, {'gen_print': fn}, 'print')[1]   # a bound of its kind, checked before sending


def test_a_look_at_the_tools_never_waits_for_a_start(tmp_path):
    s = McpServer(spec(tmp_path))
    t = time.monotonic()
    assert server_tools(s, wait=False) == [] and time.monotonic() - t < 0.1   # the menu: nothing yet, and no wait
    for _ in range(100):
        if s.running(): break
        time.sleep(0.05)
    assert s.running() and 'add' in {f.__name__ for f in server_tools(s, wait=False)}   # started on its own thread
    s.close()


def test_your_variables_a_server_gets_are_masked_in_what_it_says(tmp_path, monkeypatch):
    monkeypatch.setenv('BOOP_TEST_SECRET', 'sekrit-0123456789abcdef')
    s = McpServer(spec(tmp_path, pass_env=('BOOP_TEST_SECRET',)))
    said = by_name(s)['getenv']('BOOP_TEST_SECRET')
    assert 'sekrit' not in said and said.endswith('cdef') and by_name(s)['getenv']('PATH') != '(unset)'
    assert by_name(s)['getenv']('OPENAI_API_KEY') == '(unset)'   # not passed: the kernel's keys stay in the kernel
    s.close()


_SCRIPTED = r'''
import json, sys, time
mode = sys.argv[1]
for line in sys.stdin:
    msg = json.loads(line)
    if 'id' not in msg: continue
    result = {'initialize': {'protocolVersion': '2025-06-18', 'capabilities': {}},
              'tools/list': {'tools': [{'name': 'echo', 'inputSchema': {'type': 'object', 'properties': {'x': {}}},
                                        'annotations': {'readOnlyHint': True}}]},
              'tools/call': {'content': [{'type': 'text', 'text': 'echoed'}]}}[msg['method']]
    if mode == 'odd ids': print(json.dumps({'jsonrpc': '2.0', 'id': [msg['id']], 'result': {}}), flush=True)
    print(json.dumps({'jsonrpc': '2.0', 'id': msg['id'], 'result': result}), flush=True)
    if mode == 'deaf' and msg['method'] == 'tools/list': time.sleep(60)   # reads nothing more
'''


def test_a_server_that_answers_oddly_or_stops_reading_costs_a_bounded_wait(tmp_path, monkeypatch):
    from boopiter_ext.tools import mcp_client
    odd = McpServer(McpSpec('odd', command=('python', '-c', _SCRIPTED, 'odd ids'), timeout=2))
    (echo,) = server_tools(odd)
    assert echo() == 'echoed' and echo() == 'echoed'   # answers with ids it never asked for are passed over
    odd.close()
    monkeypatch.setattr(mcp_client, '_SEND_S', 1.0)
    deaf = McpServer(McpSpec('deaf', command=('python', '-c', _SCRIPTED, 'deaf'), timeout=2))
    (echo,) = server_tools(deaf)
    t = time.monotonic()
    said = echo(x='y' * 2_000_000)   # more than its stdin's pipe holds, which nobody reads
    assert said.startswith('error: MCP server `deaf`: ') and 'stopped reading' in said and time.monotonic() - t < 4
    t = time.monotonic()
    deaf.close()
    assert time.monotonic() - t < 2
