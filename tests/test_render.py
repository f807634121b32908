"""A reply's mime bundle (render.py) written out in full: the details, the ledger, the metadata, the tool rounds and
the dry run. Each expectation is the text a user reads, so a changed word, count or rounding fails here."""

from boopiter_ext.render.reply import (REPLY_MIME, images_line, loop_bundle, preview_bundle, reasoning_label,
                                       reply_bundle, reply_data, reply_metadata, round_bundle)
from boopiter_ext.models.stream import Reply
from boopiter_ext.tools.loop import LoopResult, Step

LEDGER = dict(tokens=1234, window=8192, clipped=1, dropped=2, hidden=1, items=[
    dict(label='cell 1 (code)', tokens=40, status='sent'), dict(label='cell 2 (code)', tokens=900, status='clipped'),
    dict(label='cell 3 (code)', tokens=10, status='dropped'), dict(label='cell 4 (markdown)', tokens=5, status='hidden'),
    dict(label='cell 5 (code)', tokens=300, status='sent', images=['640×480'])], notes=['1 reply left out'],
    image_records=[dict(status='sent', size='640×480', what='cell 5'),
                   dict(status='sent', size='1024×512', original='2048×1024', what='plot.png'),
                   dict(status='placeholder', why='the model sees no images', what='cell 6'),
                   dict(status='placeholder', why='the model sees no images', what='cell 7')])


def restored(status='done', answer='The answer.', reasoning='', **snap):
    "A reply with fixed timings, as a cassette or a saved output holds it."
    return Reply.restore('qwen3:1.7b', dict(dict(answer=answer, reasoning=reasoning, status=status, chunks=12,
                                                 info=dict(finish_reason='stop', prompt_tokens=50),
                                                 ttft=1.23456, reasoning_s=None, tokens_per_s=31.55), **snap))


def test_the_details_list_model_route_effort_images_tokens_speed_and_the_ledger():
    route = dict(name='Ollama', endpoint='http://localhost:11434', picked_by='auto', effort='h', reasoning_model=True)
    d = reply_data(restored(status='interrupted'), route, LEDGER)
    assert d['version'] == 1 and d['summary'] == 'qwen3:1.7b · 12 tokens · 31.6 tok/s · interrupted'
    assert d['details'] == [
        'Model: qwen3:1.7b (Ollama at http://localhost:11434), picked automatically', 'Finish: stop',
        'Status: interrupted', 'Reasoning: the reasoning model, effort high',
        'Images: 2 sent (640×480, 1024×512 (scaled from 2048×1024)); 2 not sent: the model sees no images',
        'Tokens: 50 prompt + 12 completion', 'Speed: time to first token 1.23 s, 31.6 tokens/s',
        'Context: 3 cells, ~1,234 tokens of a 8,192-token window; 1 clipped, 2 dropped, 1 hidden',
        '  cell 1 (code) · ~40 tokens', '  cell 2 (code) · ~900 tokens · clipped', '  cell 3 (code) · ~10 tokens · dropped',
        '  cell 4 (markdown) · ~5 tokens · hidden', '  cell 5 (code) · ~300 tokens · image 640×480', '  1 reply left out']
    one = dict(LEDGER, items=LEDGER['items'][:1], clipped=0, dropped=0, hidden=0)
    details = reply_data(restored(), dict(picked_by='notebook binding', effort='off'), one)['details']
    assert [details[i] for i in (0, 2, 6, 7)] == ['Model: qwen3:1.7b, picked by notebook binding', 'Reasoning: effort off',
                                                  'Context: 1 cell, ~1,234 tokens of a 8,192-token window',
                                                  '  cell 1 (code) · ~40 tokens']
    assert not any(r.startswith('Reasoning') for r in reply_data(restored(), {})['details'])
    assert images_line(None) == images_line({}) == images_line(dict(image_records=[])) == ''   # a str, as annotated
    no_window = {k: v for k,v in LEDGER.items() if k != 'window'}   # a ledger without a window lists no context
    assert not any(r.startswith(('Context', '  cell')) for r in reply_data(restored(), {}, no_window)['details'])


def test_reasoning_is_labelled_with_its_words_and_its_time_from_a_twentieth_of_a_second():
    assert reasoning_label(restored(reasoning_s=0.05), 'two words') == 'Reasoning · 2 words · 0.1 s'
    assert reasoning_label(restored(reasoning_s=0.049), 'two words') == 'Reasoning · 2 words'
    assert reasoning_label(restored(answer=''), 'one') == 'Reasoning · 1 word'              # done: not "thinking"
    assert reasoning_label(restored(status='streaming', answer=''), 'one') == 'Reasoning · thinking… 1 word'
    assert reasoning_label(restored(status='streaming'), 'one') == 'Reasoning · 1 word'    # the answer has begun
    d = reply_data(restored(status='streaming', answer='', reasoning='so far'))
    assert (d['reasoning_streaming'], d['details'], d['reasoning_label']) == (True, [], 'Reasoning · thinking… 2 words')


def test_the_streaming_rebuilder_is_used_only_while_streaming_and_a_given_answer_is_used_as_is():
    class Stream:
        open = True
        def blocks(self, text): return ['REBUILT', 'TWICE']
    stream = Stream()
    data = reply_bundle(restored(status='streaming'), stream=stream)[0]
    assert data[REPLY_MIME]['blocks'] == ['REBUILT', 'TWICE'] and data[REPLY_MIME]['open'] is True
    assert data['text/markdown'].startswith('REBUILT\n\nTWICE')
    done = reply_bundle(restored(), stream=stream)[0][REPLY_MIME]
    assert done['blocks'] == ['The answer.'] and 'open' not in done
    assert reply_data(restored(), answer=['GIVEN'])['blocks'] == ['GIVEN']
    assert 'text/markdown' not in reply_bundle(restored(status='streaming'), stream=stream, markdown=False)[0]
    assert 'text/markdown' in reply_bundle(restored(), stream=stream, markdown=False)[0]


def test_the_frontend_gets_the_blocks_the_kernel_vetted_and_no_markdown_to_cut_again():
    from boopiter_ext.render.sanitize import SafeStream
    answer = 'Intro\n\n- ```\n  a\n  ```\n\n```\n\n<img src=http://evil.example/x>\n```\n\nEnd'
    data = reply_bundle(restored(answer=answer))[0]
    blocks = data[REPLY_MIME]['blocks']
    assert 'markdown' not in data[REPLY_MIME] and len(blocks) == 4
    assert blocks[2] == '```\n\n<img src=http://evil.example/x>\n```'   # the code block whole, its HTML as code
    assert '\n\n'.join(blocks) in data['text/markdown']                 # other frontends read the same blocks
    stream, r = SafeStream(), restored(status='streaming', answer='Intro\n\n```python\nx = 1')
    live = reply_bundle(r, stream=stream)[0][REPLY_MIME]
    assert live['blocks'] == ['Intro', '```python\nx = 1\n```'] and live['open'] is True
    r = restored(status='streaming', answer='Intro\n\n```python\nx = 1\n```')
    assert 'open' not in reply_bundle(r, stream=stream)[0][REPLY_MIME]     # closed: rendered as code


def test_metadata_rounds_timings_and_leaves_out_what_is_empty():
    r = restored(reasoning='weighing it', reasoning_s=0.123456, info=dict(finish_reason='stop', tool_calls=[]))
    md = reply_metadata(r, dict(name='Ollama', model_info={}, digest='sha256:ab'))['boopiter']
    assert (md['ttft_s'], md['tokens_per_s'], md['reasoning_s'], md['reasoning']) == (1.235, 31.6, 0.123, 'weighing it')
    assert 'model_info' not in md and 'tool_calls' not in md and md['digest'] == 'sha256:ab'
    md = reply_metadata(r, dict(model_info={'context_length': 4096}))['boopiter']
    assert md['model_info'] == {'context_length': 4096}
    streaming = restored(status='streaming', reasoning='so far', info=dict(tool_calls=[{'function': {'name': 'f'}}]))
    md = reply_metadata(streaming)['boopiter']
    assert 'reasoning' not in md and md['tool_calls'] == [{'function': {'name': 'f'}}]   # reasoning rides the final one


def test_a_tool_round_shows_each_call_and_its_result_cut_at_600_characters():
    steps = [Step(1, 'add_numbers(47, 23)', 'ok', 'x' * 600), Step(1, 'read(1)', 'flagged', 'y' * 601, recovered=True)]
    data, md = round_bundle(1, steps)
    assert data[REPLY_MIME]['version'] == 1 and md == {'boopiter': {'tool_round': 1}}
    text = data['text/markdown']
    assert text.startswith('**Tool calls, round 1**\n\n- ✓ ok\n\n  ```python\n  add_numbers(47, 23)\n  ```\n\n  ```\n  '
                           + 'x' * 600 + '\n  ```')
    assert '- ⚠ flagged (recovered from text)' in text and 'y' * 600 + ' …' in text and 'y' * 601 not in text


def test_the_loop_summary_lists_each_call_on_one_line_of_at_most_80_characters():
    steps = [Step(1, 'f(' + 'a' * 77 + ')', 'ok'), Step(2, 'g(' + 'b' * 78 + ')', 'ok'), Step(2, 'h(1,\n  2)', 'refused'),
             Step(3, '', 'refused')]
    data, md = loop_bundle(LoopResult('max rounds', steps, 3))
    assert data[REPLY_MIME]['version'] == 1 and data['text/plain'] == 'Tool loop · stopped: max rounds · 3 rounds · 4 calls'
    rows = data['text/markdown'].split('<li>round ')[1:]
    assert [r.split('</code>')[0].split('<code>')[1] for r in rows] == ['f(' + 'a' * 77 + ')', 'g(' + 'b' * 78 + ' …',
                                                                        'h(1, …', '']
    one = loop_bundle(LoopResult('answered', steps[:1], 1))[0]['text/plain']
    assert one == 'Tool loop · stopped: answered · 1 round · 1 call'


def test_a_dry_run_shows_model_window_tools_ledger_images_and_every_message():
    preview = dict(model='qwen3:1.7b', route=dict(name='Ollama', note='the first of 3'), tokens=1234, window=8192,
                   reserve=1024, auto=True, tools=['add_numbers', 'read_file'], ledger=LEDGER,
                   messages=[dict(role='system', content='Be brief.'),
                             dict(role='user', content=[dict(type='text', text='What is this?'),
                                                        dict(type='image_url', image_url='data:image/png;base64,AAAA')])])
    data, md = preview_bundle(preview)
    assert md == {'boopiter': {'preview': True}}
    head = ('Dry run: nothing was sent. Model: qwen3:1.7b (Ollama); ~1,234 tokens of a 8,192-token window, 1,024 kept '
            'for the reply; tools: add_numbers, read_file (auto-run); note: the first of 3')
    assert data['text/plain'].split('\n\n') == [
        head, 'Context: 3 cells, ~1,234 tokens of a 8,192-token window; 1 clipped, 2 dropped, 1 hidden\n'
        '  cell 1 (code) · ~40 tokens\n  cell 2 (code) · ~900 tokens · clipped\n  cell 3 (code) · ~10 tokens · dropped\n'
        '  cell 4 (markdown) · ~5 tokens · hidden\n  cell 5 (code) · ~300 tokens · image 640×480\n  1 reply left out',
        '[system · ~3 tokens]\nBe brief.', '[user · ~4 tokens · 1 image]\nWhat is this?']
    text = data['text/markdown']
    shown = head.replace('~', '\\~').replace('_', '\\_')   # as Markdown: `~` and `_` escaped
    assert text.startswith(f'*{shown}*\n\n<details><summary>Context: 3 cells, ~1,234 tokens')
    assert '*Images: 2 sent (640×480, 1024×512 (scaled from 2048×1024)); 2 not sent: the model sees no images*' in text
    assert text.endswith('<details><summary>system · ~3 tokens</summary>\n\n```\nBe brief.\n```\n\n</details>\n\n'
                         '<details><summary>user · ~4 tokens · 1 image</summary>\n\n```\nWhat is this?\n```\n\n</details>')
    # each message folded, collapsed: the dry run in a cell is a list of messages to open, not a wall of text
    bare = preview_bundle(dict(preview, route={}, tools=[], auto=True, ledger=dict(LEDGER, image_records=[]),
                               messages=[dict(role='user', content='Hi')]))[0]['text/plain']
    assert bare.startswith('Dry run: nothing was sent. Model: qwen3:1.7b; ~1,234 tokens of a 8,192-token window, 1,024 '
                           'kept for the reply; tools: none\n\n')   # no tools: no "(auto-run)" either
