"""Prefix reuse: how much of each prompt the embedded model takes from its cache, over a session that grows a notebook.

    python bench/prefix.py [runs] [prompts] [-v]

On a CPU, processing the prompt dominates the time to the first token. Each prompt's request extends the previous
one (the same system prompt and tools, the same text for every earlier cell, earlier prompts as user/assistant
turns carrying exactly what the model generated), so llama.cpp reuses its KV cache and processes only what is new.

The session, in a real kernel with `%%prompt -m local/smollm2-135m` (SmolLM2-135M in xllamacpp, n_ctx 4096, one
slot; `max_tokens = 64` and `clip = 1200` keep ten prompts inside its window): ten prompts, and before each the cells
a user would run: code with printed output, a result, an error, a Markdown note (sent by a stand-in for the JupyterLab
extension, as it sends the notebook before each prompt), a long output (clipped), an image (a placeholder for this
text-only model), a hidden and a pinned cell, a $`variable` reference. Nothing is re-run: a re-run cell rightly
changes the text. The embedded model is started before the first prompt, so no prompt pays for loading it.

Per prompt, from the reply's metadata (llama.cpp's own counts, from the last event of its stream):

- prompt: the request's prompt tokens, as the server tokenised the chat template;
- cached: tokens taken from its cache (`timings.cache_n`); evaluated: tokens it processed (`timings.prompt_n`);
  cached + evaluated = prompt;
- new: prompt minus the previous request's prompt and completion tokens: what this request adds after the tokens
  the previous one ended with. A reply that stopped by itself ends with its end-of-turn token `<|im_end|>` (one of
  its completion tokens), which the chat template writes after that turn too; a reply cut at `max_tokens` has none,
  so the template's `<|im_end|>` counts as new. Either way new is exact when the earlier turns come back token for
  token, as they did in every prompt measured (the answer kept is exactly the text generated, and SmolLM2 wrote
  nothing that re-tokenises differently). The server never evaluates the last token it sampled (generation stops
  there), so it cannot have it cached: the best case is evaluated = new + 1;
- ratio: evaluated / new (target <= 1.2 from the second prompt on);
- TTFT: time to first token, from the reply's metadata: from the kernel starting the request to the first token
  (target: the last prompt's <= 2x the first's).

A session is one run; it is run `runs` times (default 3), each in a fresh kernel (a fresh server, empty cache),
and every figure is the median over the runs at that prompt index (the model samples, so replies vary).
"""

import json, statistics, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT/'tests')]
from ollama_server import free_port   # noqa: E402
from kernels import KernelSession     # noqa: E402

MODEL = 'local/smollm2-135m'
ROUTER = "get_ipython().magics_manager.registry['BoopMagics'].router"
PNG = ('iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAF0lEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==')

# (code, tags) run before each prompt, then the prompt; as a user grows a notebook
SESSION = [
    ([('import math\nprimes = [n for n in range(2, 60) if all(n % d for d in range(2, math.isqrt(n) + 1))]\n'
       'print(primes)', ())],
     'What does the code above compute?'),
    ([('## Fruit prices\nPrices are in euros; orders over 100 euros get a 5% discount.', 'markdown'),
      ("prices = {'apple': 1.2, 'pear': 0.8, 'fig': 2.5}\nprices", ())],
     'Which fruit is the most expensive?'),
    ([("prices['kiwi']", ())],
     'Why does this cell fail, and how do I fix it?'),
    ([("for name, p in prices.items():\n    print(f'{name}: {p:.2f} EUR')", ())],
     'What is the total of $`prices`?'),
    ([("log = [f'fetched page {i} of the sales report' for i in range(1, 121)]\nprint('\\n'.join(log))", ())],
     'What did the loop print?'),
    ([('secret_plan = "not for the model"', ('boop-hide',)),
      ("order = {'apple': 30, 'fig': 12}\ncost = sum(prices[k] * n for k, n in order.items())\nprint(cost)",
       ('boop-pin',))],
     'Does this order get the discount?'),
    ([(f"from IPython.display import Image\nImage(data=__import__('base64').b64decode('{PNG}'))", ())],
     'What did the last cell show?'),
    ([('Next: compare the cost with last month (it was 70 euros).', 'markdown'),
      ('change = (cost - 70) / 70\nprint(f"{change:.1%}")', ())],
     'Is that a big change?'),
    ([("def discounted(total, rate=0.05):\n    return total * (1 - rate) if total > 100 else total\n"
       "print(discounted(cost), discounted(120))", ())],
     'Explain the function discounted in one sentence.'),
    ([("import statistics\nprint(statistics.mean(prices.values()), statistics.median(prices.values()))", ())],
     'Summarise what this notebook does.'),
]


def run_cell(k, code, cell_id, tags=()):
    "Run a cell as JupyterLab sends it: its id and tags in the request's metadata."
    content = dict(code=code, silent=False, store_history=True, user_expressions={}, allow_stdin=False, stop_on_error=True)
    msg = k.kc.session.msg('execute_request', content, metadata=dict(cellId=cell_id, tags=list(tags)))
    k.kc.shell_channel.send(msg)
    return k.collect(msg['header']['msg_id'], timeout=240)


class Frontend:
    "The JupyterLab extension's side of the channel: the notebook as it shows it, sent before each prompt runs."
    def __init__(self, k):
        import uuid
        self.k, self.comm_id, self.cells = k, uuid.uuid4().hex, []
        self._send('comm_open', dict(comm_id=self.comm_id, target_name='boopiter',
                                     data=dict(type='hello', version=1, binding=None, cells=[])))

    def _send(self, kind, content):
        msg = self.k.kc.session.msg(kind, content)
        self.k.kc.shell_channel.send(msg)
        self.k.collect(msg['header']['msg_id'], shell_reply=False)

    def add(self, cell_id, source, kind='code', tags=()):
        self.cells.append(dict(id=cell_id, cell_type=kind, source=source, tags=list(tags)))
        self._send('comm_msg', dict(comm_id=self.comm_id, data=dict(type='notebook', cells=self.cells)))


def session(tmp, prompts=len(SESSION), max_tokens=64, clip=1200)->list:
    "One session in a fresh kernel (a fresh embedded model, its cache empty): the metadata of each prompt's reply."
    rows = []
    with KernelSession(tmp, env={'OLLAMA_HOST': f'127.0.0.1:{free_port()}'}) as k:
        k.run('%load_ext boopiter_ext')
        k.run(f'%config BoopMagics.max_tokens = {max_tokens}')
        k.run(f'%config BoopMagics.clip = {clip}')
        start = k.kc.execute(f'{ROUTER}.local.ensure()', silent=True, store_history=False)   # not a cell of the notebook
        k.collect(start, timeout=180)   # the model is loaded before the first prompt: no prompt pays for it
        nb, n = Frontend(k), 0
        for cells, question in SESSION[:prompts]:
            for code, tags in cells:
                n += 1
                if tags == 'markdown': nb.add(f'c{n}', code, 'markdown')   # a note: it reaches the kernel as shown
                else:
                    nb.add(f'c{n}', code, tags=tags)
                    assert run_cell(k, code, f'c{n}', tags).status in ('ok', 'error')
            n += 1
            source = f'%%prompt -m {MODEL}\n{question}'
            nb.add(f'c{n}', source)
            res = run_cell(k, source, f'c{n}')
            md = (res.reply or {}).get('metadata', {}).get('boopiter', {})
            assert md.get('status') == 'done', (res.status, res.text, md)
            rows.append(md)
    return rows


def figures(rows)->list:
    "Per prompt: prompt, cached, evaluated, new since the previous request, evaluated / new, TTFT."
    out, prev = [], None
    for md in rows:
        prompt, cached, evaluated = md['prompt_tokens'], md.get('cached_tokens', 0), md.get('evaluated_tokens')
        if evaluated is None: evaluated = prompt - cached
        new = prompt if prev is None else prompt - prev['prompt_tokens'] - prev['completion_tokens']
        out.append(dict(prompt=prompt, cached=cached, evaluated=evaluated, new=new,
                        ratio=evaluated / new if new > 0 else float('inf'), ttft=md['ttft_s'],
                        completion=md['completion_tokens']))
        prev = md
    return out


def main(*args):
    import tempfile
    flags, args = {a for a in args if a.startswith('-')}, [a for a in args if not a.startswith('-')]
    runs, prompts = int(args[0]) if args else 3, int(args[1]) if len(args) > 1 else len(SESSION)
    sessions = []
    for r in range(runs):
        t = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp: sessions.append(figures(session(Path(tmp), prompts)))
        print(f'run {r + 1}: {time.monotonic() - t:.0f} s; ratios ' +
              ' '.join(f'{f["ratio"]:.2f}' for f in sessions[-1][1:]), flush=True)
    med = [{k: statistics.median(s[i][k] for s in sessions) for k in sessions[0][i]} for i in range(prompts)]
    print(f'\nPrefix reuse, embedded model, {prompts}-prompt session (medians of {runs} runs per prompt index):')
    print(' #  prompt  cached  evaluated   new  ratio   TTFT s  completion')
    for i, m in enumerate(med, 1):
        print(f'{i:2d}  {m["prompt"]:6.0f}  {m["cached"]:6.0f}  {m["evaluated"]:9.0f}  {m["new"]:4.0f}  '
              f'{"    -" if i == 1 else format(m["ratio"], "5.2f")}  {m["ttft"]:7.3f}  {m["completion"]:10.0f}')
    worst = max(m['ratio'] for m in med[1:])
    ttft = med[-1]['ttft'] / med[0]['ttft']
    print(f'1. evaluated / new, prompts 2-{prompts}: worst median {worst:.2f}, each run\'s worst '
          f'{", ".join(format(max(f["ratio"] for f in s[1:]), ".2f") for s in sessions)}   target <= 1.2: '
          f'{"ok" if worst <= 1.2 else "MISSED"}')
    print(f'2. TTFT of prompt {prompts} / prompt 1: {ttft:.2f} ({med[-1]["ttft"]:.3f} s / {med[0]["ttft"]:.3f} s)   '
          f'target <= 2: {"ok" if ttft <= 2 else "MISSED"}')
    cold = med[0]['ttft'] * med[-1]['prompt'] / med[0]['prompt']   # prompt 1 had nothing cached: its rate, scaled
    print(f'   for scale: processing prompt {prompts}\'s {med[-1]["prompt"]:,.0f} tokens at prompt 1\'s rate would take '
          f'~{cold:.1f} s ({cold / med[0]["ttft"]:.1f}x prompt 1)')
    if '-v' in flags: print('every run: ' + json.dumps(sessions))


if __name__ == '__main__': main(*sys.argv[1:])
