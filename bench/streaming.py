"""Streaming costs of a prompt cell against raw readers of the same test-server reply, in one real kernel.

    python bench/streaming.py [chunks] [first_token_runs]
    python bench/streaming.py --litellm-only [runs]     # part 4 alone

Prints, each as a ratio or a difference against a baseline measured in the same run:

1. Ollama route throughput: a 20,000-chunk reply, prompt cell wall time / a raw `requests` NDJSON
   reader cell (target < 2.0; the official `ollama` client is shown for reference), plus the number
   of display updates per second and whether the saved text is exact.
2. Ollama route first-token overhead: time from sending the cell to the first token on screen,
   prompt cell minus raw `requests` cell (target < 30 ms, warm).
3. OpenAI-compatible routes, per-chunk overhead against a raw SSE reader cell, (difference) / chunks: `openai/NAME`
   on `api_base` (the direct SSE client, target < 0.05 ms), and the same server as a cloud id through litellm
   (`OPENAI_BASE_URL`, no `api_base`; target < 0.2 ms).
4. litellm route (a cloud id named) first prompt once the background warm-up (litellm and what its first request
   loads) has ended, against litellm only imported (the warm-up before issue 22) and no warm-up at all, and how long
   the warm-up takes (target < 1 s).

Wall times are measured by the client, from sending execute_request to the kernel going idle.
"""

import statistics, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT/'tests')]
from ollama_server import OllamaTestServer   # noqa: E402
from kernels import KernelSession            # noqa: E402

MODEL = 'qwen3:1.7b'
RAW_NDJSON = '''
import json, requests
_s = requests.Session()
def raw_ollama(url, first_only=False):
    body = dict(model='{model}', messages=[dict(role='user', content='go')], stream=True)
    with _s.post(url + '/api/chat', json=body, stream=True) as r:
        n = 0
        for line in r.iter_lines():
            d = json.loads(line)
            if first_only: print(d['message']['content'], end='', flush=True); break
            n += bool(d['message']['content'])
    return n
'''
RAW_SSE = '''
def raw_sse(url):
    body = dict(model='{model}', messages=[dict(role='user', content='go')], stream=True)
    n = 0
    with _s.post(url + '/v1/chat/completions', json=body, stream=True) as r:
        for line in r.iter_lines():
            if not line.startswith(b'data: ') or line == b'data: [DONE]': continue
            d = json.loads(line[6:])
            n += bool(d['choices'] and d['choices'][0]['delta'].get('content'))
    return n
'''
OFFICIAL = '''
import ollama
_oc = ollama.Client(host='{url}')
def official():
    return sum(1 for c in _oc.chat('{model}', messages=[dict(role='user', content='go')], stream=True) if c.message.content)
'''


def wall(k, code):
    t = time.monotonic()
    res = k.run(code, timeout=600)
    assert res.status == 'ok', res.outputs
    return time.monotonic() - t, res


def first_visible(k, code, is_token):
    "Seconds from sending `code` until a message passes `is_token`."
    seen = []
    t = time.monotonic()
    res = k.run(code, on_message=lambda kind, c: seen or (is_token(kind, c) and seen.append(time.monotonic())))
    assert res.status == 'ok' and seen, res.outputs
    return seen[0] - t


def median_of(n, f): return statistics.median(f() for _ in range(n))


def ollama_route(srv, k, chunks):
    k.run(RAW_NDJSON.format(model=MODEL))
    k.run(OFFICIAL.format(model=MODEL, url=srv.url))
    k.run(f'%%prompt -m {MODEL}\nwarm up')
    def raw():
        srv.script_chunks(chunks)
        return wall(k, f'raw_ollama({srv.url!r})')[0]
    def official():
        srv.script_chunks(chunks)
        return wall(k, 'official()')[0]
    def cell():
        srv.script_chunks(chunks)
        return wall(k, f'%%prompt -m {MODEL}\nstream it')
    t_raw, t_official = median_of(3, raw), median_of(3, official)
    runs = [cell() for _ in range(3)]
    t_cell = statistics.median(t for t,_ in runs)
    _, res = runs[-1]
    updates = res.count('update_display_data')
    exact = res.reply['data']['text/plain'] == 'tok ' * chunks
    print(f'1. Ollama route, {chunks:,} chunks (median of 3):')
    print(f'   raw requests reader   {t_raw*1000:8.1f} ms  ({t_raw/chunks*1e6:.1f} us/chunk)')
    print(f'   official ollama client{t_official*1000:8.1f} ms  = {t_official/t_raw:.2f}x raw')
    print(f'   %%prompt cell         {t_cell*1000:8.1f} ms  = {t_cell/t_raw:.2f}x raw   target < 2.0: '
          f'{"ok" if t_cell/t_raw < 2 else "MISSED"}')
    srv.script(['tok '] * 400, delay=0.005)   # ~2 s at 200 tokens/s, to see the throttle at work
    _, slow = wall(k, f'%%prompt -m {MODEL}\nstream it slowly')
    times = [t for t,kind,_ in slow.messages if kind.endswith('display_data')]
    rate = (len(times) - 2) / (times[-2] - times[0])   # the final update is unthrottled by design: left out
    print(f'   display updates: {updates} for the 20,000 chunks; final text exact: {exact}')
    print(f'   throttle, 400 tokens over ~2 s: {len(times)} display messages, {rate:.1f} updates/s from the first '
          f'display to the last throttled update   target ~10/s: {"ok" if rate <= 11 else "MISSED"}')


def first_token(srv, k, runs):
    srv.default_reply = 'first'
    k.run(f'raw_ollama({srv.url!r}, first_only=True)')
    raw = median_of(runs, lambda: first_visible(
        k, f'raw_ollama({srv.url!r}, first_only=True)', lambda kind, c: kind == 'stream'))
    cell = median_of(runs, lambda: first_visible(
        k, f'%%prompt -m {MODEL}\nhi', lambda kind, c: kind.endswith('display_data') and c['data'].get('text/plain')))
    print(f'2. First token on screen, warm (median of {runs}): raw {raw*1000:.1f} ms, %%prompt {cell*1000:.1f} ms, '
          f'overhead {(cell-raw)*1000:+.1f} ms   target < 30 ms: {"ok" if cell - raw < 0.030 else "MISSED"}')


def sse_route(srv, k, chunks, label, target):
    "Per-chunk overhead of `openai/MODEL` in kernel `k` (configured for its route) over a raw SSE reader."
    k.run(RAW_NDJSON.format(model=MODEL))
    k.run(RAW_SSE.format(model=MODEL))
    pieces = [f't{i} ' for i in range(chunks)]   # litellm stops a stream that repeats one chunk 100 times
    k.run(f'%%prompt -m openai/{MODEL}\nwarm up')
    def raw():
        srv.script(pieces)
        return wall(k, f'raw_sse({srv.url!r})')[0]
    def cell():
        srv.script(pieces)
        return wall(k, f'%%prompt -m openai/{MODEL}\nstream it')
    t_raw = median_of(3, raw)
    runs = [cell() for _ in range(3)]
    t_cell = statistics.median(t for t,_ in runs)
    per_chunk = (t_cell - t_raw) / chunks * 1000
    exact = runs[-1][1].reply['data']['text/plain'] == ''.join(pieces)
    print(f'3. {label}, {chunks:,} chunks (median of 3): raw SSE {t_raw*1000:.1f} ms, %%prompt {t_cell*1000:.1f} ms '
          f'= {t_cell/t_raw:.2f}x; overhead {per_chunk:.3f} ms/chunk   target < {target}: '
          f'{"ok" if per_chunk < target else "MISSED"}; exact: {exact}')


def cloud_env(srv):
    "A kernel environment in which `openai/NAME` is a cloud id that litellm sends to the test server."
    return {'OLLAMA_HOST': srv.host, 'OPENAI_BASE_URL': f'{srv.url}/v1', 'OPENAI_API_KEY': 'bench-dummy-key'}


WAIT_WARM = ("import threading\n"
             "for _t in threading.enumerate():\n"
             "    if _t.name.startswith('boopiter-warm'): _t.join()")


def litellm_first_prompt(srv, tmp, runs=3):
    """The first prompt of a kernel that names a cloud id, once the background warm-up has ended (litellm and what its
    first request loads); with litellm only imported, as the warm-up did before; and with no warm-up at all (the prompt
    imports litellm itself). Also how long the warm-up takes after `%load_ext`."""
    imported = 'from boopiter_ext.models.litellm_client import import_litellm as _i; _i(); del _i'
    kinds = dict(warm=(True, ''), imported=(False, imported), cold=(False, ''))   # (warm_up, a cell after loading)
    out, warming = {k: [] for k in kinds}, []
    for _ in range(runs):
        for kind,(warm, after) in kinds.items():
            with KernelSession(tmp, env=cloud_env(srv)) as k:
                k.run(f'%config BoopMagics.warm_up = {warm}')           # before loading: the warm-up starts at load
                k.run(f'%config BoopMagics.model = "openai/{MODEL}"')   # a cloud id named: the warm-up is for it
                t = time.monotonic()
                k.run('%load_ext boopiter_ext')
                if after: k.run(after, timeout=300)
                k.run(WAIT_WARM, timeout=300)
                if kind == 'warm': warming.append(time.monotonic() - t)
                assert k.value("'litellm' in __import__('sys').modules") == str(kind != 'cold')
                srv.script('short answer')
                out[kind].append(wall(k, f'%%prompt -m openai/{MODEL}\nhi')[0])
    med = {k: statistics.median(v) for k,v in out.items()}
    print(f'4. litellm route (a cloud id named), first prompt (median of {runs} fresh kernels): {med["warm"]*1000:.0f} ms '
          f'after the background warm-up ({statistics.median(warming):.1f} s after `%load_ext`), '
          f'{med["imported"]*1000:.0f} ms with litellm only imported (the warm-up before), {med["cold"]*1000:.0f} ms '
          f'with no warm-up = {med["warm"] / med["cold"]:.2f}x   target < 1 s: {"ok" if med["warm"] < 1 else "MISSED"}')


def main(chunks=20000, runs=15):
    import tempfile
    tmp = tempfile.mkdtemp(prefix='boopiter-bench-')
    with OllamaTestServer() as srv, KernelSession(tmp, env={'OLLAMA_HOST': srv.host}) as k:
        k.run('%load_ext boopiter_ext')
        ollama_route(srv, k, int(chunks))
        first_token(srv, k, int(runs))
        k.run(f'%config BoopMagics.api_base = "{srv.url}/v1"')
        sse_route(srv, k, int(chunks), 'OpenAI-compatible route (direct SSE)', 0.05)
    with OllamaTestServer() as srv, KernelSession(tmp, env=cloud_env(srv)) as k:
        k.run('%load_ext boopiter_ext')
        sse_route(srv, k, int(chunks), 'litellm route (a cloud id)', 0.2)
        litellm_first_prompt(srv, tmp)


def litellm_only(runs=3):
    "Part 4 alone (`python bench/streaming.py --litellm-only [runs]`)."
    import tempfile
    with OllamaTestServer() as srv: litellm_first_prompt(srv, tempfile.mkdtemp(prefix='boopiter-bench-'), int(runs))


if __name__ == '__main__':
    if sys.argv[1:2] == ['--litellm-only']: litellm_only(*sys.argv[2:])
    else: main(*sys.argv[1:])
