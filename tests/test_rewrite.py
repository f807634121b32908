"""Edit this cell, without a kernel: the request the model reads, and the new cell taken out of its untrusted answer
(hand-picked answers and generated ones). The page's half, the diff review, is tests/test_browser_inline.py."""

from hypothesis import given, settings as hsettings, strategies as st
from boopiter_ext.context.messages import msg_text
from boopiter_ext.core.rewrite import rewrite_messages, rewritten


def test_the_request_holds_the_instruction_the_cell_and_the_nearest_cells_above():
    above = ['x' * 7000, 'import math', 'r = 2']
    system, user = rewrite_messages('add a docstring', 'def f(x):\n    return x', above)
    assert system['role'] == 'system' and 'single ```python block' in msg_text(system)
    text = msg_text(user)
    assert text.endswith('Instruction: add a docstring') and '```python\ndef f(x):\n    return x\n```' in text
    assert 'import math' in text and 'r = 2' in text and 'x' * 7000 not in text   # the nearest first, within budget
    assert text.index('import math') < text.index('r = 2')   # in notebook order
    assert '(none)' in msg_text(rewrite_messages('go', 'y = 1')[1])


def test_the_new_cell_is_the_first_python_block_or_a_bare_answer():
    assert rewritten('Here:\n\n```python\ndef f(x):\n    "Doc."\n    return x\n```\n\nDone.', 'def f(x): return x') == \
        'def f(x):\n    "Doc."\n    return x'
    assert rewritten('```python\na = 1\n```\n```python\nb = 2\n```', 'a = 0') == 'a = 1'
    assert rewritten('a = 2', 'a = 1') == 'a = 2'   # no fence at all: the answer is the cell
    assert rewritten('Sorry, I cannot.\n```text\nnot python\n```', 'a = 1') == ''   # a fence, but no python block
    assert rewritten('Here:\n```\na = 2\n```', 'a = 1') == 'a = 2'   # one block with no language: the cell
    assert rewritten('```python\na = 1\n```', 'a = 1\n') == ''   # the same cell again is no new version
    assert rewritten('', 'a = 1') == '' and rewritten(None, 'a = 1') == ''


@hsettings(max_examples=300, deadline=None)
@given(st.text(max_size=300), st.text(max_size=80))
def test_any_answer_gives_a_cell_or_nothing_and_never_the_old_one(answer, before):
    new = rewritten(answer, before)
    assert isinstance(new, str) and (new == '' or new.strip() != before.strip())
    assert new == '' or new in answer   # only text the answer holds, never more


@hsettings(max_examples=200, deadline=None)
@given(st.text(max_size=100), st.text(max_size=200), st.lists(st.text(max_size=3000), max_size=6))
def test_any_request_keeps_the_instruction_and_the_cell_whole(instruction, source, above):
    text = msg_text(rewrite_messages(instruction, source, above)[1])
    assert text.endswith(f'Instruction: {instruction}') and f'```python\n{source}\n```' in text
    assert len(text) <= 6000 + 12 * len(above) + len(source) + len(instruction) + 200
