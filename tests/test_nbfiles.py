"""The `nbfiles` tool source (boopiter_ext/tools/nbfiles.py): reading and editing other notebooks on disk.

Every change is checked by reading the file back with nbformat and validating it; refusals are one `error:` line and
leave the file as it was, byte for byte.
"""

import json, os, time
import nbformat
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from fastcore.docments import docments
from boopiter_ext.context.build import HIDE_TAG, Hidden
from boopiter_ext.tools import nbfiles
from boopiter_ext.tools.guards import INTENT_ATTR
from boopiter_ext.tools.kernel import is_tool
from boopiter_ext.tools.nbfiles import NB_EDIT_INTENT, nbfile_tools, nbfiles_source
from boopiter_ext.tools.registry import ToolContext, tool_signature
from strategies import awkward_text

READERS, CHANGERS = ('read_nb', 'grep_nb'), ('edit_nb', 'patch_nb_cell', 'insert_cells', 'add_nb_cell')


def cell(source, id, kind='code', tags=(), outputs=(), count=None):
    c = dict(cell_type=kind, id=id, metadata=dict(tags=list(tags)) if tags else {}, source=source)
    return dict(c, outputs=list(outputs), execution_count=count) if kind == 'code' else c


def write(path, cells, minor=5):
    "A notebook file as Jupyter writes it (nbformat's formatting), without nbformat's own checks."
    if minor < 5: cells = [{k: v for k,v in c.items() if k != 'id'} for c in cells]
    nb = dict(cells=cells, metadata={}, nbformat=4, nbformat_minor=minor)
    path.write_text(json.dumps(nb, indent=1, sort_keys=True) + '\n')
    return path


OUT = dict(output_type='stream', name='stdout', text='hello\n')
CELLS = [cell('x = 1\nprint(x)', 'a1', outputs=[OUT], count=3), cell('# Title\nsome text', 'm1', 'markdown'),
         cell('token = "sk-secret"', 'h1', tags=[HIDE_TAG]), cell('y = x + 1', 'b2')]


def tools(root, open_file=lambda: None, hidden=Hidden):
    return {f.__name__: f for f in nbfile_tools(root, open_file, hidden)}


@pytest.fixture
def nb(tmp_path):
    "(the tools over tmp_path, the notebook `o.ipynb` there)"
    return tools(tmp_path), write(tmp_path/'o.ipynb', CELLS)


def read_back(p):
    got = nbformat.read(p, as_version=nbformat.NO_CONVERT)
    nbformat.validate(got)
    return got


def sources(p): return {c.id: c.source for c in read_back(p).cells}


# ---- reading

def test_read_nb_shows_ids_types_and_sources_and_outputs_only_when_full(nb):
    t, p = nb
    text = t['read_nb']('o.ipynb')
    assert text == '--- cell a1 · code ---\nx = 1\nprint(x)\n--- cell m1 · markdown ---\n# Title\nsome text\n' \
                   '--- cell b2 · code ---\ny = x + 1'
    assert 'hello' in t['read_nb']('o.ipynb', full=True) and '--- outputs ---\nhello\n--- cell m1' in t['read_nb']('o.ipynb', full=True)
    assert t['read_nb']('o.ipynb', cell_ids=['b2']) == '--- cell b2 · code ---\ny = x + 1'
    assert t['read_nb']('o.ipynb', cell_ids='m1').startswith('--- cell m1')
    assert t['read_nb']('o.ipynb', cell_ids=['nope']).startswith("error: no cell with id 'nope'")


def test_hidden_cells_are_never_read_searched_edited_or_anchors(nb):
    t, p = nb
    before = p.read_bytes()
    assert 'secret' not in t['read_nb']('o.ipynb', full=True) and 'h1' not in t['read_nb']('o.ipynb')
    assert t['grep_nb']('o.ipynb', 'sk-|token') == "(no line of o.ipynb matches 'sk-|token')"
    assert t['read_nb']('o.ipynb', cell_ids=['h1']).startswith("error: no cell with id 'h1'")
    for r in (t['edit_nb']('o.ipynb', 'h1', 'sk', 'x'), t['patch_nb_cell']('o.ipynb', 'h1', 'x'),
              t['insert_cells']('o.ipynb', 'h1', ['x']), t['add_nb_cell']('o.ipynb', 'x', after_id='h1')):
        assert r == "error: no cell with id 'h1' in o.ipynb; read_nb lists them"
    assert p.read_bytes() == before


def test_cells_hidden_in_the_open_notebook_are_hidden_in_its_copies(tmp_path):
    write(tmp_path/'copy.ipynb', [cell('a = 1', 'c1'), cell('key = 2', 'c2'), cell('b = 3', 'c3')])
    t = tools(tmp_path, hidden=lambda: Hidden(ids=frozenset({'c1'}), sources=frozenset({'key = 2'})))
    assert t['read_nb']('copy.ipynb') == '--- cell c3 · code ---\nb = 3'


def test_grep_nb_names_cells_and_lines_with_context(nb):
    t, _ = nb
    assert t['grep_nb']('o.ipynb', r'x\b') == 'a1: x = 1\na1: print(x)\nb2: y = x + 1'
    assert t['grep_nb']('o.ipynb', 'print', line_numbers=True) == 'a1:2: print(x)'
    assert t['grep_nb']('o.ipynb', '^some', context=1, line_numbers=True) == 'm1-1- # Title\nm1:2: some text'
    assert t['grep_nb']('o.ipynb', r'^x|^y', context=1) == 'a1: x = 1\na1- print(x)\n--\nb2: y = x + 1'
    assert t['grep_nb']('o.ipynb', 'zzz') == "(no line of o.ipynb matches 'zzz')"


def test_bad_patterns_and_arguments_come_back_as_one_error_line(nb):
    t, _ = nb
    for args in [('(',), ('a{2,1}',), ('',), (None,), ('x' * 1001,), ('x', -1), ('x', 11), ('x', 'a')]:
        r = t['grep_nb']('o.ipynb', *args)
        assert r.startswith('error: ') and '\n' not in r, (args, r)
    assert t['grep_nb']('o.ipynb', '(').startswith('error: bad pattern')


def test_a_pattern_that_backtracks_for_ever_is_stopped(tmp_path, monkeypatch):
    write(tmp_path/'e.ipynb', [cell('a' * 40 + '!', 'e1')])
    monkeypatch.setattr(nbfiles, '_MAX_SECONDS', 0.5)
    t0 = time.monotonic()
    assert tools(tmp_path)['grep_nb']('e.ipynb', r'(a+)+$').startswith('error: the pattern ran over 0.5 s')
    assert time.monotonic() - t0 < 3


def test_listings_are_capped_and_say_so(tmp_path):
    write(tmp_path/'big.ipynb', [cell(f'v{i} = {i}', f'c{i}') for i in range(250)])
    t = tools(tmp_path)
    text = t['read_nb']('big.ipynb')
    assert text.count('--- cell ') == 200 and text.endswith('... 50 more cells; pass cell_ids')
    hits = t['grep_nb']('big.ipynb', '=').splitlines()
    assert len(hits) == 101 and hits[-1] == '... stopped at 100 matches; narrow the pattern'
    write(tmp_path/'long.ipynb', [cell('x' * 150_000, 'l1')])
    assert t['read_nb']('long.ipynb').endswith('... cut at 100,000 characters; pass cell_ids')


# ---- changing

def test_edit_nb_replaces_one_occurrence_clears_outputs_and_keeps_the_rest_byte_for_byte(tmp_path):
    p = tmp_path/'o.ipynb'
    nbformat.write(nbformat.from_dict(json.loads(json.dumps(dict(cells=CELLS, metadata={}, nbformat=4, nbformat_minor=5)))), p)
    r = tools(tmp_path)['edit_nb']('o.ipynb', 'a1', 'x = 1', 'x = 10')
    assert r == 'changed cell a1 of o.ipynb; its outputs and execution count were cleared (they no longer match its source)'
    got = read_back(p)
    assert got.cells[0].source == 'x = 10\nprint(x)' and got.cells[0].outputs == [] and got.cells[0].execution_count is None
    want = nbformat.from_dict(json.loads(json.dumps(dict(cells=CELLS, metadata={}, nbformat=4, nbformat_minor=5))))
    want.cells[0].update(source='x = 10\nprint(x)', outputs=[], execution_count=None)
    assert p.read_text() == nbformat.writes(want) + '\n'   # as nbformat writes it: the diff is the cell alone


def test_edit_nb_needs_exactly_one_occurrence(nb):
    t, p = nb
    before = p.read_bytes()
    assert t['edit_nb']('o.ipynb', 'a1', 'zzz', 'y').startswith('error: old_str occurs 0 times in cell a1 of o.ipynb')
    assert t['edit_nb']('o.ipynb', 'a1', 'x', 'y').startswith('error: old_str occurs 2 times in cell a1 of o.ipynb')
    assert t['edit_nb']('o.ipynb', 'a1', '', 'y').startswith('error: ')
    assert t['edit_nb']('o.ipynb', 'zz', 'x', 'y').startswith("error: no cell with id 'zz'")
    assert p.read_bytes() == before


def test_patch_nb_cell_replaces_a_whole_source(nb):
    t, p = nb
    assert t['patch_nb_cell']('o.ipynb', 'm1', '# New') == 'changed cell m1 of o.ipynb'   # markdown: nothing to clear
    assert sources(p) == {'a1': 'x = 1\nprint(x)', 'm1': '# New', 'h1': 'token = "sk-secret"', 'b2': 'y = x + 1'}
    assert t['patch_nb_cell']('o.ipynb', 'b2', 'y = 2') == 'changed cell b2 of o.ipynb'   # no outputs: none cleared
    assert t['patch_nb_cell']('o.ipynb', 'b2', 'y = 2').endswith('already holds that source; nothing was written')
    assert read_back(p).cells[0].outputs   # the other cells keep theirs


def test_insert_cells_go_below_the_anchor_with_fresh_ids_and_the_export_pragma(nb):
    t, p = nb
    r = t['insert_cells']('o.ipynb', 'a1', ['def f(): pass', '#| export\ng = 2', '#|export\nh = 3'], export=True)
    cells = read_back(p).cells
    new = cells[1:4]
    assert r == f'added 3 cells to o.ipynb: {new[0].id}, {new[1].id}, {new[2].id}'
    assert [c.source for c in new] == ['#| export\ndef f(): pass', '#| export\ng = 2', '#|export\nh = 3']   # never two
    assert len({c.id for c in cells}) == 7 and all(c.cell_type == 'code' and c.outputs == [] for c in new)
    assert t['insert_cells']('o.ipynb', 'b2', 'z = 3').startswith('added 1 cell to o.ipynb')
    assert read_back(p).cells[-1].source == 'z = 3'
    for bad in ([], [1], ['x'] * 51, None):
        assert t['insert_cells']('o.ipynb', 'a1', bad).startswith('error: ')


def test_add_nb_cell_at_the_end_or_below_a_cell_with_a_given_id(nb):
    t, p = nb
    assert t['add_nb_cell']('o.ipynb', 'end') .startswith('added 1 cell to o.ipynb: ')
    assert t['add_nb_cell']('o.ipynb', '## Notes', cell_type='markdown', after_id='a1', cell_id='notes-1') == \
        'added 1 cell to o.ipynb: notes-1'
    cells = read_back(p).cells
    assert (cells[1].id, cells[1].cell_type, cells[1].source) == ('notes-1', 'markdown', '## Notes')
    assert cells[-1].source == 'end'
    assert t['add_nb_cell']('o.ipynb', 'f()', export=True, cell_id='e_1').endswith('e_1')
    assert read_back(p).cells[-1].source == '#| export\nf()'
    before = p.read_bytes()
    for kw in [dict(cell_id='notes-1'), dict(cell_id='h1'), dict(cell_id='a b'), dict(cell_id='x' * 65), dict(cell_id=''),
               dict(cell_id=5), dict(cell_type='heading'), dict(cell_type='markdown', export=True), dict(after_id='nope')]:
        r = t['add_nb_cell']('o.ipynb', 'x', **kw)
        assert r.startswith('error: ') and '\n' not in r, (kw, r)
    assert t['add_nb_cell']('o.ipynb', None).startswith('error: ')
    assert p.read_bytes() == before


def test_notebooks_before_nbformat_4_5_get_ids_that_stay(tmp_path):
    p = write(tmp_path/'old.ipynb', [cell('a = 1', 'x'), cell('b = 2', 'y')], minor=4)
    t = tools(tmp_path)
    assert t['read_nb']('old.ipynb') == '--- cell cell-0 · code ---\na = 1\n--- cell cell-1 · code ---\nb = 2'
    assert t['read_nb']('old.ipynb') == t['read_nb']('old.ipynb')
    assert t['edit_nb']('old.ipynb', 'cell-1', 'b', 'c').endswith('(cells without a unique id were given one: the notebook is nbformat 4.5 now)')
    got = read_back(p)
    assert got.nbformat_minor == 5 and [(c.id, c.source) for c in got.cells] == [('cell-0', 'a = 1'), ('cell-1', 'c = 2')]


def test_missing_and_duplicate_ids_are_given_new_ones(tmp_path):
    cells = [cell('a', 'same'), cell('b', 'same'), {k: v for k,v in cell('c', 'z').items() if k != 'id'}]
    write(tmp_path/'d.ipynb', cells)
    assert tools(tmp_path)['read_nb']('d.ipynb').splitlines()[::2] == \
        ['--- cell same · code ---', '--- cell cell-1 · code ---', '--- cell cell-2 · code ---']


def test_the_file_keeps_its_mode(nb):
    t, p = nb
    p.chmod(0o640)
    assert t['patch_nb_cell']('o.ipynb', 'b2', 'y = 3').startswith('changed')
    assert p.stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize('error', [OSError(28, 'No space left on device'), KeyboardInterrupt()])
def test_a_failed_write_leaves_the_notebook_as_it_was_and_no_temporary_file(nb, monkeypatch, error):
    t, p = nb
    before, names = p.read_bytes(), sorted(os.listdir(p.parent))
    def fail(*a): raise error
    monkeypatch.setattr(os, 'replace', fail)
    if isinstance(error, OSError):
        assert t['edit_nb']('o.ipynb', 'b2', 'x', 'z') == 'error: cannot write o.ipynb: No space left on device; it is unchanged'
    else:
        with pytest.raises(KeyboardInterrupt): t['edit_nb']('o.ipynb', 'b2', 'x', 'z')
    assert p.read_bytes() == before and sorted(os.listdir(p.parent)) == names


# ---- refusals

def test_paths_stay_in_the_folder_and_name_notebooks(tmp_path):
    root = tmp_path/'nbs'
    root.mkdir()
    outside = write(tmp_path/'out.ipynb', [cell('a', 'a')])
    (root/'.hid').mkdir()
    write(root/'.hid'/'n.ipynb', [cell('a', 'a')])
    (root/'link.ipynb').symlink_to(outside)
    (root/'notes.txt').write_text('{}')
    (root/'txt.ipynb').symlink_to(root/'notes.txt')
    t = tools(root)
    for path in ['../out.ipynb', str(outside), 'link.ipynb', '.hid/n.ipynb', '~/x.ipynb', 'notes.txt', 'txt.ipynb', 5, None]:
        for name, f in t.items():
            args = dict(read_nb=(), grep_nb=('a',), edit_nb=('a', 'a', 'b'), patch_nb_cell=('a', 'b'),
                        insert_cells=('a', ['b']), add_nb_cell=('b',))[name]
            r = f(path, *args)
            assert r.startswith('error: ') and '\n' not in r, (path, name, r)
    assert outside.read_text().count('"a"') == 2   # source and id: unchanged
    assert tools(root)['read_nb']('missing.ipynb') == 'error: no such notebook: missing.ipynb'


def test_the_open_notebook_is_refused_however_it_is_named(tmp_path):
    p = write(tmp_path/'open.ipynb', CELLS)
    (tmp_path/'sub').mkdir()
    (tmp_path/'alias.ipynb').symlink_to(p)
    os.link(p, tmp_path/'hard.ipynb')
    before = p.read_bytes()
    t = tools(tmp_path, open_file=lambda: p)
    for path in ['open.ipynb', './open.ipynb', 'sub/../open.ipynb', str(p), 'alias.ipynb', 'hard.ipynb']:
        for r in (t['read_nb'](path), t['grep_nb'](path, 'x'), t['edit_nb'](path, 'a1', 'x = 1', 'x = 2'),
                  t['patch_nb_cell'](path, 'b2', 'z'), t['insert_cells'](path, 'a1', ['z']), t['add_nb_cell'](path, 'z')):
            assert r == f"error: {path} is the notebook open here; use the `notebook` tool source's tools for it", r
    assert p.read_bytes() == before
    write(tmp_path/'other.ipynb', CELLS)
    assert t['read_nb']('other.ipynb').startswith('--- cell a1')
    assert tools(tmp_path, open_file=lambda: 1 / 0)['read_nb']('other.ipynb').startswith('--- cell a1')   # unknown: no refusal


@pytest.mark.parametrize('content, why', [
    (b'{"cells": [', 'not JSON'), (b'\xff\xfe{}', 'not JSON'), (b'[1, 2]', 'no cells'), (b'{"cells": 3}', 'no cells'),
    (b'{"cells": [], "nbformat": 3, "nbformat_minor": 0}', 'not an nbformat 4 notebook'),
    (b'{"cells": [{"cell_type": "code", "source": "x"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
     'is not a valid notebook'),
    (b'[' * 100_000, 'not JSON'), (b' ' * 5_000_001, 'over 5 MB')], ids=lambda v: v[:20] if isinstance(v, bytes) else v)
def test_a_file_that_is_no_valid_notebook_is_one_error_line(tmp_path, content, why):
    (tmp_path/'bad.ipynb').write_bytes(content)
    t = tools(tmp_path)
    for r in (t['read_nb']('bad.ipynb'), t['grep_nb']('bad.ipynb', 'x'), t['add_nb_cell']('bad.ipynb', 'x')):
        assert r.startswith('error: bad.ipynb ') and why in r and '\n' not in r, r
    assert (tmp_path/'bad.ipynb').read_bytes() == content


def test_no_argument_makes_a_tool_raise(nb):
    t, _ = nb
    odd = [None, 5, 1.5, [], {}, ['x'], b'x', object(), '', 'x' * 200_000, '\ud800', True]
    for name, f in t.items():
        n = f.__code__.co_argcount
        for v in odd:
            for i in range(n):
                args = ['o.ipynb', 'a1', 'x', 'y', 'z', None][:n]
                args[i] = v
                assert isinstance(f(*args), str)


# ---- the tools as the model sees them

def test_changing_tools_are_side_effects_and_readers_are_not(nb):
    t, _ = nb
    assert all(is_tool(f) for f in t.values())
    assert {n: getattr(f, INTENT_ATTR, None) for n,f in t.items()} == {**dict.fromkeys(READERS), **dict.fromkeys(CHANGERS, NB_EDIT_INTENT)}
    import re
    assert re.search(NB_EDIT_INTENT, 'please fix the import in analysis.ipynb', re.I) and not re.search(NB_EDIT_INTENT, 'what does it say?')


def test_every_tool_has_a_docstring_and_docments(nb):
    t, _ = nb
    for f in t.values():
        assert f.__doc__ and '\n' not in f.__doc__, f.__name__
        assert all(v is not None for v in docments(f).values()), f.__name__
        sig = tool_signature(f)   # a changing tool's says so first
        assert sig.startswith('# Changes something' if f.__name__ in CHANGERS else f'def {f.__name__}('), sig


def test_the_source_refuses_the_open_notebook_and_hides_its_hidden_cells(tmp_path):
    p = write(tmp_path/'open.ipynb', CELLS)
    write(tmp_path/'other.ipynb', [cell('a = 1', 'c1'), cell('b = 2', 'c2')])
    ctx = ToolContext(tmp_path, notebook_file=lambda: p, hidden=lambda: Hidden(ids=frozenset({'c1'})))
    t = {f.__name__: f for f in nbfiles_source(ctx)}
    assert list(t) == ['read_nb', 'grep_nb', *CHANGERS]
    assert t['read_nb']('open.ipynb').startswith('error: open.ipynb is the notebook open here')
    assert t['read_nb']('other.ipynb') == '--- cell c2 · code ---\nb = 2'


# ---- generated edits

def clean(s): return s.encode('utf-8', 'replace').decode('utf-8')   # a lone surrogate, as a notebook file can hold it


CODE = ['import os', 'x = 1', 'print(x)', 'def f(a):', '    return a', '#| export', '"""', '\n', '\r\n', ' ', '# é', '\u2028', '\t']
cell_sources = st.one_of(awkward_text(30), st.lists(st.sampled_from(CODE), min_size=1, max_size=8).map(''.join))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(srcs=st.lists(cell_sources, min_size=1, max_size=4), which=st.integers(0, 3), at=st.integers(0, 30),
       size=st.integers(1, 8), other=awkward_text(8), new=awkward_text(20), use_cut=st.booleans())
def test_edit_nb_and_read_nb_round_trip_and_the_file_always_validates(tmp_path, srcs, which, at, size, other, new, use_cut):
    p = write(tmp_path/'g.ipynb', [cell(s, f'c{i}', outputs=[OUT], count=1) for i,s in enumerate(srcs)])
    t, cid = tools(tmp_path), f'c{which % len(srcs)}'
    src = clean(srcs[which % len(srcs)])
    old = src[at % len(src):][:size] if use_cut and src else other   # a piece of the source (often unique), or any text
    r = t['edit_nb']('g.ipynb', cid, old, new)
    n = src.count(clean(old)) if old else 0
    want = src.replace(clean(old), clean(new)) if n == 1 else src
    if not old: assert r.startswith('error: ')
    elif n != 1: assert r.startswith(f'error: old_str occurs {n} times'), r
    elif want == src: assert r.endswith('nothing was written')
    else: assert r.startswith(f'changed cell {cid} of g.ipynb; its outputs'), r
    got = read_back(p)
    assert [clean(c.source) for c in got.cells] == [want if f'c{i}' == cid else clean(s) for i,s in enumerate(srcs)]
    assert t['read_nb']('g.ipynb', [cid]) == f'--- cell {cid} · code ---\n{want}'
