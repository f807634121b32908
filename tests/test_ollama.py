"""The Ollama client against the test server: what goes on the wire, and every fault as a clear error."""

import json, time
import pytest
from ollama_server import MID_STREAM_ERROR, RawReplyServer, free_port
from boopiter_ext.errors import (OllamaError, OllamaModelNotFound, OllamaUnreachable, ReplyBroken, ReplyStalled,
                                 Unreachable, ModelNotFound)
from boopiter_ext.context.messages import mk_msg
from boopiter_ext.models.ollama import OllamaClient, keep_alive_value, think_value
from boopiter_ext.models.stream import Reply, pump

MSGS = [mk_msg('be brief', 'system'), mk_msg('hi')]


def answer(client, model='qwen3:1.7b', **kw):
    r = pump(client.chat(model, MSGS, **kw), Reply(model))
    r.finish('done')
    return r


def test_streams_the_exact_reply_and_usage(srv):
    srv.script('  Hello,\n\nworld!  \n', thinking='hmm ')
    r = answer(OllamaClient(srv.host))
    assert r.answer == '  Hello,\n\nworld!  \n' and r.reasoning == 'hmm '
    assert r.info['finish_reason'] == 'stop' and r.info['completion_tokens'] == r.chunks and r.info['prompt_tokens'] > 0


def test_options_reach_ollama_on_the_wire(srv):
    srv.script('ok')
    answer(OllamaClient(srv.url), 'ollama_chat/qwen3:1.7b', think=True, keep_alive='5m', num_ctx=8192, max_tokens=99,
           seed=7)
    body = srv.last_chat()
    assert body['model'] == 'qwen3:1.7b' and body['stream'] is True
    assert body['options'] == {'num_ctx': 8192, 'num_predict': 99, 'seed': 7}
    assert body['keep_alive'] == '5m' and body['think'] is True
    assert body['messages'] == [{'role': 'system', 'content': 'be brief'}, {'role': 'user', 'content': 'hi'}]


def test_nothing_optional_is_sent_unless_set(srv):
    answer(OllamaClient(srv.host))
    assert not {'options', 'keep_alive', 'think'} & set(srv.last_chat())


def test_images_travel_in_ollamas_images_field(srv):
    msg = mk_msg(['what is this', b'\x89PNG\r\n\x1a\n0000'])
    pump(OllamaClient(srv.host).chat('gemma3:4b', [msg]), Reply('gemma3:4b'))
    sent = srv.last_chat()['messages'][0]
    assert sent['content'] == 'what is this' and sent['images'] == ['iVBORw0KGgowMDAw']


def test_one_http_session_serves_every_call(srv):
    c = OllamaClient(srv.host)
    for _ in range(3): answer(c)
    assert len(srv.chats()) == 3 and len({r.client for r in srv.requests}) == 1   # one keep-alive connection


@pytest.mark.parametrize('value,expected', [('', None), ('5', '5m'), ('0', 0), ('-1', -1), ('30s', '30s'), ('1.5', '1.5m')])
def test_keep_alive_minutes(value, expected):
    assert keep_alive_value(value) == expected


def test_think_value_uses_levels_only_where_the_model_lists_them():
    assert think_value('', {}) is None and think_value('off') is False
    assert think_value('h', {}) is True
    assert think_value('h', {'thinking': {'values': ['low', 'medium', 'high']}}) == 'high'


def test_unreachable_says_where_it_looked_and_how_to_start():
    c = OllamaClient(f'127.0.0.1:{free_port()}', source='OLLAMA_HOST')
    with pytest.raises(OllamaUnreachable) as e: list(c.chat('qwen3', MSGS))
    msg = str(e.value)
    assert c.where in msg and 'OLLAMA_HOST' in msg and 'ollama serve' in msg
    assert isinstance(e.value, (Unreachable, ConnectionError))


def test_model_not_found_says_how_to_pull_and_lists_what_there_is(srv):
    with pytest.raises(OllamaModelNotFound) as e: list(OllamaClient(srv.host).chat('nosuch:7b', MSGS))
    assert 'ollama pull nosuch:7b' in str(e.value) and 'qwen3:1.7b' in str(e.value)
    assert isinstance(e.value, (ModelNotFound, LookupError)) and e.value.status == 404


def test_http_error_body_is_relayed(srv):
    srv.script(fault='http_error', status=500, body={'error': 'out of memory: model needs 9 GiB'})
    with pytest.raises(OllamaError) as e: answer(OllamaClient(srv.host))
    assert 'HTTP 500' in str(e.value) and 'out of memory: model needs 9 GiB' in str(e.value)


def test_connection_lost_mid_reply_keeps_the_partial_text(srv):
    srv.script('one two three four', fault='drop', after=2)
    r = Reply('qwen3:1.7b')
    with pytest.raises(ReplyBroken): pump(OllamaClient(srv.host).chat('qwen3:1.7b', MSGS), r)
    assert r.answer == 'one two '


def test_mid_stream_error_line_and_malformed_line(srv):
    srv.script('a b c', fault='error_line', after=1)
    with pytest.raises(OllamaError, match=MID_STREAM_ERROR): answer(OllamaClient(srv.host))
    srv.script('a b c', fault='malformed', after=1)
    with pytest.raises(OllamaError, match='not a JSON object'): answer(OllamaClient(srv.host))


def test_no_token_for_timeout_seconds_stops_and_hangs_up(srv):
    srv.script('slow start then nothing', fault='stall', after=1)
    c = OllamaClient(srv.host, timeout=0.5)
    r, t = Reply('qwen3:1.7b'), time.monotonic()
    with pytest.raises(ReplyStalled) as e: pump(c.chat('qwen3:1.7b', MSGS), r)
    assert 0.4 < time.monotonic() - t < 3 and r.answer == 'slow '
    assert 'timeout' in str(e.value)
    deadline = time.monotonic() + 3
    while not srv.streams[-1].disconnected and time.monotonic() < deadline: time.sleep(0.02)
    assert srv.streams[-1].disconnected                     # the connection was closed, not left dangling


def test_stopping_early_closes_the_connection(srv):
    srv.script('x ' * 200, delay=0.01)
    gen = OllamaClient(srv.host).chat('qwen3:1.7b', MSGS)
    assert next(gen) == ('content', 'x ')
    gen.close()
    deadline = time.monotonic() + 3
    while not srv.streams[-1].disconnected and time.monotonic() < deadline: time.sleep(0.02)
    assert srv.streams[-1].disconnected and srv.streams[-1].pieces < 200


def test_listing_is_sorted_and_model_info_reads_show(srv):
    c = OllamaClient(srv.host)
    assert c.tags_names() == sorted(c.tags_names()) == ['gemma3:4b', 'qwen3:1.7b', 'smollm2:135m']
    info = c.model_info('qwen3:1.7b')
    assert 'thinking' in info['capabilities'] and info['context_length'] == 40960
    n = len(srv.requests)
    c.model_info('qwen3:1.7b')
    assert len(srv.requests) == n                           # cached


def test_values_of_the_wrong_kind_never_reach_the_reply():
    "A server's odd values (numbers for text, strings for objects) are skipped, not passed on to break the page."
    lines = [dict(message=dict(content=5)), dict(message='x'),
             dict(message=dict(content='ok', thinking=['x'], tool_calls='no')),
             dict(message=dict(content=''), done=True, done_reason=5, eval_count='many', prompt_eval_count=3)]
    with RawReplyServer(b''.join(json.dumps(d).encode() + b'\n' for d in lines), split=7) as raw:
        r = answer(OllamaClient(raw.host))
        assert (r.answer, r.reasoning) == ('ok', '')
        assert r.info == dict(finish_reason=None, prompt_tokens=3, completion_tokens=None, tool_calls=None)
        raw.raw = b'{"message": {"content": "a"}}\n[1, 2]\n'
        with pytest.raises(OllamaError, match='not a JSON object'): answer(OllamaClient(raw.host))


def test_an_endless_error_body_is_read_only_in_part():
    with RawReplyServer(b'{"error": "' + b'x' * (8 << 20) + b'"}', status=500, content_type='application/json') as raw:
        t = time.monotonic()
        with pytest.raises(OllamaError, match='HTTP 500') as e: answer(OllamaClient(raw.host))
        assert len(str(e.value)) < 1200 and time.monotonic() - t < 5
