"""Per-chunk cost of `OpenAIClient`'s event-stream reader against a raw `requests` SSE line reader, in one process.

    python bench/openai_sse.py [chunks] [runs]

The test server runs in its own process (`tests/ollama_server.py --chunks N`), so what is measured is the reading
side. Both readers stream the same `/v1/chat/completions` reply of `chunks` pieces over a keep-alive `requests`
session with `iter_lines(chunk_size=8192)`; the raw one only splits lines, skips non-data lines and `[DONE]`, and
parses each chunk's JSON. The client adds what a real reply needs: event framing, type checks, usage, the events
themselves and the per-token deadline (`StallWatch`, whose thread is this process's too). Runs alternate, and each
figure is the median of `runs`.

The cost is this process's CPU time per chunk (`time.process_time`, every thread): wall time mostly measures how
fast the server writes, and on a busy machine how the two processes are scheduled, so it is shown but not judged.
Prints the cost of each, the ratio client / raw (target < 1.3), and for reference the raw reader with requests'
default `chunk_size` (512), which bench/streaming.py's raw reader uses.
"""

import json, statistics, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]
import requests                                      # noqa: E402
from boopiter_ext.context.messages import mk_msg              # noqa: E402
from boopiter_ext.models.openai_client import OpenAIClient   # noqa: E402

MODEL = 'qwen3:1.7b'
BODY = dict(model=MODEL, messages=[dict(role='user', content='go')], stream=True, stream_options=dict(include_usage=True))


def raw_sse(session, base, chunk_size=8192):
    "Content chunks counted by the simplest reader that still parses every chunk."
    n = 0
    with session.post(base + '/chat/completions', json=BODY, stream=True, timeout=(5, 60)) as r:
        for line in r.iter_lines(chunk_size=chunk_size):
            if not line.startswith(b'data: ') or line == b'data: [DONE]': continue
            d = json.loads(line[6:])
            n += bool(d['choices'] and d['choices'][0]['delta'].get('content'))
    return n


def client_sse(client, _):
    return sum(kind == 'content' for kind, _ in client.chat(MODEL, [mk_msg('go')]))


def timed(f, *args):
    "(CPU seconds of this process, wall seconds, result) of `f(*args)`."
    c, t = time.process_time(), time.perf_counter()
    n = f(*args)
    return time.process_time() - c, time.perf_counter() - t, n


def main(chunks=20000, runs=7):
    chunks, runs = int(chunks), int(runs)
    srv = subprocess.Popen([sys.executable, str(ROOT/'tests'/'ollama_server.py'), '--chunks', str(chunks)],
                           stdout=subprocess.PIPE, text=True)
    try:
        base = srv.stdout.readline().strip() + '/v1'
        session, client = requests.Session(), OpenAIClient(base, api_key='none', timeout=60)
        for f, a in ((raw_sse, session), (client_sse, client)): timed(f, a, base)   # warm up: connections, imports
        cpu, wall = dict(raw=[], client=[], raw512=[]), dict(raw=[], client=[], raw512=[])
        for _ in range(runs):
            for name, f, args in (('raw', raw_sse, (session, base)), ('client', client_sse, (client, base)),
                                  ('raw512', raw_sse, (session, base, 512))):
                c, w, n = timed(f, *args)
                assert n == chunks, (name, n)
                cpu[name].append(c)
                wall[name].append(w)
        us = {k: statistics.median(v) / chunks * 1e6 for k, v in cpu.items()}
        ms = {k: statistics.median(v) * 1000 for k, v in wall.items()}
        ratio, wall_ratio = us['client'] / us['raw'], ms['client'] / ms['raw']
        print(f'OpenAI-compatible SSE, {chunks:,} chunks, median of {runs} (server in its own process):')
        print(f'   raw requests SSE reader     {us["raw"]:6.2f} us/chunk CPU   wall {ms["raw"]:7.1f} ms')
        print(f'   OpenAIClient.chat           {us["client"]:6.2f} us/chunk CPU   wall {ms["client"]:7.1f} ms   '
              f'= {ratio:.2f}x raw CPU ({wall_ratio:.2f}x wall)   target < 1.3: {"ok" if ratio < 1.3 else "MISSED"}')
        print(f'   raw reader, chunk_size=512  {us["raw512"]:6.2f} us/chunk CPU   wall {ms["raw512"]:7.1f} ms   '
              f'(reference: requests\' default)')
        client.close()
        session.close()
    finally:
        srv.terminate()
        srv.wait(5)
        srv.stdout.close()


if __name__ == '__main__': main(*sys.argv[1:])
