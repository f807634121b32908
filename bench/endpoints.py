"""Many model servers (issue 16): what a named endpoint costs per chunk, and what a dead server costs the brain menu.

    python bench/endpoints.py [chunks] [runs]

1. Streaming through a named OpenAI-compatible endpoint (`@srv/qwen3:1.7b`, the way a prompt asks it: `Router.chat`,
   settings read from a user settings.ini) against the raw `requests` SSE reader of bench/openai_sse.py, both reading
   the same `chunks`-piece reply from the test server in its own process; the figure is this process's CPU per chunk
   (median of `runs`, runs alternating). Target: within 1.3x of the raw reader.
2. A catalog refresh across 5 named endpoints (two Ollama, two OpenAI-compatible, each listing in its own time: 40, 80,
   120 and 160 ms) and one that is down: a port that accepts and never answers, or one that refuses. Each refresh is
   compared with the slowest live endpoint's own listing, measured alone in the same run just before it. Target: a
   refresh takes at most that plus 50 ms, so listings run concurrently and a dead server waits for nobody. The first
   refresh that meets a silent server waits `Catalog.patience` for it, once: it is shown apart.
"""

import os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT/'tests'), str(ROOT/'bench')]
import ollama_server                                            # noqa: E402
from openai_sse import raw_sse, timed                            # noqa: E402
import requests                                                 # noqa: E402
from boopiter_ext.models.catalog import Catalog, named_source           # noqa: E402
from boopiter_ext.context.messages import mk_msg                         # noqa: E402
from boopiter_ext.models.router import Router                           # noqa: E402
from boopiter_ext.settings import load_settings                  # noqa: E402

DELAYS = dict(box1=0.04, box2=0.08, vllm=0.12, gateway=0.16)   # seconds each live endpoint takes to list its models


def settings_for(folder, text):
    "Settings as a kernel reads them, from a user settings.ini holding `text` (and no system or project file)."
    (folder/'xdg'/'boopiter').mkdir(parents=True, exist_ok=True)
    (folder/'xdg'/'boopiter'/'settings.ini').write_text(text)
    env = dict(XDG_CONFIG_HOME=str(folder/'xdg'), BOOPITER_SYSTEM_SETTINGS=str(folder/'none.ini'))
    return load_settings(start=folder, environ=env)


def section(name, kind, url): return f'[boopiter.endpoint.{name}]\nkind = {kind}\nurl = {url}\n'


# -- 1. streaming through a named endpoint

def named_sse(router, settings):
    return sum(kind == 'content' for kind, _ in router.chat('@srv/qwen3:1.7b', [mk_msg('go')], settings))


def streaming(folder, chunks, runs):
    srv = subprocess.Popen([sys.executable, str(ROOT/'tests'/'ollama_server.py'), '--chunks', str(chunks)],
                           stdout=subprocess.PIPE, text=True)
    try:
        base = srv.stdout.readline().strip() + '/v1'
        s, session, router = settings_for(folder, section('srv', 'openai', base)), requests.Session(), Router()
        timed(raw_sse, session, base), timed(named_sse, router, s)   # warm up: connections, imports
        cpu = dict(raw=[], named=[])
        for _ in range(runs):
            for name, f, args in (('raw', raw_sse, (session, base)), ('named', named_sse, (router, s))):
                c, _, n = timed(f, *args)
                assert n == chunks, (name, n)
                cpu[name].append(c)
        us = {k: statistics.median(v) / chunks * 1e6 for k, v in cpu.items()}
        ratio = us['named'] / us['raw']
        print(f'1. streaming through a named OpenAI-compatible endpoint, {chunks:,} chunks, median of {runs}:')
        print(f'   raw requests SSE reader        {us["raw"]:6.2f} us/chunk CPU')
        print(f'   @srv/qwen3:1.7b (Router.chat)  {us["named"]:6.2f} us/chunk CPU = {ratio:.2f}x raw   '
              f'target <= 1.3: {"ok" if ratio <= 1.3 else "MISSED"}   (litellm imported: {"litellm" in sys.modules})')
        router.close()
        session.close()
    finally:
        srv.terminate()
        srv.wait(5)
        srv.stdout.close()


# -- 2. a catalog refresh across endpoints, one of them down

def slow(route):
    "`route` of the test server, answering after the server's own `list_delay`."
    def handler(self, body):
        time.sleep(getattr(self.owner, 'list_delay', 0.0))
        return route(self, body)
    return handler


def refreshes(folder, dead_url, runs):
    "(first refresh, [(refresh, slowest live alone)] after it), in seconds."
    servers = {n: ollama_server.OllamaTestServer().start() for n in DELAYS}
    for n, srv in servers.items(): srv.list_delay = DELAYS[n]
    text = (f'[boopiter]\nhost = {servers["box1"].host}\n' + section('box1', 'ollama', servers['box1'].host)
            + section('box2', 'ollama', servers['box2'].host) + section('vllm', 'openai', servers['vllm'].url + '/v1')
            + section('gateway', 'openai', servers['gateway'].url + '/v1') + section('dead', 'openai', dead_url + '/v1'))
    s, router = settings_for(folder, text), Router()
    catalog = Catalog(router)
    try:
        t = time.perf_counter()
        first = catalog.refresh(s)
        first_t = time.perf_counter() - t
        assert set(first.problems) == {'@dead'}, first.problems
        out = []
        for _ in range(runs):
            alone = []
            for name in DELAYS:
                t = time.perf_counter()
                named_source(router, s, s.endpoints[name])
                alone.append(time.perf_counter() - t)
            t = time.perf_counter()
            listing = catalog.refresh(s)
            out.append((time.perf_counter() - t, max(alone)))
            assert set(listing.problems) == {'@dead'} and len(listing.entries) >= 4 * 3, listing.problems
        return first_t, out
    finally:
        router.close()
        for srv in servers.values(): srv.stop()


def listing(folder, runs):
    for path in ('/api/tags', '/v1/models'):
        key = ('GET', path)
        ollama_server._ROUTES[key] = slow(ollama_server._ROUTES[key])
    print(f'2. a catalog refresh across 5 endpoints (live ones list in {", ".join(f"{d * 1000:.0f}" for d in DELAYS.values())} ms),'
          f' one down, median of {runs}:')
    silent = ollama_server.Silent()
    for what, url in (('accepts, never answers', silent.url), ('refuses', f'http://127.0.0.1:{ollama_server.free_port()}')):
        first, got = refreshes(folder, url, runs)
        refresh, alone = statistics.median(r for r, _ in got), statistics.median(a for _, a in got)
        over = statistics.median(r - a for r, a in got)
        print(f'   down = {what:<22}  refresh {refresh * 1000:6.1f} ms   slowest live alone {alone * 1000:6.1f} ms   '
              f'= +{over * 1000:5.1f} ms (worst +{max(r - a for r, a in got) * 1000:.1f})   target <= +50 ms: '
              f'{"ok" if over <= 0.05 else "MISSED"}   first refresh {first * 1000:.0f} ms')
    print(f'   (serial, for reference: {sum(DELAYS.values()) * 1000:.0f} ms plus the dead one\'s timeout; the first refresh that '
          f'meets a silent server waits Catalog.patience = {Catalog.patience:g} s for it, once)')


def main(chunks=20000, runs=7):
    chunks, runs = int(chunks), int(runs)
    with tempfile.TemporaryDirectory() as d:
        os.environ['BOOPITER_DEADDROP_DIR'] = str(Path(d)/'dead_drop')
        streaming(Path(d)/'a', chunks, runs)
        listing(Path(d)/'b', runs)


if __name__ == '__main__': main(*sys.argv[1:])
