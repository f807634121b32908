import json
import pytest
from boopiter_ext.context.build import (Cell, build_context, cell_text, clip, context_window, estimate_tokens,
                                        order_cells, prompt_text, reply_text)
from boopiter_ext.context.images import ImagePicker
from boopiter_ext.context.messages import mk_msg, msg_images, msg_text
from boopiter_ext.core.refs import prompt_refs
from boopiter_ext.models.stream import Reply
from boopiter_ext.render.reply import reply_bundle
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


PNG_BYTES = b'\x89PNG\r\n\x1a\nrest'


def test_mk_msg_matches_lisette_except_that_a_list_of_texts_becomes_one_string():
    """Text, and text with images, are lisette's messages exactly. A list of strings only is joined into one string
    (lisette keeps a part per string), so that every route, Ollama's included, gets plain text."""
    assert mk_msg('hi') == {'role': 'user', 'content': 'hi'}
    m = mk_msg(['look', PNG_BYTES])
    assert m == {'role': 'user', 'content': [{'type': 'text', 'text': 'look'},
                                             {'type': 'image_url', 'image_url': 'data:image/png;base64,iVBORw0KGgpyZXN0'}]}
    assert msg_text(m) == 'look' and msg_images(m) == ['iVBORw0KGgpyZXN0']
    assert mk_msg(['a', 'b'], 'system') == {'role': 'system', 'content': 'a\n\nb'}
    lisette = pytest.importorskip('lisette')   # the dev environment has it (it imports litellm: a second or two)
    for content in ('hi', ['look', PNG_BYTES], ['one'], 'x' * 10):
        assert mk_msg(content) == lisette.mk_msg(content), content
    assert lisette.mk_msg(['a', 'b'])['content'] == [{'type': 'text', 'text': 'a'}, {'type': 'text', 'text': 'b'}]


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


# Prefix reuse: each prompt's messages extend the previous prompt's, so a server's cache serves all but what is new


def answered(question, asked, ledger, answer, n):
    "The prompt cell after its reply, with the output the kernel records (render's bundle) that later prompts read."
    r = Reply('m')
    r.add_content(answer)
    r.finish('done')
    data, md = reply_bundle(r, {}, dict(ledger, window=4096))
    assert ledger['asked'] == asked
    return Cell(f'%%prompt\n{question}', 'prompt', [dict(output_type='display_data', data=data, metadata=md)],
                exec_count=n)


def session(steps, ns=None, **kw):
    """The messages of each prompt of a growing notebook, built as the assistant builds them (the question, then the
    values of its $`variables`); each step is (cells run before the prompt, question, the model's answer)."""
    cells, sent = [], []
    for added, question, answer in steps:
        cells += added
        refs = prompt_refs(question, ns or {})
        asked = question + ('\n\n' + refs.text if refs.text else '')
        msgs, ledger = build_context(cells, asked, system='SYS', **kw)
        sent.append((msgs, ledger))
        cells.append(answered(question, asked, ledger, answer, len(cells) + 1))
    return sent


def extends(before, after)->bool:
    "Whether `after` starts with every message of `before` (the earlier prompt's request), unchanged."
    return after[:len(before)] == before


def test_each_prompt_extends_the_previous_prompts_messages_across_every_kind_of_cell():
    err = dict(output_type='error', ename='KeyError', evalue="'kiwi'", traceback=['Traceback', "KeyError: 'kiwi'"])
    img = dict(output_type='display_data', data={'image/png': PNG, 'text/plain': '<Figure>'}, metadata={})
    steps = [
        ([code('print(1)', stream('1\n'), exec_count=1)], 'What is printed?', '\n  It prints `1`.  \n\n'),
        ([Cell('## Notes\nPrices in euros.', 'markdown'), code('prices', result("{'fig': 2.5}"), exec_count=3)],
         'Which is dearest?', 'The fig.'),
        ([code("prices['kiwi']", err, exec_count=5)], 'Why does it fail?', 'No kiwi.'),
        ([code('log()', stream('line\n' * 500), exec_count=7)], 'What is $`prices` worth?', 'About 2.5 euros.'),
        ([code('secret = 1', tags=('boop-hide',), exec_count=9), code('cost = 3', tags=('boop-pin',), exec_count=10)],
         'Discount?', 'No.'),
        ([code('plot()', img, exec_count=12)], 'What did it show?', 'A figure.'),
        ([code('x = 2', exec_count=14)], 'And now?', 'Two.'),
    ]
    sent = session(steps, ns=dict(prices={'fig': 2.5}), limit=100_000, clip_chars=500)
    for (msgs, _), (nxt, _), (_, _, answer) in zip(sent, sent[1:], steps):
        assert extends(msgs, nxt)
        assert nxt[len(msgs)] == {'role': 'assistant', 'content': answer}   # exactly what the model generated
    ledger = sent[-1][1]
    assert ledger['clipped'] == 1 and ledger['hidden'] == 1 and 'secret' not in str(sent[-1][0])
    assert "`prices` = dict, len 1: {'fig': 2.5}" in msg_text(sent[-1][0][7])   # the turn with the values it was sent


def test_an_earlier_turn_is_sent_with_the_values_its_variables_had_then():
    "The reply keeps the question as sent; later prompts repeat it even after the variable changed."
    ns = dict(total=10)
    [(msgs, ledger)] = session([([code('total = 10', exec_count=1)], 'Is $`total` big?', 'No.')], ns=ns)
    cells = [code('total = 10', exec_count=1), answered('Is $`total` big?', ledger['asked'], ledger, 'No.', 2)]
    ns['total'] = 99
    later, _ = build_context(cells + [code('total = 99', exec_count=3)], 'And now?', system='SYS')
    assert extends(msgs, later) and '`total` = int: 10' in msg_text(later[1]) and '99' not in msg_text(later[1])
    edited = [cells[0], Cell('%%prompt\nIs it small?', 'prompt', cells[1].outputs, exec_count=2)]
    later, _ = build_context(edited, 'And now?', system='SYS')   # the question was edited since: the cell's text
    assert msg_text(later[1]).endswith('Is it small?')
    cells[1].outputs[0]['metadata']['boopiter']['context']['asked'] += 'x' * 5000   # a file's: no more than a reply
    later, _ = build_context(cells, 'And now?', system='SYS', clip_chars=1000)
    assert msg_text(later[1]).endswith('Is $`total` big?')


def test_the_budget_cut_stays_put_while_the_notebook_grows():
    "Past the budget the oldest cells go a quarter of it at a time, not one per prompt: most prompts extend the last."
    steps = [([code(f'step_{i} = "{"x" * (200 + 37 * (i % 5))}"', exec_count=2 * i + 1)], f'Why step {i}?', f'Step {i}.')
             for i in range(40)]
    sent = session(steps, limit=2000)
    over = [i for i,(_, ledger) in enumerate(sent) if ledger['dropped']]
    moved = [i for i in over[1:] if not extends(sent[i - 1][0], sent[i][0])]
    assert len(over) > 15 and len(moved) <= len(over) // 4    # one cell a prompt would move the cut on every prompt
    for i in moved: assert sent[i][1]['dropped'] - sent[i - 1][1]['dropped'] >= 2   # a step: several cells at once
    assert all(ledger['tokens'] <= 2000 for _, ledger in sent)


def test_a_notebook_over_the_budget_at_once_keeps_about_three_quarters_and_never_the_pinned_ones_go():
    cells = [code('keep = 1', tags=('boop-pin',), exec_count=1)] + [code(f'c{i} = "{"y" * 400}"', exec_count=i + 2)
                                                                   for i in range(30)]
    msgs, ledger = build_context(cells, 'Why?', limit=2000, system='')
    assert 'keep = 1' in msg_text(msgs[-1]) and 0.5 * 2000 < ledger['tokens'] <= 0.9 * 2000
    long_question = 'why ' * 900   # a question that does not fit with the cells kept: more go, for it alone
    msgs, ledger = build_context(cells, long_question, limit=2000, system='')
    assert ledger['tokens'] <= 2000 and msg_text(msgs[-1]).endswith(long_question)


def test_images_past_the_budget_stop_being_sent_half_a_budget_at_a_time():
    "A vision model's images: the newest `max_images`, but older ones turn into placeholders two at a time, not one."
    def figure(i): return dict(output_type='display_data', data={'image/png': png_b64(40 + i, 30)}, metadata={})
    steps = [([code(f'plot({i})', figure(i), exec_count=2 * i + 1)], f'Plot {i}?', f'Plot {i}.') for i in range(12)]
    sent = session(steps, vision=True, max_images=4)
    over = range(4, 12)   # from the fifth figure on, one of them has to go
    moved = [i for i in over if not extends(sent[i - 1][0], sent[i][0])]
    assert len(moved) <= len(over) // 2
    assert [ledger['images'] for _, ledger in sent] == [1, 2, 3, 4, 3, 4, 3, 4, 3, 4, 3, 4]
    last = sent[-1][0]
    assert sum(len(msg_images(m)) for m in last) == sent[-1][1]['images']
    assert '[image: image/png, 51×30]' in msg_text(last[-1])                        # the newest is always sent
    assert '[image/png output omitted: too many images]' in msg_text(last[1])      # the oldest is not


def test_token_estimates_windows_and_tags_at_their_edges():
    "Found by mutation testing: the boundaries of the estimate, the window steps and the tag rule, written out."
    from boopiter_ext.context.build import cell_tags
    assert [estimate_tokens(t) for t in ('', 'abc', 'abcd', 'abcdefgh', '数据', 'ab数据')] == [1, 1, 2, 3, 3, 3]
    assert (context_window(4096), context_window(4097), context_window(8192)) == (4096, 8192, 8192)
    assert cell_tags({'tags': ['', 'a', 'x' * 100, 'y' * 101, 3, None, 'boop-hide']}) == ('a', 'x' * 100, 'boop-hide')
    assert cell_tags({'tags': 'boop-hide'}) == cell_tags(None) == cell_tags({'tags': [f't{i}' for i in range(60)]})[50:]


def test_a_cell_shown_by_the_frontend_but_not_run_here_is_labelled_so():
    edited = Cell('x = 1', origin='frontend', exec_count=None, outputs=[dict(output_type='stream', name='stdout', text='0')])
    _, ledger = build_context([edited, Cell('y = 2', exec_count=3)], 'q?')   # edited since it ran: its old output stays
    assert [i['label'] for i in ledger['items']][:2] == ['In [ ] (not run in this kernel)', 'In [3]']


# ---- what the mutation run found untested (bench/mutation.md)

def asked_out(text, asked): return dict(output_type='display_data', data={'text/plain': text},
                                        metadata={'boopiter': {'reply': True, 'context': {'asked': asked}}})


def test_an_earlier_turn_repeats_the_question_as_sent_only_within_its_clip():
    from boopiter_ext.context.build import _asked
    q = 'What is in $`df`?'
    def cell(sent): return Cell(f'%%prompt\n{q}', 'prompt', [asked_out('A table.', sent)])
    added = '\n\n' + 'x' * 8                                                      # the values its $`names` had
    assert _asked(cell(q + added), q, limit=10) == q + added                       # 10 characters added: at the limit
    assert _asked(cell(q + added + '!'), q, limit=10) == q                         # past it: the question as it is now
    assert _asked(cell('Something else'), q) == q and _asked(cell(q + ' ' + 'v' * 10**4), q) == q + ' ' + 'v' * 10**4


def test_an_output_that_is_only_an_object_s_repr_is_left_out_for_its_other_forms():
    obj = dict(output_type='execute_result', metadata={},
               data={'text/plain': '<__main__.Plot object at 0x7f3a2b10c4d0>', 'text/html': '<b>a plot</b> of sales'})
    text = cell_text(code('Plot()', obj))[0]
    assert '0x7f3a2b10c4d0' not in text and 'a plot  of sales' in text
    assert '<Plot of 3 points>' in cell_text(code('p', result('<Plot of 3 points>')))[0]   # a repr that says something


def test_an_earlier_reply_is_clipped_at_four_times_an_output_s_limit():
    def turn(n): return build_context([Cell('%%prompt\nq', 'prompt', [reply_out('r' * n)])], 'next', clip_chars=100,
                                      system='')[1]['items'][0]['status']
    assert turn(400) == 'sent' and turn(401) == 'clipped'


def test_no_image_is_sent_when_the_most_is_zero_even_to_a_vision_model():
    img = dict(output_type='display_data', data={'image/png': PNG, 'text/plain': '<Figure>'}, metadata={})
    msgs, ledger = build_context([code('plot()', img)], 'What does it show?', vision=True, max_images=0)
    assert msg_images(msgs[-1]) == [] and ledger['images'] == 0
    assert msg_images(build_context([code('plot()', img)], 'What does it show?', vision=True, max_images=1)[0][-1])


def test_the_ledger_counts_every_message_s_tokens_and_says_what_overflows():
    from boopiter_ext.context.build import _MSG_OVERHEAD
    _, ledger = build_context([], 'What is x?', system='Be brief.')
    assert ledger['tokens'] == estimate_tokens('Be brief.') + estimate_tokens('What is x?') + 2 * _MSG_OVERHEAD
    pinned = code('x = 1', stream('y' * 4000), tags=('boop-pin',))
    assert build_context([], 'q' * 4000, limit=100)[1]['notes'][0].startswith('the prompt alone (~')
    assert build_context([pinned], 'q', limit=100)[1]['notes'][0].startswith('the prompt and the pinned cells (~')
    assert build_context([pinned], 'q', limit=10**6)[1]['notes'] == []


# ---- what mutation samples with other seeds left alive (issue 23.1)

def test_an_empty_prompt_cell_is_skipped_and_every_older_cell_stays():
    cells = [code('old = 1', exec_count=1), Cell('%%prompt\nFirst?', 'prompt', [reply_out('One.')], exec_count=2),
             code('mid = 2', exec_count=3), Cell('%%prompt\n', 'prompt', exec_count=4),
             Cell('%%prompt -m qwen3:1.7b\n   \n', 'prompt', exec_count=5), code('new = 3', exec_count=6)]
    msgs, ledger = build_context(cells, 'And now?', system='')
    text = json.dumps(msgs)
    assert all(s in text for s in ('old = 1', 'First?', 'One.', 'mid = 2', 'new = 3')), text
    assert [m['role'] for m in msgs] == ['user', 'assistant', 'user']
    assert [i['label'] for i in ledger['items']] == ['In [1]', 'Prompt [2] and reply', 'In [3]', 'In [6]']   # no empty turn


def test_a_re_run_cell_moves_to_its_new_run_in_execution_order_and_stays_put_in_notebook_order(shell):
    "Execution order (the notebook unknown): a cell run again is where it ran last; notebook order: where it is."
    from boopiter_ext.faces.capture import CellRecorder
    rec = CellRecorder(shell)
    rec.register()
    try:
        for src, cid in (('a = 1', 'ca'), ('b = 2', 'cb'), ('c = 3', 'cc'), ('a = 10', 'ca')):   # `ca` edited, run again
            shell.run_cell(src, store_history=True, cell_id=cid)
    finally: rec.unregister()
    assert [(c.cell_id, c.source) for c in rec.cells()] == [('cb', 'b = 2'), ('cc', 'c = 3'), ('ca', 'a = 10')]
    current = Cell('%%prompt\nWhat is a?', 'prompt', cell_id='p')
    msgs, _ = build_context(order_cells(rec.cells(), None, current), 'What is a?', system='')
    text = msgs[-1]['content']
    assert text.index('b = 2') < text.index('c = 3') < text.index('a = 10') and 'a = 1\n' not in text
    saved = [code(s, cell_id=i, origin='file') for s, i in (('a = 1', 'ca'), ('b = 2', 'cb'), ('c = 3', 'cc'))]
    saved.append(Cell('%%prompt\nWhat is a?', 'prompt', cell_id='p', origin='file'))
    assert [c.source for c in order_cells(rec.cells(), saved, current)] == ['a = 10', 'b = 2', 'c = 3']
    assert [c.exec_count for c in order_cells(rec.cells(), saved, current)] == [4, 2, 3]   # as they ran here


def test_a_cell_the_notebook_holds_between_the_last_run_one_and_the_prompt_is_above_it():
    saved = [code('x = 1', cell_id='c1', origin='file'), code('y = 2', result('2'), cell_id='c2', origin='file'),
             Cell('%%prompt\nq', 'prompt', cell_id='p3', origin='file'), code('z = 3', cell_id='c4', origin='file')]
    cur = Cell('%%prompt\nq', 'prompt', cell_id='p3')
    assert [c.source for c in order_cells([code('x = 1', cell_id='c1'), cur], saved, cur)] == ['x = 1', 'y = 2']


def test_for_a_prompt_the_notebook_lacks_the_cells_below_the_last_run_one_are_not_above_it():
    saved = [code('x = 1', cell_id='c1', origin='file'), code('y = 2', cell_id='c2', origin='file'),
             code('z = 3', cell_id='c3', origin='file')]
    cur = Cell('%%prompt\nq', 'prompt', cell_id='new')   # typed after the last save
    assert [c.source for c in order_cells([code('x = 1', cell_id='c1'), cur], saved, cur)] == ['x = 1']
    assert [c.source for c in order_cells([code('y = 2', cell_id='c2'), cur], saved, cur)] == ['x = 1', 'y = 2']


def test_a_cell_hidden_since_it_ran_is_hidden_in_the_context_and_its_record_is_left_as_it_was():
    from boopiter_ext.context.build import HIDE_TAG
    ran = code('secret = 1', cell_id='c1', tags=('setup',))   # tagged when it ran, hidden in the notebook since
    saved = [code('secret = 1', cell_id='c1', origin='file', tags=('setup', HIDE_TAG)),
             Cell('%%prompt\nq', 'prompt', cell_id='p2')]
    cur = Cell('%%prompt\nq', 'prompt', cell_id='p2')
    [got] = order_cells([ran, cur], saved, cur)
    assert HIDE_TAG in got.tags and ran.tags == ('setup',)


def test_a_cell_of_the_models_code_is_marked_so_to_the_model():
    "A reply's Insert tags its cell `boop-model`: the model reads it as code an earlier reply wrote, not the user's own."
    from boopiter_ext.context.build import MODEL_TAG, cell_text
    mine, its = Cell('x = 1', exec_count=3), Cell('x = 2', exec_count=4, tags=(MODEL_TAG,))
    assert cell_text(mine)[0].startswith('In [3]:\n')
    assert cell_text(its)[0].startswith('In [4] (code from an earlier reply of the assistant, put in the notebook):\n')
