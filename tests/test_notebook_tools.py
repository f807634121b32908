"""The model's notebook tools (tools/notebook.py), without a kernel: listing, reading, searching, adding and editing
cells, and the stale-edit refusal (issue 23.1): an edit starts from what the model READ, and is refused when the cell
changed since, by the kernel when it has heard of the change, else by the page, which is sent the text the model read.

`Page` below stands in for the notebook the extension changes: it holds the cells as the user has them now, and does
with an `edit` request what js/src/channel/edits.ts `applyEdit` does (js/test/channel/edits.test.ts tests that half);
the kernel's view (`cells()`) may lag behind it, as it does until the page's next `notebook` message."""

import re
from hypothesis import given, settings as hsettings, strategies as st
from boopiter_ext.context.build import Cell
from boopiter_ext.tools.guards import INTENT_ATTR, REVIEWED_ATTR, Call, check_call
from boopiter_ext.tools.notebook import EDIT_INTENT, notebook_source

REPLY = {'output_type': 'display_data', 'data': {'text/plain': 'It is 2468.'}, 'metadata': {'boopiter': {'reply': True}}}


def notebook():
    return [Cell('total = 1234 * 2', cell_id='c1', exec_count=1,
                 outputs=[dict(output_type='execute_result', data={'text/plain': '2468'}, metadata={})]),
            Cell('# Notes\nThe TOTAL is wrong.\nfix it', 'markdown', cell_id='m1'),
            Cell('print("no id")', cell_id=None),
            Cell('%%prompt\nWhat is the total?', 'prompt', cell_id='p1', outputs=[REPLY]),
            Cell('secret = 1', cell_id='h1', tags=('boop-hide',))]


class Page:
    "The notebook as the user has it now, changed only as the extension would: an edit only if the cell holds `expect`."
    def __init__(self, cells): self.cells, self.requests = cells, []

    def source(self, cid): return next(c.source for c in self.cells if c.cell_id == cid)

    def type(self, cid, text):
        "The user types into a cell."
        i = next(i for i, c in enumerate(self.cells) if c.cell_id == cid)
        self.cells[i] = Cell(text, self.cells[i].kind, cell_id=cid)

    def edit(self, request):
        self.requests.append(request)
        if request['op'] == 'add': return True, f'done: added a cell below {request["after"]}'
        if self.source(request['cell']) != request['expect']:
            return False, f'refused: cell {request["cell"]} changed since the model read it (the user edited it)'
        if request['op'] == 'delete':
            self.cells = [c for c in self.cells if c.cell_id != request['cell']]
            return True, f'done: deleted cell {request["cell"]}'
        self.type(request['cell'], request['source'])
        return True, f'done: replaced the text of cell {request["cell"]}'


def tools(cells, edit=None, view=None):
    "The six tools over `cells` (the kernel's view: `view()` when given, else the cells themselves)."
    return notebook_source(view or (lambda: cells), edit)


def test_list_cells_shows_index_id_kind_and_first_line_and_filters_in_any_case():
    list_cells, *_ = tools(notebook())
    assert list_cells().splitlines() == ['0 · c1 · code · total = 1234 * 2', '1 · m1 · markdown · # Notes',
                                         '2 · - · code · print("no id")', '3 · p1 · prompt · What is the total?']
    assert list_cells('total') == '0 · c1 · code · total = 1234 * 2\n1 · m1 · markdown · # Notes\n3 · p1 · prompt · What is the total?'
    assert list_cells('PRINT') == '2 · - · code · print("no id")'
    assert list_cells('nowhere') == "(no cells containing 'nowhere')" and tools([])[0]() == '(no cells)'
    assert list_cells('secret') == "(no cells containing 'secret')"   # a hidden cell is not there


def test_list_cells_clips_long_first_lines_and_long_notebooks():
    cells = [Cell('\n\n  ' + 'x' * 81, cell_id='long'), *[Cell(f'a = {i}', cell_id=f'c{i}') for i in range(502)]]
    rows = tools(cells)[0]().splitlines()
    assert rows[0] == '0 · long · code · ' + 'x' * 79 + '…'                       # the first line with text, at 80
    assert len(rows) == 501 and rows[-1] == '... 3 more; pass a `pattern`' and rows[-2].startswith('499 · c498 ')
    assert len(tools(cells[:500])[0]().splitlines()) == 500                       # exactly 500: no note
    assert tools([Cell('y' * 80, cell_id='e')])[0]() == '0 · e · code · ' + 'y' * 80


def test_read_cell_by_id_or_index_with_outputs_and_a_prompt_with_its_reply():
    _, read_cell, *_ = tools(notebook())
    assert read_cell('c1') == read_cell(0) == read_cell(-4) == ('code cell c1\nIn [1]:\n```python\ntotal = 1234 * 2\n```\n'
                                                                 'Output:\n```\n2468\n```')
    assert read_cell(3) == 'prompt cell p1\nPrompt:\nWhat is the total?\n\nReply:\nIt is 2468.'
    assert read_cell(2).startswith('code cell (no id)\n')
    assert read_cell('m1').startswith('markdown cell m1\nMarkdown note:\n# Notes')
    for missing in (4, -5, 'h1', 'nope', True, None):   # past the end, hidden, unknown, not an index
        assert read_cell(missing) == f'error: no cell {missing!r}; list_cells shows the ids and indexes'
    cells = [Cell('%%prompt\nNo answer yet', 'prompt', cell_id='q')]
    assert tools(cells)[1]('q').endswith('Reply:\n(none)')


def test_search_notebook_finds_lines_in_any_case_and_stops_at_a_hundred():
    search = tools(notebook())[2]
    assert search('total') == '0 · c1 · total = 1234 * 2\n1 · m1 · The TOTAL is wrong.\n3 · p1 · What is the total?'
    assert search('FIX') == '1 · m1 · fix it'
    assert search('secret') == "(no cell contains 'secret')"   # hidden
    assert search('') == search(None) == search(3) == 'error: give the text to look for'
    many = [Cell('\n'.join(f'hit {i}' for i in range(60)), cell_id=f'c{j}') for j in range(2)]
    found = tools(many)[2]('HIT').splitlines()
    assert len(found) == 101 and found[-1] == '... stopped at 100 matches; narrow it' and found[99] == '1 · c1 · hit 39'
    exactly = tools([Cell('\n'.join(['hit'] * 100), cell_id='x')])[2]('hit').splitlines()
    assert len(exactly) == 100 and '... stopped' not in exactly[-1]
    assert tools([Cell('  hit ' + 'z' * 300, cell_id='w')])[2]('hit') == '0 · w · ' + ('hit ' + 'z' * 300)[:200]


def test_the_changing_tools_ask_for_the_users_words_and_the_reading_ones_do_not():
    list_cells, read_cell, search, add_cell, edit_cell, delete_cell = tools(notebook())
    assert getattr(add_cell, INTENT_ATTR) == getattr(edit_cell, INTENT_ATTR) == getattr(delete_cell, INTENT_ATTR) == EDIT_INTENT
    assert [getattr(f, REVIEWED_ATTR, False) for f in (add_cell, edit_cell, delete_cell)] == [False, True, True]   # a diff in the cell
    assert not any(hasattr(f, INTENT_ATTR) for f in (list_cells, read_cell, search))
    assert re.search(EDIT_INTENT, 'Please fix the total cell') and not re.search(EDIT_INTENT, 'What is the total?')


def test_add_cell_goes_below_a_cell_with_an_id_through_the_page():
    page = Page(notebook())
    _, _, _, add_cell, _, _ = tools(page.cells, page.edit)
    assert add_cell('c1', 'print(total)') == 'done: added a cell below c1'
    assert add_cell(1, '## More', 'markdown') == 'done: added a cell below m1'
    assert add_cell(-1, 'Why?', 'prompt') == add_cell('p1', '%%prompt\nWhy?', 'prompt') == 'done: added a cell below p1'
    assert [(r['after'], r['source'], r['cell_type']) for r in page.requests] == [
        ('c1', 'print(total)', 'code'), ('m1', '## More', 'markdown'), ('p1', '%%prompt\nWhy?', 'code'),
        ('p1', '%%prompt\nWhy?', 'code')]   # a prompt cell is a code cell that starts with `%%prompt`, once
    assert page.requests[0] == dict(op='add', after='c1', source='print(total)', cell_type='code')
    assert add_cell(2, 'x') == 'error: no cell 2 with an id; list_cells shows them'
    assert add_cell('h1', 'x') == "error: no cell 'h1' with an id; list_cells shows them"
    assert add_cell('c1', 'x', 'raw') == "error: cell_type is 'code', 'markdown' or 'prompt'"
    assert add_cell('c1', 'x' * 100_001).startswith('error: source must be text of at most 100,000')
    assert add_cell('c1', ['x']).startswith('error: source must be text')
    assert add_cell('c1', 'y' * 100_000) == 'done: added a cell below c1' and len(page.requests) == 5


def test_without_the_extension_nothing_changes_and_the_model_is_told_why():
    for edit in (None, lambda request: None):   # a terminal, or a kernel no page has said hello to
        _, _, _, add_cell, edit_cell, _ = tools(notebook(), edit)
        assert add_cell('c1', 'x').startswith('error: changing the notebook needs the boopiter extension')
    refused = tools(notebook(), lambda request: (False, 'the notebook is read-only here'))
    assert refused[3]('c1', 'x') == 'error: the notebook is read-only here'


def test_an_edit_starts_from_what_the_model_read():
    page = Page(notebook())
    _, read_cell, _, _, edit_cell, _ = tools(page.cells, page.edit)
    assert edit_cell('c1', 'total = 1234 * 3') == "error: read the cell first (read_cell('c1')): edits start from what you read"
    assert page.requests == []
    read_cell(0)                                                    # read by index, edited by id
    assert edit_cell('c1', 'total = 1234 * 3') == 'done: replaced the text of cell c1'
    assert page.requests == [dict(op='edit', cell='c1', source='total = 1234 * 3', expect='total = 1234 * 2')]
    assert page.source('c1') == 'total = 1234 * 3'
    assert edit_cell(2, 'x') == 'error: no cell 2 with an id; list_cells shows them'
    assert edit_cell('c1', 'x' * 100_001).startswith('error: source must be text of at most 100,000')


def test_an_edit_after_the_user_typed_is_refused_by_the_kernel_when_it_heard_of_it():
    page = Page(notebook())
    _, read_cell, _, _, edit_cell, _ = tools(page.cells, page.edit)
    read_cell('c1')
    page.type('c1', 'total = 1234 * 2  # checked by hand')      # the kernel's view follows the page here
    assert edit_cell('c1', 'total = 1234 * 3') == 'error: cell c1 changed since you read it; read it again before editing it'
    assert page.requests == [] and page.source('c1') == 'total = 1234 * 2  # checked by hand'   # nothing asked, kept
    read_cell('c1')                                                 # read again: now it may
    assert edit_cell('c1', 'total = 1234 * 3') == 'done: replaced the text of cell c1'
    assert page.requests[-1]['expect'] == 'total = 1234 * 2  # checked by hand'


def test_an_edit_after_the_user_typed_is_refused_by_the_page_when_the_kernel_has_not_heard_yet():
    page = Page(notebook())
    heard = notebook()                                              # the kernel's view: the page's last `notebook` message
    _, read_cell, _, _, edit_cell, _ = tools(heard, page.edit, view=lambda: heard)
    read_cell('c1')
    page.type('c1', 'total = 1234 * 2  # mine')                     # typed; the page has not told the kernel yet
    told = edit_cell('c1', 'total = 1234 * 3')
    assert told == 'error: refused: cell c1 changed since the model read it (the user edited it)'
    assert page.requests[-1]['expect'] == 'total = 1234 * 2'        # what the model read: the page compares with it
    assert page.source('c1') == 'total = 1234 * 2  # mine'          # nothing overwritten


@hsettings(max_examples=60, deadline=None)
@given(read=st.text(max_size=40), typed=st.text(max_size=40), new=st.text(max_size=40), heard=st.booleans())
def test_the_users_text_is_never_overwritten_by_an_edit_made_from_an_older_read(read, typed, new, heard):
    "Whatever the texts and whether the kernel heard of the typing: an edit lands only on the text the model read."
    page = Page([Cell(read, cell_id='c')])
    view = [Cell(read, cell_id='c')]
    _, read_cell, _, _, edit_cell, _ = tools(None, page.edit, view=lambda: page.cells if heard else view)
    read_cell('c')
    page.type('c', typed)
    told = edit_cell('c', new)
    assert page.source('c') == (new if typed == read else typed)
    assert told.startswith('done') == (typed == read)


def test_a_deletion_starts_from_what_the_model_read_and_never_takes_a_prompt_cell():
    page = Page(notebook())
    _, read_cell, _, _, _, delete_cell = tools(None, page.edit, view=lambda: page.cells)
    assert delete_cell('m1') == "error: read the cell first (read_cell('m1')): you delete what you read"
    read_cell('m1'), read_cell('p1')
    assert delete_cell('p1') == 'error: a prompt cell holds a reply; the user deletes those themselves'
    assert delete_cell('h1').startswith('error: no cell') and delete_cell(2).startswith('error: no cell 2 with an id')
    page.type('m1', '# Notes\nmine now')
    assert delete_cell('m1') == 'error: cell m1 changed since you read it; read it again before deleting it'
    read_cell('m1')
    assert delete_cell('m1') == 'done: deleted cell m1'
    assert page.requests[-1] == dict(op='delete', cell='m1', expect='# Notes\nmine now')
    assert [c.cell_id for c in page.cells] == ['c1', None, 'p1', 'h1']


def test_a_reviewed_change_asks_for_no_yes_but_still_needs_the_users_words():
    asked = []
    def confirm(name, args): return asked.append(name) or True
    tools_ = {f.__name__: f for f in tools(notebook(), Page(notebook()).edit)}
    call = lambda src: Call(src.partition('(')[0], ('c1', 'x') if 'delete' not in src else ('c1',), {}, src, 1)
    assert check_call(call("edit_cell('c1', 'x')"), tools_, 'Please fix the total', confirm) == ('ok', None)
    assert check_call(call("delete_cell('c1')"), tools_, 'Delete the old cell', confirm) == ('ok', None)
    assert asked == []   # the diff in the cell is where the user says yes
    assert check_call(call("add_cell('c1', 'x')"), tools_, 'Please add a cell', confirm) == ('ok', None) and asked == ['add_cell']
    assert check_call(call("delete_cell('c1')"), tools_, 'What is the total?', confirm)[0] == 'not requested'
