import pytest
from boopiter_ext.models.stream import Reply, pump
from boopiter_ext.render.reply import reply_bundle, reply_markdown, reply_plain, details_html


def feed(chunks, thinking=()):
    r = Reply('m')
    for t in thinking: r.add_thinking(t)
    for c in chunks: r.add_content(c)
    r.finish('done')
    return r


@pytest.mark.parametrize('chunks', [
    ['<think>plan</think>Answer'], ['<thi', 'nk>pl', 'an</th', 'ink>', 'Answer'], ['  <think>', 'plan', '</think>\nAnswer'],
])
def test_think_tags_go_to_reasoning_even_split_across_chunks(chunks):
    r = feed(chunks)
    assert (r.reasoning.strip(), r.answer.strip()) == ('plan', 'Answer')


def test_think_tag_after_answer_text_is_just_text():
    r = feed(['Use ', '<think>', ' tags like this'])
    assert r.answer == 'Use <think> tags like this' and r.reasoning == ''


def test_unclosed_think_is_shown_not_swallowed():
    r = feed(['<think>all of it', ' and the answer: 42'])
    assert r.answer == 'all of it and the answer: 42' and 'never closed' in r.note
    data, _ = reply_bundle(r)
    assert data['text/plain'] == 'all of it and the answer: 42'                 # what arrived, exactly
    assert 'boopiter-reasoning' not in data['text/markdown']
    assert '*(the model opened &lt;think&gt; and never closed it' in data['text/markdown']   # marked, where it is seen


def test_unclosed_think_moves_only_its_own_text_and_a_cut_off_one_stays_reasoning():
    r = Reply('m')
    r.add_thinking('field reasoning. ')
    r.add_content('<think>tag text')
    r.finish('done')
    assert (r.reasoning, r.answer, r.unclosed) == ('field reasoning. ', 'tag text', True)   # the field's stays apart
    assert r.reasoning_tokens == (1, False)
    r = Reply('m')
    r.add_content('<think>still weighing')
    r.finish('done', dict(finish_reason='length'))
    assert (r.answer, r.reasoning) == ('', 'still weighing') and 'cut off while reasoning' in r.note
    assert reply_plain(r) == ''                                                           # nothing of it goes back


def test_unclosed_think_cut_short_stays_reasoning_and_is_kept():
    r = Reply('m')
    r.add_content('<think>half a thought')
    r.finish('interrupted')
    assert r.answer == '' and r.reasoning == 'half a thought'
    assert 'half a thought' in reply_markdown(r) and '*(interrupted)*' in reply_markdown(r)


def test_a_reply_that_only_reasons_says_so():
    r = feed(['<think>hmm</think>\n'])
    assert 'gave no answer; its reasoning is above' in reply_markdown(r)


def test_thinking_field_never_mixes_into_the_answer():
    r = feed(['Yes.'], thinking=['Because ', 'reasons.'])
    assert (r.reasoning, r.answer) == ('Because reasons.', 'Yes.')
    data, md = reply_bundle(r)
    assert data['text/plain'] == 'Yes.'
    assert data['text/markdown'].index('Because reasons.') < data['text/markdown'].index('Yes.')
    assert '<details class="boopiter-reasoning"><summary>Reasoning · 2 words</summary>' in data['text/markdown']
    assert 'Tokens: 3 completion (of which ~2 reasoning)' in data['text/markdown']   # counted from the stream: marked ~
    assert md['boopiter']['reasoning_chunks'] == 2 and 'reasoning_tokens' not in md['boopiter']   # a count, not the server's


def test_the_reasoning_summary_counts_words_while_streaming_collapsed():
    r = Reply('m')
    r.add_thinking('one two three')
    streaming = reply_markdown(r)
    assert '<summary>Reasoning · thinking… 3 words</summary>' in streaming and '<details open' not in streaming
    r.add_content('The answer.')
    r.finish('done', dict(reasoning_tokens=40, completion_tokens=45))
    final = reply_markdown(r)
    assert '<summary>Reasoning · 3 words' in final and 'thinking…' not in final
    assert 'Tokens: 45 completion (of which 40 reasoning)' in final   # the server's count: exact


def test_details_name_the_reasoning_model_effort_and_images():
    r = feed(['Fine.'])
    route = dict(name='Ollama', endpoint='http://h:1', effort='h', reasoning_model=True)
    ledger = dict(items=[], tokens=10, window=4096, image_records=[
        dict(where='In [1]', what='image/png output', status='sent', size='1024×512', original='2048×1024'),
        dict(where='In [2]', what='image/png output', status='sent', size='640×480', original=None),
        dict(where='In [3]', what='plot.png', status='not sent', why="`plot.png` is outside the notebook's folder")])
    html = details_html(r, route, ledger)
    assert 'Reasoning: the reasoning model, effort high' in html
    assert ('Images: 2 sent (1024×512 (scaled from 2048×1024), 640×480); 1 not sent: `plot.png` is outside the '
            'notebook&#x27;s folder') in html
    md = reply_bundle(r, route, ledger)[1]['boopiter']
    assert md['effort'] == 'h' and md['reasoning_model'] == 'm' and md['images'] == ['1024×512', '640×480']
    assert 'Reasoning:' not in details_html(r, dict(name='Ollama', endpoint='x'))


def test_code_blocks_keep_their_language_tags():
    text = '```python\nx = 1\n```\n\n~~~bash\nls\n~~~\n\n```\nplain\n```\n'
    r = feed([text])
    md = reply_markdown(r)
    assert '```python\nx = 1\n```' in md and '```bash\nls\n```' in md and reply_plain(r) == text   # tildes re-fenced


class Clock:
    "A fake `monotonic` for stream.py: time moves only when the test says, so counts of updates are exact."
    def __init__(self): self.t = 1000.0
    def __call__(self): return self.t


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr('boopiter_ext.models.stream.monotonic', c)
    return c


def test_pump_throttles_updates_to_the_interval_and_counts_tokens(clock):
    def events():
        for i in range(50):
            clock.t += 1/128           # a token every ~8 ms (binary fractions: the sums stay exact)
            yield 'content', f'{i} '
        yield 'done', dict(finish_reason='stop', completion_tokens=50, prompt_tokens=7)
    seen = []
    r = pump(events(), Reply('m'), update=lambda r: seen.append((clock.t - 1000, r.chunks)), interval=1/8)
    r.finish('done')
    assert r.answer == ''.join(f'{i} ' for i in range(50))
    assert seen == [(1/128, 1), (17/128, 17), (33/128, 33), (49/128, 49)]   # the first token at once, then 8 a second
    assert r.info['finish_reason'] == 'stop' and r.completion_tokens == 50 and r.tokens_per_s == 50 / (49/128)


def test_a_burst_of_tokens_gets_one_update_per_interval_however_many_tokens(clock):
    seen = []
    def events():
        for burst in range(16):        # 16 bursts of 1,000 tokens, 1/16 s apart: one second
            clock.t += 1/16
            for i in range(1000): yield 'content', 'x'
    pump(events(), Reply('m'), update=lambda r: seen.append(clock.t - 1000), interval=1/8)
    assert seen == [k/16 for k in range(1, 17, 2)]   # 8 a second, each at a burst's first token, for 16,000 tokens


def test_partial_reply_is_marked_in_both_mime_types():
    r = Reply('m')
    r.add_content('half an ans')
    r.finish('interrupted')
    assert reply_plain(r) == 'half an ans\n\n*(interrupted)*'
    assert '*(interrupted)*' in reply_markdown(r) and 'Status: interrupted' in reply_markdown(r)


def test_same_mime_types_while_streaming_and_at_the_end():
    r = Reply('m')
    r.add_content('```python\nx = 1\n')
    streaming = reply_bundle(r)
    assert streaming[0]['text/markdown'].endswith('```')           # an open fence is closed while streaming
    assert '<details>' not in streaming[0]['text/markdown']
    r.finish('done')
    final = reply_bundle(r)
    assert set(final[0]) == set(streaming[0]) == {'application/vnd.boopiter.reply+json', 'text/markdown', 'text/plain'}
    assert streaming[0]['application/vnd.boopiter.reply+json']['status'] == 'streaming'
    assert final[0]['application/vnd.boopiter.reply+json']['blocks'] == ['```python\nx = 1\n```']
    assert final[0]['text/plain'] == '```python\nx = 1\n'
    assert final[1]['boopiter']['status'] == 'done' and streaming[1]['boopiter']['status'] == 'streaming'


def test_details_escape_model_names_and_ledger_labels():
    r = Reply('<b>evil</b>')
    r.finish('done')
    html = details_html(r, dict(name='Ollama', endpoint='http://h:1'),
                        dict(items=[dict(label='<i>x</i>', tokens=3, status='sent')], tokens=3, window=4096,
                             clipped=0, dropped=0))
    assert '<b>evil' not in html and '&lt;b&gt;evil' in html and '&lt;i&gt;x' in html


def test_pump_stops_a_reply_at_its_bound_and_keeps_exactly_that_much():
    from boopiter_ext.errors import ReplyTooLong
    def endless():
        while True: yield 'content', 'abcdefghij'
    r = Reply('m')
    with pytest.raises(ReplyTooLong, match='1,005 characters'):
        pump(endless(), r, limit=1005)
    assert r.answer == 'abcdefghij' * 100 + 'abcde' and r.size == 1005
    r.finish('too long')
    assert reply_plain(r).endswith('*(too long: stopped at `max_reply` characters)*')
    assert 'Status: too long' in reply_markdown(r)


def test_the_bound_cuts_what_grew_last_reasoning_included():
    from boopiter_ext.errors import ReplyTooLong
    r = Reply('m')
    with pytest.raises(ReplyTooLong):
        pump(iter([('content', 'answer '), ('thinking', 'x' * 50), ('content', 'y' * 100)]), r, limit=100)
    assert r.reasoning == 'x' * 50 and r.answer == 'answer ' + 'y' * 43 and r.size == 100
    with pytest.raises(ReplyTooLong):   # a `<think>` section counts too
        pump(iter([('content', '<think>' + 'z' * 30)]), Reply('m'), limit=20)


def test_updates_thin_out_as_a_reply_grows(clock):
    "Each update of a long reply waits longer than the last (its size over 2 MB/s), so showing it is linear in total."
    seen = []
    def events():
        for _ in range(40):
            clock.t += 0.01
            yield 'content', 'w' * 100_000
    pump(events(), Reply('m'), update=lambda r: seen.append(r.size), interval=0.0)
    assert seen == [100_000, 600_000, 3_700_000]   # then 50 ms, 300 ms, 1.85 s on: 3 of 40 chunks, ever further apart


def test_found_by_mutation_testing_the_length_bound_tags_split_anywhere_and_reasoning_time(clock):
    from boopiter_ext.errors import ReplyTooLong
    assert pump(iter([('content', 'x' * 10)]), Reply('m'), limit=10).answer == 'x' * 10   # at the bound: kept whole
    with pytest.raises(ReplyTooLong): pump(iter([('content', 'x' * 11)]), Reply('m'), limit=10)
    text = '<think>weigh it</think>The answer.'
    for i in range(1, len(text)):                       # a tag split at any character reads as the whole tag
        r = feed([text[:i], text[i:]])
        assert (r.reasoning, r.answer) == ('weigh it', 'The answer.'), i
    r = feed(['\n\n', '<think>why', '</think>', 'ans'])   # blank lines first: `<think>` still opens reasoning
    assert (r.reasoning, r.answer.strip()) == ('why', 'ans')
    r = Reply('m')
    r.add_thinking('hmm ')
    clock.t += 0.5
    r.add_content('Yes.')
    clock.t += 0.25
    r.finish('done')
    assert r.reasoning_s == 0.5 and Reply('m').reasoning_s is None and feed(['Yes.']).reasoning_s is None
