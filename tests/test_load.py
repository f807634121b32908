"""Many kernels, one server (issue 16): 20 real kernels, started in parallel, each with the extension loaded and the
same system-wide settings file (a JupyterHub's), prompt one shared Ollama endpoint at the same time. Every reply must
come back exact, to the kernel that asked (no cross-talk), and none may be lost. The server streams each reply in
pieces, slowly enough that the 20 streams interleave."""

import re, time
from concurrent.futures import ThreadPoolExecutor
import pytest
from ollama_server import OllamaTestServer, Reply, split_pieces
from kernels import KernelSession

pytestmark = pytest.mark.slow
KERNELS = 20
TOKEN = re.compile(r'token-(\d+)-([a-z]+)')


def answer(token): return f'Kernel {token}, here is your answer:\n\n- one\n- two\n\n' + ' '.join([token] * 12) + ' done.'


class EchoServer(OllamaTestServer):
    "The test server, answering each chat with a reply made from the token its question carries (so who gets what shows)."
    def _next_reply(self, body=None):
        messages = (body or {}).get('messages') or [{}]
        found = TOKEN.search(str(messages[-1].get('content')))
        return Reply(split_pieces(answer(found.group(0)) if found else 'no token'), delay=0.01)


def one_kernel(i, srv, tmp_path, system):
    "Start a kernel, load the extension, ask once; (token, the reply's text, the status, seconds from start)."
    t, token = time.monotonic(), f'token-{i}-{"abcdefghijklmnopqrstuvwxyz"[i % 26] * 3}'
    cwd = tmp_path/f'k{i}'
    cwd.mkdir()
    env = {'BOOPITER_SYSTEM_SETTINGS': str(system), 'OLLAMA_HOST': srv.host, 'XDG_CONFIG_HOME': str(tmp_path/'xdg')}
    with KernelSession(cwd, env=env, startup_timeout=120) as k:
        assert k.run('%load_ext boopiter_ext', timeout=120).status == 'ok'
        res = k.run(f'%%prompt\nPlease answer {token}.', timeout=120)
        out = res.reply
        return token, out['data']['text/plain'] if out else res.text, res.status, time.monotonic() - t


def test_twenty_kernels_prompt_one_shared_endpoint_at_once(tmp_path):
    system = tmp_path/'etc'/'boopiter'/'settings.ini'
    system.parent.mkdir(parents=True)
    with EchoServer() as srv:
        system.write_text(f'[boopiter]\nmodel = @lab/qwen3:1.7b\ntools = none\n'
                          f'[boopiter.endpoint.lab]\nkind = ollama\nurl = {srv.host}\n')
        t = time.monotonic()
        with ThreadPoolExecutor(KERNELS) as ex:
            got = list(ex.map(lambda i: one_kernel(i, srv, tmp_path, system), range(KERNELS)))
        took = time.monotonic() - t
        chats = srv.chats()
    assert [status for _, _, status, _ in got] == ['ok'] * KERNELS
    wrong = [(token, text) for token, text, _, _ in got if text != answer(token)]
    assert not wrong, wrong[:3]                                                    # exact, and each its own
    asked = sorted(TOKEN.search(c['messages'][-1]['content']).group(0) for c in chats)
    assert asked == sorted(token for token, *_ in got) and len(chats) == KERNELS   # one request each, none lost
    assert all(c['model'] == 'qwen3:1.7b' for c in chats)
    assert took < 90, f'{KERNELS} kernels took {took:.0f} s'
    print(f'{KERNELS} kernels, started in parallel, each asked once: {took:.1f} s; slowest kernel '
          f'{max(s for *_, s in got):.1f} s')
