"""Consent without a kernel (issue 21, section 3): a notebook's binding or a project's settings.ini may propose auto-run
and the tool sources that act or reach outside, never grant them; your own layers, your clicks and your acceptances
do. The acceptances file is untrusted input: any JSON in it, another notebook's entry, a file too big or unreadable."""

import json, os, stat
import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st
from boopiter_ext.core.consent import (AUTO, Consent, consent_file, describe, read_accepted, screen, wanted,
                                       write_accepted)
from boopiter_ext.settings import load_settings
from boopiter_ext.tools.registry import ACTS_OR_REACHES_OUT, SOURCES, needs_consent, parse_selection, register_tool_source
from strategies import json_values

OUTWARD = ['notebook', 'web']   # the built-in sources that act or reach out, in menu order


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def layers(tmp_path, project='', user='', **kw):
    "Settings as a kernel in tmp/proj reads them: a project file and your own file (each its [boopiter] lines), `kw` layers."
    if project: write(tmp_path/'proj'/'settings.ini', '[boopiter]\n' + project)
    if user: write(tmp_path/'xdg'/'boopiter'/'settings.ini', '[boopiter]\n' + user)
    (tmp_path/'proj').mkdir(parents=True, exist_ok=True)
    return load_settings(start=tmp_path/'proj', environ={'XDG_CONFIG_HOME': str(tmp_path/'xdg')}, **kw)


def test_the_sources_that_act_or_reach_out_are_a_property_of_the_source():
    assert [n for n in SOURCES if needs_consent(n)] == OUTWARD + ['nbfiles', 'ci']   # files, kernel, pdf, machine read
    assert needs_consent('mcp-someday')                          # a source not known here: only you turn it on
    try:
        register_tool_source('calendar', lambda ctx: [], description='books meetings')   # acts: consent by default
        register_tool_source('glossary', lambda ctx: [], acts_or_reaches_out=False)
        assert needs_consent('calendar') and not needs_consent('glossary')
        assert wanted(True, 'calendar, glossary, files') == [AUTO, 'calendar']
    finally:
        for n in ('calendar', 'glossary'): SOURCES.pop(n, None); ACTS_OR_REACHES_OUT.discard(n)
        from boopiter_ext.tools.registry import DEFAULT_SELECTION
        for n in ('calendar', 'glossary'): DEFAULT_SELECTION.pop(n, None)


def test_what_is_wanted_and_how_it_is_said():
    assert wanted(False, '') == [] and wanted(True, 'none') == [AUTO]
    assert wanted('yes', 'web, notebook, pdf') == OUTWARD   # only `True` is auto-run
    assert describe(['auto', 'web']) == 'auto-run and the web tool'
    assert describe(['notebook', 'web']) == 'the notebook and web tools'
    assert describe(['auto', 'notebook', 'web']) == 'auto-run and the notebook and web tools'


def test_a_project_file_proposes_and_your_own_file_grants(tmp_path):
    s = layers(tmp_path, project='auto = on\ntools = kernel, files, web, notebook, pdf\n')
    assert (s['auto'], s['tools']) == (True, 'kernel, files, web, notebook, pdf')   # what the layers say, unscreened
    assert screen(s, set()) == ['auto', 'notebook', 'web'] == s.proposed
    assert (s['auto'], s['tools']) == (False, 'kernel, files, pdf')   # pdf reads inside the folder: proposable, granted
    assert s.consent == ("The project's settings.ini asks for auto-run and the notebook and web tools; allowed here: "
                         'kernel, files, pdf')
    mine = layers(tmp_path, project='auto = on\ntools = kernel, web, notebook\n', user='auto = on\ntools = web\n')
    assert screen(mine, set()) == ['notebook'] and (mine['auto'], mine['tools']) == (True, 'kernel, web')
    assert mine.consent.startswith("The project's settings.ini asks for the notebook tool; allowed here: kernel, web, auto-run")


def test_your_layers_grant_a_notebooks_binding_proposes(tmp_path):
    proposal = dict(auto=True, tools='kernel, files, web, notebook')
    s = layers(tmp_path, binding=proposal)
    assert screen(s, set()) == ['auto', 'notebook', 'web'] and s.consent.startswith('This notebook asks for')
    for i, granted in enumerate((dict(cell=dict(auto=True)), dict(runtime=dict(auto=True)), dict(config=dict(auto=True)),
                                 dict(user='auto = on\n'))):
        s = layers(tmp_path/f'grant{i}', binding=proposal, **granted)
        assert screen(s, set()) == OUTWARD and s['auto'] is True   # auto granted by that layer, tools still proposed
    s = layers(tmp_path/'both', binding=dict(auto=True), project='tools = web\n')
    assert screen(s, set()) == ['auto', 'web'] and s.consent.startswith("This notebook and the project's settings.ini ask")
    s = layers(tmp_path/'allowed', binding=proposal)
    assert screen(s, {'auto', 'web'}) == ['notebook'] and (s['auto'], s['tools']) == (True, 'kernel, files, web')
    s = layers(tmp_path/'less', binding=dict(tools='kernel'), user='tools = kernel, files, web\nauto = on\n')
    assert screen(s, set()) == [] and s['tools'] == 'kernel' and not s.consent   # a notebook may always ask for less


LAYERS = ['cell', 'binding', 'runtime', 'project', 'user', 'config', 'system']
tools_values = st.lists(st.sampled_from(['kernel', 'files', 'notebook', 'web', 'pdf', 'none', 'mcp']), max_size=4).map(', '.join)


@hsettings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(LAYERS), st.fixed_dictionaries({}, optional=dict(auto=st.booleans(), tools=tools_values))),
       st.sets(st.sampled_from([AUTO, *OUTWARD])))
@pytest.mark.heavy
def test_nothing_only_a_notebook_or_project_wants_applies_and_nothing_else_changes(tmp_path_factory, given_layers, allowed):
    tmp = tmp_path_factory.mktemp('layers')
    ini = lambda d: ''.join(f'{k} = {"on" if v is True else "off" if v is False else v}\n' for k,v in d.items())
    for name, path in (('project', tmp/'proj'/'settings.ini'), ('user', tmp/'xdg'/'boopiter'/'settings.ini'),
                       ('system', tmp/'etc'/'settings.ini')):
        if given_layers.get(name): write(path, '[boopiter]\n' + ini(given_layers[name]))
    (tmp/'proj').mkdir(exist_ok=True)
    env = {'XDG_CONFIG_HOME': str(tmp/'xdg'), 'BOOPITER_SYSTEM_SETTINGS': str(tmp/'etc'/'settings.ini')}
    kw = dict(cell=given_layers.get('cell'), binding=given_layers.get('binding'), runtime=given_layers.get('runtime'),
              config=given_layers.get('config'))
    s = load_settings(start=tmp/'proj', environ=env, **kw)
    raw = dict(s)
    yours = load_settings(start=tmp/'nowhere', environ=env, **{**kw, 'binding': None})   # no binding, no project file
    refused = screen(s, allowed)
    mine = set(wanted(yours['auto'], yours['tools'])) | allowed
    assert set(wanted(s['auto'], s['tools'])) <= mine                       # every consent item on is yours or allowed
    assert set(refused) == set(wanted(raw['auto'], raw['tools'])) - mine    # exactly the rest was turned off, and said
    assert bool(s.consent) == bool(refused)
    before = parse_selection(raw['tools']) or {}
    after = parse_selection(s['tools']) or {}
    assert {n for n in before if before[n] and not needs_consent(n)} == {n for n in after if after[n] and not needs_consent(n)}
    assert {k: v for k,v in s.items() if k not in ('auto', 'tools')} == {k: v for k,v in raw.items() if k not in ('auto', 'tools')}


# -- the acceptances file: untrusted input

def test_an_acceptance_applies_to_its_notebook_only_and_covers_only_what_it_names(tmp_path):
    path, nb, other = tmp_path/'consent.json', tmp_path/'a'/'nb.ipynb', tmp_path/'b'/'nb.ipynb'
    write_accepted(path, nb, {'auto', 'web'})
    assert read_accepted(path, nb) == ({'auto', 'web'}, [])
    assert read_accepted(path, other) == (set(), [])                 # another notebook's acceptance is not this one's
    assert read_accepted(path, tmp_path/'a'/'..'/'a'/'nb.ipynb')[0] == {'auto', 'web'}   # by its real path
    (tmp_path/'link.ipynb').symlink_to(nb)
    assert read_accepted(path, tmp_path/'link.ipynb')[0] == {'auto', 'web'}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    s = layers(tmp_path, binding=dict(auto=True, tools='kernel, web, notebook'))
    assert Consent(path).screen(s, nb) == ['notebook']               # a proposal asking for more needs a new click
    assert 'This notebook asks for the notebook tool' in s.notes[-1] and '`%boop allow`' in s.notes[-1]
    s = layers(tmp_path, binding=dict(auto=True, tools='kernel, web, notebook'))
    assert Consent(path).screen(s, other) == ['auto', 'notebook', 'web']
    write_accepted(path, other, {'notebook'})
    assert read_accepted(path, nb)[0] == {'auto', 'web'} and read_accepted(path, other)[0] == {'notebook'}
    write_accepted(path, nb, set())   # nothing accepted: its entry goes, the other notebook's stays
    assert list(json.loads(path.read_text())['notebooks']) == [str(other.resolve())]


items = st.one_of(st.sampled_from([AUTO, 'web', 'notebook', 'files', 'pdf', 'rm', '']), json_values(2))
entries = st.one_of(json_values(), st.fixed_dictionaries(dict(accepted=st.one_of(json_values(), st.lists(items)))))
notebooks = st.one_of(json_values(), st.dictionaries(st.sampled_from(['NB', 'OTHER', 'nb.ipynb', '']), entries))
files = st.one_of(json_values(), st.fixed_dictionaries(dict(version=st.sampled_from([1, 1.0, '1', 2, True]), notebooks=notebooks)))


@hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files)
@pytest.mark.heavy
def test_any_acceptances_file_is_read_without_raising_and_grants_only_what_it_says_for_this_notebook(tmp_path_factory, data):
    tmp = tmp_path_factory.mktemp('consent')
    nb, path = tmp/'nb.ipynb', tmp/'consent.json'
    text = json.dumps(data).replace('"NB"', json.dumps(str(nb.resolve()))).replace('"OTHER"', json.dumps(str(tmp/'o.ipynb')))
    path.write_text(text)
    items, warnings = read_accepted(path, nb)
    assert items <= {AUTO, *OUTWARD} and all(w and '\n' not in w for w in warnings)
    entry = data.get('notebooks', {}).get('NB') if isinstance(data, dict) and isinstance(data.get('notebooks'), dict) else None
    ok = isinstance(data, dict) and type(data.get('version')) is int and data['version'] == 1
    expected = ({i for i in entry['accepted'] if isinstance(i, str) and i in (AUTO, *OUTWARD)}
                if ok and isinstance(entry, dict) and isinstance(entry.get('accepted'), list) else set())
    assert items == expected
    write_accepted(path, nb, {'web'})                                    # a click still writes a good file over it
    assert read_accepted(path, nb) == ({'web'}, [])


def test_a_file_that_is_no_acceptances_file_is_one_line_and_grants_nothing(tmp_path):
    nb, path = tmp_path/'nb.ipynb', tmp_path/'consent.json'
    for raw, said in ((b'{"version": 1, "notebooks": {', 'unreadable (JSONDecodeError)'), (b'[1, 2]', 'not a boopiter consent file'),
                      (b'{"version": true, "notebooks": {}}', 'not a boopiter consent file'), (b'\xff\xfe{', 'unreadable'),
                      (b'[' * 100_000 + b']' * 100_000, 'unreadable (RecursionError)')):
        path.write_bytes(raw)
        items, warnings = read_accepted(path, nb)
        assert items == set() and len(warnings) == 1 and said in warnings[0] and str(path) in warnings[0]
    path.write_text(json.dumps(dict(version=1, notebooks={str(nb.resolve()): dict(accepted=['web', 'rm -rf', 7])})))
    assert read_accepted(path, nb)[0] == {'web'} and "'rm -rf', 7 ignored" in read_accepted(path, nb)[1][0]
    path.write_text(' ' * (2 << 20))
    assert read_accepted(path, nb)[1] == [f'{path}: larger than 1,048,576 bytes; ignored']
    assert read_accepted(tmp_path/'absent.json', nb) == (set(), []) and read_accepted(path, None) == (set(), [])


def test_clicks_are_remembered_code_lasts_the_kernel_and_a_click_never_launders_a_proposal(tmp_path):
    path, nb = tmp_path/'consent.json', tmp_path/'nb.ipynb'
    c = Consent(path)
    c.picked(dict(model='qwen3:1.7b'), nb, remember=True)          # a click on something else accepts nothing
    assert not path.exists() and c.granted == set()
    c.picked(dict(tools='kernel, web'), nb)                          # code you ran: this kernel only
    assert c.granted == {'web'} and not path.exists()
    c.picked(dict(auto=True), nb, remember=True)                     # a click: remembered for the notebook
    assert read_accepted(path, nb)[0] == {'auto'} and c.granted == {'auto', 'web'}
    c.picked(dict(tools='kernel, files'), nb, remember=True)         # a click that turns web off takes it back
    assert c.granted == {'auto'} and read_accepted(path, nb)[0] == {'auto'}
    c.picked(dict(auto=None), nb, remember=True)                     # removing the pick takes auto-run back too
    assert c.granted == set() and not read_accepted(path, nb)[0]
    assert c.accept(['web', 'auto', 'rm', 7, ['x']], nb) == ['auto', 'web'] and read_accepted(path, nb)[0] == {'auto', 'web'}
    assert Consent(path).accept(['notebook']) == ['notebook'] and read_accepted(path, nb)[0] == {'auto', 'web'}   # no nb
    assert c.forget(nb) == ['auto', 'web'] and c.granted == set() and read_accepted(path, nb)[0] == set()


def test_the_acceptances_file_lives_beside_your_settings():
    assert consent_file({'XDG_CONFIG_HOME': '/x'}).as_posix() == '/x/boopiter/consent.json'
