"""core/structured.py: schemas (JSON Schema dicts, dataclasses, TypedDicts, pydantic models) as the JSON Schema a route
constrains its output with, and a model's untrusted text as a validated value of them. Fast: no kernel, no model."""

import dataclasses, enum, json, math, re, signal
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NotRequired, Optional, Sequence, TypedDict, Union, get_args, get_origin

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st, target
from jsonschema import Draft202012Validator

from boopiter_ext.core import structured
from boopiter_ext.core.structured import MAX_JSON, Invalid, Schema, json_candidates
from boopiter_ext.errors import SchemaError
from strategies import AWKWARD, awkward_text, hostile_markdown

try: import pydantic
except ImportError: pydantic = None

GEN = settings(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class Color(enum.Enum):
    RED = 'red'
    GREEN = 'green'

class Size(enum.IntEnum):
    S = 1
    L = 3

@dataclass
class Point:
    x: float   # across, in cm
    y: float   # up

@dataclass
class Shape:
    name: Annotated[str, 'what it is called']   # a comment the Annotated description wins over
    color: Color            # its colour
    corners: list[Point]
    # how big,
    # when known
    size: Optional[Size] = None
    tags: set[str] = field(default_factory=set)
    pair: tuple[int, str] = (0, '')
    many: tuple[float, ...] = ()
    kind: Literal['a', 'b', 1, None] = 'a'
    meta: dict[str, float] = field(default_factory=dict)
    either: Union[Point, int, None] = None
    anything: Any = None
    frozen: frozenset[int] = frozenset()
    seq: Sequence[int] = ()
    count: int | None = None

class Row(TypedDict):
    id: int                                    # the row's number
    label: NotRequired[Literal['pos', 'neg']]  # when known
    at: NotRequired[Point]

class Loose(TypedDict, total=False):
    a: int
    b: str | None

@dataclass
class Node:
    value: int
    children: list['Node']

@dataclass
class Outer:
    inner: Optional['Inner']

@dataclass
class Inner:
    again: list[Outer]


def obj(props, required=()):
    return dict(type='object', properties=props, required=list(required), additionalProperties=False)

POINT = obj({'x': {'type': 'number', 'description': 'across, in cm'}, 'y': {'type': 'number', 'description': 'up'}}, 'xy')
NUMBER_POINT = obj({'x': {'type': 'number'}, 'y': {'type': 'number'}}, 'xy')


# ---- annotations to JSON Schema

def test_dataclass_schema_has_every_annotation_kind():
    "Each annotation kind the module names becomes the JSON Schema a model is constrained with; comments describe fields."
    assert Schema.of(Shape).json == obj({
        'name': {'type': 'string', 'description': 'what it is called'},
        'color': {'enum': ['red', 'green'], 'description': 'its colour'},
        'corners': {'type': 'array', 'items': POINT},
        'size': {'anyOf': [{'enum': [1, 3]}, {'type': 'null'}], 'description': 'how big,\nwhen known'},
        'tags': {'type': 'array', 'items': {'type': 'string'}},
        'pair': {'type': 'array', 'prefixItems': [{'type': 'integer'}, {'type': 'string'}], 'minItems': 2, 'maxItems': 2},
        'many': {'type': 'array', 'items': {'type': 'number'}},
        'kind': {'enum': ['a', 'b', 1, None]},
        'meta': {'type': 'object', 'additionalProperties': {'type': 'number'}},
        'either': {'anyOf': [POINT, {'type': 'integer'}, {'type': 'null'}]},
        'anything': {},
        'frozen': {'type': 'array', 'items': {'type': 'integer'}},
        'seq': {'type': 'array', 'items': {'type': 'integer'}},
        'count': {'anyOf': [{'type': 'integer'}, {'type': 'null'}]},
    }, ['name', 'color', 'corners'])
    Draft202012Validator.check_schema(Schema.of(Shape).json)
    assert Schema.of(Shape).name == 'Shape' and 'what it is called' in Schema.of(Shape).instruction


def test_typeddict_schema_keeps_required_keys_and_comments():
    assert Schema.of(Row).json == obj({'id': {'type': 'integer', 'description': "the row's number"},
                                       'label': {'enum': ['pos', 'neg'], 'description': 'when known'},
                                       'at': POINT}, ['id'])
    assert Schema.of(Loose).json == obj({'a': {'type': 'integer'}, 'b': {'anyOf': [{'type': 'string'}, {'type': 'null'}]}})


def test_a_class_defined_in_a_function_still_has_its_comments():
    @dataclass
    class Local:
        n: int   # how many
        plain: str
    assert Schema.of(Local).json['properties'] == {'n': {'type': 'integer', 'description': 'how many'}, 'plain': {'type': 'string'}}
    Made = dataclasses.make_dataclass('Made', [('n', int)])   # no source to read: no descriptions, no error
    assert Schema.of(Made).json == obj({'n': {'type': 'integer'}}, 'n')


# ---- JSON values back to Python ones

SHAPE_REPLY = '''Sure! Here is the shape:
```json
{"name": "tri", "color": "green", "corners": [{"x": 1, "y": 2.5}, {"x": -3e2, "y": 0}], "size": 3, "tags": ["a", "b", "a"],
 "pair": [7, "seven"], "many": [1, 2.5], "kind": 1, "meta": {"w": 2}, "either": {"x": 0, "y": 1}, "anything": [null, {"k": 1}],
 "frozen": [1, 1, 2], "seq": [4, 5], "count": 2.0}
```
Let me know if you need more.'''

def test_dataclass_values_are_built_all_the_way_down():
    s = Schema.of(Shape).parse(SHAPE_REPLY)
    assert s == Shape(name='tri', color=Color.GREEN, corners=[Point(1.0, 2.5), Point(-300.0, 0.0)], size=Size.L,
                      tags={'a', 'b'}, pair=(7, 'seven'), many=(1.0, 2.5), kind=1, meta={'w': 2.0}, either=Point(0.0, 1.0),
                      anything=[None, {'k': 1}], frozen=frozenset({1, 2}), seq=[4, 5], count=2)
    assert type(s.corners[0].x) is float and type(s.meta['w']) is float and type(s.many[0]) is float
    assert s.size is Size.L and s.color is Color.GREEN and type(s.frozen) is frozenset and type(s.pair) is tuple
    assert type(s.count) is int   # JSON Schema's integer takes 2.0; the dataclass field gets 2


def test_union_members_are_told_apart():
    @dataclass
    class U:
        a: Union[Point, int, None]
        b: Optional[float]
        c: Union[Color, str]
        d: Union[list[int], dict[str, Point]]
    assert Schema.of(U).parse('{"a": 3, "b": 4, "c": "red", "d": {"p": {"x": 1, "y": 2}}}') == U(3, 4.0, Color.RED, {'p': Point(1.0, 2.0)})
    u = Schema.of(U).parse('{"a": {"x": 1, "y": 2}, "b": null, "c": "blue", "d": [1]}')
    assert u == U(Point(1.0, 2.0), None, 'blue', [1]) and type(u.a) is Point
    assert type(Schema.of(U).parse('{"a": 3.0, "b": 1, "c": "x", "d": []}').a) is int


def test_typeddict_values_are_dicts_with_their_nested_values_built():
    row = {'id': 1, 'at': Point(1.0, 2.0), 'label': 'neg'}
    assert Schema.of(Row).parse('Row: {"id": 1, "at": {"x": 1, "y": 2}, "label": "neg"}') == row
    assert Schema.of(Row).parse('[{"id": 1, "at": {"x": 1, "y": 2}, "label": "neg"}] and {"id": 2}') == row   # an item
    with pytest.raises(Invalid, match="is not of type 'object'"):   # a whole answer that is JSON is the answer
        Schema.of(Row).parse('[{"id": 1, "at": {"x": 1, "y": 2}, "label": "neg"}]')
    assert Schema.of(Row).parse('{"id": 5}') == {'id': 5}


def test_dict_schema_gives_the_json_value():
    s = Schema.of({'title': 'Pair', 'type': 'array', 'prefixItems': [{'type': 'string'}, {'type': 'integer'}], 'minItems': 2})
    assert s.name == 'Pair' and s.parse('the pair is ["a", 2], as asked') == ['a', 2]
    assert Schema.of({}).parse(' "just a string" ') == 'just a string'


# ---- invalid values say where

@pytest.mark.parametrize('reply, why', [
    ('{"name": "t", "color": "red", "corners": [{"x": "one", "y": 2}]}', "at $.corners[0].x: 'one' is not of type 'number'"),
    ('{"name": "t", "color": "blue", "corners": []}', "at $.color: 'blue' is not one of ['red', 'green']"),
    ('{"name": "t", "color": "red"}', "'corners' is a required property"),
    ('{"name": "t", "color": "red", "corners": [], "extra": 1}', "Additional properties are not allowed ('extra'"),
    ('{"name": "t", "color": "red", "corners": [], "pair": [1]}', 'at $.pair: [1] is too short'),
    ('{"name": "t", "color": "red", "corners": [], "count": true}', 'at $.count: True is not valid under any of the given schemas'),
    ('{"name": "t", "color": "red", "corners": [], "meta": {"k": "v"}}', "at $.meta.k: 'v' is not of type 'number'"),
    ('["a list"]', "['a list'] is not of type 'object'"),
    ('no JSON here at all', 'it holds no JSON value'),
    ('  \n ', 'it is empty'),
    ('{"name": NaN}', 'it holds no JSON value'),
])
def test_invalid_replies_say_why_and_where(reply, why):
    with pytest.raises(Invalid) as e: Schema.of(Shape).parse(reply)
    assert str(e.value).startswith(why)


def test_the_first_reason_is_given_and_a_later_valid_value_wins():
    s = Schema.of(Point)
    with pytest.raises(Invalid, match=r"^at \$\.x: 'a' is not of type 'number'$"):
        s.parse('First {"x": "a", "y": 1} then {"x": 1}')
    assert s.parse('First {"x": "a", "y": 1} then {"x": 1, "y": 2}') == Point(1.0, 2.0)


def test_a_dataclasss_own_checks_are_invalid_answers():
    @dataclass
    class Positive:
        n: int
        def __post_init__(self):
            if self.n <= 0: raise ValueError(f'n must be positive, not {self.n}')
    with pytest.raises(Invalid, match='n must be positive, not -1'): Schema.of(Positive).parse('{"n": -1}')
    assert Schema.of(Positive).parse('{"n": -1} or rather {"n": 1}') == Positive(1)


# ---- bad schemas

class Plain: pass

@dataclass
class BadKeys:
    m: dict[int, str]

@dataclass
class Bytes:
    data: bytes

@dataclass
class BadLiteral:
    k: Literal[b'x']

class Pairs(enum.Enum):
    A = (1, 2)

@dataclass
class BadEnum:
    p: Pairs

@dataclass
class Unknown:
    x: 'NoSuchType'   # noqa: F821

@pytest.mark.parametrize('schema, says', [
    (Point(1, 2), 'schema= takes the class itself, Point, not one of its instances'),
    (Node, 'Node contains itself; a schema sent to a model cannot recurse. Nest a fixed number of levels'),
    (Outer, 'Outer contains itself'),
    (BadKeys, r'BadKeys\.m: the keys of a JSON object are strings: write dict\[str, \.\.\.\], not dict\[int, \.\.\.\]'),
    (Bytes, r'Bytes\.data: bytes has no JSON form\. Use str, int'),
    (BadLiteral, r'BadLiteral\.k: Literal values must be strings'),
    (BadEnum, r'BadEnum\.p: the values of the Enum Pairs must be'),
    (Unknown, r"The annotations of Unknown cannot be read \(name 'NoSuchType' is not defined\); define the types"),
    ({1: {'type': 'string'}}, r'schema= is a dict that is not JSON \(the key 1 is not a string\)\. A JSON Schema reads like'),
    ({'type': 'object', 'properties': {2: {'type': 'string'}}}, r'the key 2 is not a string'),
    ({'const': float('nan')}, r'schema= is a dict that is not JSON \(Out of range float'),
    ({'enum': {1, 2}}, r'schema= is a dict that is not JSON \(Object of type set'),
    ({'title': 'x', 'description': 'y'}, r'uses no JSON Schema keyword \(type, properties, enum, \.\.\.\)\. Write'),
    ({'type': 'strin'}, r"schema= is not a valid JSON Schema: at \$\.type: 'strin' is not valid"),
    ({'type': 'object', 'properties': {'a': {'minimum': 'x'}}}, r'at \$\.properties\.a\.minimum:'),
    ({'$ref': '#/$defs/nope', '$defs': {'yes': {}}}, r'''"\$ref": '#/\$defs/nope', which names nothing in it; point it at'''),
    ({'type': 'object', 'properties': {'a': {'$ref': 'https://example.invalid/a.json'}}}, 'Remote schemas are not fetched'),
    (Plain, r'schema= takes a JSON Schema \(a dict\), a dataclass, a TypedDict or a pydantic model, not the class Plain\. '),
    (str, 'not the class str'),
    (42, 'not int 42'),
    ('{"type": "string"}', re.escape("""not str '{"type": "string"}'""")),
])
def test_bad_schemas_say_what_to_do(schema, says):
    with pytest.raises(SchemaError, match=says) as e: Schema.of(schema)
    assert isinstance(e.value, ValueError) and e.value.__cause__ is None


def test_a_good_ref_is_kept_and_followed():
    s = Schema.of({'$defs': {'p': NUMBER_POINT}, 'type': 'array', 'items': {'$ref': '#/$defs/p'}})
    assert s.parse('[{"x": 1, "y": 2}]') == [{'x': 1, 'y': 2}]
    with pytest.raises(Invalid, match=r"^at \$\[0\]: 'y' is a required property"): s.parse('[{"x": 1}]')


def test_a_ref_found_missing_only_when_followed_is_a_schema_error_not_a_fetch():
    "Under an `$id` of its own a `$ref` is not checked in advance; followed, it fails as a schema error, fetching nothing."
    s = Schema.of({'$defs': {'a': {'$id': 'http://x.invalid/a', 'items': {'$ref': '#/$defs/missing'}}}, '$ref': '#/$defs/a'})
    assert s.parse('3') == 3
    with pytest.raises(SchemaError, match=r"schema= has a \$ref that cannot be resolved \(PointerToNowhere"): s.parse('[1]')


def test_pydantic_models():
    pd = pytest.importorskip('pydantic')
    class Item(pd.BaseModel):
        name: str
        price: float
    class Order(pd.BaseModel):
        items: list[Item]
        note: str | None = None
    s = Schema.of(Order)
    assert s.json == Order.model_json_schema() and s.name == 'Order'
    o = s.parse('Order:\n```json\n{"items": [{"name": "tea", "price": 2}]}\n```')
    assert isinstance(o, Order) and o.items[0] == Item(name='tea', price=2.0)
    with pytest.raises(Invalid, match=r'^at \$\.items\[0\]\.price: Input should be a valid number'):
        s.parse('{"items": [{"name": "tea", "price": "lots"}]}')
    with pytest.raises(SchemaError, match='takes the class itself, Order, not one of its instances'): Schema.of(o)


# ---- finding JSON in a model's answer

@pytest.mark.parametrize('text, found', [
    ('{"a": 1}', [{'a': 1}]),
    ('  [1, 2]\n', [[1, 2]]),
    ('"str"', ['str']),
    ('Here:\n```json\n{"a": 1}\n```\nDone.', [{'a': 1}, {'a': 1}]),
    ('```JSON  \r\n[true]\r\n```', [[True], [True]]),
    ('```\n3\n```', [3]),
    ('The answer is {"a": [1]} as you asked.', [{'a': [1]}, [1]]),
    ('{"a": 1} is what I think', [{'a': 1}]),
    ('```json\n{"a": 1}\n```\nor\n```json\n{"a": 2}\n```', [{'a': 1}, {'a': 2}, {'a': 1}, {'a': 2}]),
    ('[NaN] or [Infinity, -Infinity] or [1e999] or [-1e400]', []),
    ('{"a": 1e308}', [{'a': 1e308}]),
    ('no json {here [either', []),
])
def test_json_candidates(text, found):
    assert list(json_candidates(text)) == found


@contextmanager
def fuse(seconds):
    "A hang becomes a failure (this bounds nothing: the work is bounded by counting, below)."
    def boom(*_): raise TimeoutError(f'still running after {seconds} s')
    old = signal.signal(signal.SIGALRM, boom)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try: yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class Counting:
    "Stands for the module's decoder: counts each attempt to read JSON."
    def __init__(self): self.real, self.tries = structured._DECODER, 0
    def decode(self, s):
        self.tries += 1
        return self.real.decode(s)
    def raw_decode(self, s, i):
        self.tries += 1
        return self.real.raw_decode(s, i)

@contextmanager
def counted():
    c, old = Counting(), structured._DECODER
    structured._DECODER = c
    try: yield c
    finally: structured._DECODER = old

BOUND = 1 + 2 * structured._STARTS   # the whole text, the first fences, the first places a value may start


UNITS = {'braces': '{', 'brackets': '[', 'nested lists': '[1, ', 'nested objects': '{"a": ', 'bad fences': '```json\n{\n```\n',
         'good fences': '```\n[1]\n```\n', 'quotes': '"', 'deep lines': '[' * 40 + '\n', 'long lists': '[' + '0,' * 40_000,
         'fence openings': '```' + ' ' * 1000, 'prose': 'x'}

@pytest.mark.parametrize('unit', UNITS.values(), ids=UNITS.keys())
def test_adversarial_text_is_read_a_bounded_number_of_times(unit):
    "Each way to make a reader try again, repeated past what is searched: the tries stay within the bound."
    text = unit * (MAX_JSON // len(unit) + 10) + '{"past": "the end"}'   # longer than what is searched
    with fuse(30), counted() as c: found = list(json_candidates(text))
    assert c.tries <= BOUND and len(found) <= BOUND and {'past': 'the end'} not in found
    assert len(found) == BOUND - 1 if unit.startswith('```\n[1]') else not found   # 32 fences, 32 starts


def test_the_fence_pattern_is_linear():
    "A fence opening followed by a million spaces: a backtracking pattern (spaces, a language, spaces) would never end."
    with fuse(30): assert structured._FENCE.search('```' + ' ' * MAX_JSON + 'x') is None


# ---- generated: values embedded in text, found again

def same(a, b)->bool:
    "Equal and of the same types all the way down (1, 1.0 and True are not the same answer)."
    if type(a) is not type(b): return False
    if isinstance(a, dict): return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)): return len(a) == len(b) and all(map(same, a, b))
    if dataclasses.is_dataclass(a): return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return a == b

finite = st.floats(allow_nan=False, allow_infinity=False)
texts = st.one_of(awkward_text(8), st.text(max_size=8), st.sampled_from(['', '$ref', 'type', '```', '{"a": 1}', '\\', '"']))
json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), finite, texts),
                           lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(texts, c, max_size=4)), max_leaves=15)


@st.composite
def accepting(draw, v)->dict:
    "A JSON Schema that `v` follows: loose or exact, at every level."
    if draw(st.integers(0, 5)) == 0: return draw(st.sampled_from([{}, {'const': v}, {'enum': [v, 'other']}]))
    if v is None: return {'type': 'null'}
    if isinstance(v, bool): return {'type': 'boolean'}
    if isinstance(v, int): return draw(st.sampled_from([{'type': 'integer'}, {'type': 'number'}, {'minimum': v}, {'maximum': v}]))
    if isinstance(v, float): return draw(st.sampled_from([{'type': 'number'}, {'minimum': v, 'maximum': v}]))
    if isinstance(v, str): return draw(st.sampled_from([{'type': 'string'}, {'maxLength': len(v), 'minLength': len(v)}]))
    if isinstance(v, list) and not v: return {'type': 'array', 'maxItems': 0}
    if isinstance(v, list):
        if draw(st.booleans()): return {'type': 'array', 'prefixItems': [draw(accepting(x)) for x in v], 'minItems': len(v)}
        return {'type': 'array', 'items': {'anyOf': [draw(accepting(x)) for x in v]}, 'maxItems': len(v)}
    return obj({k: draw(accepting(x)) for k,x in v.items()}, draw(st.lists(st.sampled_from(list(v)), unique=True)) if v else ())


prose = st.lists(st.one_of(st.characters(codec='utf-8', exclude_characters='[{`"'), st.sampled_from(AWKWARD)), max_size=24).map(''.join)
noise = st.lists(st.sampled_from(['{x', '[x', '[ x', '{\nx', '}', ']', ':', ',']), max_size=8).map(' '.join)


@st.composite
def embedded(draw, v, seen:Counter)->str:
    "`v` as a model writes it: alone, in a fence among prose, or inline after a sentence (a scalar only alone or fenced)."
    body = json.dumps(v, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 1, '\t'])))
    modes = ['alone'] + (['fence'] if '```' not in body else []) + (['inline'] if isinstance(v, (list, dict)) else [])
    if isinstance(v, (list, dict)): modes.append('fence')   # a fence cut short by a ``` in a string: found inline
    mode = draw(st.sampled_from(modes))
    seen[mode] += 1
    event(mode)
    space = st.text(st.sampled_from(' \t\r\n\u2028\xa0'), max_size=4)
    if mode == 'alone': return draw(space) + body + draw(space)
    before, after = draw(prose) + ' ' + draw(noise) + draw(prose), draw(prose) + draw(noise)
    if mode == 'inline': return before + body + after
    return before + '\n```' + draw(st.sampled_from(['json', 'JSON', '', ' json '])) + '\n' + body + '\n```\n' + after


def test_a_value_embedded_in_text_is_found_again():
    "For random JSON values and schemas they follow, the value comes back wherever the answer put it."
    seen = Counter()
    @settings(GEN, max_examples=120)
    @given(st.data())
    def check(data):
        v = data.draw(json_values)
        schema = data.draw(accepting(v))
        text = data.draw(embedded(v, seen))
        target(float(len(text)))
        assert same(Schema.of(schema).parse(text), v), text
    check()
    assert seen['alone'] and seen['fence'] and seen['inline']


# -- the same through dataclasses and TypedDicts built for the occasion

def values(tp)->st.SearchStrategy:
    "(the JSON a model writes, the Python value `Schema.parse` should build) for the annotation `tp`."
    o, a = get_origin(tp), get_args(tp)
    both = lambda s: s.map(lambda x: (x, x))
    if tp is int: return st.one_of(both(st.integers(-2**64, 2**64)), st.integers(-1000, 1000).map(lambda i: (float(i), i)))
    if tp is float: return st.one_of(both(finite), st.integers(-2**64, 2**64).map(lambda i: (i, float(i))))
    if tp is str: return both(texts)
    if tp is bool: return both(st.booleans())
    if tp is type(None): return st.just((None, None))
    if tp is Any: return both(json_values)
    if o is Annotated: return values(a[0])
    if o is Literal: return both(st.sampled_from(a))
    if o is Union: return st.one_of(*map(values, a))
    if isinstance(tp, type) and issubclass(tp, enum.Enum): return st.sampled_from(list(tp)).map(lambda m: (m.value, m))
    def pairs(ps): return [j for j,_ in ps], [p for _,p in ps]
    if o is list: return st.lists(values(a[0]), max_size=3).map(pairs)
    if o is tuple and a[-1] is Ellipsis: return st.lists(values(a[0]), max_size=3).map(pairs).map(lambda t: (t[0], tuple(t[1])))
    if o is tuple: return st.tuples(*map(values, a)).map(pairs).map(lambda t: (t[0], tuple(t[1])))
    if o in (set, frozenset): return st.lists(values(a[0]), max_size=3).map(pairs).map(lambda t: (t[0], o(t[1])))
    if o is dict: return st.dictionaries(texts, values(a[1]), max_size=3).map(
        lambda d: ({k: j for k,(j,_) in d.items()}, {k: p for k,(_,p) in d.items()}))
    hints = {n: t for n,t,_ in structured._fields(tp)}
    def made(d): return {k: j for k,(j,_) in d.items()}, (dict if structured._is_typeddict(tp) else tp)(**{k: p for k,(_,p) in d.items()})
    return st.fixed_dictionaries({n: values(t) for n,t in hints.items()}).map(made)


NAMES = ['a', 'b', 'value', 'id', 'self_', 'items', 'type', 'ref']
leaves = st.sampled_from([int, float, str, bool, type(None), Any, Color, Size, Literal['x', 2, True], Annotated[str, 'said']])

def classes(children):
    "A dataclass or a TypedDict with a few fields of the `children` types."
    def make(kind, fields):
        cls = TypedDict('Made', dict(fields)) if kind == 'typeddict' else dataclasses.make_dataclass('Made', fields)
        cls.__module__ = 'nowhere'   # no source to look for (finding none in this module costs 40 ms a class)
        return cls
    return st.tuples(st.sampled_from(['dataclass', 'typeddict']),
                     st.lists(st.tuples(st.sampled_from(NAMES), children), min_size=1, max_size=3, unique_by=lambda f: f[0])
                     ).map(lambda t: make(*t))

annotations = st.recursive(leaves, lambda c: st.one_of(
    c.map(lambda t: Optional[t]), c.map(lambda t: list[t]), c.map(lambda t: dict[str, t]), c.map(lambda t: tuple[t, ...]),
    st.tuples(c, c).map(lambda t: tuple[t]), st.sampled_from([set[str], frozenset[int], set[Color]]), classes(c)), max_leaves=6)


def test_a_built_value_embedded_in_text_is_found_again():
    "For generated dataclasses and TypedDicts, the reply's JSON comes back as their Python value, types and all."
    seen = Counter()
    @settings(GEN, max_examples=120)
    @given(classes(annotations), st.data())
    def check(cls, data):
        j, expected = data.draw(values(cls))
        text = data.draw(embedded(j, seen))
        got = Schema.of(cls).parse(text)
        event(type(expected).__name__)
        seen[type(expected).__name__] += 1
        assert same(got, expected), (text, got, expected)
    check()
    assert seen['Made'] and seen['dict'] and seen['fence'] and seen['inline']


# ---- generated: any text at all

RECURSIVE = {'$defs': {'t': {'anyOf': [{'type': 'integer'}, {'type': 'array', 'items': {'$ref': '#/$defs/t'}}]}}, '$ref': '#/$defs/t'}
SCHEMAS = [Shape, Row, Loose, Point, {}, {'type': 'array', 'items': {'type': 'integer'}}, RECURSIVE, {'type': 'string'}]
if pydantic:
    class Priced(pydantic.BaseModel):
        name: str
        price: float
        tags: list[str] = []
    SCHEMAS.append(Priced)

deep = st.tuples(st.sampled_from(['[', '{"a": [', '[[{"x": ']), st.integers(1, 3000), st.sampled_from(['1', ']', '']))
any_text = st.one_of(
    st.text(max_size=200), hostile_markdown(), awkward_text(60),
    deep.map(lambda t: t[0] * t[1] + t[2] + ']' * t[1]),
    st.tuples(prose, json_values, prose).map(lambda t: t[0] + json.dumps(t[1]) + t[2]),
    st.tuples(prose, st.sampled_from(['[1, 2]', '{"x": 1, "y": 2.5}', '{"id": 3, "b": null}', '"s"', '{"name": "a", "price": 1}',
                                      '[[1], [[2]]]', '{"x": 1e400, "y": 1}']), prose).map(''.join),
    st.tuples(prose, json_values, st.integers(0, 50)).map(lambda t: t[0] + json.dumps(t[1])[:t[2]]),
    st.lists(st.sampled_from(['{', '[', '"', ':', ',', '1', 'NaN', 'true', '}', ']', '```json\n', '\n```', '\\', ' ']),
             max_size=60).map(''.join),
)


def test_any_text_is_a_value_or_invalid():
    "Whatever a model writes, parse answers a value of the schema or raises Invalid, nothing else."
    seen = Counter()
    @settings(GEN, max_examples=300)
    @given(st.sampled_from(range(len(SCHEMAS))), any_text)
    def check(i, text):
        spec = Schema.of(SCHEMAS[i])
        try: got = spec.parse(text)
        except Invalid as e:
            assert str(e)
            seen['invalid'] += 1
            return event('invalid')
        event('value')
        seen['value'] += 1
        if isinstance(SCHEMAS[i], type) and SCHEMAS[i] not in (Row, Loose): assert isinstance(got, SCHEMAS[i])
        else: assert isinstance(got, (dict, list, str, int, float, bool, type(None)))
    check()
    assert seen['value'] >= 5 and seen['invalid'] >= 5, seen   # both ways out are taken (about 20 and 280)


@pytest.mark.parametrize('depth', [50, 300, 900, 5000])
def test_deep_nesting_is_an_invalid_answer_not_a_crash(depth):
    "A value nested deeper than the validator can follow is no value (jsonschema recursing raised RecursionError)."
    text = '[' * depth + '1' + ']' * depth
    if depth == 50: assert Schema.of(RECURSIVE).parse(text) == json.loads(text)
    else:
        with pytest.raises(Invalid, match='it is nested too deeply|it holds no JSON value'): Schema.of(RECURSIVE).parse(text)
    with pytest.raises(Invalid): Schema.of(Point).parse(text)


def test_long_adversarial_text_is_read_a_bounded_number_of_times():
    "However many brackets and fences, the whole text, 32 fences and 32 starts are tried, and no more."
    tries = []
    units = st.sampled_from(['{', '[', '[1, ', '{"a": ', '```json\n{\n```\n', '```\n1\n```\n', '"', '\\', 'x', '```   ', ' '])
    @settings(GEN, max_examples=60)
    @given(st.lists(st.tuples(units, st.integers(1, 3000)), min_size=1, max_size=6), json_values)
    def check(parts, v):
        text = ''.join(u * n for u,n in parts) + json.dumps(v)
        with counted() as c: found = list(json_candidates(text))
        target(float(c.tries))
        tries.append(c.tries)
        assert c.tries <= BOUND and len(found) <= c.tries
    check()
    assert max(tries) == BOUND   # the bound is reached, and holds


def test_nan_and_infinity_are_never_accepted():
    "NaN, Infinity and numbers too large for a float, wherever they are, are no JSON: never a value, never a float."
    seen = Counter()
    spelled = st.sampled_from(['NaN', 'Infinity', '-Infinity', '1e999', '-1E400', '12e1234'])
    @settings(GEN, max_examples=120)
    @given(json_values, st.lists(spelled, min_size=1, max_size=3), st.randoms(use_true_random=False))
    def check(v, bad, rnd):
        body = json.dumps([v, *bad] if rnd.random() < 0.5 else {'v': v, 'bad': bad[0]})
        for b in bad: body = body.replace(json.dumps(b), b)
        text = rnd.choice(['{}', 'Here: {}', '```json\n{}\n```'])
        text = text.replace('{}', body, 1)
        for c in json_candidates(text): assert finite_all(c), (text, c)
        try: got = Schema.of({}).parse(text)
        except Invalid: return seen.update(['invalid'])
        seen['value'] += 1
        assert finite_all(got)
    check()
    assert seen['invalid'] and seen['value']


def finite_all(x)->bool:
    if isinstance(x, float): return math.isfinite(x)
    if isinstance(x, dict): return all(map(finite_all, x.values()))
    if isinstance(x, list): return all(map(finite_all, x))
    return True
