import pytest
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
