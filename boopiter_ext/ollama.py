"""A small, fast Ollama client: streaming `/api/chat` over one `requests.Session` per kernel.

    client = OllamaClient('127.0.0.1:11434', timeout=120)
    for kind, text in client.chat('qwen3:1.7b', [mk_msg('hi')], num_ctx=8192): ...

It reads the NDJSON stream directly (litellm's `ollama_chat` costs about 150x more per chunk), so
`keep_alive`, `options.num_ctx`, `options.num_predict` and `think` reach Ollama as given. This is the
only module that catches `requests` exceptions; it re-raises them as `errors.OllamaError` and
friends, with messages that say where it looked and what to do.
"""

__all__ = ['OllamaClient', 'keep_alive_value', 'think_value', 'ollama_loaded', 'unload_ollama_model', 'sync_ollama_loaded',
           'MemoryTidier']

import json, logging, os, threading, warnings
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
import requests
from urllib3.exceptions import ReadTimeoutError
from .errors import OllamaError, OllamaUnreachable, OllamaModelNotFound, ReplyBroken, ReplyStalled
from .messages import msg_text, msg_images
from .models import is_ollama_id, ollama_name, ollama_tag
from .settings import EFFORTS, ollama_url, public_url


def keep_alive_value(s)->int|str|None:
    "Ollama's `keep_alive` from a setting: minutes as a number (`5` -> '5m', `0` -> 0, `-1` -> -1), or a duration."
    s = str(s).strip() if s is not None else ''
    if not s: return None
    try: mins = float(s)
    except ValueError: return s
    return int(mins) if mins <= 0 else f'{mins:g}m'


def think_value(
    effort:str,       # 'l', 'm', 'h', 'off', or '' for the model's default
    info:dict=None,   # The model's /api/show answer, if known
)->bool|str|None:
    "Ollama's `think` field: a level where the model lists levels, else true/false; None sends nothing."
    effort = (effort or '').strip().lower()
    if not effort: return None
    if effort in ('off', 'false', 'no'): return False
    levels = [v for v in ((info or {}).get('thinking') or {}).get('values', []) if isinstance(v, str)]
    level = EFFORTS.get(effort[0])
    return level if level in levels else True


def _ollama_msg(m):
    d = dict(role=m['role'], content=msg_text(m))
    if (imgs := msg_images(m)): d['images'] = imgs
    return d


def _read_timeout(e):
    while e is not None:
        if isinstance(e, (ReadTimeoutError, requests.ReadTimeout)): return True
        e = e.args[0] if e.args and isinstance(e.args[0], BaseException) else e.__context__
    return False


class OllamaClient:
    "One Ollama server, one HTTP session: streaming chat, listing, and model info."
    def __init__(self,
                 host:str='',                 # `host:port` or URL; empty means 127.0.0.1:11434
                 timeout:float=300.0,         # Seconds to wait for the next token
                 connect_timeout:float=5.0,   # Seconds to wait for a connection
                 source:str='default'):       # Where the host setting came from, for error messages
        self.url, self.timeout, self.connect_timeout, self.source = ollama_url(host), timeout, connect_timeout, source
        self.session = requests.Session()
        self._info, self._digests = {}, {}   # /api/show answers by digest (else name); digests by name

    @property
    def where(self)->str: return public_url(self.url)

    def close(self): self.session.close()
    def __enter__(self): return self
    def __exit__(self, *exc): self.close()

    @contextmanager
    def _errors(self, model=None, streaming=False):
        "Translate `requests` failures into boopiter errors, once, here."
        try: yield
        except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as e:
            if streaming and _read_timeout(e): raise self._stalled(model) from e
            if streaming: raise ReplyBroken(f'The connection to Ollama at {self.where} dropped in the middle of the '
                                            'reply.', host=self.where, model=model) from e
            raise OllamaUnreachable(
                f'Ollama is not reachable at {self.where} (host from {self.source}). Start it with `ollama serve` '
                '(or open the Ollama app), or point boopiter elsewhere: OLLAMA_HOST, `host = ...` in settings.ini, '
                'or `%%prompt -m` another model.', host=self.where) from e
        except requests.Timeout as e:
            if streaming: raise self._stalled(model) from e
            if isinstance(e, requests.ReadTimeout):
                raise OllamaError(f'Ollama at {self.where} did not answer within {self._answer_timeout:g} s.',
                                  host=self.where) from e
            raise OllamaUnreachable(f'Ollama at {self.where} did not accept a connection within '
                                    f'{self.connect_timeout:g} s.', host=self.where) from e
        except requests.RequestException as e:
            raise OllamaError(f'Talking to Ollama at {self.where} failed: {e}', host=self.where) from e

    def _stalled(self, model):
        return ReplyStalled(f'No token from {model} for {self.timeout:g} s, so boopiter stopped waiting. If the model '
                            'is just slow to load, raise `timeout` (settings.ini, or `%config BoopMagics.timeout = 600`).',
                            model=model, timeout=self.timeout)

    @property
    def _answer_timeout(self): return min(self.timeout, 30)   # listing and model info are quick, or something is wrong

    def _get(self, path, **kw):
        with self._errors():
            r = self.session.request('POST' if 'json' in kw else 'GET', self.url + path,
                                     timeout=(self.connect_timeout, self._answer_timeout), **kw)
            if r.status_code != 200: raise self._http_error(r, kw.get('json', {}).get('model'))
            try: return r.json()
            except ValueError: raise OllamaError(f'{self.where} answered {path} with something that is not JSON: is it '
                                                 'an Ollama server? Check OLLAMA_HOST or `host`.', host=self.where) from None

    def _http_error(self, r, model=None):
        try: msg = r.json().get('error') or r.text
        except ValueError: msg = r.text
        msg = (msg or r.reason or '').strip()[:1000]
        if r.status_code == 404 and model:
            try: names = ', '.join(self.tags_names()[:8]) or 'none'
            except OllamaError: names = 'unknown'
            return OllamaModelNotFound(f'Ollama at {self.where} does not have the model {model!r}. Pull it with '
                                       f'`ollama pull {model}`, or pick one it has ({names}).',
                                       host=self.where, model=model, status=404)
        return OllamaError(f'Ollama at {self.where} answered HTTP {r.status_code}: {msg}', host=self.where,
                           model=model, status=r.status_code, body=msg)

    def version(self)->str:
        "The server's version (`/api/version`)."
        return str(self._get('/api/version').get('version') or '')

    def tags(self)->list:
        "Every model on the server (`/api/tags`), sorted by name (Ollama's own order is unstable)."
        models = sorted(self._get('/api/tags').get('models', []), key=lambda m: str(m.get('name', '')).lower())
        self._digests = {m['name']: m.get('digest') for m in models if m.get('name')}
        return models

    def tags_names(self)->list: return [m['name'] for m in self.tags()]

    def _key(self, name): return self._digests.get(name) or name

    def show(self, name:str)->dict:
        "The model's `/api/show` answer, cached by digest, so a re-pulled model is asked again; failures are not cached."
        key = self._key(name)
        if key not in self._info: self._info[key] = self._get('/api/show', json=dict(model=name))
        return self._info[key]

    def model_info(self, name:str)->dict:
        "`capabilities` and `context_length` (None when unknown) of a model."
        info = self.show(name)
        ctx = next((v for k,v in info.get('model_info', {}).items() if k.endswith('.context_length')), None)
        return dict(capabilities=info.get('capabilities', []), context_length=ctx, thinking=info.get('thinking'))

    def _probe(self, name):
        try: return self.model_info(name)
        except OllamaError as e: return dict(capabilities=[], context_length=None, problem=str(e))

    def models(self, workers:int=8)->list:
        """Every model (`/api/tags` entries, sorted) with its `model_info` merged in.

        Models not seen before are probed with `/api/show` on `workers` threads, so a cold listing costs one
        round trip per `workers` new models instead of one per model, and a warm one makes the single
        `/api/tags` request."""
        tags = self.tags()
        todo = [m['name'] for m in tags if self._key(m['name']) not in self._info]
        if len(todo) > 1:
            with ThreadPoolExecutor(min(workers, len(todo)), thread_name_prefix='boopiter-show') as ex:
                probed = dict(zip(todo, ex.map(self._probe, todo)))
        else: probed = {n: self._probe(n) for n in todo}
        return [{**m, **(probed.get(m['name']) or self._probe(m['name']))} for m in tags]

    # -- memory: Ollama keeps every model it served resident until its keep-alive runs out
    def loaded(self)->list:
        "Names of the models Ollama holds in memory now (`/api/ps`)."
        return [m.get('model') or m.get('name') for m in self._get('/api/ps').get('models', [])]

    def unload(self, name:str):
        "Free `name`'s memory now: `/api/generate` with `keep_alive: 0` (works where the `ollama` CLI is not installed)."
        self._get('/api/generate', json=dict(model=ollama_name(name), keep_alive=0))

    def chat(self,
             model:str,                # Ollama name or `ollama_chat/NAME`
             messages:list,            # Messages in `messages.mk_msg` form
             think=None,               # Ollama's `think` field (see `think_value`); None sends nothing
             keep_alive=None,          # Ollama's `keep_alive` (see `keep_alive_value`); None sends nothing
             num_ctx:int=None,         # Context window to load the model with
             max_tokens:int=None):     # Longest reply (`num_predict`)
        "Stream a reply as ('content'|'thinking', text) events, then ('done', info)."
        name = ollama_name(model)
        body = dict(model=name, messages=[_ollama_msg(m) for m in messages], stream=True)
        opts = {k: v for k,v in dict(num_ctx=num_ctx, num_predict=max_tokens).items() if v}
        if opts: body['options'] = opts
        if keep_alive is not None: body['keep_alive'] = keep_alive
        if think is not None: body['think'] = think
        with self._errors(name):
            r = self.session.post(self.url + '/api/chat', json=body, stream=True,
                                  timeout=(self.connect_timeout, self.timeout))
        done, tool_calls = False, []   # native tool calls: lenient mode can take them (see guards.recover_calls)
        with r:  # leaving this block early closes the connection; a stream read to its end keeps it for reuse
            if r.status_code != 200: raise self._http_error(r, name)
            with self._errors(name, streaming=True):
                for line in r.iter_lines(chunk_size=8192):
                    if not line: continue
                    try: d = json.loads(line)
                    except ValueError: raise OllamaError(f'Ollama at {self.where} sent a line that is not JSON: '
                                                         f'{line[:80]!r}', host=self.where, model=name) from None
                    if (m := d.get('message')) is not None:
                        if (t := m.get('thinking')): yield 'thinking', t
                        if (c := m.get('content')): yield 'content', c
                        tool_calls += m.get('tool_calls') or []
                    elif 'error' in d:
                        raise OllamaError(f'Ollama reported an error in the middle of the reply: {d["error"]}',
                                          host=self.where, model=name)
                    if d.get('done'):
                        done = True
                        yield 'done', dict(finish_reason=d.get('done_reason'), prompt_tokens=d.get('prompt_eval_count'),
                                           completion_tokens=d.get('eval_count'), tool_calls=tool_calls or None)
        if not done:
            raise ReplyBroken(f'The stream from Ollama at {self.where} ended before the reply was done.',
                              host=self.where, model=name)


def _client(client):
    "`client`, or a new client for `OLLAMA_HOST` that is closed after use."
    return nullcontext(client) if client is not None else OllamaClient(os.environ.get('OLLAMA_HOST', ''))


def _warn(msg): warnings.warn(msg, RuntimeWarning, stacklevel=3)


def ollama_loaded(client:OllamaClient=None)->list:
    "Names of the models Ollama holds in memory (`/api/ps`), or `[]` when it cannot be asked."
    try:
        with _client(client) as c: return c.loaded()
    except OllamaError: return []


def unload_ollama_model(
    name:str,                   # An Ollama name or `ollama_chat/NAME`
    client:OllamaClient=None,   # Default: a client for `OLLAMA_HOST`
    warn=_warn,                 # Called with the message if Ollama refuses
)->bool:                        # Whether Ollama confirmed the unload
    "Unload `name` from Ollama's memory; warns (and returns False) if that fails."
    with _client(client) as c:
        try: c.unload(name)
        except OllamaModelNotFound: warn(f'Could not unload {name}: Ollama at {c.where} does not have it.')
        except OllamaError as e: warn(f'Could not unload {name}: {e}')
        else: return True
    return False


def sync_ollama_loaded(
    keep,                       # Model ids to keep: bare names or `ollama_chat/` ids; None and non-Ollama ids are ignored
    client:OllamaClient=None,   # Default: a client for `OLLAMA_HOST`
    warn=_warn,                 # Called with the message of each unload that fails
)->list:                        # The names unloaded
    "Unload every model Ollama holds in memory except those in `keep`: one `/api/ps` when there is nothing to do."
    keep = {ollama_tag(m) for m in keep or () if m and is_ollama_id(m)}
    with _client(client) as c:
        return [n for n in ollama_loaded(c) if ollama_tag(n) not in keep and unload_ollama_model(n, c, warn)]


class MemoryTidier:
    """Runs `sync_ollama_loaded` on one background thread whenever asked; asks made while it runs merge
    into one more pass, so scrolling through a model list does not start a thread per model."""
    def __init__(self,
                 picks):  # picks() -> (client, keep) to tidy now, or None to skip
        self.picks, self._asked, self._stopping, self._thread = picks, threading.Event(), False, None
        self._lock = threading.Lock()

    def ask(self):
        "Tidy soon, off the calling thread."
        with self._lock:
            if self._stopping: return
            self._asked.set()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name='boopiter-tidy-memory', daemon=True)
                self._thread.start()

    def _run(self):
        log = logging.getLogger('boopiter_ext')
        while self._asked.wait() and not self._stopping:
            self._asked.clear()
            try:
                if (picks := self.picks()) is not None: sync_ollama_loaded(picks[1], picks[0], warn=log.warning)
            except Exception: log.warning('boopiter_ext: tidying Ollama\'s memory failed', exc_info=True)

    def stop(self, timeout:float=5.0):
        "Finish the pass under way (if any) and end the thread."
        with self._lock: self._stopping, thread = True, self._thread
        self._asked.set()
        if thread is not None: thread.join(timeout)
