"""Settings: one table of keys, and one function that decides which value wins.

Precedence, highest first (`load_settings`):

1. a `%%prompt` option (`-m qwen3`, `--think h`) for that cell only;
2. the notebook's binding: what was picked in the brain menu (`%boop`) or with `%boop model NAME`, saved in
   the notebook's outputs (`binding.py`);
3. `%config BoopMagics.timeout = 90` run in this kernel after loading;
4. the project's `settings.ini`: the nearest one with a `[boopiter]` (or an endpoint's) section, walking up from the
   notebook's folder;
5. the user's `~/.config/boopiter/settings.ini` (`$XDG_CONFIG_HOME` is honoured);
6. kernel configuration present at load: `c.BoopMagics.model = 'qwen3'` in `ipython_config.py`;
7. the system-wide file an administrator writes for everyone (`system_ini`): `$BOOPITER_SYSTEM_SETTINGS` when set,
   else the first of `/etc/boopiter/settings.ini` and `{sys.prefix}/etc/boopiter/settings.ini` that exists;
8. the environment: `OLLAMA_HOST` for `host` (`BOOPITER_CASSETTE` for `cassette` ranks right after `%config`: a CI
   run's choice beats settings files);
9. the built-in default.

So a project's file beats a user's machine-wide defaults, which beat the site's, and what you type in the notebook
beats them all. The site's file may set whatever your own may (a key variable, `web_allow`, the dead-drop folder).

Except for consent (`CONSENT_KEYS`): auto-run and the tool sources that act or reach outside (`web`, `notebook`) are
yours to turn on. A notebook's binding and a project's settings.ini may propose them, never grant them: `Settings.yours`
holds what your own layers alone say of those keys (a cell's option, `%config`, your settings.ini, `c.BoopMagics`,
the system file, the default), and `core/consent.py` turns off what the others want beyond it and you did not accept.

Named endpoints (model servers) are sections of the same files, one per server (`read_endpoints`):

    [boopiter.endpoint.gpu1]
    kind = ollama
    url = http://gpu1.lab:11434
    api_key_env = LAB_KEY
    shared = on

`kind` is `ollama` or `openai` (an OpenAI-compatible server: llama.cpp's, vLLM, LM Studio, a LiteLLM gateway; its
`url` usually ends in /v1); `api_key_env` (optional) names the variable whose value is sent as its key; `shared`
(optional) says others use it too, so a kernel never unloads a model there that it did not load. Their models are
`@gpu1/NAME` (`routes.endpoint_id`). A name is defined whole by the highest file that declares it
(project, then user, then system): sections are not merged, so a colleague's own file can map `gpu1` to their
server. An endpoint from the system file is shared unless it says `shared = off`.

MCP servers are sections too, each a tool source of that name (`read_mcp_servers`, tools/mcp.py):

    [boopiter.mcp.issues]
    command = python -m my_mcp_server --readonly      (stdio; `python` is the kernel's own; runs in this file's folder)
    env = LOG_LEVEL=warning
    pass_env = GITHUB_TOKEN                           (your variables it gets)

    [boopiter.mcp.search]
    url = https://mcp.example.com/mcp                 (streamable HTTP)
    token_env = SEARCH_TOKEN                          (sent as `Authorization: Bearer ...`; or `header = X-Api-Key`)

Only your own settings (and the system file) may declare a server: a project's settings.ini may not, as a server
runs a program or receives your data. Its source acts or reaches out, so a notebook or a project may propose it in
`tools`, never turn it on (`core/consent.py`).

Every value is checked against its key's rule in `RULES` where it is read (a settings file, `%config`,
`c.BoopMagics`, the environment, the notebook's binding): a value that breaks it is ignored with one
warning naming the file or layer and the key, and the next layer's value applies. `%%prompt` options
are the magic's to check.

    [boopiter]
    model = qwen2.5-coder:7b
    timeout = 120

API keys are never read from a settings file or a notebook: they come from the environment only
(`OPENAI_API_KEY`, ...), so no secret can land in a saved `.ipynb` or a committed `settings.ini`. A
custom `api_base` gets a key only from the variable `api_key_env` names, and only your own settings may
name it (a project's settings.ini may not); likewise a project's endpoint section may not name a key variable, so no
key of yours is sent to a server a cloned repository declared.
"""

__all__ = ['SETTINGS', 'DEFAULTS', 'EFFORTS', 'THINK_LEVELS', 'RULES', 'MAX_CONTEXT', 'Settings', 'check_setting',
           'refusal', 'load_settings', 'resolve_settings', 'read_ini', 'project_ini', 'user_ini', 'ollama_url', 'public_url',
           'short_source', 'declared_models', 'Endpoint', 'ENDPOINT_KINDS', 'ENDPOINT_NAME', 'MAX_ENDPOINTS', 'read_endpoints', 'McpSpec', 'MAX_MCP', 'MCP_RESERVED', 'mcp_spec', 'read_mcp_servers',
           'system_ini', 'parse_allow', 'CONSENT_KEYS']

import configparser, os, re, shlex, sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

SETTINGS = dict(  # key: (type, default, help)
    model=(str, '', "Model id: an Ollama name, `ollama_chat/NAME`, `local/smollm2-135m` or any litellm id. "
                    "Empty: Ollama's best chat model for a quick first answer (README, Choosing the model), else the "
                    "embedded local model."),
    reasoning_model=(str, '', "The thinking-capable model that answers while `reasoning` is on."),
    reasoning=(bool, False, "Whether `reasoning_model` answers instead of `model` (the brain toggle)."),
    host=(str, '', "Ollama server, e.g. `127.0.0.1:11434`. Empty: `OLLAMA_HOST`, else http://127.0.0.1:11434."),
    api_base=(str, '', "Base URL for litellm ids that need one, e.g. `http://127.0.0.1:8080/v1` for `openai/NAME`."),
    models=(str, '', "More model ids to list in the brain menu, comma-separated: any litellm id, e.g. "
                     "`anthropic/claude-sonnet-4-5, gemini/gemini-2.5-flash` (their keys come from the environment)."),
    api_key_env=(str, '', "Name of the environment variable whose value is sent as the API key to `api_base`. Empty: "
                          "a custom `api_base` gets no key, so no key of yours goes to a server you did not name it for."),
    timeout=(float, 300.0, "Seconds to wait for the next token (the first one includes model load time)."),
    context_size=(int, 0, "Context window in tokens (Ollama's `num_ctx`). 0: sized to the prompt, capped by the model."),
    keep_alive=(str, '', "How long Ollama keeps the model loaded: minutes (`5`, `-1` = forever) or a duration "
                         "(`30s`). Empty: Ollama's default."),
    max_tokens=(int, 0, "Longest reply in tokens. 0: the model's own limit."),
    seed=(int, 0, "Sampling seed sent with every request, so that the same prompt to the same model on the same server "
                  "gets the same reply again. 0: none (the server samples afresh each time)."),
    max_reply=(int, 400_000, "Longest reply boopiter keeps, in characters (answer and reasoning together): a reply that "
                             "grows past it is stopped, marked too long, and what arrived is kept. 0: no bound."),
    think=(str, '', "Reasoning effort for thinking models: `l`, `m`, `h` or `off`. Empty: the model's default. "
                    "An effort picked in the brain menu applies only while `reasoning` is on."),
    completion_model=(str, '', "The model of ghost-text completions in code cells: a small code model with "
                               "fill-in-the-middle (`ollama pull qwen2.5-coder:1.5b`), or `local/smollm2-135m`. Empty: "
                               "the smallest such model in reach, else none (completions off, and the menu says why)."),
    completions=(bool, True, "Ghost-text completions as you type in code cells (JupyterLab 4, Notebook 7). Only your "
                             "own settings say: a notebook or a project's settings.ini cannot turn them on."),
    tools=(str, '', "Tool sources offered to the model, comma-separated (`kernel, files`), or `none`. Empty: the "
                    "default selection (`%boop tools` lists them)."),
    web_allow=(str, '', "What the `web` tools may fetch although it is not public (loopback, private, link-local): "
                        "hosts, host:port, [IPv6]:port or networks, comma-separated, e.g. `127.0.0.1:8000, "
                        "intranet.example.com, 10.0.0.0/8`. Only your own settings may set it."),
    auto=(bool, False, "Run the model's tool calls by themselves (after the guards) and hand it the results, round "
                       "after round; off: every python block waits for your Run click."),
    lenient=(bool, False, "In auto mode, also take tool calls written as JSON, `<tool_call>` tags or native tool calls."),
    max_rounds=(int, 5, "In auto mode, the most replies one prompt may take before the loop stops."),
    background=(bool, True, "Let the notebook be used while a reply streams: where boopiter's JupyterLab / Notebook 7 "
                            "extension shows the reply, a prompt cell ends once its request is on its way and the reply "
                            "streams on into it, while other cells run. Off, and always in VS Code, a terminal, headless "
                            "runs and a tool loop (auto mode): the cell ends with its reply."),
    parallel=(int, 0, "Requests a batch asked from code (`ask_all`) sends at once to each server. 0: chosen for you: "
                      "the slots the server reports (llama.cpp, the embedded model), else measured (2 at once, doubled "
                      "while that answers faster)."),
    deaddrop_dir=(str, '', "The dead-drop folder. Empty: `BOOPITER_DEADDROP_DIR`, else ~/dead_drop."),
    deaddrop_timeout=(float, 0.0, "Seconds to wait for a dead-drop reply to grow before giving up. 0: wait for ever."),
    unload_others=(bool, True, "After a pick changes, unload every other model Ollama holds in memory (ones other "
                               "programs loaded too), keeping the standard and reasoning picks."),
    reuse=(bool, True, "Show the saved reply again, without asking, when a prompt asks the same model exactly what it "
                       "was asked before (same options, same context); `%%prompt --fresh` asks anyway."),
    cache_dir=(str, '', "A folder that keeps every reply by its request digest too, so replies outlive the notebook's "
                        "outputs. Empty: replies are kept in the notebook only."),
    cassette=(str, '', "`record`: save every model turn to the cassette; `replay`: answer every request from it, "
                       "refusing one it has no turn for; `off` (or empty): neither. `BOOPITER_CASSETTE=replay` in the "
                       "environment sets it for a CI run, over settings files."),
    cassette_file=(str, '', "The cassette's file. Empty: `<notebook>.cassette.json` next to the notebook."),
    clip=(int, 4000, "Characters kept from each cell output; the middle of longer outputs is cut, with a marker."),
    max_images=(int, 8, "Most images sent with one prompt to a vision model; the newest are kept, older ones become "
                        "placeholders. 0: none."),
    image_size=(int, 1024, "Longest side, in pixels, of an image sent to a vision model; larger ones are scaled down."),
    vision_models=(str, '', "Model ids that take images, for servers that do not say (Ollama does): comma-separated, "
                            "shell patterns allowed, e.g. `openai/*-vl*, openai/gemma-3*`."),
    system_prompt=(str, '', "Extra instructions appended to the built-in system prompt."),
)
DEFAULTS = {k: d for k,(t,d,h) in SETTINGS.items()}
CONSENT_KEYS = ('auto', 'tools')   # what a notebook or a project may propose and only you may grant (core/consent.py)
EFFORTS = dict(l='low', m='medium', h='high')   # `think` levels as the servers name them
THINK_LEVELS = ('l', 'm', 'h', 'off')
_SECRET = re.compile(r'key|token|secret|password', re.I)

MAX_CONTEXT, _CHARS, _DAY = 1 << 20, 1 << 30, 86_400   # tokens; characters; seconds
_KEEP_ALIVE = re.compile(r'-?\d{1,6}(\.\d{1,3})?(ms|[smh])?')   # minutes, or a duration Ollama parses
_TOOLS = re.compile(r'[\w\-, ]{1,200}')                          # tool source names
_ENV_NAME = re.compile(r'[A-Za-z_]\w{0,127}', re.A)
_HOSTNAME = re.compile(r'[\w.\-~%]*|[0-9A-Fa-f:.]+', re.A)       # a name or an IPv4 address; or IPv6 (bracketed)


def _is(*types):
    "A check for an instance of `types`, never a bool where a number is wanted."
    return lambda v: isinstance(v, types) and (bool in types or not isinstance(v, bool))

def _within(lo, hi, *types, above=False):
    "A check for a number of `types` from `lo` (excluded if `above`) to `hi`: NaN and infinities fail a comparison."
    typed = _is(*types)
    return lambda v: typed(v) and (lo < v if above else lo <= v) and v <= hi

def _text(n, spaces=True):
    "A check for printable text of at most `n` characters (with no whitespace unless `spaces`)."
    return lambda v: isinstance(v, str) and 0 < len(v) <= n and v.isprintable() and (spaces or not re.search(r'\s', v))

def _address(v, bare=True):
    "Whether `v` is a URL (or, if `bare`, a `host`, `host:port` or `:port`) with a sane host and a port from 1 to 65535."
    if not _text(300, spaces=False)(v) or not bare and '://' not in v: return False
    p = urlsplit(v if '://' in v else f'http://{v}')   # ValueError for a bad port or IPv6 address
    return (p.scheme in ('http', 'https') and p.port != 0 and bool(_HOSTNAME.fullmatch(p.hostname or ''))
            and (bare or bool(p.hostname)))

def _matches(rx): return lambda v: isinstance(v, str) and bool(rx.fullmatch(v))

_HOST_NAME = re.compile(r'[a-z0-9_](?:[a-z0-9_.\-]*[a-z0-9_])?\.?', re.A)   # a host name as `fetch_url` takes it


def _port(p):
    if not p: return None
    if not p.isdigit() or not 0 < int(p) < 65536: raise ValueError(p)
    return int(p)


def _allow_item(s):
    "('name', host, port) or ('net', network, port) for one `web_allow` entry; ValueError if it is none."
    import ipaddress
    if (m := re.fullmatch(r'\[([0-9a-f:.]+)\](?::(\w*))?', s)): return 'net', ipaddress.ip_network(m[1]), _port(m[2])
    if '/' in s or s.count(':') > 1: return 'net', ipaddress.ip_network(s, strict=False), None   # 10.0.0.0/8, ::1
    host, _, port = s.partition(':')
    try: return 'net', ipaddress.ip_network(host), _port(port)
    except ValueError: pass
    host = host.encode('idna').decode('ascii')   # UnicodeError is a ValueError
    if not _HOST_NAME.fullmatch(host): raise ValueError(s)
    return 'name', host.rstrip('.'), _port(port)


def parse_allow(
    text:str,  # The `web_allow` setting: `127.0.0.1:8000, intranet.example.com, [::1]:8080, 10.0.0.0/8`
)->tuple:      # (entries, problems): ('name'|'net', host or network, port or None) each, and the entries not understood
    "The hosts, addresses and networks `fetch_url` may reach although they are not public, with their ports."
    entries, problems = [], []
    for item in str(text or '').split(','):
        if not (s := item.strip().lower()): continue
        try: entries.append(_allow_item(s))
        except ValueError: problems.append(item.strip())
    return entries, problems


def _web_allow_ok(v):   # one parser for the rule and the tool (tools/web.py)
    entries, problems = parse_allow(v)
    return bool(entries) and not problems

_CONTROL = re.compile(r'[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]')   # what no file name or prompt holds

def _plain(n): return lambda v: isinstance(v, str) and 0 < len(v) <= n and not _CONTROL.search(v)

_ID, _IDS, _PATH = _text(300, spaces=False), _text(4000), _plain(4096)
_BOOL, _SECONDS = (_is(bool), 'on or off'), 'a number of seconds'
RULES = dict(  # key: (check, what a valid value is). `check_setting` applies them wherever a value is read.
    model=(_ID, 'a model id (printable, no spaces, at most 300 characters)'),
    reasoning_model=(_ID, 'a model id (printable, no spaces, at most 300 characters)'),
    reasoning=_BOOL,
    host=(_address, 'a host, host:port or http(s) URL with a port from 1 to 65535'),
    api_base=(lambda v: _address(v, bare=False), 'an http(s) URL'),
    models=(_IDS, 'model ids, comma-separated'),
    api_key_env=(_matches(_ENV_NAME), 'the name of an environment variable'),
    timeout=(_within(0, _DAY, int, float, above=True), f'{_SECONDS} above 0, at most {_DAY} (a day)'),
    context_size=(_within(0, MAX_CONTEXT, int), f'a whole number of tokens from 0 to {MAX_CONTEXT}'),
    keep_alive=(_matches(_KEEP_ALIVE), 'minutes (`5`, `-1`) or a duration (`30s`)'),
    max_tokens=(_within(0, MAX_CONTEXT, int), f'a whole number of tokens from 0 to {MAX_CONTEXT}'),
    seed=(_within(0, 2**31 - 1, int), f'a whole number from 0 to {2**31 - 1:,}'),
    max_reply=(_within(0, _CHARS, int), f'a whole number of characters from 0 to {_CHARS}'),
    think=(lambda v: isinstance(v, str) and v in THINK_LEVELS, f'one of {", ".join(THINK_LEVELS)}'),
    completion_model=(_ID, 'a model id (printable, no spaces, at most 300 characters)'), completions=_BOOL,
    tools=(_matches(_TOOLS), 'tool source names, comma-separated, or `none`'),
    web_allow=(lambda v: _text(2000)(v) and _web_allow_ok(v), 'hosts, host:port, [IPv6]:port or networks like '
                                                             '10.0.0.0/8, comma-separated'),
    auto=_BOOL, lenient=_BOOL,
    max_rounds=(_within(1, 100, int), 'a whole number from 1 to 100'),
    background=_BOOL,
    parallel=(_within(0, 64, int), 'a whole number from 0 to 64'),
    deaddrop_dir=(_PATH, 'a folder path'),
    deaddrop_timeout=(_within(0, 7 * _DAY, int, float), f'{_SECONDS} from 0 to {7 * _DAY} (a week)'),
    unload_others=_BOOL, reuse=_BOOL,
    cache_dir=(_PATH, 'a folder path'),
    cassette=(lambda v: v in ('record', 'replay', 'off'), 'record, replay or off'),
    cassette_file=(_PATH, 'a file path'),
    clip=(_within(0, _CHARS, int), f'a whole number of characters from 0 to {_CHARS}'),
    max_images=(_within(0, 1000, int), 'a whole number from 0 to 1000'),
    image_size=(_within(16, 16384, int), 'a whole number of pixels from 16 to 16384'),
    vision_models=(_IDS, 'model ids or shell patterns, comma-separated'),
    system_prompt=(_plain(100_000), 'text without control characters, at most 100,000 characters'),
)


def check_setting(
    key:str,  # A key of `SETTINGS`
    value,    # Any value, from anywhere (a file, `%config`, the environment, a notebook)
)->bool:      # Whether `value` passes `key`'s rule in `RULES`; never raises
    "Whether `value` is a valid, non-empty value of the setting `key`."
    try: return key in RULES and bool(RULES[key][0](value))
    except Exception: return False   # a check meeting a value of a kind it never imagined (urlsplit raises, ...)


def _shown(v, key='')->str:
    "A value as a warning may quote it: on one line, short, control characters escaped, and no password or key."
    if key == 'api_key_env': return '…'   # a key pasted where its variable's name goes
    try: s = v if isinstance(v, str) else repr(v)
    except Exception: s = 'a number too long to show' if isinstance(v, int) else f'a {type(v).__name__}'
    s = s.encode('unicode_escape', 'replace').decode('ascii') if not s.isprintable() else s
    if '@' in s and key in ('host', 'api_base'): s = '…@' + s.rpartition('@')[2]   # user:password@, once escaped
    return s if len(s) <= 60 else s[:57] + '...'


def refusal(
    where:str,      # The file or layer the value came from: a path, `%config`, `OLLAMA_HOST`, ...
    key:str,        # Its key (a setting's, or any other a file holds)
    value,          # The value refused
    what:str=None,  # What a valid value is; default: the setting's rule says
)->str:             # One line naming them and saying what a valid value is
    "The warning for a value of `key` that breaks its rule."
    return f'{where}: `{_shown(key)} = {_shown(value, key)}` is not {what or RULES[key][1]}; ignored'


class Settings(dict):
    """Resolved settings: a dict of values; `source[key]` names the layer each value came from; `warnings` lists
    problems; `notes` says the same with files named short (fit for a prompt's output, which is saved);
    `project` and `system` are the project and system settings files used, if any; `endpoints` the named model
    servers by name (`Endpoint`); `screened` says what of a saved binding was ignored; `yours` the consent keys as your
    own layers alone set them, and `proposed` what a notebook or a project asked for beyond them that was turned off
    (`core/consent.py`), with `consent` saying so in words."""
    def __init__(self, values, source, warnings=()):
        super().__init__(values)
        self.source, self.warnings, self.project, self.system, self.screened = source, list(warnings), None, None, []
        self.endpoints, self.mcp = {}, {}
        self.notes = list(self.warnings)
        self.yours = {k: DEFAULTS[k] for k in CONSENT_KEYS}   # until `load_settings` says: nothing granted
        self.proposed, self.consent = [], ''


_BOOLS = configparser.ConfigParser.BOOLEAN_STATES   # on/off, yes/no, true/false, 1/0: as `getboolean` reads them


def _convert(key, value):
    "The text of an ini value as its key's type; ValueError if it is not one (`nan` and `1e999` are floats: `RULES` says)."
    typ, value = SETTINGS[key][0], value.strip()
    if typ is bool:
        if value.lower() not in _BOOLS: raise ValueError(value)
        return _BOOLS[value.lower()]
    return value if typ is str else typ(value)


def read_ini(
    path:Path,  # A settings.ini file
)->tuple:       # (values, warnings): typed values of its `[boopiter]` section, and what was ignored
    "Read the `[boopiter]` section of `path`; unknown keys, secrets and bad values become warnings."
    cp = configparser.ConfigParser(default_section='__none__', interpolation=None)
    try: cp.read(path, encoding='utf-8')
    except (configparser.Error, ValueError) as e: return {}, [f'{path}: unreadable ({e.__class__.__name__}); ignored']
    if not cp.has_section('boopiter'): return {}, []
    values, warnings = {}, []
    for k,v in cp.items('boopiter'):
        if k in SETTINGS:
            try: value = _convert(k, v)
            except ValueError: value = None   # `timeout = soon`, a 5,000-digit int
            if value == '' or check_setting(k, value): values[k] = value   # empty: not set here
            else: warnings.append(refusal(path, k, v.strip()))
        elif _SECRET.search(k): warnings.append(f'{path}: `{k}` ignored: API keys come from the environment only')
        else: warnings.append(f'{path}: unknown setting `{k}` ignored; known: {", ".join(SETTINGS)}')
    return values, warnings


def _has_section(path):
    "Whether `path` has a `[boopiter]` section, an endpoint's (`[boopiter.endpoint.NAME]`) or an MCP server's."
    try: text = path.read_text(encoding='utf-8') if path.is_file() else ''
    except (OSError, UnicodeDecodeError): return False
    return re.search(r'(?m)^\s*\[boopiter(\]|\.endpoint\.|\.mcp\.)', text) is not None


# -- named endpoints: model servers, each a section of a settings file
ENDPOINT_KINDS = ('ollama', 'openai')
MAX_ENDPOINTS = 32   # per file: each is listed on its own thread
ENDPOINT_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9_-]{0,39}', re.A)
_SECTION = 'boopiter.endpoint.'


@dataclass(frozen=True)
class Endpoint:
    "A named model server, as a settings file declares it (`[boopiter.endpoint.NAME]`)."
    name: str              # What model ids call it: `@NAME/MODEL`
    kind: str              # 'ollama' (Ollama's own API) or 'openai' (an OpenAI-compatible server)
    url: str               # Ollama: host or URL; openai: base URL, usually ending in /v1
    api_key_env: str = ''  # The environment variable whose value is sent as its key; '' sends none
    shared: bool = False   # Others use it too: never unload a model this kernel did not load there
    where: str = ''        # The file that declared it

    @property
    def base(self)->str:
        "The URL requests go to: Ollama's normalised (`ollama_url`), an OpenAI-compatible server's without a final /."
        return ollama_url(self.url) if self.kind == 'ollama' else self.url.rstrip('/')


_ENDPOINT_RULES = dict(  # key: (check, what a valid value is)
    kind=(lambda v: v in ENDPOINT_KINDS, 'ollama or openai'),
    api_key_env=RULES['api_key_env'], shared=_BOOL)
_URL_RULES = dict(ollama=RULES['host'], openai=RULES['api_base'])


def _endpoint(name, items, where, shared, yours=True)->tuple:
    "(Endpoint or None, warnings) from one section's `items`; `shared`: its default; `yours`: it may name a key."
    at, got, warnings = f'{where} [{_SECTION}{name}]', {}, []
    for k,v in items:
        v = v.strip()
        if k == 'url' or k in _ENDPOINT_RULES:
            if k == 'shared': v = _BOOLS.get(v.lower(), v)
            got[k] = v
        elif _SECRET.search(k): warnings.append(f'{at}: `{k}` ignored: API keys come from the environment only; '
                                                'name the variable holding it with `api_key_env`')
        else: warnings.append(f'{at}: unknown key `{_shown(k)}` ignored; known: kind, url, api_key_env, shared')
    for k in [k for k in ('api_key_env', 'shared') if got.get(k, '') != '']:
        check, what = _ENDPOINT_RULES[k]
        if not check(got[k]): warnings.append(refusal(at, k, got.pop(k), what))
    if got.get('api_key_env') and not yours:
        warnings.append(f'{at}: `api_key_env` ignored: a project file may not choose which of your variables is sent '
                        'as a key; declare this endpoint in your own settings to send one')
        got.pop('api_key_env')
    kind, url = got.get('kind'), got.get('url', '')
    if kind not in ENDPOINT_KINDS:
        said = f'`kind = {_shown(kind)}` is not ollama or openai' if kind else 'no `kind`'
        return None, warnings + [f'{at}: {said}; the endpoint is ignored (`kind = ollama` or `kind = openai`)']
    check, what = _URL_RULES[kind]
    if not (url and check(url)): return None, warnings + [f'{at}: `url = {_shown(url)}` is not {what}; the endpoint is ignored']
    return Endpoint(name, kind, url, got.get('api_key_env') or '', got.get('shared', shared), where), warnings


def _declared(path, prefix, what, limit, plural, build)->tuple:
    """(what `build` made of each `[PREFIX.NAME]` section of `path`, by name, at most `limit`; warnings): a section with
    a bad name or past the limit is ignored with one line; `build(name, items)` -> (object or None, warnings)."""
    cp = configparser.ConfigParser(default_section='__none__', interpolation=None)
    try: cp.read(path, encoding='utf-8')
    except (configparser.Error, ValueError) as e: return {}, [f'{path}: unreadable ({e.__class__.__name__}); ignored']
    found, warnings, seen = {}, [], 0
    for sec in cp.sections():
        if not sec.startswith(prefix): continue
        name = sec[len(prefix):]
        if not ENDPOINT_NAME.fullmatch(name):
            warnings.append(f'{path}: section `[{_shown(sec)}]` ignored: {what} name is a letter or digit, then at '
                            'most 39 letters, digits, `-` or `_`')
            continue
        if seen >= limit:
            warnings.append(f'{path}: `[{sec}]` ignored: at most {limit} {plural} a file')
            continue
        seen += 1
        got, w = build(name, cp.items(sec))
        warnings += w
        if got is not None: found[name] = got
    return found, warnings


def read_endpoints(
    path:Path,           # A settings file
    shared:bool=False,   # Whether its endpoints are shared unless they say (the system file's are)
    yours:bool=True,     # Whether they may name a key variable (a project's may not)
)->tuple:                # (endpoints by name, in file order; warnings)
    "The named endpoints `path` declares, each checked whole: one with a bad kind or url is ignored, with one line."
    return _declared(path, _SECTION, 'an endpoint', MAX_ENDPOINTS, 'endpoints',
                     lambda name, items: _endpoint(name, items, str(path), shared, yours))


# -- MCP servers: tool sources, each a section of a settings file (tools/mcp.py starts and speaks to them)
MAX_MCP = 16   # per file
MCP_RESERVED = ('auto', 'none', 'yours', 'all')   # words the `tools` setting and `%boop tools` read otherwise
_MCP_SECTION = 'boopiter.mcp.'
_MCP_KEYS = ('command', 'url', 'env', 'pass_env', 'token_env', 'header', 'timeout', 'description')


@dataclass(frozen=True)
class McpSpec:
    "An MCP server, as a settings file declares it (`[boopiter.mcp.NAME]`): a command (stdio) or a URL (HTTP)."
    name: str                  # The tool source it becomes
    command: tuple = ()        # The program and its arguments (stdio); `python` is the kernel's own Python
    url: str = ''              # Its streamable-HTTP endpoint, instead of a command
    env: tuple = ()            # (NAME, value) pairs set for the command
    pass_env: tuple = ()       # Names of your variables passed on to the command
    token_env: str = ''        # The variable whose value is sent in `header`
    header: str = 'Authorization'   # Where the token goes; `Authorization` sends `Bearer TOKEN`
    timeout: float = 60.0      # Seconds one call may take
    description: str = ''      # The tools menu's line
    folder: str = ''           # Where the command runs: the folder of the file that declared it
    where: str = ''            # That file


_HEADER = re.compile(r'[A-Za-z0-9-]{1,64}', re.A)


def mcp_spec(
    name:str,          # The server's name: the tool source it becomes
    items,             # (key, text) pairs, as a `[boopiter.mcp.NAME]` section holds them
    path:str,          # Where they come from (a settings file), for the warnings
    folder:str=None,   # Where its command runs; None: the folder of `path`
)->tuple:              # (McpSpec, or None when it does not fit; warnings)
    "An MCP server's declaration checked whole: a command or a URL, what it is given, how long it may take."
    at, got, warnings = f'{path} [{_MCP_SECTION}{name}]', {}, []
    if name.lower() in MCP_RESERVED:
        return None, [f'{at}: `{name}` means something else in the `tools` setting; name the server otherwise']
    for k,v in items:
        if k in _MCP_KEYS: got[k] = v.strip()
        elif _SECRET.search(k): warnings.append(f'{at}: `{k}` ignored: secrets come from the environment only; name '
                                                'the variable holding one with `token_env` or `pass_env`')
        else: warnings.append(f'{at}: unknown key `{_shown(k)}` ignored; known: {", ".join(_MCP_KEYS)}')
    try:
        command = tuple(shlex.split(got.get('command', '')))
        env = tuple(tuple(kv.split('=', 1)) for kv in shlex.split(got.get('env', '')))
    except ValueError as e: return None, warnings + [f'{at}: `command` or `env` cannot be read ({e}); the server is ignored']
    if bad := [kv[0] for kv in env if len(kv) != 2 or not _ENV_NAME.fullmatch(kv[0])]:
        return None, warnings + [f'{at}: `env` must be NAME=value pairs, not `{_shown(bad[0])}`; the server is ignored']
    if secret := [k for k,_ in env if _SECRET.search(k)]:
        return None, warnings + [f'{at}: `env` sets `{secret[0]}`: secrets come from the environment only; name the '
                                 'variable with `pass_env`; the server is ignored']
    names = tuple(n for n in re.split(r'[,\s]+', got.get('pass_env', '')) if n)
    url, token, header = got.get('url', ''), got.get('token_env', ''), got.get('header') or 'Authorization'
    problem = ('give it a `command` (stdio) or a `url` (HTTP)' if not command and not url else
               '`command` and `url` both given: one server is one or the other' if command and url else
               f'`url = {_shown(url)}` is not an http(s) URL' if url and not _address(url, bare=False) else
               f'`pass_env` names something that is not a variable: {_shown(got["pass_env"])}'
               if not all(_ENV_NAME.fullmatch(n) for n in names) else
               f'`token_env = {_shown(token)}` is not a variable name' if token and not _ENV_NAME.fullmatch(token) else
               f'`header = {_shown(header)}` is not a header name' if not _HEADER.fullmatch(header) else '')
    try: timeout = float(got.get('timeout') or 60)
    except ValueError: timeout = -1
    if not problem and not 0 < timeout <= _DAY: problem = f'`timeout = {_shown(got["timeout"])}` is not {_SECONDS} above 0'
    if problem: return None, warnings + [f'{at}: {problem}; the server is ignored']
    text = ' '.join(got.get('description', '').split())[:200]
    folder = str(Path(path).parent) if folder is None else folder
    return McpSpec(name, command, url, env, names, token, header, timeout, text, folder, str(path)), warnings


def read_mcp_servers(
    path:Path,  # One of your settings files (yours, or the system's: a project's may not declare servers)
)->tuple:       # (McpSpec by name, in file order; warnings)
    "The MCP servers `path` declares, each checked whole: one that does not fit is ignored, with one line."
    return _declared(path, _MCP_SECTION, 'an MCP server', MAX_MCP, 'MCP servers',
                     lambda name, items: mcp_spec(name, items, str(path)))


def system_ini(environ=None)->Path|None:
    """The system-wide settings file: `$BOOPITER_SYSTEM_SETTINGS` when set (whether or not it exists), else the first
    of `/etc/boopiter/settings.ini` and `{sys.prefix}/etc/boopiter/settings.ini` that exists; None if none does."""
    environ = os.environ if environ is None else environ
    if (given := (environ.get('BOOPITER_SYSTEM_SETTINGS') or '').strip()): return Path(given).expanduser()
    return next((p for p in (Path('/etc/boopiter/settings.ini'), Path(sys.prefix)/'etc'/'boopiter'/'settings.ini')
                 if p.is_file()), None)


def project_ini(
    start:Path=None,  # Folder to start from: the notebook's, else the working directory
)->Path|None:         # Nearest settings.ini with a [boopiter] section, if any
    "Walk up from `start` to the nearest `settings.ini` that has a `[boopiter]` section."
    start = Path(start or os.getcwd()).resolve()
    return next((p/'settings.ini' for p in [start, *start.parents] if _has_section(p/'settings.ini')), None)


def user_ini(environ=None)->Path:
    "The user's settings file: `$XDG_CONFIG_HOME/boopiter/settings.ini`, by default under `~/.config`."
    environ = os.environ if environ is None else environ
    return Path(environ.get('XDG_CONFIG_HOME') or Path.home()/'.config')/'boopiter'/'settings.ini'


def _unset(v): return v is None or isinstance(v, str) and v == ''


def resolve_settings(
    *layers,  # (name, values) pairs, highest precedence first; None and '' mean "not set here"
)->Settings:
    """Merge `layers`: for each key the first layer that sets it to a valid value wins. A value that breaks its rule
    in `RULES` becomes a warning naming the layer and key, and the next layer's applies; a cell's options are not
    checked (the magic checks them and says so)."""
    values, source, warnings = {}, {}, []
    for name,layer in layers:
        for k,v in (layer or {}).items():
            if k not in SETTINGS or k in values or _unset(v): continue
            if name == 'cell option' or check_setting(k, v): values[k], source[k] = v, name
            else: warnings.append(refusal(name, k, v))
    return Settings({k: values.get(k, DEFAULTS[k]) for k in SETTINGS}, {k: source.get(k, 'default') for k in SETTINGS},
                    warnings)


# Settings a project's settings.ini may not set: where your prompts and replies are written (and read back from),
# and which of your variables is sent to its server as a key, are yours to choose, not a cloned repository's.
_YOURS_ONLY = dict(
    deaddrop_dir='set it in your own settings ({user}) or BOOPITER_DEADDROP_DIR',
    cache_dir='set it in your own settings ({user})', cassette_file='set it in your own settings ({user})',
    api_key_env='name the key variable in your own settings ({user}) or with `%config BoopMagics.api_key_env`',
    web_allow='set it in your own settings ({user}) or with `%config BoopMagics.web_allow`',
    completions='turn completions on or off in your own settings ({user}) or with `%config BoopMagics.completions`')


def load_settings(
    cell:dict=None,     # Options given to this `%%prompt` cell
    binding:dict=None,  # The notebook's saved binding
    runtime:dict=None,  # Values set with `%config` after loading
    config:dict=None,   # Values configured when the extension loaded (`c.BoopMagics.x` in ipython_config.py)
    start:Path=None,    # Folder to look for a project settings.ini from
    environ:dict=None,  # Environment (default `os.environ`)
)->Settings:
    "Resolve every setting by the documented precedence, remembering where each value came from."
    environ = os.environ if environ is None else environ
    proj, user, system = project_ini(start), user_ini(environ), system_ini(environ)
    pvals, pwarn = read_ini(proj) if proj else ({}, [])
    for key, how in _YOURS_ONLY.items():
        if key in pvals:
            del pvals[key]
            pwarn.append(f'{proj}: `{key}` ignored: {how.format(user=user)}')
    uvals, uwarn = read_ini(user) if user.is_file() else ({}, [])
    svals, swarn = read_ini(system) if system and system.is_file() else ({}, [])
    env = {k: (environ.get(k) or '').strip() for k in ('BOOPITER_CASSETTE', 'OLLAMA_HOST')}
    res = resolve_settings(('cell option', cell), ('notebook binding', binding), ('%config', runtime),
                           ('BOOPITER_CASSETTE', dict(cassette=env['BOOPITER_CASSETTE'])),   # a run's own choice
                           (str(proj), pvals), (str(user), uvals), ('c.BoopMagics', config), (str(system), svals),
                           ('OLLAMA_HOST', dict(host=env['OLLAMA_HOST'])))
    yours = resolve_settings(*[(name, {k: v for k,v in (layer or {}).items() if k in CONSENT_KEYS}) for name,layer in
                               (('cell option', cell), ('%config', runtime), (str(user), uvals), ('c.BoopMagics', config),
                                (str(system), svals))])
    res.yours = Settings({k: yours[k] for k in CONSENT_KEYS}, {k: yours.source[k] for k in CONSENT_KEYS})   # with sources
    res.endpoints, ewarn = _all_endpoints(proj, user, system, environ)
    res.mcp, mwarn = _all_mcp(proj, user, system)
    res.warnings = pwarn + uwarn + swarn + ewarn + mwarn + res.warnings
    res.project, res.system = str(proj) if proj else None, str(system) if system else None
    res.notes = [_short_paths(w, {str(user): _tilde(user), **({str(proj): 'settings.ini'} if proj else {})})
                 for w in res.warnings]
    return res


def _all_endpoints(proj, user, system, environ)->tuple:
    """(endpoints by name, warnings): the system file's, then the user's, then the project's; a later file's section
    replaces an earlier one of the same name whole (its key variable, its `shared` flag and all)."""
    found, warnings = {}, []
    for path, shared, yours in ((system, True, True), (user, False, True), (proj, False, False)):
        if path is None or not path.is_file(): continue
        eps, w = read_endpoints(path, shared, yours)
        found.update(eps)
        warnings += w
    return found, warnings


def _all_mcp(proj, user, system)->tuple:
    """(McpSpec by name, warnings): the system file's servers, then yours (one of the same name replacing the system's).
    A project's are not read: a server is a program to run, or an address to send your data, and a cloned repository
    may not choose either for you, nor redefine a name you gave a server."""
    found, warnings = {}, []
    for path in (system, user):
        if path is None or not path.is_file(): continue
        specs, w = read_mcp_servers(path)
        found.update(specs)
        warnings += w
    if proj is not None and (named := _declared(proj, _MCP_SECTION, 'an MCP server', MAX_MCP, 'MCP servers',
                                                lambda name, items: (name, []))[0]):
        warnings.append(f'{proj}: `[{_MCP_SECTION}{next(iter(named))}]` ignored: a project may not declare MCP servers '
                        f'(they run programs); declare it in your own settings ({user}), or run `add_mcp_server(...)`')
    return found, warnings


def _tilde(path)->str:
    "`path` with the home folder written `~`."
    try: return str(Path('~')/Path(path).relative_to(Path.home()))
    except (ValueError, RuntimeError): return str(path)


def _short_paths(text, names):
    "`text` with each path in `names` replaced by its short name (the longest first: one path may end another)."
    for p in sorted(names, key=len, reverse=True): text = text.replace(p, names[p])
    return text


def declared_models(settings)->list:
    "The ids the `models` setting lists, in order, without repeats."
    return list(dict.fromkeys(m.strip() for m in settings['models'].split(',') if m.strip()))


def short_source(
    source:str,  # A layer name from `Settings.source`; files are named by their path
)->str:          # The same without a path, fit to save in a notebook (a path would show your home folder)
    "Where a value came from, short: `settings.ini` for either file; `auto` when nothing set it."
    return 'auto' if not source or source == 'default' else 'settings.ini' if source.endswith('.ini') else source


def ollama_url(
    host:str='',  # `host`, `host:port`, `:port` or a URL; empty means 127.0.0.1:11434
)->str:           # Base URL with scheme and port, no trailing slash
    "Normalise an Ollama host the way the official client does: bare `host:port` gets `http://`; SettingsError if none."
    host = (host or '').strip()
    if host and not check_setting('host', host):   # only a raw `OLLAMA_HOST` gets here: settings are checked on reading
        from .errors import SettingsError
        raise SettingsError(f'`{_shown(host, "host")}` is not {RULES["host"][1]}: set `OLLAMA_HOST` or `host` '
                            '(settings.ini, `%config BoopMagics.host`) to one, e.g. `127.0.0.1:11434`.', host=host)
    scheme = 'https' if host.startswith('https://') else 'http'
    parts = urlsplit(host if '://' in host else f'http://{host}')
    default_port = {'http': 80, 'https': 443}[scheme] if '://' in host else 11434
    hostname = parts.hostname or '127.0.0.1'
    if ':' in hostname: hostname = f'[{hostname}]'
    try: port = parts.port or default_port
    except ValueError: port = default_port
    auth = f'{parts.username}:{parts.password}@' if parts.password else f'{parts.username}@' if parts.username else ''
    return f'{scheme}://{auth}{hostname}:{port}{parts.path.rstrip("/")}'


def public_url(url:str)->str:
    "`url` (or a bare `user:pass@host:port`) without its user:password part, safe to show and save."
    if '@' not in url: return url
    if '://' not in url: return url.rpartition('@')[2]
    p = urlsplit(url)
    return p._replace(netloc=p.netloc.rpartition('@')[2]).geturl()
