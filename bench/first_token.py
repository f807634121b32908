"""The first answer comes fast: time to the first token of a notebook's first prompt on the embedded model.

    python bench/first_token.py [runs] [--read SECONDS] [-v]

On a CPU the wait before the embedded model's first token is reading the prompt (the system prompt, the tools and the
notebook: about a thousand tokens for the tour), not starting the engine. `readiness.py` does that work while the user
reads. The session, in a fresh kernel each time (a fresh engine, its cache empty) with no Ollama in reach: the tour
(nbs/00_tour.ipynb, copied with the repository's settings.ini, run as JupyterLab runs it: each code cell with its id,
the notebook known) up to its first prompt, then that prompt, then the same prompt asked again (`--fresh`: asked, not
reused; the whole request is in the engine's cache: the warm baseline, measured in the same kernel).

Four readers, each in its own kernels:

- ready: reads each cell's output for `read` seconds (default 3), and before the prompt as long as the warm-up still
  needs (reported: "reading needed"), then runs the tour's prompt as it is written: the warm-up read its question too;
- typed: as ready, with a question of its own (the tour's, reworded): the prompt reads the question;
- quick: `read` seconds after every cell, the prompt included, whatever the warm-up has done by then;
- off: as quick, with readiness stopped (how it was: the prompt starts the engine and reads all of its prompt).

TTFT is measured as the user sees it: from sending the prompt cell to the first display of reply text (the reply's own
`ttft_s` is printed too). Every figure is a median over `runs` runs (default 3). Target: ready first / warm <= 1.5.
"""

import json, shutil, statistics, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT/'tests')]
from ollama_server import free_port   # noqa: E402
from kernels import KernelSession     # noqa: E402

M = "get_ipython().magics_manager.registry['BoopMagics']"
START = (f"_m = {M}\n"   # readiness as `%load_ext` starts it (started here if this version's `%load_ext` does not)
         "if getattr(_m, 'readiness', None) is None:\n"
         "    from boopiter_ext.core.readiness import Readiness\n"
         "    _m.readiness = Readiness(_m.assistant, get_ipython())\n"
         "    _m.readiness.start()")
STOP = f"_m = {M}\nif getattr(_m, 'readiness', None) is not None: _m.readiness.stop()"


def quietly(k, code):
    "Run `code` as no cell: silent, so no cell event fires (which would cancel a warm-up) and nothing is recorded."
    msg_id = k.kc.execute(code, silent=True, store_history=False)
    while (reply := k.kc.get_shell_msg(timeout=180))['parent_header'].get('msg_id') != msg_id: pass
    assert reply['content']['status'] == 'ok', reply['content']


def run_cell(k, cell):
    "Run a notebook cell as JupyterLab does (its id in the request's metadata); (seconds to the first reply text, result)."
    content = dict(code=cell['source'], silent=False, store_history=True, user_expressions={}, allow_stdin=False,
                   stop_on_error=True)
    msg = k.kc.session.msg('execute_request', content, metadata=dict(cellId=cell['id']))
    first = []
    def seen(kind, c):
        if not first and kind.endswith('display_data') and c.get('data', {}).get('text/plain'):
            first.append(time.monotonic())
    t = time.monotonic()
    k.kc.shell_channel.send(msg)
    res = k.collect(msg['header']['msg_id'], timeout=300, on_message=seen)
    return (first[0] - t if first else None), res


def session(tmp:Path, reader:str, read:float)->dict:
    "One kernel: the tour up to its first prompt, read as `reader` reads; the TTFTs of that prompt, cold and warm."
    shutil.copy(ROOT/'nbs'/'00_tour.ipynb', tmp/'tour.ipynb')
    shutil.copy(ROOT/'settings.ini', tmp/'settings.ini')
    cells = [c for c in json.loads((tmp/'tour.ipynb').read_text())['cells'] if c['cell_type'] == 'code']
    for c in cells: c['source'] = ''.join(c['source'])
    i = next(n for n,c in enumerate(cells) if c['source'].startswith('%%prompt'))
    out = {}
    env = {'OLLAMA_HOST': f'127.0.0.1:{free_port()}', 'BOOPITER_NOTEBOOK': str(tmp/'tour.ipynb')}
    with KernelSession(tmp, env=env) as k:
        for n,c in enumerate(cells[:i]):
            assert run_cell(k, c)[1].status == 'ok'
            if n == 0: quietly(k, START if reader != 'off' else STOP)
            time.sleep(read)
        if reader == 'typed': cells[i] = dict(cells[i], source=cells[i]['source'].replace('Why does', 'Why do you think'))
        if reader in ('ready', 'typed'):
            t = time.monotonic()
            quietly(k, '_m.readiness.wait(120)')
            out['reading_needed'] = read + time.monotonic() - t
        out['first'], res = run_cell(k, cells[i])
        md = res.reply['metadata']['boopiter']
        assert md['status'] == 'done', md
        out.update(first_md=md['ttft_s'], prompt=md['prompt_tokens'], cached=md.get('cached_tokens', 0))
        again = dict(cells[i], source=cells[i]['source'].replace('%%prompt', '%%prompt --fresh', 1))
        out['warm'], res = run_cell(k, again)
        out['warm_md'] = res.reply['metadata']['boopiter']['ttft_s']
    return out


def main(*argv):
    import argparse
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('runs', type=int, nargs='?', default=3)
    p.add_argument('--read', type=float, default=3.0, help='seconds of reading after each cell (default 3)')
    p.add_argument('-v', action='store_true', help='print every run')
    a = p.parse_args(argv)
    runs, read = a.runs, a.read
    rows = {r: [] for r in ('ready', 'typed', 'quick', 'off')}
    for n in range(runs):
        for reader in rows:
            with tempfile.TemporaryDirectory() as tmp: rows[reader].append(session(Path(tmp), reader, read))
            f = rows[reader][-1]
            print(f'run {n + 1} {reader:5}: first {f["first"]:6.2f} s, warm {f["warm"]:5.2f} s; prompt {f["prompt"]} '
                  f'tokens, {f["cached"]} cached' + (f'; reading needed {f["reading_needed"]:.1f} s'
                                                      if 'reading_needed' in f else ''), flush=True)
    med = {r: {k: statistics.median(f[k] for f in fs) for k in fs[0]} for r,fs in rows.items()}
    print(f'\nFirst token of the tour\'s first prompt, embedded model, no Ollama (medians of {runs} fresh kernels; '
          f'{read:g} s of reading per cell):')
    print('reader  first TTFT  (reply ttft_s)  warm TTFT  first/warm  prompt  cached')
    for r,m in med.items():
        print(f'{r:6}  {m["first"]:8.2f} s  ({m["first_md"]:8.2f} s)  {m["warm"]:7.2f} s  {m["first"] / m["warm"]:9.1f}x  '
              f'{m["prompt"]:6.0f}  {m["cached"]:6.0f}')
    ratio = med['ready']['first'] / med['ready']['warm']
    print(f'1. ready: first / warm TTFT {ratio:.2f} ({med["ready"]["first"]:.2f} s / {med["ready"]["warm"]:.2f} s)   '
          f'target <= 1.5: {"ok" if ratio <= 1.5 else "MISSED"}; reading needed after the tour\'s first cells: '
          f'{med["ready"]["reading_needed"]:.1f} s (median)')
    typed = med['typed']['first'] / med['typed']['warm']
    print(f'   typed: first / warm TTFT {typed:.2f} ({med["typed"]["first"]:.2f} s / {med["typed"]["warm"]:.2f} s): the '
          f'question read at the prompt ({med["typed"]["prompt"] - med["typed"]["cached"]:.0f} tokens)')
    print(f'2. quick reader ({read:g} s a cell): first TTFT {med["quick"]["first"]:.2f} s with readiness, '
          f'{med["off"]["first"]:.2f} s without ({med["off"]["first"] / med["quick"]["first"]:.1f}x faster)')
    if a.v: print('every run: ' + json.dumps(rows))


if __name__ == '__main__': main(*sys.argv[1:])
