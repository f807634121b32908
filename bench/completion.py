"""Ghost text: what boopiter's path adds to a completion, against a raw request in the same run.

    python bench/completion.py [runs]

1. Against the Ollama-protocol test server with a fill-in-the-middle model (its reply at once, so only overheads are
   measured): `Completer.complete` (the request built from the cells above, one thread per request, the answer
   trimmed) against one raw streamed `requests` POST of the same body to /api/generate, 100 of each, alternated.
   Target: boopiter's extra time per completion under 150 ms (what the user waits beyond the model), and the ratio.
2. The embedded model (SmolLM2-135M, llama.cpp), warm: a completion of a short cell. Target: under 1 s.
Medians over `runs` runs (default 5).
"""

import json, statistics, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT/'tests')]
from ollama_server import CODER, OllamaTestServer, normalize_model   # noqa: E402
from boopiter_ext.core.completion import Completer   # noqa: E402
from boopiter_ext.models.ollama import OllamaClient   # noqa: E402

N = 100
ABOVE = ['import math\n\nradius = 2.5', 'def area(r):\n    return math.pi * r ** 2']
PREFIX, SUFFIX = 'def circumference(r):\n    return ', '\n\nprint(circumference(radius))'


def test_server(runs):
    import requests
    with OllamaTestServer() as srv:
        srv.models.append(normalize_model(CODER))
        srv.responder = lambda body: '2 * math.pi * r'
        client = OllamaClient(srv.host)
        c = Completer(lambda model: client)
        body = dict(model=CODER['name'], prompt='\n\n'.join(ABOVE) + '\n\n' + PREFIX, suffix=SUFFIX, stream=True,
                    options=dict(num_predict=48, temperature=0))
        raw = requests.Session()
        assert c.complete(CODER['name'], PREFIX, SUFFIX, ABOVE)['text'] == '2 * math.pi * r'
        ours, base = [], []
        for _ in range(runs):
            a = b = 0.0
            for _ in range(N):
                t = time.perf_counter()
                c.complete(CODER['name'], PREFIX, SUFFIX, ABOVE)
                a += time.perf_counter() - t
                t = time.perf_counter()
                with raw.post(srv.url + '/api/generate', json=body, stream=True) as r:
                    ''.join(json.loads(line).get('response', '') for line in r.iter_lines() if line)
                b += time.perf_counter() - t
            ours.append(a / N)
            base.append(b / N)
        c.close()
    return ours, base


def embedded(runs):
    from boopiter_ext.models.local import LocalModel
    m = LocalModel()
    if not m.available: return None
    c = Completer(lambda model: None, local=m)
    c.complete('local/smollm2-135m', 'def add(a, b):\n    return', '')   # warm: started, weights read
    took = []
    for _ in range(runs):
        got = c.complete('local/smollm2-135m', 'def add(a, b):\n    return', '')
        took.append(got['ms'] / 1000)
    c.close()
    m.stop()
    return took


def main(runs=5):
    med = statistics.median
    ours, base = test_server(runs)
    print(f'test server: Completer {med(ours) * 1e3:.2f} ms, raw request {med(base) * 1e3:.2f} ms: boopiter adds '
          f'{(med(ours) - med(base)) * 1e3:.2f} ms a completion ({med(ours) / med(base):.2f}x; target < 150 ms)')
    if (took := embedded(runs)) is None: print('embedded model: not installed')
    else: print(f'embedded model, warm: a short cell completed in {med(took) * 1e3:.0f} ms (median of {runs}; target < 1 s)')


if __name__ == '__main__': main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
