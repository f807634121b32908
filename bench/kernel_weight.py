"""What boopiter weighs in a kernel that only asks Ollama: memory and CPU after one prompt, in fresh real kernels.

    python bench/kernel_weight.py [runs]

Each case starts a fresh kernel, loads what it loads, waits for its background work to end (the warm-up thread), asks
the test server one Ollama prompt (`%%prompt -m qwen3:1.7b`), and reads the kernel's resident memory (VmRSS) and the CPU
it has used since it started (user + system, /proc/PID/stat), then times its shutdown. Medians over `runs` (default
3), each case as a ratio to the bare kernel measured in the same run:

- bare kernel: ipykernel, no boopiter (the baseline);
- boopiter, Ollama only: `%load_ext boopiter_ext` and the prompt (litellm is never imported);
- boopiter, litellm as loading used to import it: the same, plus `import_litellm()`, which the warm-up did after every
  `%load_ext` with no model set, before litellm waited for a cloud id to be named (the "before" of issue 22);
- boopiter, a cloud id named: `%config BoopMagics.models = 'openai/gpt-4o-mini'`, so the warm-up imports litellm and
  loads its first request's code (a mock reply), as it does now when a notebook names one;
- boopiter, the same cloud id asked with no warm-up (for reference): `warm_up = False`, and the kernel asks the test
  server through litellm too (`%%prompt -m openai/gpt-4o-mini`, `OPENAI_BASE_URL`): what a first cloud request loads,
  which the warm-up loads ahead of it (a model litellm knows: its token counting comes with it).
"""

import statistics, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT/'tests')]
from ollama_server import DEFAULT_MODELS, OllamaTestServer   # noqa: E402
from kernels import KernelSession            # noqa: E402

WAIT_WARM = ("_m = get_ipython().magics_manager.registry['BoopMagics']\n"
             "import threading\n"
             "for _t in threading.enumerate():\n"
             "    if _t.name.startswith('boopiter-warm'): _t.join()")
CLOUD = 'openai/gpt-4o-mini'
GPT = dict(name='gpt-4o-mini', capabilities=['completion'], context_length=128000, family='gpt', parameter_size='?', size=1)
CASES = {
    'bare kernel': [],
    'boopiter, Ollama only': ['%load_ext boopiter_ext', WAIT_WARM],
    'boopiter + litellm as loading used to import it': [
        '%load_ext boopiter_ext', WAIT_WARM,
        'from boopiter_ext.models.litellm_client import import_litellm as _i; _i(); del _i'],
    'boopiter, a cloud id named': [f"%config BoopMagics.models = '{CLOUD}'", '%load_ext boopiter_ext', WAIT_WARM],
    'boopiter, the cloud id asked, no warm-up': ['%config BoopMagics.warm_up = False', '%load_ext boopiter_ext', 'CLOUD'],
}


def proc(pid)->tuple:
    "(resident MB, CPU seconds used so far) of process `pid`."
    rss = next(int(l.split()[1]) for l in Path(f'/proc/{pid}/status').read_text().splitlines() if l.startswith('VmRSS:'))
    fields = Path(f'/proc/{pid}/stat').read_text().rpartition(')')[2].split()
    import os
    return rss / 1024, (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def case(srv, tmp, cells)->tuple:
    "(MB, CPU s, litellm imported, shutdown s) of a fresh kernel after `cells` and one Ollama prompt."
    k = KernelSession(tmp, env={'OLLAMA_HOST': srv.host, 'OPENAI_BASE_URL': f'{srv.url}/v1', 'OPENAI_API_KEY': 'bench'})
    try:
        for c in cells:
            if c == 'CLOUD': srv.script('A cloud reply.')   # the test server answers a cloud id, through litellm
            c = f'%%prompt -m {CLOUD}\nhi' if c == 'CLOUD' else c
            assert k.run(c, timeout=300).status == 'ok', c
        srv.script('Because `total` is the sum of all the prices.')
        prompt = '%%prompt -m qwen3:1.7b\nhi' if cells else "import requests; requests.post('%s/api/chat', json={})" % srv.url
        assert k.run(prompt, timeout=120).status == 'ok'
        litellm = k.value("'litellm' in __import__('sys').modules") == 'True'
        time.sleep(0.5)
        mb, cpu = proc(k.km.provisioner.pid)
    finally:
        t = time.monotonic()
        k.shutdown()
        down = time.monotonic() - t
    return mb, cpu, litellm, down


def main(runs=3):
    import tempfile
    tmp = Path(tempfile.mkdtemp(prefix='boopiter-weight-'))
    with OllamaTestServer(models=DEFAULT_MODELS + [GPT]) as srv:   # it answers `openai/gpt-4o-mini` on its /v1 too
        got = {name: [case(srv, tmp, cells) for _ in range(int(runs))] for name,cells in CASES.items()}
    med = {name: [statistics.median(r[i] for r in rs) for i in (0, 1, 3)] + [rs[0][2]] for name,rs in got.items()}
    base_mb, base_cpu, base_down, _ = med['bare kernel']
    print(f'Kernel after one Ollama prompt (test server), medians of {runs} fresh kernels; ratios to the bare kernel:')
    for name,(mb, cpu, down, litellm) in med.items():
        print(f'  {name:<48} {mb:6.0f} MB ({mb / base_mb:4.2f}x)  CPU {cpu:5.2f} s ({cpu / base_cpu:4.2f}x)  '
              f'shutdown {down:4.2f} s  litellm {"imported" if litellm else "not imported"}')
    now, before = med['boopiter, Ollama only'], med['boopiter + litellm as loading used to import it']
    print(f'litellm no longer imported for Ollama: {before[0] - now[0]:.0f} MB and {before[1] - now[1]:.2f} s of CPU less '
          f'per kernel ({now[0] / before[0]:.2f}x the memory)')


if __name__ == '__main__': main(*sys.argv[1:])
