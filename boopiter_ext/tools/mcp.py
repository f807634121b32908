"""MCP servers as tool sources: each server's tools become plain Python functions in the kernel.

A `[boopiter.mcp.NAME]` section of a settings file (`settings.read_mcp_servers`), or `add_mcp_server(NAME, ...)` run in
the kernel, makes a tool source NAME, picked in the
brain menu, `%boop tools NAME on` or the `tools` setting like the others (`sync_sources`). It acts or reaches out, so a
notebook or a project may propose it, never turn it on (core/consent.py). The server starts when the source is first
used, is reused by every prompt, started again if it died, and stopped with the kernel (`stop_servers`). One that does
not start costs one bounded wait and one line, and is not tried again for `RETRY_S`.

Each tool is a function named as the server names it (made a Python name; one that would shadow a builtin gets the
source's name in front), with a signature built from its input schema: JSON types as annotations, `enum` as
`Literal`, each property's description as its docment (`Annotated[T, 'text']`), numeric and length bounds as markers
the guards check, required parameters first. The model reads it in the same tools prompt as every tool, and every
call passes the same guards. Only the arguments a call gives are sent. What the server marks read-only
(`readOnlyHint`) only reads; every other tool changes something, so it runs only when your own words ask for it
(`ACT_INTENT` or its own name) and you confirm; a tool that reaches an open world (`openWorldHint`, true unless the
server says false) sends only values given to the model unattended (`OUTBOUND_ATTR`). A result comes back as its text
(an image or audio as a line naming it; images are shown in the cell and handed to a vision model), a structured one
as its Python value, an error as `error: ...`; the tool loop screens all of it as untrusted.

    sync_sources(settings.mcp)          # the sources the settings declare, registered (or dropped)
    add_mcp_server('notes', 'python notes_server.py')   # one declared by code you run, for this kernel's life
    add, = server_tools(McpServer(spec))
    add(2, 3)   # -> 5
"""

__all__ = ['ACT_INTENT', 'RETRY_S', 'START_S', 'McpServer', 'McpResult', 'server_tools', 'add_mcp_server', 'sync_sources',
           'stop_servers']

import atexit, builtins, inspect, keyword, logging, os, re, shlex, threading, time, types
from typing import Annotated, Any, Literal, Union
from .guards import INTENT_ATTR, OUTBOUND_ATTR
from .kernel import _mark
from .mcp_client import McpClient, McpError
from ..redact import mask, masked, register

log = logging.getLogger(__name__)

START_S = 10.0    # seconds for a server to start and list its tools
RETRY_S = 30.0    # a server that did not start is not tried again for this long: each prompt would wait again
ACT_INTENT = (r'\b(add|creat|writ|edit|chang|modif|updat|delet|remov|send|post|run|call|use|make|set|sav|stor|upload|'
              r'commit|push|merge|clos|open|start|stop|mov|renam|replac|fix|insert|append|record|remember)\w*')
_TYPES = dict(string=str, integer=int, number=float, boolean=bool, array=list, object=dict, null=type(None))
_NUMBERS = dict(minimum='ge', maximum='le', exclusiveMinimum='gt', exclusiveMaximum='lt')
_BOUNDS = {int: _NUMBERS, float: _NUMBERS, str: dict(minLength='min_length', maxLength='max_length'),
           list: dict(minItems='min_length', maxItems='max_length')}   # JSON Schema's keywords: the guards' markers
_MAX_TEXT = 1_000_000   # characters of a result kept
_IMAGE_MIMES = ('image/png', 'image/jpeg', 'image/gif', 'image/webp')
_MAX_IMAGE = 12_000_000   # base64 characters of one image (9 MB): a bigger one is named, not kept


class McpServer:
    "One MCP server for the kernel's life: started on first use, reused, started again if it died, `close`d at the end."
    def __init__(self, spec):
        self.spec, self._client, self._tools, self._fns = spec, None, [], None
        self._lock, self._failed, self._starting = threading.RLock(), (float('-inf'), ''), False
        for name in (spec.token_env, *spec.pass_env):   # a value of yours a server gets is masked wherever it shows
            if name: register(os.environ.get(name))

    def running(self)->bool:
        "Whether the server is up now (nothing is started to answer)."
        return self._client is not None and self._client.alive()

    def start_soon(self):
        "Start the server on a thread of its own, if it is not running or starting: a look at the tools never waits."
        with self._lock:
            if self.running() or self._starting: return
            self._starting = True
        def start():
            try: self.tools()
            except McpError: return   # said when a prompt asks for its tools
            finally: self._starting = False
            _tell()   # the menu shows its tools
        threading.Thread(target=start, daemon=True, name='boopiter-mcp-start').start()

    def tools(self)->list:
        "The server's tools (dicts as it lists them), starting it if it is not running; McpError if it cannot be."
        with self._lock:
            if self.running(): return self._tools
            when, why = self._failed
            if time.monotonic() - when < RETRY_S: raise McpError(why)
            self.close()
            client = None
            deadline = time.monotonic() + START_S   # starting and listing, in all
            try:
                client = McpClient(self.spec)
                client.start(START_S)
                self._tools = client.list_tools(max(0.1, deadline - time.monotonic()))
                self._client, self._fns = client, None
            except McpError as e:
                if client is not None: client.close()
                self._failed = (time.monotonic(), f'MCP server `{self.spec.name}`: {e}')
                raise McpError(self._failed[1]) from None
            _started(self)
            return self._tools

    def call(self, name:str, arguments:dict):
        "Call tool `name`: its result as text, a Python value, or `error: ...`."
        try:
            with self._lock:
                self.tools()
                client = self._client
            return _result(client.call_tool(name, arguments, self.spec.timeout))
        except McpError as e: return f'error: {mask(str(e))}' if str(e).startswith('MCP server') else \
            f'error: MCP server `{self.spec.name}`: {mask(str(e))}'

    def close(self):
        "Stop the server (if running)."
        with self._lock:
            if self._client is not None: self._client.close()
            self._client = None


class McpResult:
    """A tool's result that holds images: it reads as its text (an image as a line naming it); the images are shown in
    the cell and, in auto mode, handed to a vision model (`loop.results_message`, which reads them with Pillow first)."""
    def __init__(self, text:str, images:list): self.text, self.images = text, images   # images: [(mime, base64)]
    def __repr__(self): return self.text
    def _repr_mimebundle_(self, include=None, exclude=None):
        return {'text/plain': self.text, **{m: b for m,b in reversed(self.images)}}   # the first image of each type


def _result(res:dict):
    "A `tools/call` result as the model reads it: text, the structured value, text with images, or `error: ...`."
    parts, images = [], []
    for c in res.get('content') if isinstance(res.get('content'), list) else []:
        kind = c.get('type') if isinstance(c, dict) else None
        if kind == 'text' and isinstance(c.get('text'), str): parts.append(c['text'])
        elif kind in ('image', 'audio'):
            mime, data = c.get('mimeType'), c.get('data')
            parts.append(f'[{kind} {str(mime)[:60]}, {len(data.rstrip("=")) * 3 // 4 if isinstance(data, str) else 0:,} bytes]')
            if kind == 'image' and mime in _IMAGE_MIMES and isinstance(data, str) and len(data) <= _MAX_IMAGE:
                images.append((mime, data))
        elif kind == 'resource' and isinstance(r := c.get('resource'), dict):
            parts.append(r['text'] if isinstance(r.get('text'), str) else f'[resource {str(r.get("uri"))[:300]}]')
        elif kind == 'resource_link': parts.append(f'[{str(c.get("name"))[:100]}: {str(c.get("uri"))[:300]}]')
    text = mask('\n\n'.join(parts)[:_MAX_TEXT])   # a key of yours the server echoes is not shown
    if res.get('isError') is True: return f'error: {text or "the tool failed"}'
    if images: return McpResult(text, images[:8])
    if isinstance(sc := res.get('structuredContent'), dict):   # a value a tool returned whole is wrapped as `result`
        sc = masked(sc)
        return sc['result'] if list(sc) == ['result'] else sc
    return text


# ---- a tool as a Python function

def _annotation(schema)->Any:
    "A property's JSON schema as an annotation: its type (`Literal` for an enum), description and bounds."
    if not isinstance(schema, dict): return Any
    t, enum = schema.get('type'), schema.get('enum')
    if isinstance(enum, list) and 0 < len(enum) <= 100 and all(isinstance(v, (str, int, float, bool)) for v in enum):
        base = Literal[tuple(enum)]
    elif isinstance(t, str) and t in _TYPES: base = _TYPES[t]
    elif isinstance(t, list) and t and all(isinstance(x, str) and x in _TYPES for x in t):
        base = Union[tuple(_TYPES[x] for x in t)]
    else: base = Any
    meta = [' '.join(d.split())[:300] for d in [schema.get('description')] if isinstance(d, str) and d.strip()]
    keys = _BOUNDS.get(base if base in _BOUNDS else None, {})   # a bound applies to its own kind of value only
    bounds = {b: v for k,b in keys.items() if isinstance(v := schema.get(k), (int, float)) and not isinstance(v, bool)}
    meta += [types.SimpleNamespace(**{b: v}) for b,v in bounds.items()]   # the guards read `ge`, `max_length`, ...
    return Annotated[(base, *meta)] if meta else base


def _default(v):
    "A default as the signature shows it: a short literal, else None (a call that leaves it out sends nothing for it)."
    return v if v is None or isinstance(v, (bool, int, float)) or isinstance(v, str) and len(v) <= 100 else None


def _pyname(name:str, source:str)->str:
    "A tool's name as a Python name the model can call, shadowing no builtin or keyword."
    py = re.sub(r'\W', '_', name, flags=re.A)
    if py[:1].isdigit(): py = '_' + py
    return f'{source}_{py}' if keyword.iskeyword(py) or hasattr(builtins, py) else py


def _function(server:McpServer, tool:dict):
    "Tool `tool` of `server` as a plain Python function with a signature, docstring and marks."
    schema = tool.get('inputSchema') if isinstance(tool.get('inputSchema'), dict) else {}
    props = schema.get('properties') if isinstance(schema.get('properties'), dict) else {}
    listed = schema.get('required') if isinstance(schema.get('required'), list) else []
    required = list(dict.fromkeys(r for r in listed if isinstance(r, str) and r in props))
    wire, params = {}, []
    for key in required + [k for k in props if k not in required]:
        py = re.sub(r'\W', '_', key, flags=re.A)
        py += '_' * keyword.iskeyword(py)   # `from` is `from_`, as Python code names it
        if not py or py[:1].isdigit() or py in wire: continue   # no Python name: not offered
        wire[py], prop = key, props[key] if isinstance(props[key], dict) else {}
        default = inspect.Parameter.empty if key in required else _default(prop.get('default'))
        params.append(inspect.Parameter(py, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                                        annotation=_annotation(prop)))
    sig = inspect.Signature(params)
    name = tool['name']

    def fn(*args, **kwargs):
        given = sig.bind(*args, **kwargs).arguments   # only what the call gives is sent: the server has its defaults
        return server.call(name, {wire[k]: v for k,v in given.items()})
    fn.__signature__, fn.__name__ = sig, _pyname(name, server.spec.name)
    fn.__qualname__, fn.__module__ = fn.__name__, __name__
    text = tool.get('description') if isinstance(tool.get('description'), str) else ''
    fn.__doc__ = (' '.join(text.split()) or f'The `{name}` tool of MCP server `{server.spec.name}`.')[:1000]
    hints = tool.get('annotations') if isinstance(tool.get('annotations'), dict) else {}
    if hints.get('readOnlyHint') is not True:   # it changes something: the user's words must ask for it
        words = '|'.join(re.escape(w) for w in re.split(r'[\W_]+', name) if len(w) > 2)
        setattr(fn, INTENT_ATTR, ACT_INTENT + (rf'|\b({words})' if words else ''))
    if hints.get('openWorldHint') is not False:   # what it is given may leave the machine
        setattr(fn, OUTBOUND_ATTR, tuple(p.name for p in params))
    return _mark(fn)


def server_tools(
    server:McpServer,  # A server (started here if it is not running)
    wait:bool=True,    # False: a look at the tools (the menu, `%boop status`) that must not wait for a start: the
                       # server starts on a thread, and until it runs it has no tools
)->list:               # Its tools as Python functions; McpError if it cannot be started
    "The server's tools as plain Python functions (the same objects while it keeps the same tools)."
    if not wait and not server.running():
        server.start_soon()
        return []
    tools = server.tools()
    if server._fns is None:
        fns = {}
        for t in tools:
            fn = _function(server, t)
            if fns.setdefault(fn.__name__, fn) is not fn: log.warning('MCP server %r: two tools named %r; the first is '
                                                                     'offered', server.spec.name, fn.__name__)
        server._fns = list(fns.values())
    return server._fns


# ---- servers as tool sources, for the kernel's life

_SERVERS, _LOCK = {}, threading.RLock()   # source name: McpServer
_BY_CODE = set()   # the names `add_mcp_server` declared: settings do not drop them
_ATEXIT = []


def _started(server):
    if not _ATEXIT: _ATEXIT.append(atexit.register(stop_servers))


def _describe(spec)->str:
    from ..settings import public_url
    how = f'runs `{shlex.join(spec.command)}`' if spec.command else f'at {public_url(spec.url).split("?")[0]}'
    return f'MCP server {how}' + (f': {spec.description}' if spec.description else '')


def sync_sources(
    specs:dict,  # McpSpec by name: the servers the settings declare (`Settings.mcp`)
)->list:         # Warnings: a name a built-in source has
    "Make each declared server a tool source NAME; drop (and stop) the ones no longer declared or declared otherwise."
    from .registry import SOURCES, unregister_tool_source
    warnings = []
    with _LOCK:   # the kernel's thread and the frontend's channel both read settings
        for name in [n for n,s in _SERVERS.items() if n not in _BY_CODE and specs.get(n) != s.spec]:
            _SERVERS.pop(name).close()
            unregister_tool_source(name)
        for name, spec in specs.items():
            if name in _SERVERS: continue
            if name in SOURCES:
                warnings.append(f'{spec.where} [boopiter.mcp.{name}]: `{name}` is a tool source already; rename the server')
                continue
            _register(spec)
    return warnings


def _register(spec):
    from .registry import register_tool_source
    server = _SERVERS[spec.name] = McpServer(spec)
    register_tool_source(spec.name, lambda ctx=None: server_tools(server, getattr(ctx, 'wait', True)),
                         description=_describe(spec))


def add_mcp_server(
    name:str,               # The tool source it becomes: a letter or digit, then letters, digits, `-` or `_`
    command:str|list='',    # The program and its arguments (stdio): `python server.py` runs this kernel's Python
    url:str='',             # Or its streamable-HTTP endpoint
    env:dict=None,          # Variables set for the command
    pass_env:list=(),       # Names of your variables it gets too
    token_env:str='',       # The variable whose value an HTTP server gets in `header`
    header:str='Authorization',  # `Authorization` sends `Bearer TOKEN`; another header the token itself
    timeout:float=60,       # Seconds one call may take
    description:str='',     # The tools menu's line
)->str:                     # The source's name, to turn on: `%boop tools NAME on`
    """Declare an MCP server in this kernel, as a `[boopiter.mcp.NAME]` section of your settings would: its tools become
    source NAME, off until you pick it. Its command runs in the working folder, when the source is first used."""
    from ..settings import ENDPOINT_NAME, mcp_spec
    from .registry import SOURCES
    if not isinstance(name, str) or not ENDPOINT_NAME.fullmatch(name):
        raise ValueError(f'{name!r} is no server name: a letter or digit, then at most 39 letters, digits, `-` or `_`')
    if name in SOURCES and name not in _SERVERS: raise ValueError(f'`{name}` is a tool source already; name it otherwise')
    items = dict(command=command if isinstance(command, str) else shlex.join(map(str, command)), url=url,
                 env=' '.join(shlex.quote(f'{k}={v}') for k,v in (env or {}).items()), pass_env=', '.join(pass_env),
                 token_env=token_env, header=header, timeout=str(timeout), description=description)
    spec, warnings = mcp_spec(name, items.items(), 'add_mcp_server', folder=os.getcwd())
    if spec is None: raise ValueError(warnings[-1].split(': ', 1)[1])
    with _LOCK:
        if name in _SERVERS: _SERVERS.pop(name).close()
        _BY_CODE.add(name)
        _register(spec)
    _tell()   # the menu lists it at once
    return name


def _tell():
    "Tell whoever shows the sources (the menu) that they changed."
    from .registry import SOURCE_LISTENERS
    for listener in list(SOURCE_LISTENERS): listener()


def stop_servers():
    "Stop every MCP server and drop its source (the kernel ends, or the extension is unloaded)."
    from .registry import unregister_tool_source
    with _LOCK:
        for name in list(_SERVERS):
            _SERVERS.pop(name).close()
            unregister_tool_source(name)
        _BY_CODE.clear()
        if _ATEXIT: atexit.unregister(_ATEXIT.pop())
