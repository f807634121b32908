"""Structured answers: a schema as the JSON Schema each route constrains its output with, and the model's text as a
validated value of it.

    spec = Schema.of(Invoice)        # a dataclass, a TypedDict, a pydantic model or a JSON Schema dict; else SchemaError
    spec.json                        # the JSON Schema sent: Ollama's `format`, `response_format` elsewhere
    spec.parse(reply.answer)         # an `Invoice`; `Invalid` saying why not (what a retry tells the model)

The model's text is untrusted. `json_candidates` takes JSON from it as models write it (alone, in a ```json fence,
after a sentence, before a remark), a bounded number of tries over a bounded length; `jsonschema` (draft 2020-12, or
the draft a dict's `$schema` names) checks the value, and a dataclass is built from it field by field. A pydantic model
checks its own values. Annotations a dataclass or TypedDict may use: str, int, float, bool, None, list, tuple, set, dict
with str keys, Literal, Optional and other unions, Annotated (a string in it is the field's description), Enum, and
nested dataclasses and TypedDicts; a field's docments comment is its description too.
"""

__all__ = ['Schema', 'Invalid', 'json_candidates', 'MAX_JSON']

import collections.abc, dataclasses, enum, functools, json, math, re, sys, types, typing
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints
from ..errors import SchemaError

MAX_JSON = 1 << 20     # characters of a reply searched for JSON
_STARTS = 32           # fenced blocks tried, after the whole text; then places a JSON value may start at tried
_FENCE = re.compile(r'```[ \t]*+(?:json|JSON|javascript)?[ \t]*+\r?\n(.*?)```', re.S)   # possessive: linear on `` ```   x``
_KEYWORDS = {'type', 'properties', 'items', 'prefixItems', 'enum', 'const', 'anyOf', 'oneOf', 'allOf', 'not', '$ref',
             'required', 'additionalProperties', '$defs', 'definitions', 'pattern', 'format', 'minimum', 'maximum',
             'minItems', 'maxItems', 'minLength', 'maxLength', 'patternProperties', '$schema', 'if', 'then', 'else'}
_PRIMITIVE = {str: 'string', int: 'integer', float: 'number', bool: 'boolean'}
_SEQUENCES = (list, set, frozenset, collections.abc.Sequence)   # typing.Sequence[int]'s origin is the abc
_QUALIFIERS = (typing.Required, typing.NotRequired)             # a TypedDict's; its __required_keys__ has said them


class Invalid(ValueError):
    "The model's text holds no value that follows the schema; the message says why, as the retry tells the model."


def _no_constants(name): raise ValueError(f'{name} is not JSON')

def _finite(s):
    "A JSON number as a float, refused when it overflows to infinity (`1e999`): JSON has no Infinity."
    f = float(s)
    if math.isinf(f): raise ValueError(f'{s} is too large')
    return f

_DECODER = json.JSONDecoder(parse_constant=_no_constants, parse_float=_finite)

def _loads(s):
    "JSON as the standard has it: no NaN or Infinity; nesting too deep for the parser is no value either."
    try: return True, _DECODER.decode(s)
    except (ValueError, RecursionError): return False, None


def json_candidates(
    text:str,   # A model's answer (untrusted)
):              # Yields each JSON value it holds, the likeliest first: the whole text, each fenced block, then inline
    "The JSON values in a model's answer: the text alone, a ```json fence, or a value after a sentence or before a remark."
    text = text[:MAX_JSON]
    ok, v = _loads(text.strip())
    if ok:
        yield v
        return
    for n, m in enumerate(_FENCE.finditer(text)):
        if n >= _STARTS: break
        ok, v = _loads(m[1].strip())
        if ok: yield v
    for n, m in enumerate(re.finditer(r'[\[{]', text)):
        if n >= _STARTS: return
        try: yield _DECODER.raw_decode(text, m.start())[0]
        except (ValueError, RecursionError): continue


# ---- annotations to JSON Schema

def _is_typeddict(tp)->bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, '__required_keys__') and hasattr(tp, '__total__')

def _is_pydantic(tp)->bool:
    pd = sys.modules.get('pydantic')   # never imported here: a model of it means the user has it
    return pd is not None and isinstance(tp, type) and issubclass(tp, pd.BaseModel)

def _is_union(origin)->bool: return origin is Union or origin is types.UnionType


@functools.lru_cache(maxsize=256)   # finding a class's source parses its whole module; a union's members ask per value
def _docs(cls)->dict:
    """A class's field comments (docments: on the field's line, else the comment lines just above it), a dataclass's or
    a TypedDict's; best effort: a class defined where its source cannot be read has none."""
    import ast, inspect, io, textwrap, tokenize
    try:
        src = textwrap.dedent(inspect.getsource(cls))
        toks = [t for t in tokenize.generate_tokens(io.StringIO(src).readline) if t.type == tokenize.COMMENT]
        body = ast.parse(src).body[0].body
    except Exception: return {}
    said = {t.start[0]: t.string[1:].strip() for t in toks if t.line[:t.start[1]].strip()}   # after code on its line
    alone = {t.start[0]: t.string[1:].strip() for t in toks if not t.line[:t.start[1]].strip()}
    def above(n): return [*above(n - 1), alone[n - 1]] if n - 1 in alone else []
    return {a.target.id: said.get(a.lineno) or '\n'.join(above(a.lineno)) for a in body
            if isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name)}


def _fields(cls)->list:
    "[(name, annotation, required)] of a dataclass or a TypedDict."
    try: hints = get_type_hints(cls, include_extras=True)
    except Exception as e: raise SchemaError(f'The annotations of {cls.__name__} cannot be read ({e}); define the types '
                                             'it names before it, or import them.') from None
    if _is_typeddict(cls): return [(k, t, k in cls.__required_keys__) for k,t in hints.items()]
    M = dataclasses.MISSING
    return [(f.name, hints.get(f.name, Any), f.default is M and f.default_factory is M)
            for f in dataclasses.fields(cls) if f.init]


def _object(cls, seen)->dict:
    if cls in seen: raise SchemaError(f'{cls.__name__} contains itself; a schema sent to a model cannot recurse. Nest a '
                                      'fixed number of levels (another class for the inner one), or type the field dict.')
    docs, props, required = _docs(cls), {}, []
    for name, tp, needed in _fields(cls):
        props[name] = _annotation(tp, f'{cls.__name__}.{name}', seen | {cls})
        if docs.get(name) and 'description' not in props[name]: props[name] = {**props[name], 'description': docs[name]}
        if needed: required.append(name)
    return dict(type='object', properties=props, required=required, additionalProperties=False)


def _annotation(tp, where, seen=frozenset())->dict:
    "The JSON Schema of one annotation (`where` names the field, for the message when it has none)."
    origin, args = get_origin(tp), get_args(tp)
    if tp is Any or tp is object: return {}
    if tp is None or tp is type(None): return {'type': 'null'}
    if tp in _PRIMITIVE: return {'type': _PRIMITIVE[tp]}
    if origin in _QUALIFIERS: return _annotation(args[0], where, seen)
    if origin is Annotated:
        s, said = _annotation(args[0], where, seen), [a for a in args[1:] if isinstance(a, str)]
        return {**s, 'description': said[0]} if said else s
    if origin is Literal:
        if not all(isinstance(a, (str, int, float, bool, type(None))) for a in args):
            raise SchemaError(f'{where}: Literal values must be strings, numbers, booleans or None.')
        return {'enum': list(args)}
    if _is_union(origin): return {'anyOf': [_annotation(a, where, seen) for a in args]}
    if tp in _SEQUENCES or origin in _SEQUENCES:
        return {'type': 'array', 'items': _annotation(args[0], where, seen) if args else {}}
    if tp is tuple or origin is tuple:
        if not args or len(args) == 2 and args[1] is Ellipsis:
            return {'type': 'array', 'items': _annotation(args[0], where, seen) if args else {}}
        return {'type': 'array', 'prefixItems': [_annotation(a, where, seen) for a in args],
                'minItems': len(args), 'maxItems': len(args)}
    if tp is dict or origin is dict:
        if args and args[0] is not str: raise SchemaError(f'{where}: the keys of a JSON object are strings: write '
                                                          f'dict[str, ...], not dict[{getattr(args[0], "__name__", args[0])}, ...].')
        return {'type': 'object', 'additionalProperties': _annotation(args[1], where, seen) if args else {}}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = [m.value for m in tp]
        if not all(isinstance(v, (str, int, float, bool)) for v in values):
            raise SchemaError(f'{where}: the values of the Enum {tp.__name__} must be strings, numbers or booleans.')
        return {'enum': values}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type) or _is_typeddict(tp): return _object(tp, seen)
    raise SchemaError(f'{where}: {getattr(tp, "__name__", tp)!s} has no JSON form. Use str, int, float, bool, list, dict, '
                      'Literal, Optional, an Enum, or a dataclass or TypedDict.')


# ---- JSON values to Python ones

def _build(tp, v):
    "The validated JSON value `v` as the annotation `tp` has it: dataclasses, Enums, tuples and sets built, all the way down."
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated or origin in _QUALIFIERS: return _build(args[0], v)
    if tp is float and isinstance(v, int) and not isinstance(v, bool): return float(v)
    if tp is int and isinstance(v, float): return int(v)   # 2.0: an integer to JSON Schema
    if _is_union(origin):
        for a in args:
            if _fits(a, v): return _build(a, v)
        return v
    if isinstance(tp, type) and issubclass(tp, enum.Enum): return tp(v)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return tp(**{n: _build(t, v[n]) for n,t,_ in _fields(tp) if n in v})
    if _is_typeddict(tp): return {n: _build(t, v[n]) for n,t,_ in _fields(tp) if n in v}
    if isinstance(v, list) and (tp in (*_SEQUENCES, tuple) or origin in (*_SEQUENCES, tuple)):
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            return tuple(_build(a, x) for a,x in zip(args, v))
        items = [_build(args[0], x) for x in v] if args else v
        return (origin or tp)(items) if (origin or tp) in (set, frozenset, tuple) else items
    if isinstance(v, dict) and (tp is dict or origin is dict) and args: return {k: _build(args[1], x) for k,x in v.items()}
    return v


def _fits(tp, v)->bool:
    "Whether `v` (already valid for the whole union) is a value of the union's member `tp`."
    origin = get_origin(tp)
    if origin is Annotated: return _fits(get_args(tp)[0], v)
    if tp is None or tp is type(None): return v is None
    if tp is bool: return isinstance(v, bool)
    if tp in (int, float): return (isinstance(v, (int, float)) and not isinstance(v, bool)
                                   and (tp is float or isinstance(v, int) or v.is_integer()))
    if tp is str: return isinstance(v, str)
    if origin is Literal: return v in get_args(tp)
    if isinstance(tp, type) and issubclass(tp, enum.Enum): return v in [m.value for m in tp]
    try: return _validator(_annotation(tp, 'union'))(v) is None
    except SchemaError: return False


def _validator(schema):
    "check(value) -> None, or why the value does not follow `schema` (jsonschema's best match, with where it is)."
    from jsonschema import exceptions, validators
    from referencing import Registry
    from referencing.exceptions import Unresolvable
    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    v = cls(schema, registry=Registry())   # its own: jsonschema's default fetches a remote `$ref` from the network
    def check(value):
        try: err = exceptions.best_match(v.iter_errors(value))
        except RecursionError: return 'it is nested too deeply'
        except Unresolvable as e: raise SchemaError(f'schema= has a $ref that cannot be resolved ({e}).') from None
        if err is None: return None
        where = ''.join(f'[{p}]' if isinstance(p, int) else f'.{p}' for p in err.absolute_path)
        return f'at ${where}: {_short(err.message)}' if where else _short(err.message)
    return check


def _short(s, n=300): return s if len(s) <= n else s[:n] + '…'


class Schema:
    "A schema for structured answers: the JSON Schema sent with the request, and how a reply becomes a validated value."
    def __init__(self, json_schema:dict, build, name:str):
        self.json, self.build, self.name = json_schema, build, name
        self.check = None   # check(value) -> why not, or None; a pydantic model checks its own

    @classmethod
    def of(cls, schema)->'Schema':
        "A `Schema` from a JSON Schema dict, a dataclass, a TypedDict or a pydantic model; `SchemaError` for anything else."
        if isinstance(schema, Schema): return schema
        if isinstance(schema, dict): return _dict_schema(schema)
        if _is_pydantic(schema):
            try: js = schema.model_json_schema()
            except Exception as e: raise SchemaError(f'{schema.__name__} has no JSON Schema: {e}') from None
            return cls(js, _pydantic_build(schema), schema.__name__)
        if not isinstance(schema, type) and (dataclasses.is_dataclass(schema) or _is_pydantic(type(schema))):
            raise SchemaError(f'schema= takes the class itself, {type(schema).__name__}, not one of its instances.')
        if dataclasses.is_dataclass(schema) or _is_typeddict(schema):
            s = cls(_object(schema, frozenset()), lambda v: _build(schema, v), schema.__name__)
            s.check = _validator(s.json)
            return s
        what = f'the class {schema.__name__}' if isinstance(schema, type) else f'{type(schema).__name__} {_short(repr(schema), 60)}'
        raise SchemaError(f'schema= takes a JSON Schema (a dict), a dataclass, a TypedDict or a pydantic model, not {what}. '
                          'For one label among a few, a dataclass with a `Literal[...]` field does it.')

    @property
    def instruction(self)->str:
        "What the prompt adds, for every route (one without constrained output follows the words alone)."
        return ('Answer with JSON only, no other text: one value that follows this JSON Schema.\n```json\n'
                + json.dumps(self.json, ensure_ascii=False) + '\n```')

    def parse(self,
              text:str,   # The model's answer (untrusted)
             ):           # The value: a dataclass or pydantic instance, or the JSON value (a dict for a TypedDict)
        "The first JSON value in `text` that follows the schema, as a Python value; `Invalid` saying why there is none."
        first = None
        for v in json_candidates(text):
            why = self.check(v) if self.check is not None else None
            if why is None:
                try: return self.build(v)
                except (Invalid, TypeError, ValueError) as e: why = _short(str(e))   # a dataclass's own checks too
            first = first or why
        if first is None:
            raise Invalid('it holds no JSON value' if text.strip() else 'it is empty')
        raise Invalid(first)


def _pydantic_build(model):
    def build(v):
        try: return model.model_validate(v)
        except Exception as e:   # pydantic's ValidationError: its first problem, as the model should read it
            errs = getattr(e, 'errors', lambda: [])()
            if errs: raise Invalid(_short('at $' + ''.join(f'[{p}]' if isinstance(p, int) else f'.{p}' for p in errs[0]['loc'])
                                          + f': {errs[0]["msg"]}')) from None
            raise Invalid(_short(str(e))) from None
    return build


def _dict_schema(d)->Schema:
    "A JSON Schema given as a dict, checked: JSON itself, written with schema keywords, and valid for its draft."
    try:
        text = json.dumps(d, allow_nan=False)
        if (odd := _odd_keys(d)): raise TypeError(f'the key {odd[0]!r} is not a string')
    except (TypeError, ValueError, RecursionError) as e:
        raise SchemaError(f'schema= is a dict that is not JSON ({e}). A JSON Schema reads like {{"type": "object", '
                          '"properties": {"name": {"type": "string"}}}; for Python types, write a dataclass or a TypedDict.') from None
    if d and not _KEYWORDS & set(d):
        raise SchemaError(f'schema= {_short(text, 80)} uses no JSON Schema keyword (type, properties, enum, ...). Write '
                          '{"type": "object", "properties": {...}}, or a dataclass or TypedDict.')
    from jsonschema import exceptions, validators
    cls = validators.validator_for(d, default=validators.Draft202012Validator)
    try: cls.check_schema(d)
    except exceptions.SchemaError as e:
        where = ''.join(f'[{p}]' if isinstance(p, int) else f'.{p}' for p in e.absolute_path)
        raise SchemaError(f'schema= is not a valid JSON Schema: at ${where}: {_short(e.message)}') from None
    _resolvable(d)
    s = Schema(json.loads(text), lambda v: v, str(d.get('title') or 'schema'))
    s.check = _validator(s.json)
    return s


def _odd_keys(x)->list:
    "The keys in `x` (a dict, and the dicts in it) that are not strings: JSON would turn them into strings."
    if isinstance(x, dict): return [k for k in x if not isinstance(k, str)] + [o for v in x.values() for o in _odd_keys(v)]
    if isinstance(x, (list, tuple)): return [o for v in x for o in _odd_keys(v)]
    return []


def _refs(x, root=True)->list:
    "The `$ref`s of a schema, but those under an `$id` of their own (relative to it) and those in values (`enum`, `const`)."
    if isinstance(x, list): return [r for v in x for r in _refs(v, False)]
    if not isinstance(x, dict) or '$id' in x and not root: return []
    own = [x['$ref']] if isinstance(x.get('$ref'), str) else []
    return own + [r for k,v in x.items() if k not in ('enum', 'const', 'default', 'examples') for r in _refs(v, False)]


def _resolvable(d):
    "SchemaError unless each `$ref` names a place in the schema (or a draft's own meta-schema): none is fetched."
    from jsonschema_specifications import REGISTRY
    from referencing import Resource
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012
    resolver = REGISTRY.resolver_with_root(Resource.from_contents(d, default_specification=DRAFT202012))
    for r in _refs(d):
        try: resolver.lookup(r)
        except Unresolvable: raise SchemaError(f'schema= has "$ref": {r!r}, which names nothing in it; point it at one of '
                                               'its "$defs" ("#/$defs/name"). Remote schemas are not fetched.') from None
