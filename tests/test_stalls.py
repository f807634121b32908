"""`timeout` bounds the time between tokens on every route, however the server stalls: silent, or trickling bytes that
never complete a token (which a per-read socket timeout never notices). Real servers over real sockets throughout."""

import socket, threading, time
import pytest
from boopiter_ext.models import deaddrop as dd
from boopiter_ext.errors import ReplyStalled
from boopiter_ext.models.local import LocalModel
from boopiter_ext.context.messages import mk_msg
from boopiter_ext.models.router import Router
from boopiter_ext.settings import load_settings
from boopiter_ext.models.stream import Reply, pump

MODEL = 'qwen3:1.7b'
MSGS = [mk_msg('hi')]
ROUTES = ('ollama', 'openai', 'local', pytest.param('litellm', marks=pytest.mark.heavy))   # litellm: 3-4 s to import


def wait_for(cond, timeout=3.0):
    deadline = time.monotonic() + timeout
    while not cond() and time.monotonic() < deadline: time.sleep(0.02)
    return cond()


def watching(): return [t for t in threading.enumerate() if t.name == 'boopiter-stall-watch']


class _AtTestServer(LocalModel):
    "The embedded model's route, with the test server standing in for llama.cpp's (the same `/v1` protocol)."
    def __init__(self, url): super().__init__(); self.url = url
    def ensure(self): return self.url


@pytest.fixture
def route(request, srv, monkeypatch):
    "(router, model id, settings) for a route: a fresh router, with `timeout` 1 s."
    name = request.param
    config = dict(host=srv.host, timeout=1.0, api_base=srv.url + '/v1' if name == 'openai' else '')
    router = Router()
    if name == 'local': router._local = _AtTestServer(srv.url)
    if name == 'litellm':   # a cloud id: litellm's OpenAI provider, pointed at the test server by the environment
        monkeypatch.setenv('OPENAI_BASE_URL', srv.url + '/v1')
        monkeypatch.setenv('OPENAI_API_KEY', 'sk-test')
        from boopiter_ext.models.litellm_client import import_litellm
        import_litellm()   # seconds, once: not part of any timing below
    model = dict(ollama=MODEL, openai=f'openai/{MODEL}', local=f'local/{MODEL}', litellm=f'openai/{MODEL}')[name]
    yield router, model, load_settings(config=config)
    router.close()


@pytest.mark.parametrize('route', ROUTES, indirect=True)
@pytest.mark.heavy
def test_a_trickle_after_the_first_token_stalls_in_time_and_hangs_up(srv, route):
    router, model, s = route
    srv.script('one two three', fault='trickle', after=1, trickle_s=0.2, stall_s=30)
    events, reply, first = router.chat(model, MSGS, s), Reply(model), []
    with pytest.raises(ReplyStalled, match='No token .* for 1 s') as e:
        pump(events, reply, update=lambda r: first or first.append(time.monotonic()))
    waited = time.monotonic() - first[0]
    assert reply.answer == 'one ' and e.value.timeout == 1
    assert 0.9 < waited < 6                              # after the timeout, long before the 30 s trickle ends
    assert srv.streams[-1].trickled >= 3                 # bytes kept coming: no per-read timeout could fire
    assert wait_for(lambda: srv.streams[-1].disconnected)   # the connection was really closed
    assert wait_for(lambda: not watching())              # and no thread is left behind
    srv.script('still here')                             # the same router (and HTTP session) answers again
    assert pump(router.chat(model, MSGS, s), Reply(model)).answer == 'still here'


@pytest.mark.parametrize('route', ROUTES, indirect=True)
def test_a_trickle_before_any_token_bounds_the_first_token(srv, route):
    router, model, s = route
    srv.script('never', fault='trickle', trickle_s=0.2, stall_s=30)
    t = time.monotonic()
    with pytest.raises(ReplyStalled): pump(router.chat(model, MSGS, s), Reply(model))
    assert 0.9 < time.monotonic() - t < 6 and srv.streams[-1].trickled >= 3
    assert wait_for(lambda: srv.streams[-1].disconnected)


@pytest.mark.parametrize('route', ROUTES, indirect=True)
def test_slow_tokens_and_a_slow_reader_are_not_stalls(srv, route):
    "The deadline is per token, and only while waiting on the server: the consumer's own time does not count."
    router, model, s = route
    s = load_settings(config=dict(host=srv.host, timeout=1.0, api_base=s['api_base']))
    srv.script('a b c d e', delay=0.3)                   # 1.5 s in all, a token every 0.3 s
    got, t = [], time.monotonic()
    for kind, val in router.chat(model, MSGS, s):
        got.append(val)
        if len(got) == 1: time.sleep(1.5)                # longer than `timeout`, spent by the reader
    assert ''.join(v for v in got if isinstance(v, str)) == 'a b c d e' and time.monotonic() - t > 1.5


def _silent_server():
    "A port that accepts connections and never answers (not even headers); closes them when the test ends."
    srv, conns, stop = socket.create_server(('127.0.0.1', 0)), [], threading.Event()
    def run():
        srv.settimeout(0.1)
        while not stop.is_set():
            try: conns.append(srv.accept()[0])
            except OSError: pass
    threading.Thread(target=run, daemon=True).start()
    def close():
        stop.set()
        for c in conns + [srv]: c.close()
    return srv.getsockname()[1], close


@pytest.mark.parametrize('route', ['ollama', 'openai'], indirect=True)
def test_a_server_that_never_sends_headers_stalls_too(route):
    router, model, s = route
    port, close = _silent_server()
    try:
        s = load_settings(config=dict(host=f'127.0.0.1:{port}', timeout=1.0,
                                      api_base=f'http://127.0.0.1:{port}/v1' if s['api_base'] else ''))
        t = time.monotonic()
        with pytest.raises(ReplyStalled): pump(router.chat(model, MSGS, s), Reply(model))
        assert 0.9 < time.monotonic() - t < 5   # the deadline, then the per-read backstop one second later at most
    finally: close()


# The dead drop: a stall is time without reply text, not without bytes

def trickler(path, head, byte, every=0.1, seconds=20):
    "A responder thread writing `head`, then `byte` every `every` s; returns its stop event."
    stop = threading.Event()
    def run():
        with open(path, 'ab', buffering=0) as f:
            f.write(head)
            end = time.monotonic() + seconds
            while not stop.wait(every) and time.monotonic() < end: f.write(byte)
    threading.Thread(target=run, daemon=True).start()
    return stop


@pytest.mark.parametrize('head,byte', [(b'partial\n---MODEL: ', b'-'), (b'partial\n', b' ')],
                         ids=['model-line-of-dashes', 'spaces'])
def test_dead_drop_bytes_that_make_no_text_are_a_stall(tmp_path, head, byte):
    root = dd.deaddrop_root(environ={}, setting=str(tmp_path/'drop'))
    dd.new_session(root, 's1')
    pid = dd.drop_prompt(root, 's1', 'q')
    path = root/'s1'/'outbox'/f'{pid}.md'
    stop, events = trickler(path, head, byte), []
    try:
        with pytest.raises(ReplyStalled, match='No reply text for 1 s'):
            for ev in dd.follow_reply(root, 's1', pid, poll=0.05, timeout=1):
                events.append((ev, time.monotonic()))
        waited = time.monotonic() - events[-1][1]
    finally: stop.set()
    assert [ev for ev,_ in events] == [('content', 'partial')]
    assert 0.9 < waited < 5 and path.stat().st_size > len(head) + 5   # bytes kept coming all along
