"""`gpu_free` (tools/machine.py) against fake nvidia-smi / rocm-smi on PATH and Ollama-protocol servers, and `check_ci`
(tools/ci.py) against a local server that speaks GitHub's runs endpoint, faults and token echoes included."""

import json, os, sys, threading, time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
import pytest
from hypothesis import given, settings, strategies as st
from ollama_server import OllamaTestServer, free_port
from strategies import json_objects, json_values
from boopiter_ext.tools import ci, machine
from boopiter_ext.tools.ci import _answer, _runs_lines, ci_source
from boopiter_ext.tools.guards import OUTBOUND_ATTR, Call, check_call
from boopiter_ext.tools.kernel import is_tool
from boopiter_ext.tools.machine import _nvidia, _rocm, machine_source, machine_tools
from boopiter_ext.tools.registry import ToolContext

TOKEN = 'ghp_' + 'Z9y8X7w6V5u4T3s2R1q0' * 2


# ---- a tiny HTTP server whose answers a test scripts: handler(req) -> (status, headers, body bytes)

class Quiet(ThreadingHTTPServer):
    def handle_error(self, request, client_address): pass   # a client that hangs up early (a capped read) is expected


@contextmanager
def serve(answer):
    seen = []
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a): pass
        def do_GET(self):
            seen.append(dict(path=self.path, headers=dict(self.headers)))
            status, headers, body = answer(self)
            self.send_response(status)
            for k,v in headers.items(): self.send_header(k, v)
            self.end_headers()
            if callable(body): body(self.wfile)
            else: self.wfile.write(body)
    srv = Quiet(('127.0.0.1', 0), H)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, kwargs={'poll_interval': 0.05}, daemon=True)
    t.start()
    try: yield f'http://127.0.0.1:{srv.server_address[1]}', seen
    finally:
        srv.shutdown()
        srv.server_close()


def js(obj, status=200, **headers): return status, {'Content-Type': 'application/json', **headers}, json.dumps(obj).encode()


# ---- gpu_free

@pytest.fixture
def bin_dir(tmp_path, monkeypatch):
    "An empty folder that is all of PATH: no GPU tool unless a test writes one; Ollama at a port nothing answers."
    d = tmp_path/'bin'
    d.mkdir()
    monkeypatch.setenv('PATH', str(d))
    monkeypatch.setenv('OLLAMA_HOST', f'127.0.0.1:{free_port()}')
    return d


def fake_tool(d:Path, name:str, body:str):
    "A Python script `name` in `d` that runs `body`."
    p = d/name
    p.write_text(f'#!{sys.executable}\nimport sys, time, subprocess\n{body}\n')
    p.chmod(0o755)


def prints(text): return f'sys.stdout.write({text!r})'


NVIDIA_OUT = """0, NVIDIA A100-SXM4-40GB, 40960, 10137, 30823
1, NVIDIA GeForce RTX 4090, 24564, 564, 24000
2, NVIDIA T4, [N/A], [N/A], [N/A]
3, NVIDIA X, 100, -5, 105
4, NVIDIA Y, 100, 10, 900
this is not csv
5, NVIDIA Z, 1e99, 1, 1
², NVIDIA superscript two, 10, 1, 9
"""


def test_nvidia_lines_parsed_and_bad_ones_counted(bin_dir):
    fake_tool(bin_dir, 'nvidia-smi', prints(NVIDIA_OUT))
    out = machine_tools()[0]().splitlines()
    assert out[0] == 'GPU 0 NVIDIA A100-SXM4-40GB: 30.1 GiB free of 40.0 GiB'
    assert out[1] == 'GPU 1 NVIDIA GeForce RTX 4090: 23.4 GiB free of 24.0 GiB'
    assert out[2] == 'nvidia-smi: 6 entries not understood, skipped'
    assert out[3].startswith('Ollama: not reachable at http://127.0.0.1:') and len(out) == 4   # GPUs read: no memory line


def test_nvidia_gets_the_query_and_no_shell(bin_dir, tmp_path):
    fake_tool(bin_dir, 'nvidia-smi', f'open({str(tmp_path/"argv")!r}, "w").write(repr(sys.argv[1:]))\n'
                                     + prints('0, A, 10, 2, 8\n'))
    assert machine_tools()[0]().startswith('GPU 0 A: 0.0 GiB free of 0.0 GiB')
    assert eval((tmp_path/'argv').read_text()) == machine._NVIDIA


def test_rocm_json(bin_dir):
    data = {'card0': {'VRAM Total Memory (B)': '17163091968', 'VRAM Total Used Memory (B)': '1073741824'},
            'card1': {'VRAM Total Memory (B)': 8 * 2**30, 'VRAM Total Used Memory (B)': 0, 'Card series': 'Radeon RX'},
            'card2': {'VRAM Total Memory (B)': '10', 'VRAM Total Used Memory (B)': '20'},
            'card3': 'garbage', 'system': {'Driver version': '6.1'}}
    fake_tool(bin_dir, 'rocm-smi', prints(json.dumps(data)))
    out = machine_tools()[0]().splitlines()
    assert out[:3] == ['GPU 0 AMD GPU: 15.0 GiB free of 16.0 GiB', 'GPU 1 Radeon RX: 8.0 GiB free of 8.0 GiB',
                       'rocm-smi: 2 entries not understood, skipped']


@pytest.mark.parametrize('tool, body, says', [
    ('nvidia-smi', prints('No devices were found\n\x1b[31mgarbage\x00\n'), 'nvidia-smi: 2 entries not understood, skipped'),
    ('nvidia-smi', prints(''), 'nvidia-smi: no GPU reported'),
    ('nvidia-smi', 'sys.exit(9)', 'nvidia-smi: exited with status 9'),
    ('rocm-smi', prints('WARNING: not json {'), 'rocm-smi: 1 entry not understood, skipped'),
    ('rocm-smi', prints('[1, 2]'), 'rocm-smi: 1 entry not understood, skipped'),
])
def test_garbage_from_a_tool_is_one_line_and_memory_is_given(bin_dir, tool, body, says):
    fake_tool(bin_dir, tool, body)
    out = machine_tools()[0]().splitlines()
    assert out[0] == says and out[1].startswith('Memory: ') and ' available of ' in out[1] and len(out) == 3


def test_endless_output_is_capped(bin_dir):
    fake_tool(bin_dir, 'nvidia-smi', 'for i in range(200_000): sys.stdout.write(f"{i}, G, 10, 2, 8\\n")')
    out = machine_tools()[0]().splitlines()
    assert sum(ln.startswith('GPU ') for ln in out) == machine._MAX_GPUS
    assert len(out) <= machine._MAX_GPUS + 3


def _gone(pid):
    try: os.kill(pid, 0)
    except ProcessLookupError: return True
    try: return 'State:\tZ' in Path(f'/proc/{pid}/status').read_text()   # a zombie nobody reaped yet: not running
    except OSError: return True


def test_a_hanging_tool_is_stopped_with_what_it_started(bin_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(machine, '_SECONDS', 1.0)
    pidfile = tmp_path/'child.pid'
    fake_tool(bin_dir, 'nvidia-smi', f'c = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])\n'
                                     f'open({str(pidfile)!r}, "w").write(str(c.pid))\ntime.sleep(30)')
    t = time.monotonic()
    out = machine_tools()[0]().splitlines()
    assert time.monotonic() - t < 4
    assert out[0] == 'nvidia-smi: no answer within 1 s' and out[1].startswith('Memory: ')
    deadline = time.monotonic() + 3
    while not _gone(int(pidfile.read_text())) and time.monotonic() < deadline: time.sleep(0.05)
    assert _gone(int(pidfile.read_text())), 'the grandchild outlived the timeout'


def test_no_gpu_tool_gives_the_memory(bin_dir):
    out = machine_tools()[0]().splitlines()
    assert len(out) == 2 and out[0].startswith('Memory: ') and out[1].startswith('Ollama: not reachable')


def test_memory_falls_back_to_sysconf(bin_dir, tmp_path, monkeypatch):
    (tmp_path/'meminfo').write_text('MemTotal: lots kB\nMemAvailable: -3 kB\n')
    monkeypatch.setattr(machine, '_MEMINFO', str(tmp_path/'meminfo'))
    avail, total = machine._meminfo()   # from os.sysconf
    assert 0 <= avail <= total and total > 0
    monkeypatch.setattr(machine, '_MEMINFO', str(tmp_path/'none'))
    monkeypatch.setattr(os, 'sysconf', lambda k: (_ for _ in ()).throw(ValueError(k)))
    assert machine._memory_line() == 'Memory: unknown on this system'


def test_ollama_test_server_ps(bin_dir):
    with OllamaTestServer() as srv:
        srv.loaded = {'qwen3:1.7b', 'gemma3:4b'}
        fn, = machine_source(ToolContext('.', settings={'host': srv.host}))   # the setting wins over OLLAMA_HOST
        last = fn().splitlines()[-1]
        assert last == 'Ollama holds: qwen3:1.7b 1.3 GiB (1.3 GiB on GPU), gemma3:4b 3.1 GiB (3.1 GiB on GPU)' \
            or last == 'Ollama holds: gemma3:4b 3.1 GiB (3.1 GiB on GPU), qwen3:1.7b 1.3 GiB (1.3 GiB on GPU)'
        srv.loaded = set()
        assert fn().splitlines()[-1] == f'Ollama holds no models in memory ({srv.url})'


def test_ollama_host_from_the_environment(bin_dir, monkeypatch):
    with OllamaTestServer() as srv:
        srv.loaded = {'smollm2:135m'}
        monkeypatch.setenv('OLLAMA_HOST', srv.host)
        for ctx in (None, ToolContext('.'), ToolContext('.', settings={'host': ''})):   # '' is no setting
            assert machine_source(ctx)[0]().endswith('Ollama holds: smollm2:135m 0.3 GiB (0.3 GiB on GPU)')


def test_ollama_ps_entries_checked(bin_dir, monkeypatch):
    models = [dict(name='cpu:1b', size=2**31, size_vram=0), dict(name='part:8b', size=5 * 2**30, size_vram=2**32),
              dict(name='neg', size=-1), dict(name=['x'], size=1), dict(model='m:2b', size=2**30, size_vram=2**40),
              'not a dict', dict(name='nan', size='NaN')]
    with serve(lambda req: js({'models': models})) as (url, seen):
        monkeypatch.setenv('OLLAMA_HOST', url)
        last = machine_tools()[0]().splitlines()[-1]
    assert last == 'Ollama holds: cpu:1b 2.0 GiB (on CPU), part:8b 5.0 GiB (4.0 GiB on GPU), m:2b 1.0 GiB (1.0 GiB on GPU)'
    assert seen[0]['path'] == '/api/ps'


def test_slow_or_bad_ollama_is_one_line(bin_dir, monkeypatch):
    with serve(lambda req: (time.sleep(5), js({}))[1]) as (url, _):
        monkeypatch.setenv('OLLAMA_HOST', url)
        t = time.monotonic()
        assert machine_tools()[0]().splitlines()[-1].startswith('Ollama: not reachable at http://127.0.0.1:')
        assert time.monotonic() - t < 4
    monkeypatch.setenv('OLLAMA_HOST', 'not a host !')
    assert machine_tools()[0]().splitlines()[-1] == 'Ollama: its host setting is not usable (SettingsError)'


def test_machine_marks():
    fn, = machine_source()
    assert fn.__name__ == 'gpu_free' and is_tool(fn) and not hasattr(fn, OUTBOUND_ATTR)
    assert not hasattr(fn, 'boopiter_intent')


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), json_values())
def test_parsers_never_raise(text, value):
    for gpus, bad in (_nvidia(text), _rocm(text), _rocm(json.dumps(value))):
        assert bad >= 0 and all(0 <= free <= total for _, _, free, total in gpus)


# ---- check_ci

def run(i, **kw):
    return {**dict(id=i, name=f'CI {i}', head_branch='main', event='push', status='completed', conclusion='success',
                   created_at='2026-01-02T03:04:05Z', html_url=f'https://github.com/o/n/actions/runs/{i}'), **kw}


@pytest.fixture
def github(monkeypatch):
    "A local GitHub runs endpoint: set `answer` to change what it says; `seen` holds the requests."
    for k in ('GITHUB_TOKEN', 'GH_TOKEN', 'HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'ALL_PROXY'):
        monkeypatch.delenv(k, raising=False)
    box = {'answer': lambda req: js({'total_count': 2, 'workflow_runs': [run(1), run(2, conclusion=None)]})}
    with serve(lambda req: box['answer'](req)) as (url, seen):
        monkeypatch.setenv('BOOPITER_GITHUB_API', url + '/')
        box.update(url=url, seen=seen)
        yield box


def test_runs_listed_and_headers_sent(github, monkeypatch):
    monkeypatch.setenv('GITHUB_TOKEN', TOKEN)
    out = ci_source()[0]('o/n', branch='release/1.2', limit=3)
    assert out.splitlines() == [
        'CI 1 | main | push | completed/success | 2026-01-02T03:04:05Z | https://github.com/o/n/actions/runs/1',
        'CI 2 | main | push | completed | 2026-01-02T03:04:05Z | https://github.com/o/n/actions/runs/2']
    req, = github['seen']
    assert req['path'] == '/repos/o/n/actions/runs?per_page=3&branch=release%2F1.2'
    h = req['headers']
    assert h['Authorization'] == f'Bearer {TOKEN}' and h['Accept'] == 'application/vnd.github+json'
    assert h['X-GitHub-Api-Version'] == '2022-11-28'


def test_no_token_no_header_and_gh_token_works(github, monkeypatch):
    ci_source()[0]('o/n')
    monkeypatch.setenv('GH_TOKEN', TOKEN)
    ci_source()[0]('o/n')
    assert 'Authorization' not in github['seen'][0]['headers'] and github['seen'][0]['path'].endswith('?per_page=5')
    assert github['seen'][1]['headers']['Authorization'] == f'Bearer {TOKEN}'


def test_malformed_runs_skipped_and_nothing_found(github):
    runs = [run(1), 'x', {'status': 3}, run(4, html_url='javascript:alert(1)'), run(5, name='a\nb\u2028c\x1b[0m',
            created_at='yesterday', event=None)]
    github['answer'] = lambda req: js({'workflow_runs': runs})
    out = ci_source()[0]('o/n', limit=5).splitlines()
    assert out[1] == 'a b c[0m | main | ? | completed/success | ? | https://github.com/o/n/actions/runs/5'
    assert out[2] == '(3 malformed runs skipped)' and len(out) == 3
    github['answer'] = lambda req: js({'total_count': 0, 'workflow_runs': []})
    assert ci_source()[0]('o/n', branch='dev') == '(no workflow runs for o/n on dev)'


def echo(status, **headers):
    "An error answer that echoes the request's Authorization header back, in the body and a header."
    def answer(req):
        auth = req.headers.get('Authorization', '')
        return js({'message': f'Bad things; you sent {auth}', 'documentation_url': auth}, status, **{'X-Echo': auth}, **headers)
    return answer


@pytest.mark.parametrize('answer, says', [
    (echo(404), 'error: no repository o/n visible (404); check the name'),
    (echo(401), 'error: GitHub refused the token (401); set GITHUB_TOKEN to a valid token'),
    (echo(403), 'error: GitHub refused (403: Bad things; you sent Bearer [token]); the token needs read access'),
    (echo(500), 'error: GitHub answered HTTP 500: Bad things; you sent Bearer [token]'),
    (echo(403, **{'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': str(int(time.time()) + 599)}),
     'error: GitHub rate limit reached until '),
    (echo(429, **{'Retry-After': '30'}), 'error: GitHub asks to slow down; wait 30 s'),
    (lambda req: (302, {'Location': f'http://evil.example/steal?{req.headers.get("Authorization")}'}, b''),
     'error: GitHub redirected to evil.example (HTTP 302), not followed'),
    (lambda req: (200, {}, b'{"workflow_runs": [' + req.headers.get('Authorization', '').encode()),
     'error: GitHub answered with something not JSON'),
    (lambda req: js(['Bearer ' + TOKEN]), 'error: GitHub answered without a list of runs'),
])
def test_errors_are_one_line_and_never_show_the_token(github, monkeypatch, answer, says):
    monkeypatch.setenv('GITHUB_TOKEN', TOKEN)
    github['answer'] = answer
    out = ci_source()[0]('o/n')
    assert out.startswith(says) and '\n' not in out and TOKEN not in out and TOKEN[-12:] not in out
    assert len(github['seen']) == 1   # a redirect is never followed


def test_rate_limit_without_a_token(github):
    reset = int(time.time()) + 599
    github['answer'] = echo(403, **{'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': str(reset)})
    out = ci_source()[0]('o/n')
    assert out == (f'error: GitHub rate limit reached until {time.strftime("%H:%M:%S UTC", time.gmtime(reset))} '
                   '(in 10 min); set GITHUB_TOKEN to raise it')


@pytest.mark.parametrize('length', [True, False])
def test_oversize_body_refused(github, length):
    big = b'{"workflow_runs": [' + b'1,' * 1_100_000 + b'1]}'
    github['answer'] = lambda req: (200, {'Content-Length': str(len(big))} if length else {}, big)
    assert ci_source()[0]('o/n') == 'error: GitHub sent over 2 MB; ask for fewer runs'


def test_network_problems(github, monkeypatch):
    monkeypatch.setattr(ci, '_SECONDS', 0.5)
    github['answer'] = lambda req: (time.sleep(3), js({}))[1]
    assert ci_source()[0]('o/n') == 'error: GitHub did not answer within 0.5 s; try again later'
    monkeypatch.setenv('BOOPITER_GITHUB_API', f'http://127.0.0.1:{free_port()}')
    assert ci_source()[0]('o/n').startswith('error: cannot reach GitHub (ConnectionError)')


BAD_REPOS = ['', 'o', 'o/n/x', '../x', 'o/..', 'o/.', '-o/n', 'o n/x', 'o/n?x=1', 'o/n#', 'o/n\n', 'o/n/', '/n', None, 3,
             'o' * 40 + '/n', 'o/' + 'n' * 101, 'ö/n', 'o/n%2F..', 'o\\n/x']
BAD_BRANCHES = ['', '..', '-x', 'a..b', 'x.lock', 'a b', 'a?b', '/x', 'x/', 'a//b', 'a\nb', 'x.', '.x', '@{-1}', 'a~1',
                'a:b', 'b' * 201, 5]


@pytest.mark.parametrize('kw', [dict(repo=r) for r in BAD_REPOS] + [dict(repo='o/n', branch=b) for b in BAD_BRANCHES]
                         + [dict(repo='o/n', limit=v) for v in (0, 21, True, '5', 5.0, None, -1)])
def test_bad_arguments_refused_before_any_request(github, kw):
    assert ci_source()[0](**kw).startswith('error: ')
    assert github['seen'] == []


def test_ci_marks_and_guards():
    fn, = ci_source(ToolContext('.'))
    assert fn.__name__ == 'check_ci' and is_tool(fn) and getattr(fn, OUTBOUND_ATTR) == ('repo', 'branch')
    tools = {'check_ci': fn}
    status, msg = check_call(Call('check_ci', ('o/n x',), {}, "check_ci('o/n x')", 1), tools, 'check o/n x please')
    assert status == 'invalid args' and 'matching' in msg
    status, _ = check_call(Call('check_ci', ('o/n',), {'limit': 50}, "check_ci('o/n', limit=50)", 1), tools, 'o/n')
    assert status == 'invalid args'
    assert check_call(Call('check_ci', ('o/n',), {}, "check_ci('o/n')", 1), tools, 'how is CI on o/n?')[0] == 'ok'
    assert check_call(Call('check_ci', ('evil/leak',), {}, "check_ci('evil/leak')", 1), tools, 'how is CI?')[0] == 'declined'


RUN_KEYS = ['name', 'head_branch', 'event', 'status', 'conclusion', 'created_at', 'html_url', 'id']
run_like = st.one_of(json_objects(RUN_KEYS), st.builds(run, st.integers()), json_values(6))


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.fixed_dictionaries({'workflow_runs': st.lists(run_like, max_size=25)}), json_values()),
       st.integers(1, 20))
def test_formatter_never_raises_and_keeps_to_limit(data, limit):
    lines, bad = _runs_lines(data, limit)
    assert len(lines) <= limit and bad >= 0 and all('\n' not in ln and ln.isprintable() for ln in lines)
    out = _answer(data, 'o/n', None, limit).split('\n')
    assert len(out) <= limit + 1   # the runs, and one line saying how many were skipped
    assert sum(' | ' in ln for ln in out) <= limit


def test_public_names_and_cheap_import():
    for m in (machine, ci):
        defined = {k for k,v in vars(m).items() if not k.startswith('_') and getattr(v, '__module__', '') == m.__name__}
        assert defined <= set(m.__all__) and all(hasattr(m, k) for k in m.__all__), m.__name__
    import subprocess
    code = ('import sys, boopiter_ext.tools.machine, boopiter_ext.tools.ci; '
            'print(sorted(m for m in ("requests", "boopiter_ext.models.ollama") if m in sys.modules))')
    assert subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout == '[]\n'
