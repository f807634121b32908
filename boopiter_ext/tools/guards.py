"""Guards between a model's reply and anything that runs: the model calls tools by writing Python.

A tool is a plain function in the kernel namespace. The model uses one by writing a ```python block that calls
it (`python_blocks`, blocks.py). `plan_calls` decides whether
a block may run unattended: only when every statement just calls a name with literal arguments (or names of
notebook variables, whose values are captured), so nothing else can hide in it; a block over `MAX_LINES` or
`MAX_CHARS` is refused unparsed, and everything here is linear in what the model wrote. `check_call` then runs
the guards in order, each answering in text the model reads: an offered tool? arguments that fit its signature and
annotations, and the bounds an `Annotated` one sets (`_limits`: a range, a pattern, `annotated_types` markers)? for a tool with side effects (`INTENT_ATTR`), did the user's own prompt ask for it, and did the user
confirm? The intent check reads only the user's text, never tool output: a document cannot grant itself
permission. A value that leaves the machine (`OUTBOUND_ATTR`, such as `fetch_url`'s URL) goes unattended only when
it was given to the model (`Given`: the prompt, the variables it names, what tools read from outside), never when the
model composed it: a URL the model wrote could carry the notebook's data to a server, so it needs the user's consent.
A tool's result is given only minus what the model put into it: every stretch that shares `GRAM` characters with
text the model wrote (its calls' arguments, in every spelling a tool may echo them: quoted, escaped, URL-encoded,
cased, across lines) is blanked before the result joins `Given`, unless that stretch was given already.
Tool output is screened and quarantined by screening.py; calls written as JSON are recovered by lenient.py, so
every call passes the same guards.

    for code in python_blocks(reply):
        calls, problem = plan_calls(code, user_ns)
        for c in calls: status, msg = check_call(c, tools, prompt, confirm_by_input)
"""

__all__ = ['INTENT_ATTR', 'REVIEWED_ATTR', 'OUTBOUND_ATTR', 'MAX_LINES', 'MAX_CHARS', 'Call', 'Given', 'Withheld', 'plan_calls',
           'check_call', 'confirm_by_input', 'composed', 'unwritten', 'written_grams', 'limits_text']

import ast, bisect, html, inspect, itertools, json, os, re, types, typing
from urllib.parse import quote, quote_plus, unquote, unquote_plus
from ..redact import holds_secret
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

INTENT_ATTR = 'boopiter_intent'   # on a tool: a regex the user's prompt must match; the tool has side effects
REVIEWED_ATTR = 'boopiter_reviewed'   # on such a tool: the user accepts or rejects its change where it happens (a diff
                                      # in the cell), so it is not confirmed here first
OUTBOUND_ATTR = 'boopiter_outbound'   # on a tool: names of parameters whose values leave the machine (a URL)
MAX_LINES, MAX_CHARS = 1_000, 100_000   # the biggest block `plan_calls` plans: it runs in the kernel, holding it


def _canon(v, depth=0):
    "A repr that does not depend on dict or set order (and stops descending at depth 20: a list may contain itself)."
    if depth > 20: return f'<{type(v).__name__} at {id(v):#x}>'
    def c(x): return _canon(x, depth + 1)
    if isinstance(v, dict): return '{' + ', '.join(sorted(f'{c(k)}: {c(x)}' for k,x in v.items())) + '}'
    if isinstance(v, (set, frozenset)): return '{' + ', '.join(sorted(map(c, v))) + '}'
    if isinstance(v, (list, tuple)): return type(v).__name__ + '(' + ', '.join(map(c, v)) + ')'
    try: return repr(v)
    except Exception: return f'<{type(v).__name__} at {id(v):#x}>'


@dataclass
class Call:
    "One tool call planned from a block: the callee's name, argument values, and where it was written."
    name: str
    args: tuple
    kwargs: dict
    source: str   # the call as the model wrote it
    line: int     # its line in the block

    def key(self)->str:
        "The same for the same call with the same argument values (a model repeating itself)."
        kw = ', '.join(f'{k}={_canon(v)}' for k,v in sorted(self.kwargs.items()))
        return f'{self.name}({", ".join(map(_canon, self.args))}{"; " if kw else ""}{kw})'


@dataclass(frozen=True)
class Withheld:
    "A notebook variable's place in the namespace a block may name, standing for a value never shown to the model."
    why: str   # e.g. '`x` is defined only by a hidden cell'


_RULE = 'a block runs by itself only when each line just calls an offered tool with literal arguments.'
_KINDS = {  # what each refused construct is called in the message the model reads
    (ast.Import, ast.ImportFrom): 'an import', (ast.Assign, ast.AugAssign, ast.AnnAssign): 'an assignment',
    (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef): 'a definition', (ast.Delete,): 'a deletion',
    (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith, ast.Match, ast.Return, ast.Raise,
     ast.Break, ast.Continue, ast.Assert, ast.Global, ast.Nonlocal, ast.Pass, ast.IfExp, ast.BoolOp): 'control flow',
    (ast.Attribute,): 'attribute access', (ast.Subscript,): 'a subscript', (ast.Lambda,): 'a lambda',
    (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp): 'a comprehension', (ast.JoinedStr,): 'an f-string',
    (ast.NamedExpr,): 'an assignment expression', (ast.Await,): 'await', (ast.Yield, ast.YieldFrom): 'yield',
    (ast.Starred,): 'a starred argument', (ast.Call,): 'a nested call',
}
if hasattr(ast, 'TryStar'): _KINDS[(ast.TryStar,)] = 'control flow'


def _kind(node):
    "The first refused construct in `node` (itself first), as the model will read it."
    for n in ast.walk(node):
        for types_,name in _KINDS.items():
            if isinstance(n, types_): return name, n
    return 'an expression', node


def _split(code):
    "The block's lines as UTF-8, split once and where the parser splits them (at \\r, \\n and \\r\\n only)."
    return [ln.encode() for ln in re.findall(r'[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$', code)]


def _segment(lines, node):
    "`ast.get_source_segment` over lines split once (it splits the whole source again for each node: quadratic)."
    a, b, ca, cb = (getattr(node, k, None) for k in ('lineno', 'end_lineno', 'col_offset', 'end_col_offset'))
    if None in (a, b, ca, cb) or b > len(lines): return None
    a, b = a - 1, b - 1
    if a == b: return lines[a][ca:cb].decode()
    return (lines[a][ca:] + b''.join(lines[a+1:b]) + lines[b][:cb]).decode()


def _snip(lines, node):
    s = (_segment(lines, node) or ast.unparse(node)).strip().splitlines()[0]
    return s if len(s) <= 60 else s[:59] + '…'


def _refusal(lines, node, kind=None):
    "The sentence the model reads: which line, what was written there, and why it cannot run by itself."
    if kind is None: kind, node = _kind(node)
    return f'line {node.lineno}: `{_snip(lines, node)}` is not allowed ({kind}): {_RULE}'


def _dunder(node):
    "The first name or attribute in `node` that starts with two underscores, if any."
    for n in ast.walk(node):
        nm = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else ''
        if nm.startswith('__'): return n
    return None


def _secretive(name, v)->str:
    "Why a variable's value may not go to a tool: it holds a secret under a secret's name, or shaped like a key; or ''."
    return f'`{name}` holds a secret (`{where}`)' if (where := holds_secret(v)) else ''


def _value(lines, node, ns):
    "(value, problem) for one argument: a literal, or a notebook variable's current value."
    if isinstance(node, ast.Name):
        v = ns.get(node.id)
        why = v.why if isinstance(v, Withheld) else _secretive(node.id, v) if node.id in ns else ''
        if why: return None, f'line {node.lineno}: {why}, so it cannot be passed to a tool.'
        if node.id in ns: return v, None
        return None, (f'line {node.lineno}: `{node.id}` is not a variable in the notebook: pass a literal value '
                      'or the name of a variable that exists.')
    kind, where = _kind(node)
    if kind == 'an expression' and any(isinstance(n, ast.Name) for n in ast.walk(node)):
        kind = 'a variable inside a value'   # `[1, x]`: only a bare name is looked up
    if kind != 'an expression': return None, _refusal(lines, where, kind)
    try: return ast.literal_eval(node), None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError): return None, _refusal(lines, node)


def _plan(lines, st, ns):
    "(Call, None) for one statement, or (None, problem)."
    if (d := _dunder(st)) is not None: return None, _refusal(lines, d, 'a dunder name')
    if not isinstance(st, ast.Expr): return None, _refusal(lines, st)
    c = st.value
    if not isinstance(c, ast.Call):
        kind, where = _kind(c)
        if kind in ('an expression', 'a nested call'): kind, where = 'not a tool call', c   # `x`, `tool(1) + 1`
        return None, _refusal(lines, where, kind)
    if not isinstance(c.func, ast.Name):
        plain = 'attribute access' if isinstance(c.func, ast.Attribute) else None
        return None, _refusal(lines, c.func, plain or 'a call of something other than a plain name')
    if (s := next((a for a in c.args if isinstance(a, ast.Starred)), None)): return None, _refusal(lines, s)
    if (k := next((k for k in c.keywords if k.arg is None), None)):
        return None, _refusal(lines, k.value, 'a `**` argument')
    vals = [_value(lines, n, ns) for n in c.args + [k.value for k in c.keywords]]
    if (problem := next((p for _,p in vals if p), None)): return None, problem
    args, kwargs = tuple(v for v,_ in vals[:len(c.args)]), {k.arg: v for k,(v,_) in zip(c.keywords, vals[len(c.args):])}
    return Call(c.func.id, args, kwargs, _segment(lines, c) or ast.unparse(c), st.lineno), None


def _too_long(code, max_lines, max_chars):
    "The refusal for a block over the limits, else '' (counted without parsing: a huge block costs microseconds)."
    n, c = code.count('\n') + (not code.endswith('\n')), len(code)
    if n <= (max_lines or n) and c <= (max_chars or c): return ''
    limits = ' and '.join(f'{m:,} {w}' for m,w in ((max_lines, 'lines'), (max_chars, 'characters')) if m)
    return (f'the block is too long ({n:,} line{"s" * (n != 1)}, {c:,} characters; a block may have at most {limits}): '
            'write a few calls per block, and make the next ones after their results come back.')


def plan_calls(
    code:str,                  # The code of one block the model wrote
    namespace:dict=None,       # Variables the arguments may name (the kernel's user namespace)
    max_lines:int=MAX_LINES,   # A longer block is refused before it is parsed (None: no limit)
    max_chars:int=MAX_CHARS,   # So is a block with more characters (None: no limit)
)->tuple:                      # (calls, problem): the planned `Call`s and None, or [] and one sentence for the model
    "Plan a block that only calls names with literal arguments; refuse anything else, saying which line and why."
    if (too := _too_long(code, max_lines, max_chars)): return [], too
    try: tree = ast.parse(code)
    except SyntaxError as e: return [], f'the block is not valid Python: {e.msg} (line {e.lineno}).'
    except (ValueError, MemoryError, RecursionError) as e: return [], f'the block is not valid Python: {e}.'
    if not tree.body: return [], 'the block is empty'
    calls, lines = [], _split(code)
    for st in tree.body:
        call, problem = _plan(lines, st, namespace or {})
        if problem: return [], problem
        calls.append(call)
    try: compile(tree, '<block>', 'exec', dont_inherit=True)   # what only the compiler checks: `f(a=1, a=2)`
    except SyntaxError as e: return [], f'the block is not valid Python: {e.msg} (line {e.lineno}).'
    return calls, None


def _tname(t):
    "An annotation as the model should read it: `int`, `int or None`, `one of 'a', 'b'`, `list[int]`."
    if t is type(None) or t is None: return 'None'
    o, a = get_origin(t), get_args(t)
    if o is Literal: return 'one of ' + ', '.join(map(repr, a))
    if o in (Union, types.UnionType): return ' or '.join(map(_tname, a))
    if o is typing.Annotated: return _tname(a[0])
    if o is not None and a:
        return f'{getattr(o, "__name__", o)}[{", ".join("..." if x is ... else _tname(x) for x in a)}]'
    return getattr(t, '__name__', None) or str(t).replace('typing.', '')


def _fits(v, t, depth=0)->bool:
    "Whether `v` satisfies annotation `t`; annotations this does not understand accept anything."
    if depth > 20 or any(t is x for x in (Any, object, inspect.Parameter.empty)): return True
    def _fits_(x, y): return _fits(x, y, depth + 1)
    if t is None or t is type(None): return v is None
    o, a = get_origin(t), get_args(t)
    if o is Literal: return any(type(v) is type(x) and v == x for x in a)
    if o in (Union, types.UnionType): return any(_fits_(v, x) for x in a)
    if o is typing.Annotated: return _fits_(v, a[0])
    if o is not None:
        if isinstance(o, type) and not isinstance(v, o): return False
        if not a: return True
        if o in (list, set, frozenset): return all(_fits_(x, a[0]) for x in v)
        if o is dict: return all(_fits_(k, a[0]) and _fits_(x, a[1]) for k,x in v.items())
        if o is tuple:
            if len(a) == 2 and a[1] is ...: return all(_fits_(x, a[0]) for x in v)
            return len(a) == len(v) and all(_fits_(x, y) for x,y in zip(v, a))
        return True
    if t is int: return isinstance(v, int) and not isinstance(v, bool)
    if t is float: return isinstance(v, (int, float)) and not isinstance(v, bool)
    if isinstance(t, type) and issubclass(t, os.PathLike): return isinstance(v, (str, os.PathLike))
    if isinstance(t, type):
        try: return isinstance(v, t)
        except TypeError: return True
    return True


def _limits(t)->list:
    """The bounds an annotation puts on a value beyond its type, as [(test(value)->bool, what it must be)]: from
    `Annotated[T, ...]` metadata: a `range`, a compiled pattern, and the `annotated_types` / pydantic markers by their
    attributes (`ge`, `gt`, `le`, `lt`, `min_length`, `max_length`, `pattern`)."""
    if get_origin(t) is not typing.Annotated: return []
    out = []
    for m in get_args(t)[1:]:
        if isinstance(m, str): continue   # a string is the parameter's description (`_ann_doc`)
        if isinstance(m, range) and m.step == 1: out.append((lambda v, r=m: v in r, f'from {m.start} to {m.stop - 1}'))
        rx = m if isinstance(m, re.Pattern) else getattr(m, 'pattern', None)
        try: rx = re.compile(rx) if isinstance(rx, str) else rx
        except re.error: rx = None
        if isinstance(rx, re.Pattern):
            out.append((lambda v, rx=rx: isinstance(v, str) and rx.fullmatch(v) is not None, f'text matching {rx.pattern!r}'))
        for attr, test, word in (('ge', lambda v, b: v >= b, 'at least'), ('gt', lambda v, b: v > b, 'above'),
                                 ('le', lambda v, b: v <= b, 'at most'), ('lt', lambda v, b: v < b, 'below')):
            if isinstance(b := getattr(m, attr, None), (int, float)) and not isinstance(b, bool):
                out.append((lambda v, b=b, test=test: test(v, b), f'{word} {b}'))
        for attr, test, word in (('min_length', lambda n, b: n >= b, 'at least'), ('max_length', lambda n, b: n <= b, 'at most')):
            if isinstance(b := getattr(m, attr, None), int) and not isinstance(b, bool):
                out.append((lambda v, b=b, test=test: hasattr(v, '__len__') and test(len(v), b), f'{word} {b} long'))
    return out


def limits_text(t)->str:
    "What an annotation's bounds ask of a value, for the tools prompt: `from 1 to 10`, '' for none."
    return ', '.join(what for _, what in _limits(t))


def _hints(fn, sig):
    "Each parameter's annotation, string annotations resolved; {} when they cannot be (then nothing is checked)."
    anns = {n: p.annotation for n,p in sig.parameters.items()}
    if not any(isinstance(t, str) for t in anns.values()): return anns
    try: hints = typing.get_type_hints(fn.__init__ if inspect.isclass(fn) else fn, include_extras=True)   # bounds kept
    except Exception: return {}
    return {n: hints.get(n, Any) for n in anns}


def _short(v):
    try: r = repr(v)
    except Exception: r = f'<{type(v).__name__}>'
    return r if len(r) <= 60 else r[:59] + '…'


def _bind(sig, args, kwargs):
    "(bound, problems): the values each parameter gets, and every way the call does not fit the signature."
    P = inspect.Parameter
    ps = list(sig.parameters.values())
    pos = [p for p in ps if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    var_pos = next((p for p in ps if p.kind is P.VAR_POSITIONAL), None)
    var_kw = next((p for p in ps if p.kind is P.VAR_KEYWORD), None)
    bound, probs = {p.name: v for p,v in zip(pos, args)}, []
    if len(args) > len(pos):
        if var_pos: bound[var_pos.name] = tuple(args[len(pos):])
        else: probs.append(f'{len(args)} positional arguments given, but the tool takes at most {len(pos)}')
    for k,v in kwargs.items():
        p = sig.parameters.get(k)
        if p is not None and p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY):
            if k in bound: probs.append(f'argument `{k}` given twice')
            else: bound[k] = v
        elif var_kw: bound.setdefault(var_kw.name, {})[k] = v
        else: probs.append(f'unknown argument `{k}`')
    probs += [f'missing argument `{p.name}`' for p in ps
              if p.kind not in (P.VAR_POSITIONAL, P.VAR_KEYWORD) and p.default is P.empty and p.name not in bound]
    if not probs:
        try: sig.bind(*args, **kwargs)   # the interpreter's word, should the two ever disagree
        except TypeError as e: probs.append(str(e))
    return bound, probs


def _type_problems(sig, hints, bound):
    P, probs = inspect.Parameter, []
    for n,v in bound.items():
        p, t = sig.parameters[n], hints.get(n, Any)
        if p.kind is P.VAR_POSITIONAL: items = [(f'{n}[{i}]', x) for i,x in enumerate(v)]
        elif p.kind is P.VAR_KEYWORD: items = list(v.items())
        elif v is None and p.default is None: continue   # `x:str=None`: passing the default is always fine
        else: items = [(n, v)]
        for k,x in items:
            if not _fits(x, t): probs.append(f'argument `{k}` must be {_tname(t)}, got {type(x).__name__} {_short(x)}')
            else: probs += [f'argument `{k}` must be {what}, got {_short(x)}' for test, what in _limits(t)
                            if not _holds(test, x)]   # within its type: within its bounds too
    return probs


def _holds(test, v)->bool:
    try: return bool(test(v))
    except Exception: return False   # a value the bound cannot compare with (None for a number): outside it


def _intent(fn): return getattr(fn, INTENT_ATTR, None)

def _asked(intent, text):
    return (intent.search(text) if isinstance(intent, re.Pattern) else re.search(intent, text, re.I)) is not None


def composed(
    fn,          # A tool
    bound:dict,  # Its arguments by name
    given:str,   # What the model was given: the prompt, the values of the variables it names, earlier tool results
)->list:         # [(parameter, value)] of the outbound arguments not found in `given`
    """The arguments that would leave the machine (`OUTBOUND_ATTR`) although nobody gave them to the model: each must
    appear in `given` whole (`_written_in`), with or without its scheme, not as a part the model cut out of it."""
    return [(p, v) for p in getattr(fn, OUTBOUND_ATTR, ()) if (v := bound.get(p)) is not None
            and not (isinstance(v, str) and (v := v.strip()) and any(_written_in(w, given) for w in _forms(v)))]


def _forms(v): return {v, re.sub(r'(?i)^https?://', '', v)} - {''}   # a URL with or without its scheme

# what may touch a value written in text: no character a URL could go on with (`.`, `,`, `;`, `:`, `!`, `?` or `)` may
# close a sentence, when no more of a URL follows)
_BEFORE, _AFTER = r"(?<![\w.~:/?#@$&*+=%-])", r"(?![\w~/#@$&*+=%\[-]|[.,;:!?)](?=[\w~/#%=&-]))"


def _written_in(value:str, text:str)->bool:
    "Whether `value` is written in `text` as a whole: as a word or URL of its own, not the middle of a longer one."
    return re.search(_BEFORE + re.escape(value) + _AFTER, text) is not None


# ---- what the model was given: text from outside it, never what its own calls put into a tool's result

GRAM = 5                 # characters: a stretch of a result this long that the model's own text holds is the model's
_MAX_WRITTEN = 200_000   # characters of argument text a call may carry and its result still be given (grams cost memory)
_MAX_LOOKUPS = 1_000     # stretches of one result looked up in the given text; past it, the rest are blanked unread
_BLANK = '\x00'          # what a blanked stretch becomes: nothing a value can be written across
_KEEP = re.compile(r'[^\s\u200b-\u200f\u2060\ufeff]+')   # what echoes are compared on: line breaks, indents, zero widths aside
_URL_SAFE = ":/?#[]@!$&'()*+,;=%~"


def _low(text):
    "`text` in lower case, each character in its place (the few that lower to two characters stay as they are)."
    low = text.lower()
    return low if len(low) == len(text) else ''.join(c if len(c.lower()) != 1 else c.lower() for c in text)


def _norm(text): return ''.join(_KEEP.findall(_low(text)))


def _spellings(s:str)->set:
    "The ways a tool may write back text it was given: as is, quoted or escaped, URL-encoded or decoded, casefolded."
    forms = {s, s.casefold(), repr(s)[1:-1], json.dumps(s)[1:-1], json.dumps(s, ensure_ascii=False)[1:-1], html.escape(s),
             html.unescape(s), s.encode('unicode_escape', 'replace').decode('ascii'), unquote(s), unquote_plus(s),
             quote(s, safe=''), quote(s), quote_plus(s), quote(s, safe=_URL_SAFE)}
    return forms | {html.escape(f) for f in (repr(s)[1:-1], json.dumps(s)[1:-1])}


def _texts(v, depth=0):
    "The text in an argument value: its strings (inside containers too, keys included), numbers as written, and reprs."
    if isinstance(v, str): yield v
    elif isinstance(v, (bytes, bytearray)): yield bytes(v).decode('latin-1')
    elif isinstance(v, (int, float, complex)): yield repr(v)
    elif isinstance(v, (list, tuple, set, frozenset, dict)) and depth < 20:
        for x in ([y for kv in v.items() for y in kv] if isinstance(v, dict) else v): yield from _texts(x, depth + 1)
        yield _canon(v)


def written_grams(
    values,                 # What the model wrote: a call's argument values
    into:set=None,          # A set to add the grams to
)->set|None:                # `into` with the `GRAM`-character pieces of every spelling; None if they are too much text
    "The pieces of text the model wrote, normalised (lower case, no whitespace), in every spelling a tool may echo."
    grams, texts, size = set() if into is None else into, [], 0
    for t in (t for v in values for t in _texts(v)):
        if (size := size + len(t)) > _MAX_WRITTEN: return None
        texts.append(t)
    for t in texts:
        for f in _spellings(t):
            n = _norm(f)
            grams.update(n[i:i + GRAM] for i in range(len(n) - GRAM + 1))
    return grams


def _stretches(text, grams):
    "[(start, end)] in `text` of the maximal stretches covered by pieces in `grams` (compared normalised)."
    low = _low(text)
    norm = ''.join(_KEEP.findall(low))
    hits = [j for j in range(len(norm) - GRAM + 1) if norm[j:j + GRAM] in grams]   # the one loop over every character
    if not hits: return []
    covered = []
    for j in hits:
        if covered and j <= covered[-1][1]: covered[-1][1] = j + GRAM
        else: covered.append([j, j + GRAM])
    spans = [m.span() for m in _KEEP.finditer(low)]   # where each normalised piece is in `text`
    keys = list(itertools.accumulate((b - a for a,b in spans), initial=0))
    def at(j):
        k = bisect.bisect_right(keys, j) - 1
        return spans[k][0] + j - keys[k]
    return [(at(a), at(b - 1) + 1) for a,b in covered]


def unwritten(
    text:str,       # A tool's result
    grams:set,      # What the model wrote (`written_grams`)
    given:str='',   # What the model was given already: a stretch found whole in it stays
)->str:             # `text` with every stretch the model wrote blanked
    "A tool's result minus what the model's own text put into it: the part of it that came from outside the model."
    if not grams or len(text) < GRAM: return text
    out, at, looked = [], 0, {}
    for a,b in _stretches(text, grams):
        piece = text[a:b]
        if piece not in looked: looked[piece] = len(looked) < _MAX_LOOKUPS and piece in given
        out += [text[at:a], piece if looked[piece] else _BLANK]
        at = b
    return ''.join(out + [text[at:]])


class Given:
    """What the model was given: text from outside it, that an outbound value may come from unattended. A tool's
    result joins it minus what the model wrote into it (`unwritten`); a value the user confirmed sending joins whole."""
    def __init__(self, *texts:str):
        self.parts, self.grams, self.whole = [t for t in texts if t], set(), True
        self._text = None

    @property
    def text(self)->str:
        if self._text is None: self._text = '\n'.join(self.parts)
        return self._text

    def wrote(self, *values):
        "Values the model wrote (a call's arguments): their echoes in results never count as given."
        if self.whole and written_grams(values, self.grams) is None: self.whole = False

    def replied(self, text:str, limit:int=100_000):
        "The model's earlier answers (`show_cell` or a notebook's file may show them), their last `limit` characters."
        n = _norm(text[-limit:])
        self.grams.update(n[i:i + GRAM] for i in range(len(n) - GRAM + 1))

    def add(self, result:str):
        "A tool's result: given, but for the stretches the model wrote (none of it, once its calls carried too much)."
        if self.whole: self._add(unwritten(result, self.grams, self.text))

    def confirmed(self, value:str):
        "A value the user agreed to send: theirs now (a page it fetched may be followed)."
        if isinstance(value, str): self._add(value)

    def _add(self, t):
        self.parts.append(t)
        self._text = None


def check_call(
    call:Call,       # A planned call
    tools:dict,      # The offered tools: name -> function
    user_text:str,   # The user's own prompt (never tool output)
    confirm=None,    # `confirm(name, args)->bool` asks the user; None declines every side effect
    given:str=None,  # Text outbound values may come from unattended (see `composed`); None: `user_text`
)->tuple:            # ('ok', None), or (status, message for the model)
    "Run the guards in order: unknown tool, invalid args, not requested, outbound values composed, declined."
    if call.name not in tools:
        return 'unknown tool', f"error: there is no tool named {call.name!r}. Available: {', '.join(sorted(tools))}."
    fn = tools[call.name]
    try: sig = inspect.signature(fn)
    except (TypeError, ValueError): sig = None   # a builtin without a signature: nothing to check against
    bound = dict(call.kwargs, **({'args': call.args} if call.args else {}))
    if sig is not None:
        bound, probs = _bind(sig, call.args, call.kwargs)
        probs += _type_problems(sig, _hints(fn, sig), bound)
        if probs: return 'invalid args', 'error: ' + '; '.join(probs) + '. Fix the arguments and call again.'
    made = composed(fn, bound, (user_text or '') if given is None else given)
    intent = _intent(fn)
    if intent is None and not made: return 'ok', None
    if intent is not None and not _asked(intent, user_text or ''):
        return 'not requested', 'error: the user did not ask for this action, so it was not performed.'
    if not made and getattr(fn, REVIEWED_ATTR, False): return 'ok', None   # the user reviews the change itself
    what = ', '.join(f'{p}={v!r}' for p,v in made)
    answer = confirm(call.name, bound) if confirm is not None else None
    if answer is None and made:
        return 'declined', (f"error: {what} is not in the user's prompt, the variables it names or what a tool read (a "
                            "tool repeating your own arguments does not count), and no one could be asked to confirm "
                            'sending it, so it was not sent. Use a value you were given.')
    if answer is None: return 'declined', 'No one could be asked to confirm this action, so it was not performed.'
    if not answer and made: return 'declined', f'The user declined sending {what}. It was not sent.'
    if not answer: return 'declined', 'The user declined this action. It was not performed.'
    return 'ok', None


def confirm_by_input(
    name:str,   # The tool about to run
    args:dict,  # Its arguments by name
)->bool|None:   # Whether the user typed y or yes; None if no one could be asked
    "Ask on stdin before a tool with side effects runs; no stdin (e.g. under nbclient) gives None: not asked, so no."
    shown = ', '.join(f'{k}={v!r}' for k,v in args.items())
    try: return input(f'Run {name}({shown})? [y/N] ').strip().lower() in ('y', 'yes')
    except (EOFError, OSError, NotImplementedError): return None   # IPython's StdinNotImplementedError is the last

