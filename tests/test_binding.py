"""The notebook's binding read back from a file anyone can write: values checked by their settings' rules,
stamps that cannot overflow or outrank every later pick, and no JSON that can make a reader raise."""

import json
from datetime import datetime, timedelta, timezone
from boopiter_ext.core.binding import (BINDING_MIME, Binding, binding_bundle, binding_text, clean_binding, may_choose,
                                       saved_binding, screen_binding, stamp)
from boopiter_ext.settings import check_setting, load_settings


def iso(t): return t.isoformat(timespec='milliseconds')
def now(): return datetime.now(timezone.utc)


def notebook(path, *payloads):
    "A notebook whose one cell shows each payload as a binding display (a payload may be any JSON, or text)."
    outs = [dict(output_type='display_data', metadata={}, data={BINDING_MIME: p, 'text/plain': 'b'}) for p in payloads]
    path.write_text(json.dumps(dict(nbformat=4, nbformat_minor=5, metadata={},
                                    cells=[dict(cell_type='code', id='c', source='%boop', metadata={}, outputs=outs)])))
    return path


def test_each_value_is_checked_by_its_settings_rule_and_refusals_name_the_key():
    hostile = dict(model='qwen3:1.7b', context_size=-5, keep_alive='1e9', think=['h'], tools='rm -rf /;', auto='yes',
                   reuse=1, reasoning_model='a\x00b', reasoning=None, host='evil:1', version=1)
    refused = []
    assert clean_binding(hostile, refused, 'the binding saved in x.ipynb') == dict(model='qwen3:1.7b')
    assert [w.partition('`')[2].partition(' =')[0] for w in refused] == \
        ['reasoning_model', 'think', 'keep_alive', 'context_size', 'tools', 'auto', 'reuse']   # unknown keys: silently
    assert all(w.startswith('the binding saved in x.ipynb: `') and w.endswith('; ignored') for w in refused)
    assert clean_binding({1: 'x', None: 2, 'model': 'm'}) == dict(model='m')   # keys JSON cannot have, from Python
    assert binding_text({'context_size': 'lots', 'keep_alive': 5}) == 'boopiter binding · none (settings.ini and defaults apply)'


def test_a_stamp_from_the_far_future_is_ignored_and_never_overflows():
    for far in ('9999-12-31T23:59:59.999+00:00', '9999-12-31T23:59:59.999999-14:00', '2099-01-01T00:00:00.000+00:00'):
        assert clean_binding(dict(model='a', picked_at=far)) == dict(model='a')
        t = datetime.fromisoformat(stamp(dict(model='a', picked_at=far))['picked_at'])
        assert abs(t - now()) < timedelta(seconds=5)   # counts as no stamp: this pick is stamped now
    ahead = iso(now() + timedelta(hours=3))           # a clock a little ahead is believed
    assert stamp(dict(model='a', picked_at=ahead))['picked_at'] == iso(datetime.fromisoformat(ahead) + timedelta(milliseconds=1))
    for odd in ('0001-01-01T00:00:00+01:00', '1999-12-31T23:59:59+00:00', '2026-01-01T00:00:00', '2026-13-01T00:00:00+00:00',
                '~', '2026-01-01T00:00:00+00:00' + ' ' * 40, 20260101, None, ['2026-01-01T00:00:00+00:00']):
        assert 'picked_at' not in clean_binding(dict(picked_at=odd)) and stamp(dict(picked_at=odd))['picked_at']


def test_a_crafted_stamp_cannot_outrank_a_pick_made_after_it(tmp_path):
    real = stamp(dict(model='picked-by-you'))
    p = notebook(tmp_path/'n.ipynb', {'version': 1, **real}, dict(version=1, model='pinned', picked_at='9999-12-31T23:59:59.999+00:00'))
    assert saved_binding(p) == real   # the far-future one counts as unstamped, so the real pick is the newest
    p = notebook(tmp_path/'m.ipynb', dict(version=1, model='early', picked_at='0001-01-01T00:00:00+01:00'), dict(version=1, model='last'))
    assert saved_binding(p) == dict(model='last')   # neither is stamped: the last in notebook order


def test_saved_binding_survives_any_payload_and_says_what_it_ignored(tmp_path):
    deep = '[' * 5000 + ']' * 5000
    p = tmp_path/'deep.ipynb'
    p.write_text(f'{{"cells": [{{"cell_type": "code", "source": "", "outputs": [{{"output_type": "display_data", '
                 f'"metadata": {{}}, "data": {{"{BINDING_MIME}": {deep}}}}}]}}]}}')
    assert saved_binding(p) is None   # the file cannot be read: as if it had no binding
    p = notebook(tmp_path/'text.ipynb', '{"model": ' + deep + '}', json.dumps(dict(model='m', context_size=float('nan'))))
    assert saved_binding(p) == dict(model='m')   # JSON kept as text, nested too deep or holding NaN
    p = notebook(tmp_path/'n.ipynb', [1], 'x', 7, None, dict(model='ok', max_tokens=5, context_size=10**400, keep_alive='5'))
    b = saved_binding(p)
    assert isinstance(b, Binding) and b == dict(model='ok', keep_alive='5')
    assert b.refused == [f'the binding saved in n.ipynb: `context_size = {"1" + "0" * 56}...` is not a whole number of tokens '
                         'from 0 to 1048576; ignored']
    kept, warnings = screen_binding(b, load_settings(environ={}))
    assert kept == dict(model='ok', keep_alive='5') and warnings == b.refused   # on to `%boop status` and the prompt's note
    assert may_choose('ok', load_settings(environ={})) and not may_choose('anthropic/claude-opus-4', load_settings(environ={}))


def test_a_binding_that_passes_is_shown_as_it_was_saved():
    b = dict(model='qwen3:1.7b', reasoning=True, think='h', keep_alive='30s', context_size=32768, tools='kernel, files')
    data, _ = binding_bundle(b)
    assert data[BINDING_MIME] == dict(version=1, **b) and all(check_setting(k, v) for k,v in b.items())


def test_a_pick_stamp_counts_only_with_a_zone_and_a_believable_time():
    from boopiter_ext.core.binding import _AHEAD, _EARLIEST, _when
    now = datetime.now(timezone.utc)
    assert _when(now.isoformat()) == now
    assert _when(now.astimezone(timezone(timedelta(hours=-7))).isoformat()) == now   # another zone, the same instant
    assert _when(now.replace(tzinfo=None).isoformat()) is None                       # no zone: not comparable
    assert _when((now + _AHEAD + timedelta(seconds=30)).isoformat()) is None          # from the future: forged
    assert _when((now + _AHEAD - timedelta(seconds=30)).isoformat()) is not None      # a clock a little ahead
    assert _when(_EARLIEST.isoformat()) == _EARLIEST and _when((_EARLIEST - timedelta(seconds=1)).isoformat()) is None
    assert _when('0001-01-01T00:00+01:00') is None and _when(20260101) is None
    long = '2026-01-01T00:00:00.000000+00:00:00.000000'   # a valid ISO time, 42 characters: longer than any stamp made
    assert datetime.fromisoformat(long) and _when(long) is None and _when(long[:32]) is not None
