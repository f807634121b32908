import pytest
from hypothesis import given, settings as hsettings, strategies as st
import ollama  # noqa: F401  (its _client module holds the host parser we compare with)
from boopiter_ext.settings import DEFAULTS, load_settings, read_ini, project_ini, resolve_settings, ollama_url, public_url


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_defaults_when_nothing_is_set(tmp_path):
    s = load_settings(start=tmp_path, environ={'XDG_CONFIG_HOME': str(tmp_path/'none')})
    assert dict(s) == DEFAULTS
    assert set(s.source.values()) == {'default'}


def test_precedence_cell_binding_project_user_config_env(tmp_path):
    proj = write(tmp_path/'proj'/'settings.ini', '[boopiter]\nmodel = from-project\ntimeout = 7\n')
    write(tmp_path/'xdg'/'boopiter'/'settings.ini', '[boopiter]\nmodel = from-user\nkeep_alive = 3\nhost = userhost\n')
    env = {'XDG_CONFIG_HOME': str(tmp_path/'xdg'), 'OLLAMA_HOST': 'envhost:1'}
    nb_dir = tmp_path/'proj'/'nbs'/'deep'
    nb_dir.mkdir(parents=True)
    s = load_settings(start=nb_dir, environ=env, config=dict(model='from-config', clip=99))
    assert (s['model'], s.source['model']) == ('from-project', str(proj))
    assert s['timeout'] == 7.0 and s['keep_alive'] == '3' and s['clip'] == 99
    assert s['host'] == 'userhost'                               # the user's file beats the environment
    s = load_settings(start=nb_dir, environ=env, config=dict(timeout=5.0), runtime=dict(timeout=90.0))
    assert (s['timeout'], s.source['timeout']) == (90.0, '%config')     # typed in the notebook: beats the files
    assert load_settings(start=nb_dir, environ=env, binding=dict(model='bound'), runtime=dict(model='rt'))['model'] == 'bound'
    s = load_settings(start=nb_dir, environ=env, cell=dict(model='cell', think=None), binding=dict(model='bound'))
    assert (s['model'], s.source['model']) == ('cell', 'cell option')
    s = load_settings(start=tmp_path, environ={'OLLAMA_HOST': 'envhost:1', 'XDG_CONFIG_HOME': str(tmp_path/'none')})
    assert (s['host'], s.source['host']) == ('envhost:1', 'OLLAMA_HOST')


def test_project_ini_needs_a_boopiter_section_and_only_looks_up(tmp_path):
    write(tmp_path/'proj'/'settings.ini', '[boopiter]\nmodel = outer\n')
    write(tmp_path/'proj'/'inner'/'settings.ini', '[DEFAULT]\nlib_name = nbdev-style\n')  # not ours: keep walking
    assert project_ini(tmp_path/'proj'/'inner') == tmp_path/'proj'/'settings.ini'
    (tmp_path/'sibling').mkdir()
    assert project_ini(tmp_path/'sibling') is None          # a sibling's file never applies


def test_ini_refuses_secrets_unknown_keys_and_bad_types(tmp_path):
    p = write(tmp_path/'settings.ini', '[boopiter]\napi_key = sk-123\nmodle = typo\ntimeout = soon\nmax_tokens = 64\n')
    values, warnings = read_ini(p)
    assert values == {'max_tokens': 64}
    assert any('api_key' in w and 'environment' in w for w in warnings)
    assert any('modle' in w for w in warnings) and any('timeout' in w for w in warnings)
    assert 'sk-123' not in ' '.join(warnings)


def test_empty_values_do_not_override():
    s = resolve_settings(('cell option', dict(model=None, think='')), ('file', dict(model='m', think='h')))
    assert (s['model'], s['think']) == ('m', 'h')


@pytest.mark.parametrize('host,url', [
    ('', 'http://127.0.0.1:11434'), ('1.2.3.4', 'http://1.2.3.4:11434'), (':5678', 'http://127.0.0.1:5678'),
    ('example.com:56789', 'http://example.com:56789'), ('http://example.com', 'http://example.com:80'),
    ('https://example.com', 'https://example.com:443'), ('https://example.com:1/path/', 'https://example.com:1/path'),
    ('0.0.0.0', 'http://0.0.0.0:11434'), ('[::1]:99', 'http://[::1]:99'),
])
def test_ollama_url_matches_the_official_client(host, url):
    import sys
    official = sys.modules['ollama._client']._parse_host
    assert ollama_url(host) == url == official(host or None)


def test_public_url_drops_credentials():
    assert public_url('https://user:secret@host:1/v1') == 'https://host:1/v1'
    assert public_url('http://host:1') == 'http://host:1'
    assert public_url('user:secret@host:11434') == 'host:11434'


def test_a_project_file_may_not_choose_which_variable_is_sent_as_a_key(tmp_path):
    write(tmp_path/'proj'/'settings.ini', '[boopiter]\napi_base = http://their.server/v1\napi_key_env = AWS_SECRET_ACCESS_KEY\n')
    write(tmp_path/'xdg'/'boopiter'/'settings.ini', '[boopiter]\nreasoning = on\n')
    s = load_settings(start=tmp_path/'proj', environ={'XDG_CONFIG_HOME': str(tmp_path/'xdg')})
    assert s['api_base'] == 'http://their.server/v1' and (s['api_key_env'], s.source['api_key_env']) == ('', 'default')
    assert any('api_key_env' in w and 'your own settings' in w for w in s.warnings)
    assert s['reasoning'] is True
    write(tmp_path/'xdg'/'boopiter'/'settings.ini', '[boopiter]\napi_key_env = MY_KEY\nreasoning = maybe\n')
    s = load_settings(start=tmp_path/'proj', environ={'XDG_CONFIG_HOME': str(tmp_path/'xdg')})
    assert s['api_key_env'] == 'MY_KEY' and s['reasoning'] is False
    assert any('`reasoning = maybe` is not on or off' in w for w in s.warnings)


# -- every value is checked where it is read (issue 12, section 4)

def test_every_key_has_one_rule_and_every_default_passes_it():
    from boopiter_ext.settings import RULES, SETTINGS, check_setting
    assert list(RULES) == list(SETTINGS)
    assert all(check_setting(k, d) for k,d in DEFAULTS.items() if d != '')   # '' means "not set": never checked
    assert not check_setting('nope', 1) and not check_setting('timeout', [1])


@pytest.mark.parametrize('key,bad,good', [
    ('timeout', ['nan', 'inf', '-inf', '0', '-1', '1e308', '86401', 'soon', ''], ['0.5', '90', '86400']),
    ('context_size', ['-5', '1048577', '4096.0', '9' * 5000], ['0', '4096', '1048576']),
    ('max_tokens', ['-1', '99999999999999999999'], ['0', '64']),
    ('max_reply', ['-1', str(1 << 31)], ['0', '400000']),
    ('clip', ['-3'], ['0', '4000']), ('max_images', ['-1', '1001'], ['0', '8']),
    ('image_size', ['0', '8', '99999'], ['16', '1024']), ('max_rounds', ['0', '101', '-5'], ['1', '100']),
    ('deaddrop_timeout', ['nan', '-1', 'inf', '1e9'], ['0', '600']),
    ('keep_alive', ['soon', '5 m', '1e9', '9' * 20], ['5', '-1', '30s', '2h', '1.5']),
    ('think', ['max', 'L'], ['l', 'off']), ('cassette', ['bogus', 'REPLAY'], ['record', 'replay', 'off']),
    ('host', ['[::1', 'a b', 'x:0', 'x:70000', 'x:abc', 'ftp://x', 'http://ex ample', 'x\x07'],
     ['127.0.0.1:11434', ':5678', 'example.com', 'https://u:p@h.example:1/p', '[::1]:99']),
    ('api_base', ['localhost:8080', 'ftp://x/v1', 'http://', 'http://x:0/v1'], ['http://127.0.0.1:8080/v1', 'https://x']),
    ('api_key_env', ['MY-KEY', 'sk-123 456', '1ABC'], ['MY_KEY', '_X1']),
    ('model', ['a b', 'a\x00b', 'x' * 301], ['qwen3:1.7b', 'openai/gpt-4o', 'hf.co/a/b:Q4']),
    ('reasoning', ['maybe', '2'], ['on', 'off', 'true', '0']),
])
def test_a_settings_file_value_that_breaks_its_rule_is_refused_naming_the_file_and_key(tmp_path, key, bad, good):
    from boopiter_ext.settings import check_setting
    for v in bad:
        values, warnings = read_ini(write(tmp_path/'settings.ini', f'[boopiter]\n{key} = {v}\n'))
        assert key not in values, v
        [w] = warnings
        assert w.startswith(f'{tmp_path/"settings.ini"}: `{key} = ') and w.endswith('; ignored') and '\n' not in w
    for v in good:
        values, warnings = read_ini(write(tmp_path/'settings.ini', f'[boopiter]\n{key} = {v}\n'))
        assert warnings == [] and check_setting(key, values[key]), v


def test_a_refused_value_lets_the_next_layer_apply_and_each_layer_is_named(tmp_path):
    write(tmp_path/'proj'/'settings.ini', '[boopiter]\ntimeout = nan\ncontext_size = -5\nmax_tokens = 64\n')
    write(tmp_path/'xdg'/'boopiter'/'settings.ini', '[boopiter]\ntimeout = 60\n')
    env = {'XDG_CONFIG_HOME': str(tmp_path/'xdg'), 'OLLAMA_HOST': 'a b:1', 'BOOPITER_CASSETTE': 'bogus'}
    s = load_settings(start=tmp_path/'proj', environ=env, runtime=dict(timeout=float('nan'), clip=-1, model='qwen3'),
                      config=dict(context_size=1 << 40, max_rounds=3))
    assert (s['timeout'], s.source['timeout']) == (60.0, str(tmp_path/'xdg'/'boopiter'/'settings.ini'))   # past %config and the project
    assert (s['context_size'], s['clip'], s['host'], s['cassette']) == (0, 4000, '', '')                  # defaults
    assert (s['max_tokens'], s['max_rounds'], s['model']) == (64, 3, 'qwen3')                              # good values stay
    w = '\n'.join(s.warnings)
    for where, key in [(tmp_path/'proj'/'settings.ini', 'timeout'), (tmp_path/'proj'/'settings.ini', 'context_size'),
                       ('%config', 'timeout'), ('%config', 'clip'), ('c.BoopMagics', 'context_size'),
                       ('OLLAMA_HOST', 'host'), ('BOOPITER_CASSETTE', 'cassette')]:
        assert f'{where}: `{key} = ' in w, (where, key)
    assert len(s.warnings) == 7 and all('\n' not in x for x in s.warnings)
    assert s.notes[0].startswith('settings.ini: `timeout = nan` is not a number of seconds above 0')   # no path to save
    assert not any(str(tmp_path/'proj') in n for n in s.notes)
    assert load_settings(environ={'OLLAMA_HOST': ' 127.0.0.1:9 '})['host'] == '127.0.0.1:9'   # as the official client strips


def test_a_value_no_layer_applies_is_not_worth_a_warning(tmp_path):
    write(tmp_path/'settings.ini', '[boopiter]\ntimeout = 60\n')
    s = load_settings(start=tmp_path, config=dict(timeout=float('inf')), environ={})
    assert s['timeout'] == 60.0 and s.warnings == []   # the file wins: the broken default below it changes nothing


def test_warnings_quote_values_on_one_short_line_without_secrets(tmp_path):
    from boopiter_ext.settings import refusal
    assert refusal('x', 'model', 'a\x00b\n' + 'y' * 100) == \
        f'x: `model = a\\x00b\\n{"y" * 49}...` is not a model id (printable, no spaces, at most 300 characters); ignored'
    assert 'number too long' in refusal('x', 'max_tokens', 10**5000)
    assert 'secret' not in refusal('%config', 'host', 'http://me:secret@h:0') and '…@h:0' in refusal('x', 'host', 'me:secret@h:0')
    s = load_settings(runtime=dict(api_key_env='sk-live-123'), environ={})
    assert s['api_key_env'] == '' and 'sk-live' not in ' '.join(s.warnings) and '`api_key_env = …`' in s.warnings[0]


def test_an_unreadable_settings_file_is_one_warning(tmp_path):
    p = tmp_path/'settings.ini'
    p.write_bytes(b'[boopiter]\nmodel = caf\xe9\n')   # Latin-1, not UTF-8
    assert read_ini(p) == ({}, [f'{p}: unreadable (UnicodeDecodeError); ignored'])
    write(p, '[boopiter]\nmodel = a\nmodel = b\n')
    assert read_ini(p)[1] == [f'{p}: unreadable (DuplicateOptionError); ignored']


def test_ollama_url_refuses_a_host_it_cannot_parse():
    from boopiter_ext.errors import SettingsError
    for host in ('[::1', 'x:70000', 'a b', 'x:0'):
        with pytest.raises(SettingsError, match='is not a host, host:port or http'): ollama_url(host)


def test_on_off_settings_take_the_words_configparser_takes(tmp_path):
    import configparser
    for word, value in configparser.ConfigParser.BOOLEAN_STATES.items():
        assert read_ini(write(tmp_path/f'{word}.ini', f'[boopiter]\nauto = {word.upper()}\n')) == ({'auto': value}, [])
    values, warnings = read_ini(write(tmp_path/'maybe.ini', '[boopiter]\nauto = maybe\n'))
    assert values == {} and '`auto = maybe` is not on or off' in warnings[0]


def test_the_dead_drop_folder_is_yours_to_set_not_a_projects_and_both_sides_read_it(tmp_path, monkeypatch):
    "A cloned project cannot choose where your prompts are written; your settings.ini can, for the notebook and the CLI."
    import os, subprocess, sys
    from boopiter_ext.models import deaddrop as dd
    from boopiter_ext.models.catalog import deaddrop_source
    monkeypatch.delenv('BOOPITER_DEADDROP_DIR')
    proj = write(tmp_path/'proj'/'settings.ini', f'[boopiter]\ndeaddrop_dir = {tmp_path/"theirs"}\nclip = 900\n')
    env = {'XDG_CONFIG_HOME': str(tmp_path/'xdg'), 'HOME': str(tmp_path/'home')}
    s = load_settings(start=proj.parent, environ=env)
    assert (s['deaddrop_dir'], s.source['deaddrop_dir'], s['clip']) == ('', 'default', 900)   # the rest of it applies
    assert f'{proj}: `deaddrop_dir` ignored: set it in your own settings ({tmp_path}/xdg/boopiter/settings.ini) or ' \
           'BOOPITER_DEADDROP_DIR' in s.warnings
    user = write(tmp_path/'xdg'/'boopiter'/'settings.ini', f'[boopiter]\ndeaddrop_dir = {tmp_path/"mine"}\n')
    s = load_settings(start=proj.parent, environ=env)
    assert (s['deaddrop_dir'], s.source['deaddrop_dir']) == (str(tmp_path/'mine'), str(user))
    dd.new_session(dd.deaddrop_root(environ={}, setting=s['deaddrop_dir']), 'review')
    assert [e.id for e in deaddrop_source(None, s)] == ['deaddrop/review']        # the notebook's side lists it
    cli = subprocess.run([sys.executable, '-m', 'boopiter_ext.faces.deaddrop_cli', 'list'], capture_output=True, text=True,
                         cwd=proj.parent, env={**os.environ, **env})
    assert cli.returncode == 0 and cli.stdout.split('\t')[0] == 'review'          # and so does the responder's
    assert not (tmp_path/'theirs').exists()
    write(user, '[boopiter]\ndeaddrop_dir = rel\x07ative\n')                      # a rule applies to it like any key
    assert load_settings(start=proj.parent, environ=env)['deaddrop_dir'] == ''


# ---- the small helpers every warning and saved source goes through

def test_a_value_quoted_in_a_warning_is_one_short_line_without_a_password_or_key():
    from boopiter_ext.settings import _shown
    assert _shown('x' * 60) == 'x' * 60 and _shown('x' * 61) == 'x' * 57 + '...'
    assert _shown('http://me:pw@gpu.lan:1', 'host') == '…@gpu.lan:1' == _shown('me:pw@gpu.lan:1', 'api_base')
    assert _shown('me@example.org', 'model') == 'me@example.org'   # only where a URL's user and password would be
    assert _shown('sk-live-123', 'api_key_env') == '…'                # a key pasted where its variable's name goes
    assert _shown('me:pw@\x1fgpu.lan', 'host') == '…@\\x1fgpu.lan'    # escaped, and still no password
    assert _shown('a\nb\x00') == 'a\\nb\\x00' and _shown(3.5) == '3.5' and _shown(10 ** 5000) == 'a number too long to show'


@hsettings(max_examples=200, deadline=None)
@given(v=st.one_of(st.text(), st.integers(), st.floats(), st.none()), key=st.sampled_from(['', 'host', 'api_base', 'model']))
def test_any_value_is_quoted_printable_and_short(v, key):
    from boopiter_ext.settings import _shown
    s = _shown(v, key)
    assert s.isprintable() and len(s) <= 60 and '\n' not in s
    if key in ('host', 'api_base') and isinstance(v, str) and '@' in v: assert s.startswith('…@') and s.count('@') == 1


def test_where_a_value_came_from_is_saved_without_a_path():
    from boopiter_ext.settings import short_source
    assert [short_source(s) for s in ('', 'default', '/home/ana/proj/settings.ini', '/etc/boopiter/settings.ini',
                                      'cell option', 'notebook binding', '%config')] == [
        'auto', 'auto', 'settings.ini', 'settings.ini', 'cell option', 'notebook binding', '%config']


def test_an_address_is_a_url_or_a_bare_host_with_a_port_from_1_to_65535():
    from boopiter_ext.settings import _address
    ok = ['gpu.lan', ':8080', 'gpu.lan:65535', '[::1]:11434', 'http://gpu.lan', 'https://gpu.lan:1/v1',
          'http://:80']   # no host: the local one, as Ollama's own client reads OLLAMA_HOST
    bad = ['gpu.lan:0', 'a b', 'ftp://gpu.lan', 'http://gpu.lan:0', 'x' * 301, '']
    assert [_address(v) for v in ok] == [True] * len(ok) and [_address(v) for v in bad] == [False] * len(bad)
    assert not _address('gpu.lan', bare=False) and _address('http://gpu.lan', bare=False)   # a URL only, where one must be
    assert not _address('http://', bare=False) and not _address('http://:80', bare=False)   # with a host


def test_yours_holds_the_consent_keys_as_your_own_layers_alone_set_them(tmp_path):
    write(tmp_path/'proj'/'settings.ini', '[boopiter]\nauto = on\ntools = web\nmodel = theirs\n')
    write(tmp_path/'xdg'/'boopiter'/'settings.ini', '[boopiter]\ntools = kernel, pdf\n')
    env = {'XDG_CONFIG_HOME': str(tmp_path/'xdg'), 'BOOPITER_SYSTEM_SETTINGS': str(tmp_path/'etc.ini')}
    s = load_settings(start=tmp_path/'proj', environ=env, binding=dict(tools='notebook', auto=True))
    assert (s['auto'], s['tools']) == (True, 'notebook')                  # the precedence as ever; consent.py screens
    assert (s.yours['auto'], s.yours['tools']) == (False, 'kernel, pdf') and s.yours.source['tools'].endswith('settings.ini')
    s = load_settings(start=tmp_path/'proj', environ=env, cell=dict(auto=True), runtime=dict(tools='web'))
    assert (s.yours['auto'], s.yours.source['auto'], s.yours['tools']) == (True, 'cell option', 'web')
    write(tmp_path/'etc.ini', '[boopiter]\nauto = on\n')
    assert load_settings(start=tmp_path/'proj', environ=env).yours['auto'] is True   # the system file is yours too
    assert load_settings(start=tmp_path, environ={}, config=dict(auto=True)).yours['auto'] is True
