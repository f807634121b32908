"""What the brain menu's model listing costs against asking Ollama one model at a time.

    python bench/listing.py [models] [show_ms] [runs]

Against the Ollama-protocol test server with `show_ms` of latency on every `/api/show` (real Ollama
measured ~86 ms per `/api/show`): the serial baseline (one `/api/show` after another, as a naive
client would), a cold listing (`OllamaClient.models`: probes on a thread pool) and a warm one (cached
by digest: a single `/api/tags`). Medians over the runs.
"""

import statistics, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parents[1]/'tests'))
from ollama_server import OllamaTestServer
from boopiter_ext.models.ollama import OllamaClient


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main(n=40, show_ms=50, runs=5):
    models = [dict(name=f'model-{i:02d}:1b') for i in range(n)]
    with OllamaTestServer(models, show_delay=show_ms / 1000) as srv:
        serial, cold, warm = [], [], []
        for _ in range(runs):
            with OllamaClient(srv.host) as c: serial.append(timed(lambda: [c.show(m['name']) for m in models]))
            with OllamaClient(srv.host) as c:
                cold.append(timed(c.models))
                warm.append(timed(c.models))
    med = {k: statistics.median(v) * 1000 for k,v in dict(serial=serial, cold=cold, warm=warm).items()}
    print(f'{n} models, {show_ms} ms per /api/show, median of {runs}')
    print(f'serial /api/show baseline  {med["serial"]:8.1f} ms')
    print(f'cold listing               {med["cold"]:8.1f} ms   {med["cold"] / med["serial"]:.2f}x the serial time')
    print(f'warm listing               {med["warm"]:8.1f} ms   {med["warm"] / med["serial"]:.3f}x (one /api/tags)')


if __name__ == '__main__': main(*(int(a) for a in sys.argv[1:]))
