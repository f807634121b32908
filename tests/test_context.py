import base64
from boopiter_ext.context import (Cell, build_context, cell_text, clip, context_window, estimate_tokens, order_cells,
                                  prompt_text, reply_text)
from boopiter_ext.images import ImagePicker
from boopiter_ext.messages import mk_msg, msg_images, msg_text
from images_util import png_b64

PNG = png_b64(64, 48)


def code(src, *outputs, **kw): return Cell(src, 'code', list(outputs), **kw)
def stream(text, name='stdout'): return dict(output_type='stream', name=name, text=text)
def result(text): return dict(output_type='execute_result', data={'text/plain': text}, metadata={})
def reply_out(text): return dict(output_type='display_data', data={'text/plain': text, 'text/markdown': text},
                                 metadata={'boopiter': {'reply': True}})


def test_prompt_text_and_reply_text():
    assert prompt_text('%%prompt -m x\nWhy?\n') == 'Why?'
    cell = Cell('%%prompt\nq', 'prompt', [stream('noise'), reply_out('The answer')])
    assert reply_text(cell) == 'The answer'
    assert reply_text(code('x')) is None


def test_clip_keeps_head_and_tail_with_a_marker():
    text = ''.join(f'{i:05d}\n' for i in range(2000))
    out, clipped = clip(text, 600)
    assert clipped and out.startswith(text[:400]) and out.endswith(text[-200:])
    assert '[clipped 11,400 of 12,000 characters]' in out
    assert clip('short', 600) == ('short', False)


def test_cell_text_shows_source_outputs_errors_and_progress_bars():
    err = dict(output_type='error', ename='ZeroDivisionError', evalue='division by zero',
               traceback=['\x1b[31mTraceback\x1b[0m', 'ZeroDivisionError: division by zero'])
    text, imgs, clipped = cell_text(code('1/0', stream('10%\r50%\r100%\ndone\n'), err, exec_count=3))
    assert text.startswith('In [3]:\n```python\n1/0\n```')
    assert '100%\ndone' in text and '10%' not in text          # a carriage return rewrites the line
    assert 'ZeroDivisionError: division by zero' in text and '\x1b[' not in text
    assert (imgs, clipped) == ([], False)


def test_output_fences_survive_backticks_in_outputs():
    text, _, _ = cell_text(code('print(s)', stream('```\ninner\n```\n')))
    assert '````\n```\ninner\n```\n````' in text


def test_images_go_to_vision_models_and_become_placeholders_otherwise():
    img = dict(output_type='display_data', data={'image/png': PNG, 'text/plain': '<Figure size 640x480 with 1 Axes>'},
               metadata={})
    text, imgs, _ = cell_text(code('plot()', img), pick=ImagePicker(vision=True))
    assert [(i.mime, i.data) for i in imgs] == [('image/png', PNG)] and '[image: image/png, 64×48]' in text
    text, imgs, _ = cell_text(code('plot()', img))
    assert imgs == [] and '[image/png output omitted]' in text
    msgs, ledger = build_context([code('plot()', img)], 'What is odd?', vision=True)
    assert msg_images(msgs[-1]) == [PNG] and ledger['images'] == 1
    assert ledger['items'][0]['images'] == ['64×48']
    assert msgs[-1]['content'][1]['image_url'].startswith('data:image/png;base64,')


def test_earlier_prompts_become_turns_and_details_never_return():
    cells = [code('x = 1', exec_count=1),
             Cell('%%prompt\nWhat is x?', 'prompt', [reply_out('x is one.')], exec_count=2),
             code('y = 2', exec_count=3)]
    msgs, ledger = build_context(cells, 'And y?', system='SYS')
    assert [m['role'] for m in msgs] == ['system', 'user', 'assistant', 'user']
    assert msgs[1]['content'].endswith('---\n\nWhat is x?') and 'x = 1' in msgs[1]['content']
    assert msgs[2]['content'] == 'x is one.'
    assert 'y = 2' in msgs[3]['content'] and msgs[3]['content'].endswith('And y?')
    assert [i['status'] for i in ledger['items']] == ['sent'] * 3


def test_budget_drops_the_oldest_first_and_never_the_prompt():
    cells = [code(f'cell_{i} = {"x" * 400}', exec_count=i) for i in range(1, 6)]
    question = 'q' * 2000
    msgs, ledger = build_context(cells, question, limit=900, system='')
    text = msgs[-1]['content']
    assert question in text
    statuses = [i['status'] for i in ledger['items']]
    assert statuses == ['dropped'] * statuses.count('dropped') + ['sent'] * statuses.count('sent')
    assert 0 < ledger['dropped'] < 5 and ledger['tokens'] <= 900
    assert 'cell_5' in text and 'cell_1 ' not in text
    msgs, ledger = build_context(cells, question, limit=100, system='')
    assert msg_text(msgs[-1]).endswith(question) and ledger['dropped'] == 5 and ledger['notes']


def test_cells_that_only_drive_boopiter_are_left_out():
    cells = [code('%load_ext boopiter_ext'), code('%config BoopMagics.timeout = 5\n%boop status'), code('x = 1')]
    msgs, ledger = build_context(cells, 'q', system='')
    assert 'load_ext' not in msgs[-1]['content'] and 'x = 1' in msgs[-1]['content'] and len(ledger['items']) == 1


def test_order_without_a_file_is_execution_order():
    a, b, cur = code('a'), code('b'), Cell('%%prompt\nq', 'prompt')
    assert order_cells([b, a, cur], None, cur) == [b, a]


def test_order_with_a_file_is_notebook_order_and_stops_at_the_prompt():
    saved = [Cell('# Title', 'markdown', cell_id='m0', origin='file'),
             code('a = 1', cell_id='c1', origin='file'), code('b = 2', cell_id='c2', origin='file'),
             Cell('%%prompt\nq', 'prompt', cell_id='p3', origin='file'),
             code('below = 1', cell_id='c4', origin='file')]
    b, a, below = code('b = 2', cell_id='c2'), code('a = 1', cell_id='c1'), code('below = 1', cell_id='c4')
    new = code('fresh = 1', cell_id='unsaved')
    cur = Cell('%%prompt\nq', 'prompt', cell_id='p3')
    got = order_cells([b, below, new, a, cur], saved, cur)
    assert [c.source for c in got] == ['# Title', 'a = 1', 'b = 2', 'fresh = 1']


def test_cells_without_ids_are_placed_by_source_and_history_takes_saved_outputs():
    saved = [code('x = 1', cell_id='c1', origin='file'),
             code('print(x)', stream('1\n'), cell_id='c2', origin='file'),
             Cell('%%prompt\nwhy', 'prompt', cell_id='p3', origin='file')]
    hist = code('print(x)', origin='history')
    first = code('x = 1')
    cur = Cell('%%prompt\nwhy', 'prompt')
    got = order_cells([hist, first, cur], saved, cur)
    assert [c.source for c in got] == ['x = 1', 'print(x)']
    assert got[1].outputs == [stream('1\n')]


def test_context_window_steps_and_caps():
    assert context_window(1000) == 4096
    assert context_window(5000) == 8192
    assert context_window(70000, model_max=40960) == 40960
    assert context_window(10, requested=2048) == 2048
    assert context_window(10, model_max=8192, requested=65536) == 8192   # past its length a model only babbles


def test_mk_msg_follows_lisette_conventions():
    assert mk_msg('hi') == {'role': 'user', 'content': 'hi'}
    m = mk_msg(['look', b'\x89PNG\r\n\x1a\nrest'])
    assert m['content'][0] == {'type': 'text', 'text': 'look'}
    assert m['content'][1]['image_url'].startswith('data:image/png;base64,')
    assert msg_text(m) == 'look' and len(msg_images(m)) == 1


def test_json_displays_and_odd_outputs_do_not_break_the_context():
    outs = [dict(output_type='display_data', data={'application/json': [1, 2, {'a': 3}]}, metadata={}),
            dict(output_type='display_data', data={'application/vnd.custom+json': {'x': 1}}, metadata=None),
            dict(output_type='execute_result', data={'text/plain': ['multi', 'line']}, metadata={})]
    text, _, _ = cell_text(code('show()', *outs))
    assert '"a": 3' in text and '[application/vnd.custom+json output omitted]' in text and 'multiline' in text


def test_token_estimate_does_not_undercount_cjk():
    assert estimate_tokens('a' * 400) == 101
    assert estimate_tokens('数据分析' * 100) >= 400          # a 4-characters-per-token guess would say 100


def test_a_repeated_prompt_without_cell_ids_sees_the_copies_above_it():
    "nbclient sends no cell ids: the prompt running is placed by its text, after the copies that already ran."
    saved = [code('x = 1'), Cell('%%prompt\nContinue.', 'prompt'), code('y = 2'), Cell('%%prompt\nContinue.', 'prompt')]
    ran = [code('x = 1', exec_count=1), Cell('%%prompt\nContinue.', 'prompt', [reply_out('Part one.')], exec_count=2),
           code('y = 2', exec_count=3)]
    current = Cell('%%prompt\nContinue.', 'prompt', exec_count=4)
    cells = order_cells(ran + [current], saved, current)
    assert [c.source for c in cells] == ['x = 1', '%%prompt\nContinue.', 'y = 2']


def test_live_outputs_of_any_shape_read_as_text_never_as_a_traceback():
    circular = {}
    circular['self'] = circular
    deep = []
    for _ in range(5000): deep = [deep]
    odd = [dict(output_type='error', ename=3, evalue=None, traceback='Traceback: one string'),
           dict(output_type='error', ename='E', evalue='v', traceback=['ok line', 7, None, ['nested']]),
           dict(output_type='error'), dict(output_type='stream', name='stdout', text=['a', 3, 'b']),
           dict(output_type='stream', text=None), dict(output_type='display_data', data=['not', 'a', 'dict'], metadata=[]),
           dict(output_type='display_data', data={'application/json': circular}, metadata={'boopiter': None}),
           dict(output_type='display_data', data={'application/json': deep, 'text/plain': 'deep json'}, metadata={}),
           dict(output_type='execute_result', data={'text/plain': {'x': 1}, 'image/png': 42}, metadata='x'),
           dict(output_type='mystery'), 'not an output', None, 12]
    text, imgs, _ = cell_text(code('show()', *odd))
    assert 'Traceback: one string' in text and 'ok line' in text and '3: ' in text and 'ab' in text and 'deep json' in text
    assert imgs == []
    prompt = Cell('%%prompt\nq', 'prompt', [dict(metadata={'boopiter': True}), dict(metadata=[], data=None), 'x'])
    assert reply_text(prompt) is None
    msgs, ledger = build_context([code('show()', *odd), prompt, Cell('note', 'markdown', attachments=['x'])], 'Why?',
                                 vision=True)
    assert msgs[-1]['content'].endswith('Why?') and len(ledger['items']) == 3
