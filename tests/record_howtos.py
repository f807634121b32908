"""Record the cassettes that let every how-to run without Ollama: `boopiter-run nbs/NN_name.ipynb --replay`.

    .venv/bin/python tests/record_howtos.py            # every how-to that asks a model server
    .venv/bin/python tests/record_howtos.py 06 11      # some of them

Each how-to runs with `boopiter-run NB --record` (the project's own recorder) in a scratch copy of its folder, with
this repository's settings.ini and no user settings, against the Ollama-protocol test server (tests/ollama_server.py)
scripted with replies written for that how-to below. The cassette is read back with `replay.Cassette` (it must load
without a warning and hold a turn for every reply the run showed) and written next to the notebook as
`nbs/NN_name.cassette.json`, where `--replay` finds it. The notebooks say, in a Markdown cell, that their saved
answers come from this scripted server. Re-record after changing a how-to's cells or its replies here, or when the
replay test says a conversation changed (a cell's output did: a new matplotlib or Pillow can draw a figure anew).
"""

import json, os, shutil, subprocess, sys, tempfile
from pathlib import Path

HERE = Path(__file__).parent
ROOT, NBS = HERE.parent, HERE.parent/'nbs'
sys.path[:0] = [str(HERE), str(ROOT)]
from ollama_server import DEFAULT_REPLY, OllamaTestServer   # noqa: E402

def _code(src): return f'```python\n{src}\n```'

PCT = '17.5% of 2340 is 409.5 (2340 × 0.175).'
# how-to: (the models Ollama holds in memory at the start, [(reply, thinking), ...] in the order the run asks)
HOWTOS = {
    '02_models_and_settings': ((), [
        ('7: its only divisors are 1 and 7.', 'Any prime will do. 7 is small and has no divisor but 1 and itself.')]),
    '03_brain_menu': ({'gemma3:4b'}, [
        ('I am SmolLM2, a small language model with 135 million parameters, served by Ollama.', None),
        ('I am Qwen3 1.7B, a small model of the Qwen family that can think before it answers.', None),
        ('No: 1001 = 7 × 11 × 13.', 'Try small primes. 1001 / 7 = 143, and 143 = 11 × 13. So 1001 is not prime.')]),
    '06_images_and_reasoning': ((), [
        ('One sample, near x = 6, jumps about 3 above the sine curve: a single spike where the rest of the curve is '
         'smooth.', None),
        ('I cannot see the figure, but the code adds 3 to `y[120]`, so one sample near x = 6 should stand far above '
         'the sine curve.', None),
        ('A bad sample, not a plotting bug: `y[120] += 3` adds 3 to one value before it is plotted.',
         'The spike is at index 120 of 200 points over 0 to 10, so near x = 6. The line `y[120] += 3` changes the '
         'data itself; matplotlib draws what it is given.'),
        ('A sine curve from 0 to 10 with one sharp spike near x = 6.', None)]),
    '07_reproducible': ((), [
        ('It adds the three prices, 3.50 + 4.25 + 12.00, and shows `3 items, 19.75 in total`. The total is right.',
         None),
        (PCT, None), (PCT, None), (PCT, None),   # recording asks every prompt, the copy below too; `--fresh` asks again
        # the scorecard measures its models every time it runs, and records no turn: qwen3, then smollm2
        (_code("calculator('2340 * 0.175')"), None), ('409.5.', None),
        ('I answer questions about your notebook.', None),
        ('It is about 400.', None), (_code("create_ticket('Say hello back')"), None), ('Hello! I can help.', None)]),
    # `lab` is the test server's Ollama API, `gateway` its OpenAI-compatible /v1: the recording stands both up
    '10_teams': ((), [
        ('Teams share GPU servers because one large GPU kept busy by many people costs less than a GPU on every '
         'laptop, and it runs models no laptop could hold.', None),
        ('A gateway gives everyone one address and one key, and sends each request to a server that can answer it, so '
         'servers can be added or taken away without anyone changing their settings.', None)]),
    '11_first_hour': ((), [
        ('`total` is 19.75: the sum of 3.50, 4.25 and 12.00. Your next step could be `round(total * 1.2, 2)` for the '
         'price with 20% tax.', None)]),
    # the notes server the how-to writes and declares: two guarded calls, then the answer
    '13_mcp_tools': ((), [
        (_code("search_notes('kettle')"), None), (_code("read_note('kettle')"), None),
        ('Descale the K-200 kettle every 4 weeks with citric acid, and your shopping note has citric acid on it.',
         None)]),
    # asked from code, several at once: each reply is chosen by what its question says, not by its turn
    '12_ask_from_code': ((), lambda body: _answer_by_words(body, {
        'tomato': 'Fruit.',
        'kettle': '{"sentiment": "mixed", "product": "kettle"}',
        'invoice': '{"team": "billing"}', 'crashes': '{"team": "bugs"}', 'password': '{"team": "account"}',
        'Alice': '{"name": "Alice Martin", "email": "alice@example.com", "since": 2019}',
        'Bob': '{"name": "Bob Okafor", "email": "bob@example.com", "since": 2021}',
        'prime': '13: its only divisors are 1 and 13.'})),
}


def _answer_by_words(body, answers:dict)->str:
    "The answer of the first key the last message names (the server's default reply, which fails a recording, if none)."
    last = body['messages'][-1]['content']
    last = last if isinstance(last, str) else ' '.join(p.get('text', '') for p in last if isinstance(p, dict))
    return next((a for k,a in answers.items() if k in last), DEFAULT_REPLY)


def _env(host, scratch):
    "The environment of a recording run: the test server as Ollama, and nothing of the user's or of another run."
    drop = ('BOOPITER_', 'OPENAI_', 'JPY_', 'OLLAMA_HOST')
    env = {k: v for k,v in os.environ.items() if not k.startswith(drop)}
    return dict(env, OLLAMA_HOST=host, XDG_CONFIG_HOME=str(scratch/'xdg'), IPYTHONDIR=str(scratch/'ipython'),
                BOOPITER_DEADDROP_DIR=str(scratch/'dead_drop'))


def _replies(path):
    "The boopiter reply outputs of an executed notebook."
    import nbformat
    return [o for c in nbformat.read(path, as_version=4).cells for o in c.get('outputs', [])
            if o.get('metadata', {}).get('boopiter', {}).get('reply')]


def record(name:str)->Path:
    "Record `nbs/<name>.ipynb` against the scripted test server; return the cassette written next to it."
    from boopiter_ext.core.replay import Cassette
    loaded, script = HOWTOS[name]
    with tempfile.TemporaryDirectory() as d, OllamaTestServer() as srv:
        scratch = Path(d)
        work = scratch/'nbs'
        work.mkdir()
        shutil.copy(ROOT/'settings.ini', scratch/'settings.ini')   # found walking up from the notebook, as in nbs/
        shutil.copy(NBS/f'{name}.ipynb', work)
        srv.loaded = loaded
        if callable(script): srv.responder = script   # asked at once, in any order
        else:
            for reply, thinking in script: srv.script(reply, thinking=thinking)
        cmd = [str(Path(sys.executable).with_name('boopiter-run')), str(work/f'{name}.ipynb'), '--record',
               '-o', str(scratch/'out.ipynb')]
        res = subprocess.run(cmd, env=_env(srv.host, scratch), timeout=900)
        if res.returncode: raise SystemExit(f'{name}: the recording run failed (its output is above)')
        # every scripted reply is asked for, and nothing more (the server's default reply): else the how-to changed
        if srv._queue: raise SystemExit(f'{name}: {len(srv._queue)} scripted replies never asked for; update HOWTOS')
        tape = Cassette(work/f'{name}.cassette.json')
        if not len(tape) or tape.warnings:
            raise SystemExit(f'{name}: the cassette is empty or reads back with warnings: {tape.warnings}')
        if any(t['reply'].get('answer') == DEFAULT_REPLY for t in tape.turns.values()):
            raise SystemExit(f'{name}: a prompt got the test server\'s default reply; script one for it in HOWTOS')
        done = [md for o in _replies(scratch/'out.ipynb') if (md := o['metadata']['boopiter'])['status'] == 'done']
        missing = [md.get('digest') for md in done if md.get('digest') not in tape.turns]
        if missing: raise SystemExit(f'{name}: replies with no turn in the cassette: {missing}')
        dest = NBS/f'{name}.cassette.json'
        shutil.copyfile(work/f'{name}.cassette.json', dest)   # not its 0600 mode: a file to commit
    return dest


def main(argv=None):
    wanted = argv if argv is not None else sys.argv[1:]
    names = [n for n in HOWTOS if not wanted or any(n.startswith(w) for w in wanted)]
    if wanted and not names: raise SystemExit(f'no how-to matches {wanted}; they are: {", ".join(HOWTOS)}')
    for name in names:
        path = record(name)
        turns = json.loads(path.read_text())['turns']
        print(f'\n== {path.relative_to(ROOT)}: {len(turns)} turns', flush=True)


if __name__ == '__main__': main()
