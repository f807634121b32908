"""Generated input for the tool-call planner: `plan_calls`, `check_call`, `recover_calls` and `toolloop.tool_blocks`.

The planner decides what runs unattended, so its properties are about what would run: a block it accepts runs
exactly the calls it planned (checked by running the block against recorders), and everything else is refused in
words that name a line of the block. Strategies: tests/strategies.py.
"""

import ast, builtins, json, re, unicodedata
from collections import Counter
from hypothesis import given, settings, strategies as st
from boopiter_ext.tools.guards import check_call, plan_calls
from boopiter_ext.tools.blocks import python_blocks
from boopiter_ext.tools.lenient import recover_calls
from boopiter_ext.models.stream import Reply
from boopiter_ext.tools.loop import tool_blocks
from strategies import AWKWARD, NAMES, fenced_python, json_values, tool_blocks as blocks
from test_guards import TOOLS
import pytest

pytestmark = pytest.mark.corpus   # generated inputs: coverage's tracer is paused (tests/conftest.py)

SOME = settings(max_examples=300, deadline=None)
NS = dict(df=object(), label='sales')
codes = st.one_of(blocks(), st.lists(st.one_of(st.sampled_from(AWKWARD), st.sampled_from('()[]{},=\'"#\\:fx1 ')),
                                     max_size=40).map(''.join))


def run(code, ns)->list:
    "The calls `code` makes when it runs, every name a recorder (and no builtins)."
    made = []
    def recorder(name): return lambda *a, **k: made.append((name, a, k))
    names = set(re.findall(r'[^\W\d]\w*', code))   # every identifier the block could call
    exec(compile(code, '<block>', 'exec', dont_inherit=True), {'__builtins__': {}, **{n: recorder(n) for n in names}, **ns})
    return made


@SOME
@given(codes)
def test_plan_calls_answers_every_block_with_calls_or_one_reason(code):
    calls, problem = plan_calls(code, NS)
    assert (calls and problem is None) or (calls == [] and isinstance(problem, str) and problem)


def test_an_accepted_block_runs_exactly_the_calls_it_planned():
    ended = Counter()   # where each example ended: a block refused says nothing here, so enough must be accepted

    @SOME
    @given(blocks())
    def accepted_blocks(code):
        calls, problem = plan_calls(code, NS)
        ended['refused' if problem else 'accepted'] += 1
        if problem: return
        made = run(code, NS)
        assert [(c.name, c.args, c.kwargs) for c in calls] == made
        assert [type(v) for c in calls for v in c.args] == [type(v) for _,a,_ in made for v in a]
        for c in calls:   # a notebook variable goes as itself, never a copy
            assert all(v is NS['df'] for v in c.args if type(v) is object)
    accepted_blocks()
    assert ended['accepted'] >= 0.25 * sum(ended.values()), ended   # about 45% are


def test_a_refusal_quotes_a_line_of_the_block():
    ended = Counter()   # only a refusal of a line says which: enough examples must be one

    @SOME
    @given(blocks())
    def refusals(code):
        calls, problem = plan_calls(code, NS)
        m = re.match(r'line (\d+): `(.*?)` is not allowed', problem or '')
        ended['quoted' if m else 'other'] += 1
        if not m: return
        lines = re.split(r'\r\n|\r|\n', code)
        assert 1 <= int(m[1]) <= len(lines)
        quoted = m[2].rstrip('…')
        assert quoted in lines[int(m[1]) - 1] or quoted in code
    refusals()
    assert ended['quoted'] >= 0.15 * sum(ended.values()), ended      # about 30% are


@SOME
@given(blocks(refused=False))
def test_a_planned_calls_source_plans_to_the_same_call(code):
    for c in plan_calls(code, NS)[0]:
        again, problem = plan_calls(c.source, NS)
        assert problem is None and [a.key() for a in again] == [c.key()]


@SOME
@given(blocks(refused=False), st.sampled_from([None, True, False]))
def test_check_call_answers_every_planned_call(code, answer):
    for c in plan_calls(code, NS)[0]:
        status, msg = check_call(c, TOOLS, 'please create a ticket', lambda name, args: answer)
        assert status in ('ok', 'unknown tool', 'invalid args', 'not requested', 'declined')
        assert (status == 'ok') == (msg is None) and (msg is None or msg.startswith(('error: ', 'No one', 'The user')))


tool_json = st.fixed_dictionaries(dict(name=st.sampled_from(NAMES + ['__import__', 'a b'])),
                                  optional=dict(arguments=st.one_of(st.dictionaries(st.text(max_size=6), json_values(6),
                                                                                    max_size=3), json_values(4))))


@SOME
@given(st.lists(tool_json, min_size=1, max_size=3), st.sampled_from(['tags', 'fence', 'whole', 'native']))
def test_recovered_calls_plan_to_one_offered_call_each(items, how):
    text = json.dumps(items)
    text = {'tags': ''.join(f'<tool_call>{json.dumps(i)}</tool_call>' for i in items), 'whole': text,
            'fence': f'```tool_call\n{text}\n```', 'native': ''}[how]
    names = ['add_numbers', 'create_ticket', 'report']
    for src in recover_calls(text, names, native=[{'function': i} for i in items] if how == 'native' else None):
        calls, problem = plan_calls(src, {})
        assert problem is None and len(calls) == 1 and calls[0].name in names and not calls[0].args
        sent = [{} if i.get('arguments') is None else i['arguments'] for i in items if i['name'] == calls[0].name]
        as_python = [{unicodedata.normalize('NFKC', k): v for k,v in a.items()} if isinstance(a, dict) else a for a in sent]
        assert calls[0].kwargs in as_python   # the values as the model wrote them, under the names Python reads (µ is μ)


def reply(text):
    r = Reply('m')
    r.add_content(text)
    r.finish('done', dict(finish_reason='stop'))
    return r


@SOME
@given(st.lists(st.one_of(fenced_python(), blocks().map(lambda c: f'```python\n{c}\n```\n'),
                          st.sampled_from(['Some text.\n', '> quoted\n', '```\nnot python()\n```\n'])), max_size=5).map(''.join))
def test_tool_blocks_are_the_replys_python_blocks_that_call_a_tool(text):
    def calls_a_tool(code):
        try: tree = ast.parse(code)
        except SyntaxError: return False
        if any(isinstance(n, ast.Call) and getattr(n.func, 'id', None) in TOOLS for n in ast.walk(tree)): return True
        calls = [getattr(getattr(st, 'value', None), 'func', None) for st in tree.body]   # only calls of bare names that
        return bool(calls) and all(isinstance(f, ast.Name) and f.id not in dir(builtins) for f in calls) and \
            all(isinstance(st, ast.Expr) for st in tree.body)                             # are no builtin: unknown tools
    found = tool_blocks(reply(text), TOOLS)
    assert found == [(b, False) for b in python_blocks(text) if calls_a_tool(b)]   # quoted and listed blocks too


def test_tool_blocks_survive_code_nested_past_the_parsers_limit():
    text = '```python\nadd_numbers(' + 'a' + '.b' * 5000 + ')\n```\n'
    assert tool_blocks(reply(text), TOOLS) == []
    assert plan_calls(python_blocks(text)[0])[1].startswith('the block is not valid Python')


def _sloppy(v, rnd)->str:
    "`v` as JSON the way a small model writes it: trailing commas and comments here and there, strings exact."
    def pad(): return rnd.choice(['', ' ', '\n  ', ' // a note, with , and ] in it\n', ' /* {"x": 1,} */ '])
    if isinstance(v, list):
        items = [_sloppy(x, rnd) + pad() for x in v]
        return '[' + pad() + ','.join(items) + (',' + pad() if items and rnd.random() < 0.5 else '') + ']'
    if isinstance(v, dict):
        items = [pad() + json.dumps(k) + pad() + ':' + _sloppy(x, rnd) + pad() for k,x in v.items()]
        return '{' + ','.join(items) + (',' + pad() if items and rnd.random() < 0.5 else '') + '}'
    return json.dumps(v)


@SOME
@given(json_values(), st.randoms())
def test_near_json_repairs_trailing_commas_and_comments_and_leaves_strings_alone(v, rnd):
    "Seed 003's light repair: whatever comments and trailing commas a model adds, the value comes back exactly."
    from boopiter_ext.tools.lenient import near_json
    try: strict = json.dumps(v, allow_nan=False)
    except ValueError: return   # NaN and Infinity are no JSON: nothing to repair
    assert json.loads(near_json(strict)) == json.loads(strict)   # JSON is left as it is
    sloppy = _sloppy(json.loads(strict), rnd)
    assert json.loads(near_json(sloppy)) == json.loads(strict)


@SOME
@given(st.text(alphabet='{}[],/*"\\ \nab:1', max_size=300))
def test_near_json_never_raises_and_only_takes_away(text):
    from boopiter_ext.tools.lenient import near_json, recover_calls
    out = near_json(text)
    assert isinstance(out, str) and len(out) <= len(text)
    assert isinstance(recover_calls(text, ['add_numbers']), list)


def test_a_call_written_as_near_json_is_recovered():
    text = ('<tool_call>{"name": "add_numbers", // the tool\n "arguments": {"a": 47, "b": 23,},}</tool_call>')
    assert recover_calls(text, ['add_numbers']) == ['add_numbers(a=47, b=23)']
