import logging, os, re, sys, threading, time
from pathlib import Path
import pytest
from boopiter_ext.tools import files, kernel, registry
from boopiter_ext.context.build import Cell
from boopiter_ext.tools.registry import (DEFAULT_SELECTION, NEVER_OFFERED, SOURCES, needs_consent, ToolContext, add_tool,
                                         get_tool_list, notebook_tools, register_tool_source, remove_tool, side_effect,
                                         tool_signature, tools_system_prompt)
from boopiter_ext.tools.files import file_tools
from boopiter_ext.tools.kernel import kernel_tools


@pytest.fixture(autouse=True)
def clean_registry():
    "Sources and notebook tools a test registers are gone afterwards."
    sources, selection, added = dict(SOURCES), dict(DEFAULT_SELECTION), notebook_tools()
    yield
    for d,saved in ((SOURCES, sources), (DEFAULT_SELECTION, selection)):
        d.clear()
        d.update(saved)
    for fn in notebook_tools(): remove_tool(fn.__name__)
    for fn in added: add_tool(fn)


def names(fns): return [f.__name__ for f in fns]


@pytest.fixture
def tree(tmp_path):
    "A notebook folder `nb` with files, skipped folders and symlinks, next to a `secret` folder outside it."
    root, out = tmp_path/'nb', tmp_path/'secret'
    (root/'sub'/'deep').mkdir(parents=True)
    out.mkdir()
    (out/'key.txt').write_text('TOPSECRET\n')
    (root/'a.py').write_text('import os\nx = 1\nprint(x)\n')
    (root/'notes.md').write_text('# Notes\nTODO: fix the loop\n')
    (root/'sub'/'b.py').write_text('def todo():\n    pass\n')
    (root/'sub'/'deep'/'c.txt').write_text('todo later\n')
    for d in ('.git', '__pycache__', 'node_modules', '.venv'):
        (root/d).mkdir()
        (root/d/'hidden.py').write_text('todo inside a skipped folder\n')
    (root/'.env').write_text('TODO=secret\n')
    (root/'blob.bin').write_bytes(b'\x00\x01todo\x00' * 10)
    (root/'leak.txt').symlink_to(out/'key.txt')       # a file link leading outside
    (root/'outdir').symlink_to(out, target_is_directory=True)   # a folder link leading outside
    (root/'alias.py').symlink_to(root/'a.py')          # a link that stays inside
    (root/'subalias').symlink_to(root/'sub', target_is_directory=True)
    return root


def ftools(root): return dict(zip(['list_files', 'read_file', 'search_files'], file_tools(root)))


# ---- confinement

@pytest.mark.parametrize('path', ['../secret/key.txt', 'sub/../../secret/key.txt', 'leak.txt', 'outdir/key.txt',
                                  '~', '~/key.txt', 'SECRET_ABS'])
def test_file_tools_refuse_paths_that_leave_the_notebook_folder(tree, path):
    if path == 'SECRET_ABS': path = str(tree.parent/'secret'/'key.txt')
    why = 'home-folder paths are not allowed' if path.startswith('~') else "is outside the notebook's folder"
    t = ftools(tree)
    for res in (t['read_file'](path), t['list_files'](path), t['search_files']('.', path)):
        assert res.startswith(f'error: `{path}`') and why in res and 'TOPSECRET' not in res


def test_links_and_absolute_paths_that_stay_inside_are_allowed(tree):
    t = ftools(tree)
    assert t['read_file']('alias.py') == '1: import os\n2: x = 1\n3: print(x)'
    assert t['read_file'](str(tree/'a.py'), 2, 2) == '2: x = 1'
    assert t['list_files']('subalias') == 'sub/b.py\nsub/deep/\nsub/deep/c.txt'   # paths name the real folder


def test_home_path_is_refused_even_if_home_is_the_notebook_folder(tree, monkeypatch):
    monkeypatch.setenv('HOME', str(tree))
    assert ftools(tree)['read_file']('~/a.py').startswith("error: `~/a.py`: home-folder paths are not allowed")


def test_refusals_and_problems_come_back_as_text(tree):
    t = ftools(tree)
    assert t['read_file']('missing.py') == 'error: no such file: missing.py'
    assert t['read_file']('sub') == 'error: sub is a folder; list_files lists it'
    assert t['read_file'](3) == 'error: path must be a string, not int'
    assert t['read_file']('a.py', 'x').startswith('error: ')
    assert t['read_file']('a.py', 9) == 'error: Invalid start_line 9. Valid range: 1-3'
    assert t['list_files']('a.py') == 'error: a.py is a file; read_file reads it'
    assert t['list_files']('nope') == 'error: no such folder: nope'
    assert t['search_files']('') == 'error: give the text to look for'
    assert t['search_files']('(unclosed') == "(no matches for '(unclosed')"   # plain text, never a regex


def test_symlink_loops_are_skipped_or_refused(tmp_path):
    (tmp_path/'loop').symlink_to(tmp_path/'loop')
    (tmp_path/'a').symlink_to(tmp_path/'b')
    (tmp_path/'b').symlink_to(tmp_path/'a')
    (tmp_path/'real.txt').write_text('hello\n')
    t = ftools(tmp_path)
    assert t['list_files']() == 'real.txt' and t['search_files']('hel') == 'real.txt:1: hello'
    assert t['read_file']('loop') == 'error: `loop` cannot be resolved (a symlink loop?)'
    assert t['list_files']('a') == 'error: `a` cannot be resolved (a symlink loop?)'


# ---- list_files

def test_list_files_lists_relative_paths_without_hidden_bulky_or_escaping_entries(tree):
    assert ftools(tree)['list_files']().splitlines() == [
        'a.py', 'alias.py', 'blob.bin', 'notes.md', 'sub/', 'sub/b.py', 'sub/deep/', 'sub/deep/c.txt', 'subalias/']
    assert ftools(tree)['list_files']('sub', '*.py') == 'sub/b.py'
    assert ftools(tree)['list_files']('.', '*.rs') == "(nothing under . matches '*.rs')"


def test_list_files_is_capped(tmp_path):
    for i in range(300): (tmp_path/f'f{i:03d}.txt').write_text('x')
    assert ftools(tmp_path)['list_files']().splitlines()[-1] == 'f299.txt'   # exactly the cap: nothing was left out
    for i in range(300, 310): (tmp_path/f'f{i:03d}.txt').write_text('x')
    lines = ftools(tmp_path)['list_files']().splitlines()
    assert len(lines) == 301 and lines[0] == 'f000.txt' and lines[299] == 'f299.txt'
    assert lines[-1] == '... stopped at 300 entries; narrow `path` or `pattern`'


def test_list_files_walks_depth_first_sorted_in_each_folder(tmp_path):
    for p in ('b/z.txt', 'b/a/y.txt', 'a-b.txt', 'c.txt'):
        (tmp_path/p).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path/p).write_text('x')
    assert ftools(tmp_path)['list_files']().splitlines() == ['a-b.txt', 'b/', 'b/a/', 'b/a/y.txt', 'b/z.txt', 'c.txt']


def test_list_files_and_search_files_stop_in_time_and_say_where(tree, monkeypatch):
    monkeypatch.setattr(files, '_MAX_SECONDS', 0)
    t = ftools(tree)
    assert t['list_files']() == '... stopped after 0 s, in ./; narrow `path` or `pattern`'
    assert t['list_files']('sub') == '... stopped after 0 s, in sub/; narrow `path` or `pattern`'
    assert t['search_files']('todo', 'sub') == '... stopped after 0 s, in sub/; narrow `path` or `glob`'
    assert t['search_files']('x = 1', 'a.py') == 'a.py:2: x = 1'        # one file: nothing to walk


def test_patterns_that_are_not_text_come_back_as_errors(tree):
    t = ftools(tree)
    assert t['list_files']('.', 3) == 'error: pattern must be a string, not int'
    assert t['search_files']('todo', '.', None) == 'error: glob must be a string, not NoneType'


def test_fifos_are_listed_but_never_opened(tmp_path):
    os.mkfifo(tmp_path/'pipe.txt')
    (tmp_path/'real.txt').write_text('hello\n')
    t, out = ftools(tmp_path), {}
    def run(): out.update(ls=t['list_files'](), grep=t['search_files']('hel'), read=t['read_file']('pipe.txt'))
    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(5)
    assert not th.is_alive(), 'a tool opened the FIFO and waits for a writer'
    assert out == dict(ls='pipe.txt\nreal.txt', grep='real.txt:1: hello', read='error: pipe.txt is not a regular file')


@pytest.mark.timed
def test_a_folder_of_100_000_files_never_holds_the_kernel(tmp_path, monkeypatch):
    for i in range(100):   # hard links: real files, made ten times faster than new ones (at most 65,000 links each)
        (d := tmp_path/f'd{i:03d}').mkdir()
        (src := d/'f0000.txt').write_text('some text\nmore\n')
        for j in range(1, 1000): os.link(src, d/f'f{j:04d}.txt')
    t = ftools(tmp_path)
    def timed(f, *args):
        "(result, wall seconds, CPU seconds of this process): costs compare in CPU time, deadlines in wall time."
        t0, c0 = time.perf_counter(), time.process_time()
        return f(*args), time.perf_counter() - t0, time.process_time() - c0
    walk = timed(lambda: sum(len(files) for _,_,files in os.walk(tmp_path)))[2]   # every name, once: the yardstick
    out, _, cpu = timed(t['list_files'])
    assert cpu < walk / 3, (cpu, walk)
    assert out.splitlines()[-1] == '... stopped at 300 entries; narrow `path` or `pattern`'
    out, took, _ = timed(t['list_files'], '.', '*.rs')   # matches nothing: the whole walk, or the time bound
    assert took < files._MAX_SECONDS + 1
    assert out == "(nothing under . matches '*.rs')" or re.fullmatch(r'\.\.\. stopped after 2 s, in d\d{3}/; .*', out)
    out, _, cpu = timed(t['search_files'], 'more')   # 200 matches need about 200 files read, not 100,000
    assert cpu < walk and out.splitlines()[-1] == '... stopped at 200 matches; narrow it'
    monkeypatch.setattr(files, '_MAX_SECONDS', 0.3)
    out, took, _ = timed(t['search_files'], 'needle')   # reads every file: stopped by time
    assert took < 3 and re.fullmatch(r'\.\.\. stopped after 0\.3 s, in d\d{3}/; narrow `path` or `glob`', out), out


# ---- read_file

def test_read_file_numbers_lines_and_takes_a_range(tree):
    t = ftools(tree)
    assert t['read_file']('sub/deep/c.txt') == '1: todo later'
    assert t['read_file']('a.py', 2) == '2: x = 1\n3: print(x)'
    assert t['read_file']('a.py', 1, 2) == '1: import os\n2: x = 1'
    assert type(t['read_file']('a.py')) is str
    (tree/'empty.txt').write_text('')
    assert t['read_file']('empty.txt') == '(empty file)'


def test_hidden_files_are_never_read_even_when_named(tree):
    (tree/'.env').write_text('OPENAI_API_KEY=sk-123\n')
    (tree/'.git').mkdir(exist_ok=True)
    (tree/'.git'/'config').write_text('[remote]\n')
    read = ftools(tree)['read_file']
    assert read('.env').startswith('error: `.env` is hidden') and 'sk-123' not in read('.env')
    assert read('.git/config').startswith('error:') and 'sk-123' not in ftools(tree)['search_files']('sk-1')


def test_a_regex_that_backtracks_for_ever_is_just_text(tmp_path):
    (tmp_path/'evil.txt').write_text('a' * 40 + '!\n')
    t0 = time.perf_counter()
    assert ftools(tmp_path)['search_files'](r'(a+)+$') == "(no matches for '(a+)+$')"
    assert time.perf_counter() - t0 < 1


def test_links_inside_the_folder_to_dot_files_are_never_listed_or_searched(tmp_path):
    (tmp_path/'.env').write_text('API_KEY=sk-secret123\n')
    (tmp_path/'config.txt').symlink_to(tmp_path/'.env')
    (tmp_path/'sub').mkdir()
    (tmp_path/'sub'/'notes.txt').symlink_to('../.env')
    t = ftools(tmp_path)
    assert 'secret123' not in t['search_files']('sk-') and 'config.txt' not in t['list_files']()
    assert t['read_file']('config.txt').startswith('error:')


def test_tools_never_shadow_builtins_and_never_come_from_command_modules():
    import os, subprocess
    for fn in (subprocess.run, os.system, eval):
        with pytest.raises((TypeError, ValueError)): add_tool(fn)
    def open(path:str)->str:
        "Shadows the builtin"
        return path
    with pytest.raises(TypeError): add_tool(open)


def test_read_file_refuses_binary_and_big_files(tree):
    t = ftools(tree)
    assert t['read_file']('blob.bin') == 'error: blob.bin is a binary file'
    (tree/'big.txt').write_text('line\n' * 200_001)   # 1,000,005 bytes
    assert t['read_file']('big.txt') == 'error: big.txt is over 1 MB, too big to read here'
    (tree/'ok.txt').write_text('line\n' * 199_999)
    assert t['read_file']('ok.txt', 199_999) == '199999: line'


# ---- search_files

def test_search_files_finds_matches_any_case_and_skips_what_it_should(tree):
    res = ftools(tree)['search_files']('todo')
    assert res.splitlines() == ['notes.md:2: TODO: fix the loop', 'sub/b.py:1: def todo():',
                                'sub/deep/c.txt:1: todo later']   # not .env, skipped folders, blob.bin or the links
    assert ftools(tree)['search_files']('todo', 'sub', '*.py') == 'sub/b.py:1: def todo():'
    assert ftools(tree)['search_files']('x = 1', 'a.py') == 'a.py:2: x = 1'
    assert ftools(tree)['search_files']('nowhere') == "(no matches for 'nowhere')"


def test_search_files_is_capped(tmp_path):
    (tmp_path/'many.txt').write_text('hit\n' * 250)
    lines = ftools(tmp_path)['search_files']('hit').splitlines()
    assert len(lines) == 201 and lines[199] == 'many.txt:200: hit'
    assert lines[-1] == '... stopped at 200 matches; narrow it'


def test_search_files_skips_big_files(tmp_path):
    (tmp_path/'big.txt').write_text('needle\n' + 'x' * 1_000_000)
    (tmp_path/'small.txt').write_text('needle\n')
    assert ftools(tmp_path)['search_files']('needle') == 'small.txt:1: needle'


# ---- kernel tools

class Shaped:
    shape = (3, 4)
    def __repr__(self): return 'Shaped(...)'

class BadRepr:
    def __repr__(self): raise RuntimeError('no repr for you')

class BadAttr:
    def __getattr__(self, name): raise RuntimeError('no attributes either')
    def __repr__(self): return 'BadAttr()'


def ktools(ns, cells=list): return dict(zip(['list_variables', 'show_cell'], kernel_tools(ns, cells)))


def test_list_variables_describes_user_variables_and_skips_the_rest():
    lv = ktools({})['list_variables']
    ns = dict(n=42, s='hello', xs=list(range(100)), arr=Shaped(), bad=BadRepr(), odd=BadAttr(), long='y' * 500,
              os=os, _private=1, __name__='__main__', In=[''], Out={}, exit=None, quit=None, get_ipython=len,
              list_variables=lv)
    lines = ktools(ns)['list_variables']().splitlines()
    assert [ln.split(':')[0] for ln in lines] == ['arr', 'bad', 'long', 'n', 'odd', 's', 'xs']
    assert 'n: int: 42' in lines and "s: str, len 5: 'hello'" in lines
    assert 'arr: Shaped, shape (3, 4): Shaped(...)' in lines
    assert any(ln.startswith('xs: list, len 100: [0, 1, 2,') for ln in lines)
    assert any(ln.startswith('bad: BadRepr: <') for ln in lines)   # the listing survives a failing repr
    assert 'odd: BadAttr: BadAttr()' in lines
    assert all(len(ln.split(': ', 2)[2]) <= 80 for ln in lines)
    assert ktools(ns)['list_variables']('X') == 'xs: list, len 100: [0, 1, 2, 3, 4, 5, 6, 7, ...]'
    assert ktools(ns)['list_variables']('zzz') == "(no variables matching 'zzz')"
    assert ktools({})['list_variables']() == '(no variables)'


def test_list_variables_skips_every_tool_this_module_makes(tree):
    ns = {f.__name__: f for f in file_tools(tree) + kernel_tools({}, list)}
    def mine(): "A user function"
    ns['mine'] = mine
    assert [ln.split(':')[0] for ln in ktools(ns)['list_variables']().splitlines()] == ['mine']


def test_list_variables_is_capped():
    out = ktools({f'v{i:03d}': i for i in range(230)})['list_variables']().splitlines()
    assert len(out) == 201 and out[-1] == '... 30 more; pass a `pattern`'


def test_show_cell_shows_recorded_cells_from_either_end():
    cells = [Cell('x = 1', exec_count=1),
             Cell('print(x)', outputs=[dict(output_type='stream', name='stdout', text='1\n')], exec_count=2),
             Cell('%%prompt\nWhat is x?', 'prompt', [dict(output_type='display_data', data={'text/plain': 'It is 1.'},
                                                          metadata={'boopiter': {'reply': True}})])]
    sc = ktools({}, lambda: cells)['show_cell']
    assert sc(0) == 'In [1]:\n```python\nx = 1\n```'
    assert sc(1) == sc(-2) == 'In [2]:\n```python\nprint(x)\n```\nOutput:\n```\n1\n```'
    assert sc() == 'Prompt:\nWhat is x?\n\nReply:\nIt is 1.'
    assert sc(3) == 'error: no cell 3; there are 3 (0 to 2, or -1 for the last)'
    assert sc(-4).startswith('error: no cell -4; there are 3') and sc('x').startswith("error: no cell 'x'")
    assert ktools({}, list)['show_cell']() == 'error: no cells have run yet'


# ---- sources, selection, notebook tools

def add_numbers(
    a:int,  # First number to add
    b:int,  # Second number to add
)->int:
    "Add two numbers together"
    return a + b


def test_default_sources_and_selection(tree):
    assert DEFAULT_SELECTION == {'kernel': True, 'files': True, 'notebook': False, 'web': False, 'pdf': False,
                                 'nbfiles': False, 'machine': False, 'ci': False}
    assert {n: needs_consent(n) for n in SOURCES} == {'kernel': False, 'files': False, 'notebook': True, 'web': True,
                                                      'pdf': False, 'nbfiles': True, 'machine': False, 'ci': True}
    assert {k: v[2] for k,v in list(SOURCES.items())[:5]} == {
        'kernel': 'Variables and cells of this kernel (read-only)',
        'files': "Files under the notebook's folder: list, read, search (read-only)",
        'notebook': "The notebook's cells: list, read, search; add and edit them (through the extension, on your word, "
                    "undoable)",
        'web': "Fetch a public web page as text (GET only; private addresses need `web_allow`)",
        'pdf': "Read PDFs under the notebook's folder as text (needs pypdf: `pip install pypdf`)"}
    ctx = ToolContext(tree, {'x': 1})
    assert names(get_tool_list(None, ctx)) == ['list_variables', 'show_cell', 'list_files', 'read_file', 'search_files']
    assert names(get_tool_list({'files': False}, ctx)) == ['list_variables', 'show_cell']
    assert names(get_tool_list({'kernel': False, 'files': True, 'nonsense': True}, ctx)) == [
        'list_files', 'read_file', 'search_files']
    assert get_tool_list({'kernel': False, 'files': False}, ctx) == []
    assert get_tool_list() == []          # no context: both built-in sources need one
    assert all(f.boopiter_tool is True for f in get_tool_list(None, ctx))


def test_context_tools_work_on_the_context(tree):
    ctx = ToolContext(str(tree), {'answer': 42}, lambda: [Cell('answer = 42', exec_count=1)])
    t = {f.__name__: f for f in get_tool_list(None, ctx)}
    assert isinstance(ctx.root, Path)
    assert t['list_variables']() == 'answer: int: 42'
    assert t['show_cell']() == 'In [1]:\n```python\nanswer = 42\n```'
    assert t['read_file']('sub/b.py', 1, 1) == '1: def todo():'


def test_never_offered_is_dropped_whatever_a_source_or_selection_says(caplog):
    def run_cmd(cmd:str)->str: "Run a shell command"
    def bash(cmd:str)->str: "Run bash"
    def safe_tool()->str: "Harmless"
    register_tool_source('evil', lambda ctx=None: [run_cmd, safe_tool, bash], default=True)
    assert {'run_cmd', 'bash', 'exec', 'eval', 'remote_launch', 'remote_status', 'remote_smoke_test', 'system', 'shell',
            'subprocess_run'} <= NEVER_OFFERED
    with caplog.at_level(logging.WARNING, logger='boopiter_ext.tools.registry'):
        assert names(get_tool_list()) == ['safe_tool']
        assert names(get_tool_list({'evil': True, 'kernel': True})) == ['safe_tool']
    assert "tool source 'evil' offered 'run_cmd', which is never offered" in caplog.text and "'bash'" in caplog.text
    assert get_tool_list({'evil': False}) == []


def test_registered_sources_selection_and_failures(caplog):
    def fetch_page(url:str)->str: "Fetch"
    register_tool_source('web', lambda ctx=None: [fetch_page], description='The web')
    assert DEFAULT_SELECTION['web'] is False and SOURCES['web'][2] == 'The web'
    assert get_tool_list() == [] and names(get_tool_list({'web': True})) == ['fetch_page']
    register_tool_source('needs', lambda ctx: [fetch_page], default=True)
    assert get_tool_list({'web': False}) == []                     # skipped: no context to give it
    assert names(get_tool_list({'kernel': False, 'files': False}, ToolContext('.'))) == ['fetch_page']
    register_tool_source('odd', lambda ctx=None: [lambda: 1, 'text', fetch_page], default=True)
    with caplog.at_level(logging.WARNING, logger='boopiter_ext.tools.registry'):
        assert names(get_tool_list({'web': False})) == ['fetch_page']
    assert "tool source 'odd' gave a non-tool 'text'; skipped" in caplog.text and 'a non-tool <function' in caplog.text
    register_tool_source('broken', lambda ctx=None: 1/0, default=True)
    with caplog.at_level(logging.WARNING, logger='boopiter_ext.tools.registry'):
        assert names(get_tool_list({'web': True})) == ['fetch_page']
    assert "tool source 'broken' failed and was skipped: ZeroDivisionError" in caplog.text
    with pytest.raises(TypeError, match='factory must be callable'): register_tool_source('x', [fetch_page])


def test_the_first_source_wins_a_name_clash():
    def clash()->str: "First"
    def clash2()->str: "Second"
    clash2.__name__ = 'clash'
    register_tool_source('one', lambda ctx=None: [clash], default=True)
    register_tool_source('two', lambda ctx=None: [clash2], default=True)
    assert get_tool_list() == [clash]
    assert get_tool_list({'one': False}) == [clash2]


def test_add_tool_as_function_and_decorator_dedupes_and_refuses():
    assert add_tool(add_numbers) is add_numbers and add_numbers.boopiter_tool is True
    @add_tool
    def shout(text:str)->str:
        "Upper-case text"
        return text.upper()
    assert shout('hi') == 'HI' and names(notebook_tools()) == ['add_numbers', 'shout']
    def add_numbers_v2(a:int, b:int)->int: "Newer"
    add_numbers_v2.__name__ = 'add_numbers'
    add_tool(add_numbers_v2)
    assert notebook_tools() == [add_numbers_v2, shout]
    with pytest.raises(TypeError, match='add_tool needs a function, not int'): add_tool(3)
    with pytest.raises(TypeError, match='a name the model can call'): add_tool(lambda x: x)
    def system(cmd): "Run"
    with pytest.raises(ValueError, match='`system` is never offered'): add_tool(system)
    remove_tool('shout')
    remove_tool(add_numbers_v2)
    assert notebook_tools() == []
    with pytest.raises(KeyError, match='no notebook tool named'): remove_tool('shout')


def test_notebook_tools_come_after_sources_and_replace_same_named_ones(tree):
    def read_file(path:str)->str: "My own reader"
    add_tool(add_numbers)
    add_tool(read_file)
    got = get_tool_list({'kernel': False}, ToolContext(tree))
    assert names(got) == ['list_files', 'read_file', 'search_files', 'add_numbers']
    assert got[1] is read_file
    assert names(get_tool_list({'kernel': False, 'files': False})) == ['add_numbers', 'read_file']


# ---- how the model reads tools

def test_tool_signature_reads_like_python_with_docments():
    assert tool_signature(add_numbers) == ('def add_numbers(\n'
                                           '    a:int,  # First number to add\n'
                                           '    b:int,  # Second number to add\n'
                                           ')->int:\n'
                                           '    "Add two numbers together"')
    def find(
        text:str,             # What to look for
        limit:int=10,         # Most results
        *,
        where:str|None=None,  # Folder
    )->list:                  # Matching lines
        """Find "text" somewhere.

        More detail the model does not need."""
    assert tool_signature(find) == ('def find(\n'
                                    '    text:str,  # What to look for\n'
                                    '    limit:int=10,  # Most results\n'
                                    '    *,\n'
                                    '    where:str | None=None,  # Folder\n'
                                    ')->list:  # Matching lines\n'
                                    '    "Find \\"text\\" somewhere."')
    def now(): pass
    assert tool_signature(now) == 'def now():\n    ...'


def test_side_effect_marks_the_tool_and_its_signature():
    @side_effect(r'\b(save|write)\b')
    def save_note(text:str)->str:
        "Save a note"
    assert save_note.boopiter_intent == r'\b(save|write)\b'
    sig = tool_signature(save_note)
    assert sig.startswith('# Changes something: call it only when the user asked for that')
    assert sig.endswith('def save_note(\n    text:str,\n)->str:\n    "Save a note"')
    assert not tool_signature(add_numbers).startswith('#')
    with pytest.raises(re.error, match=r'missing \)'): side_effect('(unclosed')   # where the tool is defined


TOOLS_PROMPT = """These Python functions are already defined in the user's Python kernel. To use one, write a \
```python block that only calls it, one call per line, with literal arguments or the names of the user's variables; \
then stop: once it has run (the user may decide whether it does), its output comes back in the next message. Do not \
import or redefine them. Answer plain questions in plain words without calling tools, and never call a tool the question \
does not need.

```python
def add_numbers(
    a:int,  # First number to add
    b:int,  # Second number to add
)->int:
    "Add two numbers together"

# Changes something: call it only when the user asked for that, in their own words
def save_note(
    text:str,
)->str:
    "Save a note"
```"""


def test_tools_system_prompt(tree):
    "Written out in full: the wording is the contract with small models, so a changed word should fail here."
    @side_effect(r'\bsave\b')
    def save_note(text:str)->str:
        "Save a note"
    assert tools_system_prompt([]) == '' and tools_system_prompt(None) == ''
    assert tools_system_prompt([add_numbers, save_note]) == TOOLS_PROMPT
    assert len(tools_system_prompt(get_tool_list(None, ToolContext(tree)) + [add_numbers])) < 3000   # stays short


def test_auto_and_consent_prompts_send_the_same_tools_system_prompt(shell, srv, monkeypatch):
    """One wording for both modes, saying both what auto mode does (the call runs, its output comes back) and what
    consent mode does (the user decides): a prompt in either mode extends the previous one's request."""
    from conftest import run
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    shell.run_line_magic('load_ext', 'boopiter_ext')
    run(shell, '%boop tools kernel off files off')
    shell.user_ns['add_numbers'] = add_tool(add_numbers)
    srv.script('No tools needed.')
    systems = []
    for flags in ('--auto', '', '--auto'):
        assert run(shell, f'%%prompt {flags} -m qwen3:1.7b\nHi?').success
        systems.append(srv.last_chat()['messages'][0]['content'])
    assert systems[0] == systems[1] == systems[2] and systems[0].endswith(tools_system_prompt([add_numbers]))
    assert 'once it has run (the user may decide whether it does), its output comes back in the next message' in systems[0]


def test_module_imports_nothing_heavy():
    import subprocess
    code = ('import sys, boopiter_ext.tools.registry; '
            'print(sorted(m for m in ("fastcore.docments", "fastcore.tools", "IPython", "numpy") if m in sys.modules))')
    assert subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout == '[]\n'


def test_public_names():
    for m in (registry, files, kernel):
        defined = {k for k,v in vars(m).items()
                   if not k.startswith('_') and getattr(v, '__module__', '') == m.__name__}
        assert defined == set(m.__all__) - {'SOURCES', 'DEFAULT_SELECTION', 'NEVER_OFFERED', 'SOURCE_LISTENERS'}, m.__name__
        assert all(hasattr(m, k) for k in m.__all__)


def test_the_kernels_own_callables_are_not_user_variables():
    import functools
    from boopiter_ext.tools.kernel import user_variables
    wrapped_open = functools.wraps(open)(lambda *a, **kw: open(*a, **kw))   # what ipykernel puts in the namespace
    ns = dict(open=wrapped_open, print=print, prices=[3, 4], shadow=lambda: 1)
    assert list(user_variables(ns)) == ['prices', 'shadow']
