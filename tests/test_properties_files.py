"""Generated input for what reads files someone else may have written: settings.ini, a notebook's binding, a cassette.

Each reader takes anything and gives back only values that pass their rules, or refuses in one line: never an
exception other than the documented one (`SettingsError` from `ollama_url`, `CassetteDrift` from `Cassette`).
Strategies: tests/strategies.py.
"""

import configparser, itertools, json, math
import pytest
from hypothesis import given, settings, strategies as st
from boopiter_ext.core.binding import (BINDING_KEYS, BINDING_MIME, binding_bundle, binding_text, clean_binding, newest,
                                       saved_binding, stamp)
from boopiter_ext.errors import CassetteDrift, SettingsError
from boopiter_ext.core.replay import Cassette, clean_model_info, clean_snapshot
from boopiter_ext.settings import DEFAULTS, SETTINGS, THINK_LEVELS, check_setting, ollama_url, read_ini, resolve_settings
from boopiter_ext.models.stream import Reply
from strategies import awkward_text, json_objects, json_values

pytestmark = pytest.mark.corpus   # generated inputs: coverage's tracer is paused (tests/conftest.py)

SOME = settings(max_examples=200, deadline=None)
_n = itertools.count()


@pytest.fixture(scope='module')
def folder(tmp_path_factory): return tmp_path_factory.mktemp('files')

def fresh(folder, name): return folder/f'{next(_n)}-{name}'   # a new path each example: readers cache by mtime


def one_line(warnings): return all(isinstance(w, str) and w and '\n' not in w for w in warnings)


# ---- settings.ini

def _ini_text(v)->bool:
    "Whether an ini file can hold `v`: configparser strips every line, and drops a next line that starts with # or ;."
    lines = v.split('\n')
    return all(ln == ln.strip() for ln in lines) and v == v.strip() and not any(ln[:1] in ('#', ';') for ln in lines[1:])


EXAMPLES = dict(host=['127.0.0.1:11434', 'localhost', ':5678', 'https://example.com:443', '[::1]:99', 'my-host.lan:8080'],
                api_base=['http://127.0.0.1:8080/v1', 'https://api.example.com/v1'], think=list(THINK_LEVELS),
                web_allow=['127.0.0.1:8000', 'intranet.example.com, 10.0.0.0/8', '[::1]:8888'],
                keep_alive=['5', '-1', '30s', '1.5h', '0'], cassette=['record', 'replay', 'off'],
                api_key_env=['MY_KEY', '_X1'], tools=['kernel, files', 'none', 'web'])
words = st.text(st.characters(codec='utf-8', exclude_categories=['Cs', 'Cc', 'Zl', 'Zp']), min_size=1, max_size=12)


def valid(key)->st.SearchStrategy:
    "Values of setting `key` that pass its rule and that an ini file can hold."
    typ = SETTINGS[key][0]
    if typ is bool: return st.booleans()
    if typ is int: return st.integers(0, 2**31).filter(lambda v: check_setting(key, v))
    if typ is float: return st.floats(0, 7 * 86_400).filter(lambda v: check_setting(key, v))
    texts = st.lists(st.one_of(words, st.sampled_from(['\n', ' ', ',', '\n\n'])), min_size=1, max_size=6).map(''.join)
    texts = st.one_of(st.sampled_from(EXAMPLES.get(key, ['x'])), texts)
    return texts.filter(lambda v: check_setting(key, v) and _ini_text(v))


@st.composite
def settings_values(draw)->dict:
    keys = draw(st.lists(st.sampled_from(list(SETTINGS)), unique=True, min_size=1, max_size=6))
    return {k: draw(valid(k)) for k in keys}


@SOME
@given(settings_values(), st.data())
def test_settings_written_to_an_ini_file_read_back_the_same(folder, values, data):
    def text(v):   # as a person writes them: any boolean word in any case, a longer value's lines indented
        if isinstance(v, bool):
            word = data.draw(st.sampled_from([w for w,b in configparser.ConfigParser.BOOLEAN_STATES.items() if b == v]))
            return data.draw(st.sampled_from([word, word.upper(), word.title()]))
        return str(v).replace('\n', '\n    ')
    path = fresh(folder, 'settings.ini')
    path.write_text('[boopiter]\n' + ''.join(f'{k} {data.draw(st.sampled_from(["=", " = ", ": "]))} {text(v)}\n'
                                             for k,v in values.items()), encoding='utf-8')
    assert read_ini(path) == (values, [])


ini_lines = st.one_of(
    st.tuples(st.sampled_from([*SETTINGS, 'api_key', 'MODEL', 'x']), st.sampled_from([' = ', '=', ': ', ' ']),
              st.one_of(awkward_text(20), st.sampled_from(['on', 'YES', 'nan', '1e999', '-1', '1_000', '%(x)s', '']))
              ).map(''.join),
    st.sampled_from(['[boopiter]', '[DEFAULT]', '[other]', '# c', '; c', '  indented', '[boopiter', '']), awkward_text(20))


@SOME
@given(st.one_of(st.lists(ini_lines, max_size=8).map(lambda ls: '\n'.join(['[boopiter]', *ls])), st.binary(max_size=80)))
def test_any_settings_file_gives_valid_values_or_one_line_warnings(folder, content):
    path = fresh(folder, 'settings.ini')
    if isinstance(content, bytes): path.write_bytes(content)
    else: path.write_text(content, encoding='utf-8', errors='surrogatepass')
    values, warnings = read_ini(path)
    assert all(v == '' or check_setting(k, v) and type(v) is SETTINGS[k][0] for k,v in values.items()), values
    assert one_line(warnings)
    assert not any('sk-' in w for w in warnings if 'api_key' in w)


@SOME
@given(st.lists(st.tuples(st.sampled_from(['cell option', 'notebook binding', '%config', 'settings.ini']),
                          json_objects(SETTINGS)), max_size=4, unique_by=lambda layer: layer[0]))
def test_any_layers_resolve_to_valid_values_with_their_source(layers):
    s = resolve_settings(*layers)
    for k, v in s.items():
        src = s.source[k]
        if src == 'default': assert v == DEFAULTS[k]
        else: assert v is next(layer[k] for name,layer in layers if name == src and k in layer)   # that very value (NaN too)
        if src not in ('default', 'cell option'): assert check_setting(k, v)
    assert one_line(s.warnings)


@SOME
@given(st.one_of(awkward_text(30), st.sampled_from(['[::1', 'http://x:99999', 'h:0', 'a@b:1', 'https://[::1]:1/v'])))
def test_ollama_url_gives_a_url_or_a_settings_error(host):
    try: url = ollama_url(host)
    except SettingsError as e: assert '\n' not in str(e)
    else: assert url.startswith(('http://', 'https://')) and check_setting('host', url)


# ---- the notebook's binding

binding_like = st.one_of(json_values(), json_objects((*BINDING_KEYS, 'picked_at', 'version')))


@SOME
@given(binding_like)
def test_a_saved_binding_is_cleaned_to_valid_values(data):
    refused = []
    b = clean_binding(data, refused)
    assert set(b) <= {*BINDING_KEYS, 'picked_at'}
    assert all(check_setting(k, v) for k,v in b.items() if k != 'picked_at')
    assert clean_binding(b) == b and one_line(refused)
    given_ = {k for k in BINDING_KEYS if isinstance(data, dict) and data.get(k) not in (None, '')}
    assert len(refused) == len(given_ - set(b))   # one warning for each value ignored
    bundle, _ = binding_bundle(data)
    json.dumps(bundle, allow_nan=False)
    assert binding_text(data).startswith('boopiter binding · ') and '\n' not in binding_text(data)
    picked = clean_binding(stamp(b))
    assert newest(b, picked) == picked   # a pick made now beats the saved one, whatever its stamp said


@SOME
@given(st.lists(binding_like, max_size=3), binding_like, st.booleans())
def test_a_notebook_file_yields_a_clean_binding_or_none(folder, outputs, meta, garble):
    nb = dict(nbformat=4, nbformat_minor=5, metadata={'boopiter': {'binding': meta}},
              cells=[dict(cell_type='code', source='', metadata={}, outputs=[
                  dict(output_type='display_data', metadata={}, data={BINDING_MIME: o if i % 2 else json.dumps(o)})
                  for i,o in enumerate(outputs)])])
    path = fresh(folder, 'nb.ipynb')
    text = json.dumps(nb)
    path.write_text(text[:len(text) // 2] if garble else text, encoding='utf-8', errors='surrogatepass')
    b = saved_binding(path)
    assert b is None or all(check_setting(k, v) for k,v in b.items() if k != 'picked_at') and one_line(b.refused)


# ---- cassettes and saved replies

SNAPSHOT_KEYS = ('answer', 'reasoning', 'note', 'status', 'info', 'chunks', 'reasoning_chunks', 'unclosed', 'ttft',
                 'reasoning_s', 'tokens_per_s')


@SOME
@given(st.one_of(json_values(), json_objects(SNAPSHOT_KEYS)))
def test_a_saved_reply_is_cleaned_to_a_snapshot_that_restores(data):
    snap = clean_snapshot(data)
    assert set(snap) <= {*SNAPSHOT_KEYS} and clean_snapshot(snap) == snap
    json.dumps(snap, allow_nan=False)
    assert all(isinstance(snap[k], str) for k in ('answer', 'reasoning', 'note') if k in snap)
    assert all(math.isfinite(snap[k]) and snap[k] >= 0 for k in ('ttft', 'reasoning_s', 'tokens_per_s') if k in snap)
    r = Reply.restore('m', snap)
    assert (r.answer, r.note) == (snap.get('answer', ''), snap.get('note', ''))


@SOME
@given(st.one_of(json_values(), json_objects(('capabilities', 'context_length', 'vision'))))
def test_what_a_model_said_of_itself_is_cleaned(data):
    info = clean_model_info(data, refused := [])
    assert set(info) <= {'capabilities', 'context_length', 'vision'} and 'context_length' in info
    assert info['context_length'] is None or check_setting('context_size', min(info['context_length'], 1 << 20))
    assert all(isinstance(c, str) and c.isprintable() for c in info.get('capabilities', []))
    assert {k for k,_,_ in refused} <= {'capabilities', 'context_length', 'vision'}


turns = st.fixed_dictionaries({}, optional=dict(
    digest=st.one_of(st.just('sha256:ab'), awkward_text(8), json_values(3)),
    model=st.one_of(st.just('qwen3:1.7b'), json_values(3)),
    reply=st.one_of(json_objects(SNAPSHOT_KEYS), json_values(4)), options=json_values(4)))
cassettes = st.fixed_dictionaries(
    dict(format=st.sampled_from(['boopiter-cassette', 'other']), version=st.sampled_from([1, 1.0, True, '1', 2])),
    optional=dict(models=st.one_of(st.dictionaries(st.one_of(st.just('qwen3:1.7b'), awkward_text(6)),
                                                   json_objects(('capabilities', 'context_length', 'vision')), max_size=3),
                                   json_values(4)),
                  auto_model=json_values(2), turns=st.one_of(st.lists(turns, max_size=4), json_values(3))))


@SOME
@given(st.one_of(cassettes.map(json.dumps), awkward_text(30), st.binary(max_size=60)))
def test_any_cassette_file_loads_clean_turns_or_is_refused_in_one_line(folder, content):
    path = fresh(folder, 'a.cassette.json')
    if isinstance(content, bytes): path.write_bytes(content)
    else: path.write_text(content, encoding='utf-8', errors='surrogatepass')
    try: c = Cassette(path)
    except CassetteDrift as e: assert '\n' not in str(e)
    else:
        assert one_line(c.warnings) and all(check_setting('model', m) for m in c.models)
        for digest, turn in c.turns.items():
            assert Reply.restore(turn['model'], c.reply(digest, turn['model'])).status
    rec = Cassette(path, recording=True)   # an unreadable cassette is set aside, and recording starts afresh
    rec.add('sha256:ff', 'qwen3:1.7b', {}, dict(answer='x'))
    assert Cassette(path).reply('sha256:ff', 'qwen3:1.7b')['answer'] == 'x'
