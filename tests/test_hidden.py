"""Hidden means hidden: what a `boop-hide` cell holds (its source, its outputs, the names it alone defines) reaches the
model by no path: not the context, a file tool on the notebook's own `.ipynb` (or a copy), `list_variables`,
`show_cell`, the notebook tools, a tool argument naming its variable, $`name` and &`name`, nor a dry run.

Fast tests for each path, a generated one (random notebooks of hidden and visible cells defining and using names, a
secret marker in every hidden cell: no tool, reference or dry run shows it), and one in a real kernel.
"""

import json, re
import nbformat, pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from boopiter_ext.context.build import Cell, HIDE_TAG, Hidden, bound_names, hidden_parts
from boopiter_ext.context.messages import mk_msg
from boopiter_ext.core.assistant import Assistant
from boopiter_ext.core.refs import prompt_refs
from boopiter_ext.models.stream import Reply
from boopiter_ext.tools.files import file_tools, visible_text
from boopiter_ext.tools.guards import plan_calls
from boopiter_ext.tools.kernel import kernel_tools, tool_namespace, user_variables
from boopiter_ext.tools.loop import run_tool_loop
from boopiter_ext.tools.notebook import notebook_source

MODEL = 'local/smollm2-135m'
MARK = 'ZQX-hidden-marker'


def hidden_code(src, n=None, cid=None): return Cell(src, 'code', exec_count=n, cell_id=cid, tags=(HIDE_TAG,))
def code(src, n=None, cid=None): return Cell(src, 'code', exec_count=n, cell_id=cid)


def write_nb(path, cells):
    "A saved notebook: [(source, tags, outputs text or None)]."
    nb = nbformat.v4.new_notebook()
    for i, (src, tags, out) in enumerate(cells):
        c = nbformat.v4.new_code_cell(src, execution_count=i + 1,
                                      outputs=[nbformat.v4.new_output('stream', name='stdout', text=out)] if out else [])
        c.id, c.metadata['tags'] = f'c{i}', list(tags)
        nb.cells.append(c)
    nbformat.write(nb, path)
    return path


# ---- which names a hidden cell alone defines

def test_bound_names_reads_every_way_a_cell_binds():
    src = ('import os.path as p, sys\nfrom a import b as c\nx, (y, *z) = 1\nfor i in r: pass\nwith o as w: pass\n'
           '(q := 3)\ndef f(a): pass\nclass K: pass\ntry: pass\nexcept E as e: pass\nd[k] = 1\nm.a.b = 2\nn += 1\n'
           'match v:\n    case [h, *t]: pass\n    case {"k": u, **rest}: pass')
    assert bound_names(src) >= {'p', 'sys', 'c', 'x', 'y', 'z', 'i', 'w', 'q', 'f', 'K', 'e', 'd', 'm', 'n', 'h', 't',
                                'u', 'rest'}
    assert 'r' not in bound_names(src) and 'o' not in bound_names(src)     # read, not bound
    assert bound_names('x = !ls\n%time y = 2') >= {'x', 'ls', 'time', 'y'}  # not Python: every name, to be safe


def test_a_name_is_hidden_until_a_visible_cell_that_ran_binds_it_anew():
    cells = [code('x = 1\nd = {}\nv = 0', 1), hidden_code(f'x = "{MARK}"\nd["k"] = "{MARK}"\nv += 1\nz = 2', 2),
             code('d["j"] = 3\nv += 1\nz = 5', 3), Cell('w = 1', 'code', origin='file', tags=(HIDE_TAG,)),
             Cell('w = 2', 'code', origin='file')]
    h = hidden_parts(cells)
    assert h.names == {'x', 'd', 'v', 'w'}   # z was bound anew; `d[...] =` and `v +=` keep what the hidden cell put there
    assert hidden_parts(cells + [code('x = 3', 4)]).names == {'d', 'v', 'w'}
    assert hidden_parts([code('x = 1', 5), hidden_code('x = 2', 4)]).names == set()   # the visible one ran last
    assert hidden_parts([code('x = 1')]) == Hidden() and not Hidden()


# ---- each path

def test_file_tools_read_a_notebook_without_its_hidden_cells(tmp_path):
    nb = write_nb(tmp_path/'analysis.ipynb', [('total = 2', (), '2\n'), (f'plan = "{MARK}"', (HIDE_TAG,), MARK + '\n'),
                                              ('unsaved = "shown soon"', (), None)])
    (tmp_path/'copy.json').write_text(nb.read_text().replace('"cells"', '"\\u0063ells"', 1))   # a copy, keys escaped
    (tmp_path/'export.py').write_text(f'total = 2\n\nplan = "{MARK}"\n')        # an export holding the hidden source
    (tmp_path/'.ipynb_checkpoints').mkdir()
    (tmp_path/'.ipynb_checkpoints'/'analysis-checkpoint.ipynb').write_text(nb.read_text())
    (tmp_path/'broken.ipynb').write_text('{"cells": [{"source": "' + MARK)     # cut short: cannot be read as a notebook
    hidden = Hidden(frozenset({'c2'}), frozenset({f'plan = "{MARK}"'}))           # c2: hidden in the frontend, unsaved
    list_files, read_file, search_files = file_tools(tmp_path, lambda: hidden)
    shown = read_file('analysis.ipynb')
    assert 'total = 2' in shown and MARK not in shown and 'unsaved' not in shown
    assert json.loads(re.sub(r'(?m)^\d+: ', '', shown))['nbformat'] == 4          # still the notebook's JSON
    assert MARK not in read_file('copy.json') and 'total = 2' in read_file('copy.json')
    assert MARK not in read_file('export.py') and '[a hidden cell]' in read_file('export.py')
    assert read_file('broken.ipynb').startswith('error: broken.ipynb is not a notebook that can be read')
    assert read_file('.ipynb_checkpoints/analysis-checkpoint.ipynb').startswith('error:')
    for text in (MARK, MARK.lower(), 'plan', 'unsaved'):
        found = search_files(text).replace(repr(text), '')   # what it found, not its echo of the question
        assert MARK not in found and 'unsaved' not in found
    assert 'total = 2' in search_files('total')
    assert '.ipynb_checkpoints' not in list_files()
    assert MARK in file_tools(tmp_path)[1]('export.py')   # without a hidden cell: the file as it is


def test_visible_text_keeps_everything_but_hidden_cells():
    nb = dict(cells=[dict(cell_type='code', source=['a = 1\n', 'b'], metadata={}), 'junk',
                     dict(cell_type='code', id='h', source='c', metadata={'tags': ['boop-hide']})], metadata={}, nbformat=4)
    out = json.loads(visible_text(json.dumps(nb)))
    assert out['cells'] == [nb['cells'][0]] and out['metadata'] == {} and out['nbformat'] == 4
    assert visible_text('plain text "cells" here') == 'plain text "cells" here'
    assert visible_text('{"cells": 3}', notebook=True) is None and visible_text('x', notebook=True) is None


def test_kernel_tools_never_show_a_hidden_cell_or_its_names():
    ns = dict(plan=MARK, total=2, api_key='sk-1')
    cells = [code('total = 2', 1), hidden_code(f'plan = "{MARK}"', 2)]
    list_variables, show_cell = kernel_tools(ns, lambda: cells, lambda: hidden_parts(cells))
    assert 'total: int' in list_variables() and 'plan' not in list_variables() and MARK not in list_variables()
    assert list_variables('plan') == '(`plan` is defined only by a hidden cell)'   # asked by its name: said why
    assert list_variables('pla') == "(no variables matching 'pla')"              # probing reveals nothing
    assert all(MARK not in show_cell(i) for i in (-1, 0, 1, 2))
    assert user_variables(ns, {'plan'}) == dict(total=2)


def test_notebook_tools_never_show_a_hidden_cell():
    cells = [code('total = 2', 1, 'a'), hidden_code(f'plan = "{MARK}"', 2, 'h')]
    list_cells, read_cell, search_notebook, add_cell, edit_cell, delete_cell = notebook_source(lambda: cells)
    assert 'h ·' not in list_cells() and 'no cells' in list_cells(MARK.lower())
    assert all(MARK not in read_cell(c) for c in ('h', 1, -1)) and read_cell('h').startswith('error: no cell')
    assert search_notebook(MARK).startswith('(no cell contains') and MARK not in search_notebook('plan')
    assert add_cell('h', 'x').startswith('error: no cell') and edit_cell('h', 'x').startswith('error: no cell')
    assert delete_cell('h').startswith('error: no cell')


def test_a_block_naming_a_hidden_variable_is_refused_and_says_why():
    ns = tool_namespace(dict(plan=MARK, total=2, api_key='sk-1'), {'plan'})
    assert plan_calls('f(plan)', ns) == ([], 'line 1: `plan` is defined only by a hidden cell, so it cannot be passed to a tool.')
    assert plan_calls('f(api_key)', ns)[1].startswith('line 1: `api_key` is named like a secret')
    assert plan_calls('f(total)', ns)[0][0].args == (2,)
    def echo(text:str)->str:
        "Echo"
        return text
    out = list(map(Reply, 'mm'))
    for r, t in zip(out, ['```python\necho(plan)\n```', 'ok']): r.add_content(t); r.finish('done')
    res = run_tool_loop(lambda m: out.pop(0), [mk_msg('echo plan')], dict(echo=echo), 'echo `plan`', namespace=ns)
    assert res.steps[0].status == 'refused' and MARK not in json.dumps([s.as_dict() for s in res.steps])


def test_references_to_a_hidden_name_are_refused_in_words_the_model_reads():
    def helper(x:int)->int:
        "Help"
        return x
    refs = prompt_refs('Use $`plan` with &`helper` and $`total`.', dict(plan=MARK, helper=helper, total=2), {'plan', 'helper'})
    assert MARK not in refs.text and '`plan` is defined only by a hidden cell' in refs.text and '`total` = int' in refs.text
    assert refs.tools == {} and any('&`helper`: not offered (`helper` is defined only by a hidden cell)' == n for n in refs.notes)


def test_a_hidden_cells_images_and_attachments_never_reach_a_vision_model():
    from images_util import png_b64
    from boopiter_ext.context.build import build_context
    img = png_b64(64, 48)
    out = dict(output_type='display_data', data={'image/png': img, 'text/plain': MARK}, metadata={})
    cells = [Cell('plot()', 'code', [out], exec_count=1, tags=(HIDE_TAG,)),
             Cell('![x](attachment:a.png)', 'markdown', attachments={'a.png': {'image/png': img}}, tags=(HIDE_TAG,)),
             Cell('show()', 'code', [dict(out, data={'image/png': img})], exec_count=2)]
    msgs, ledger = build_context(cells, 'What do the plots show?', vision=True)
    assert MARK not in json.dumps(msgs) and json.dumps(msgs).count(img) == 1   # the visible cell's image only
    assert [r['where'] for r in ledger['image_records']] == ['In [2]'] and ledger['hidden'] == 2


def test_a_cell_hidden_only_in_the_frontends_unsaved_view_is_hidden_from_every_tool(tmp_path):
    "The page says hidden, the file (saved before) does not: the view wins, the file tools leave it out too."
    path = write_nb(tmp_path/'nb.ipynb', [('total = 2', (), None), (f'plan = "{MARK}"', (), MARK)])
    ran = [code('total = 2', 1, 'c0'), code(f'plan = "{MARK}"', 2, 'c1')]
    a = Assistant(Ran(ran), dict(total=2, plan=MARK), notebook=lambda: path)
    a.shown = [dict(id='c0', cell_type='code', source='total = 2', tags=[]),
               dict(id='c1', cell_type='code', source=f'plan = "{MARK}"', tags=[HIDE_TAG])]
    try:
        s = a.settings(dict(model=MODEL, tools='kernel, files'))
        tools = a.tool_list(s, path)
        seen = [tools['read_file']('nb.ipynb'), tools['list_variables'](), tools['show_cell'](-1),
                tools['search_files']('plan'), json.dumps(a.preview('And $`plan`?', s), default=str)]
        assert all(MARK not in t for t in seen) and 'total = 2' in seen[0] and a.hidden(path).names == {'plan'}
        a.shown[1]['tags'] = []   # shown again in the page: its name is the model's to see again
        assert a.hidden(path).names == set() and MARK in a.tool_list(s, path)['list_variables']()
    finally: a.close()


# ---- generated notebooks: no tool, reference or dry run shows a hidden cell

class Ran:
    def __init__(self, cells): self.done, self.current = cells, None
    def cells(self): return list(self.done)


NAMES = ['alpha', 'beta', 'gamma', 'delta', 'eps']


@st.composite
def notebooks(draw):
    "[(source, hidden, ran)]: hidden cells bind names to values holding MARK; visible ones bind their own values."
    cells = []
    for i in range(draw(st.integers(1, 7))):
        hidden = draw(st.booleans())
        name = draw(st.sampled_from(NAMES))
        form = draw(st.sampled_from(['assign', 'store', 'def', 'print', 'magic'] if hidden else ['assign', 'store', 'def']))
        value = f'"{MARK}-{i}"' if hidden else f'"plain-{i}"'
        src = {'assign': f'{name} = {value}', 'store': f'{name} = {{}}\n{name}["k"] = {value}' if not hidden
               else f'{name} = globals().get("{name}", {{}})\n{name} = {name} if isinstance({name}, dict) else {{}}\n'
                    f'{name}["k"] = {value}',
               'def': f'def {name}(x:int)->int:\n    "{MARK if hidden else "plain"} {i}"\n    return x',
               'print': f'print({value})', 'magic': f'%time {name} = {value}'}[form]
        cells.append((src, hidden, draw(st.booleans()) or not hidden))
    return cells


def _run(cells, tmp_path):
    "The notebook saved (every cell, with its printed output), the namespace after the cells that ran, in order."
    ns, ran = {}, []
    for i, (src, hidden, did) in enumerate(cells):
        if not did: continue
        out = []
        exec(compile(src.replace('%time ', ''), '<cell>', 'exec'), dict(ns, print=lambda *a: out.append(' '.join(map(str, a))),
                                                                    __builtins__=__builtins__), ns)
        ns.pop('__builtins__', None)
        ran.append(Cell(src, 'code', cell_id=f'c{i}', exec_count=len(ran) + 1, tags=(HIDE_TAG,) if hidden else (),
                        outputs=[dict(output_type='stream', name='stdout', text='\n'.join(out) + '\n')] if out else []))
    path = write_nb(tmp_path/'gen.ipynb', [(s, (HIDE_TAG,) if h else (), MARK if h else 'plain') for s, h, _ in cells])
    return ns, ran, path


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(notebooks())
@pytest.mark.heavy
def test_no_tool_reference_or_dry_run_shows_a_hidden_cell(tmp_path, cells):
    ns, ran, path = _run(cells, tmp_path)
    a = Assistant(Ran(ran), ns, notebook=lambda: path)
    try:
        s = a.settings(dict(model=MODEL, tools='kernel, files, notebook'))
        tools = a.tool_list(s, path)
        calls = [('list_variables', ()), ('show_cell', (-1,)), ('read_file', ('gen.ipynb',)), ('search_files', (MARK,)),
                 ('search_files', ('k',)), ('list_cells', ()), ('search_notebook', (MARK,))]
        calls += [('list_variables', (n,)) for n in NAMES] + [('show_cell', (i,)) for i in range(len(ran))]
        calls += [('read_cell', (i,)) for i in range(len(cells))] + [('search_files', (n,)) for n in NAMES]
        seen = [str(tools[name](*args)).replace(repr(MARK), '') for name, args in calls]   # not its echo of the question
        question = ' '.join(f'$`{n}` &`{n}`' for n in NAMES)
        dry = a.preview(question, s)
        seen.append(json.dumps(dry, default=str))
        seen.append(json.dumps(tool_namespace(ns, a.hidden(path).names), default=str))
        assert all(MARK not in text for text in seen), next(t for t in seen if MARK in t)
        assert any(h for _, h, _ in cells) <= (dry['ledger']['hidden'] >= 1)   # there were hidden cells to keep out
    finally: a.close()


# ---- in a real kernel

@pytest.mark.slow
def test_a_hidden_cell_reaches_the_model_by_no_path_in_a_kernel(srv, tmp_path):
    from kernels import KernelSession
    path = write_nb(tmp_path/'analysis.ipynb', [('total = 1234', (), None), (f'plan = "{MARK}"\nprint(plan)', (HIDE_TAG,), MARK),
                                                ('%%prompt\nGo', (), None)])
    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host, 'BOOPITER_NOTEBOOK': str(path)}) as k:
        assert k.run('%load_ext boopiter_ext').status == 'ok'
        k.run('total = 1234', cell_id='c0')
        k.run(f'plan = "{MARK}"\nprint(plan)', cell_id='c1')
        k.run('%config BoopMagics.tools = "kernel, files, notebook"\n%config BoopMagics.auto = True')
        srv.script('```python\nread_file("analysis.ipynb")\nsearch_files("plan")\nlist_variables()\nlist_variables("plan")\n'
                   'show_cell(1)\nread_cell(1)\n```')
        srv.script('Done.')
        res = k.run('%%prompt -m qwen3:1.7b\nWhat is in $`plan` and $`total`?', cell_id='c2')
        assert res.status == 'ok'
        sent = json.dumps(srv.chats()[-2:])
        assert MARK not in sent and '`plan` is defined only by a hidden cell' in sent and '1234' in sent
        results = srv.chats()[-1]['messages'][-1]['content']   # the tools did run: the notebook read, without its hidden cell
        assert 'Results of the calls' in results and '\\"total = 1234\\"' in json.dumps(results) and '(ok)' in results
        dry = k.run('%%prompt -m qwen3:1.7b --dry-run\nWhat is in $`plan`?', cell_id='c2')
        assert MARK not in json.dumps(dry.outputs) and 'defined only by a hidden cell' in json.dumps(dry.outputs)
