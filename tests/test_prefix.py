"""Prefix reuse: each prompt's request extends the previous one, so a local server's cache serves all but what is new.

In process, the assistant's own pipeline builds the messages of a growing notebook's prompts (nothing is sent); in a
real kernel, the embedded model (llama.cpp) says how many prompt tokens it took from its cache (`bench/prefix.py`
measures a longer session).
"""

import pytest
from ollama_server import free_port
from kernels import KernelSession
from boopiter_ext.core.assistant import Assistant
from boopiter_ext.context.build import Cell
from boopiter_ext.render.reply import reply_bundle
from boopiter_ext.models.stream import Reply

MODEL = 'local/smollm2-135m'


class Ran:
    "What the kernel recorded: the cells run, in order, and the prompt cell running now."
    def __init__(self): self.done, self.current = [], None
    def cells(self): return list(self.done)


def double(x:int)->int:
    "Twice `x`"
    return 2 * x


@pytest.fixture
def assistant():
    a = Assistant(Ran(), dict(prices={'fig': 2.5, 'pear': 0.8}, double=double))
    yield a
    a.close()


def ask(a, question, answer, **options):
    "The messages the prompt cell `question` sends (built, not sent); then its reply is recorded as the kernel does."
    ran = a.cells
    ran.current = Cell(f'%%prompt\n{question}', 'prompt', cell_id=f'p{len(ran.done)}', exec_count=len(ran.done) + 1)
    p = a.preview(question, a.settings(dict(model=MODEL, **options)))
    r = Reply(MODEL)
    r.add_content(answer)
    r.finish('done')
    data, md = reply_bundle(r, p['route'], p['ledger'])
    ran.current.outputs.append(dict(output_type='display_data', data=data, metadata=md))
    ran.done.append(ran.current)
    ran.current = None
    return p['messages']


def run(a, source, *outputs, tags=()):
    ran = a.cells
    ran.done.append(Cell(source, 'code', list(outputs), cell_id=f'c{len(ran.done)}', exec_count=len(ran.done) + 1,
                         tags=tags))


def stream(text): return dict(output_type='stream', name='stdout', text=text)


def test_the_assistant_sends_each_prompt_as_an_extension_of_the_last(assistant):
    a = assistant
    run(a, 'print(sorted([3, 1, 2]))', stream('[1, 2, 3]\n'))
    sent = [ask(a, 'What does this print?', 'It prints the sorted list.\n')]
    run(a, "prices['kiwi']", dict(output_type='error', ename='KeyError', evalue="'kiwi'", traceback=["KeyError: 'kiwi'"]))
    sent.append(ask(a, 'Why does it fail?', 'There is no kiwi.'))
    run(a, 'log()', stream('fetched a page\n' * 400))   # clipped
    sent.append(ask(a, 'Which fruit in $`prices` is dearest?', 'The fig.'))
    run(a, 'secret = 1', tags=('boop-hide',))
    run(a, 'cost = 30', tags=('boop-pin',))
    sent.append(ask(a, 'Is that a lot?', '  No.  '))
    run(a, 'x = 1')
    sent.append(ask(a, 'Anything else?', 'No.'))
    for before, after in zip(sent, sent[1:]):
        assert after[0]['role'] == 'system' and after[0] == before[0]   # the same system prompt and tools
        assert after[:len(before)] == before                            # and every earlier message unchanged
    assert "`prices` = dict, len 2: {'fig': 2.5, 'pear': 0.8}" in sent[-1][5]['content']
    # each reply goes back exactly as the model wrote it: its tokens are in the model's cache as they were generated
    assert [m['content'] for m in sent[-1] if m['role'] == 'assistant'] == ['It prints the sorted list.\n',
                                                                           'There is no kiwi.', 'The fig.', '  No.  ']


def test_a_prompts_own_tool_leaves_the_system_prompt_as_it_was(assistant):
    a = assistant
    run(a, 'x = 2')
    first = ask(a, 'What is x?', 'Two.')
    second = ask(a, 'Use &`double` on x.', '```python\ndouble(x)\n```')
    assert second[0] == first[0] and 'def double(' not in second[0]['content']
    assert 'def double(' in second[-1]['content'] and 'For this question you may also call' in second[-1]['content']


def test_an_auto_prompt_leaves_the_system_prompt_as_it_was(assistant):
    a = assistant
    run(a, 'x = 2')
    first = ask(a, 'What is x?', 'Two.')
    second = ask(a, 'Double it.', 'Four.', auto=True)
    assert second[0] == first[0]


@pytest.mark.slow
@pytest.mark.embedded
def test_the_embedded_model_evaluates_only_what_is_new(tmp_path):
    """Four prompts in a real kernel: from the second on, llama.cpp's cache holds the whole previous request, and
    it processes only what is new since then, plus at most the previous reply: the reply goes back as text, and a
    text does not always tokenize back to the tokens that wrote it (ggml-org/llama.cpp#11970), so the cache may
    part from it anywhere inside the reply."""
    cells = [('data = [3, 1, 4, 1, 5, 9, 2, 6]\nprint(sorted(data))', 'What does this print?'),
             ('data.index(7)', 'Why does this fail?'),
             ('total = sum(data)\ntotal', 'Is $`total` even?'),   # the next prompt repeats the value it was sent
             ('print(max(data), min(data))', 'What are these two numbers?')]
    rows = []
    with KernelSession(tmp_path, env={'OLLAMA_HOST': f'127.0.0.1:{free_port()}'}) as k:
        k.run('%load_ext boopiter_ext')
        k.run('%config BoopMagics.max_tokens = 32')
        for i, (code, question) in enumerate(cells):
            k.run(code, cell_id=f'c{i}')
            res = k.run(f'%%prompt -m {MODEL}\n{question}', cell_id=f'p{i}', timeout=180)
            md = res.reply['metadata']['boopiter']
            assert md['status'] == 'done', res.text
            rows.append(md)
    counts = [{k: md[k] for k in ('prompt_tokens', 'completion_tokens', 'cached_tokens', 'evaluated_tokens')} for md in rows]
    for before, md in zip(rows, rows[1:]):
        new = md['prompt_tokens'] - before['prompt_tokens'] - before['completion_tokens']
        assert md['cached_tokens'] + md['evaluated_tokens'] == md['prompt_tokens']
        assert md['cached_tokens'] >= before['prompt_tokens'] - 1, counts    # the earlier request: all from the cache
        assert 0 < new <= md['evaluated_tokens'] <= new + before['completion_tokens'] + 1, counts
