"""A small, fast Ollama client: streaming `/api/chat` over one `requests.Session` per kernel.

    client = OllamaClient('127.0.0.1:11434', timeout=120)
    for kind, text in client.chat('qwen3:1.7b', [mk_msg('hi')], num_ctx=8192): ...

It reads the NDJSON stream directly (litellm's `ollama_chat` costs about 150x more per chunk), so
`keep_alive`, `options.num_ctx`, `options.num_predict` and `think` reach Ollama as given. This is the
module that catches `requests` exceptions for Ollama (`openai_client.py` does the same for OpenAI-compatible
servers); it re-raises them as `errors.OllamaError` and friends, with messages that say where it looked and what
to do. A reply that yields no token for `timeout` seconds is hung up (`stream.StallWatch`), however many bytes the
server keeps trickling.
"""

__all__ = ['OllamaClient', 'keep_alive_value', 'think_value', 'ollama_loaded', 'unload_ollama_model', 'sync_ollama_loaded',
           'MemoryTidier']

import json, logging, os, threading, warnings
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
import requests
from ..errors import ModelError, OllamaError, OllamaUnreachable, OllamaModelNotFound, ReplyBroken
from ..redact import register
from ..context.messages import msg_text, msg_images
from .openai_client import pooled
from .routes import is_ollama_id, ollama_name, ollama_tag, split_endpoint
from .stream import StallWatch
from ..settings import EFFORTS, ollama_url, public_url


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


def _text(v)->str: return ' '.join(str(v).split())[:1000]   # a server's message, on one line and not endless
def _num(v, typ=int): return v if isinstance(v, typ) else None      # a field of the kind expected, or nothing


def _ollama_msg(m):
    d = dict(role=m['role'], content=msg_text(m))
    if (imgs := msg_images(m)): d['images'] = imgs
    return d


def _cache_numbers(d)->dict:
    """How much of the prompt Ollama took from its cache (`prompt_eval_cached_count`, newer servers) and had to process
    (`evaluated_tokens`, `prompt_ms`), as the direct OpenAI-compatible client reports llama.cpp's."""
    cached, total, ns = _num(d.get('prompt_eval_cached_count')), _num(d.get('prompt_eval_count')), _num(d.get('prompt_eval_duration'))
    out = {} if cached is None else dict(cached_tokens=cached)
    if cached is not None and total is not None and total >= cached: out['evaluated_tokens'] = total - cached
    if ns is not None: out['prompt_ms'] = round(ns / 1e6, 3)
    return out


class OllamaClient:
    """One Ollama server, one HTTP session: streaming chat, listing, model info, and loading and unloading models.

    On a `shared` server (others' kernels use it too) the client remembers which models it loaded itself (`mine`: not in
    memory when it first asked for them), and `sync_ollama_loaded` unloads only those."""
    def __init__(self,
                 host:str=None,               # `host:port` or URL; None: `OLLAMA_HOST`; empty: 127.0.0.1:11434
                 timeout:float=300.0,         # Seconds to wait for the next token
                 connect_timeout:float=5.0,   # Seconds to wait for a connection
                 source:str='default',        # Where the host setting came from, for error messages
                 shared:bool=False):          # Others use this server: never unload a model this client did not load
        if host is None: host, source = os.environ.get('OLLAMA_HOST', ''), 'OLLAMA_HOST' if source == 'default' else source
        self.url, self.timeout, self.connect_timeout, self.source = ollama_url(host), timeout, connect_timeout, source
        self.session, self.shared, self.fix = pooled(requests.Session()), shared, ''   # fix: where the host is set, for messages
        self._info, self._digests = {}, {}   # /api/show answers by digest (else name); digests by name
        self.mine, self._asked = set(), set()   # tags this client loaded; tags it has asked for (on a shared server)

    @property
    def api_key(self)->str|None: return self.session.headers.get('Authorization', '')[len('Bearer '):] or None

    @api_key.setter
    def api_key(self, key):
        "Send `key` as a Bearer token (an Ollama behind an authenticating proxy); None sends none."
        register(key)   # never shown: a fault that quotes it is masked
        if key: self.session.headers['Authorization'] = f'Bearer {key}'
        else: self.session.headers.pop('Authorization', None)

    def __repr__(self): return f'OllamaClient({self.where!r})'   # never the key

    @property
    def where(self)->str: return public_url(self.url)

    def close(self): self.session.close()
    def __enter__(self): return self
    def __exit__(self, *exc): self.close()

    @contextmanager
    def _errors(self, model=None, watch=None, streaming=False):
        "Translate `requests` failures into boopiter errors, once, here; with a `watch`, any stall is `ReplyStalled`."
        try: yield
        except requests.RequestException as e:
            if watch is not None and watch.expired(): raise watch.stalled(model) from e
            raise self._error(e, model, streaming) from e

    def _error(self, e, model, streaming):
        if isinstance(e, (requests.ConnectionError, requests.exceptions.ChunkedEncodingError)):
            if streaming: return ReplyBroken(f'The connection to Ollama at {self.where} dropped in the middle of the '
                                            'reply.', host=self.where, model=model)
            return OllamaUnreachable(
                f'Ollama is not reachable at {self.where} (host from {self.source}). Start it with `ollama serve` '
                '(or open the Ollama app), or point boopiter elsewhere: ' + (f'{self.fix}, ' if self.fix else
                'OLLAMA_HOST, `host = ...` in settings.ini, ') + 'or `%%prompt -m` another model.', host=self.where)
        if isinstance(e, requests.ReadTimeout):
            return OllamaError(f'Ollama at {self.where} did not answer within {self._answer_timeout:g} s.', host=self.where)
        if isinstance(e, requests.Timeout):
            return OllamaUnreachable(f'Ollama at {self.where} did not accept a connection within '
                                     f'{self.connect_timeout:g} s.', host=self.where)
        return OllamaError(f'Talking to Ollama at {self.where} failed: {e}', host=self.where)

    @property
    def _answer_timeout(self): return min(self.timeout, 30)   # listing and model info are quick, or something is wrong

    def _get(self, path, read:float=None, **kw):
        "A short request's JSON answer, waiting `read` seconds for it (default `_answer_timeout`)."
        with self._errors():
            r = self.session.request('POST' if 'json' in kw else 'GET', self.url + path,
                                     timeout=(self.connect_timeout, read or self._answer_timeout), **kw)
            if r.status_code != 200: raise self._http_error(r, kw.get('json', {}).get('model'))
            try: return r.json()
            except ValueError: raise OllamaError(f'{self.where} answered {path} with something that is not JSON: is it '
                                                 'an Ollama server? Check OLLAMA_HOST or `host`.', host=self.where) from None

    def _http_error(self, r, model=None, raw=None):
        "The error for a response that is not 200, with Ollama's own message (`raw`: the body, if `r` streams)."
        raw = (r.content if raw is None else raw)[:1 << 16]
        try: msg = json.loads(raw).get('error') or ''
        except (ValueError, AttributeError): msg = ''
        msg = _text(msg or raw.decode('utf-8', 'replace') or r.reason or '')
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
        return [m.get('model') or m.get('name') for m in self.ps()]

    def ps(self)->list:
        "What Ollama holds in memory now (`/api/ps`): one dict per model (name, size, size_vram, expires_at, ...)."
        models = self._get('/api/ps').get('models')
        return [m for m in models if isinstance(m, dict)] if isinstance(models, list) else []

    def unload(self, name:str):
        """Free `name`'s memory now: `/api/generate` with `keep_alive: 0` (works where the `ollama` CLI is not installed).
        On a shared server, only a model this client loaded: ModelError for another's."""
        if self.shared and ollama_tag(name) not in self.mine:
            raise ModelError(f'{name} stays loaded: Ollama at {self.where} is shared, and this kernel did not load it '
                             '(another kernel may be using it).', host=self.where, model=name)
        self._get('/api/generate', json=dict(model=ollama_name(name), keep_alive=0))

    def load(self,
             name:str,            # An Ollama name or `ollama_chat/NAME`
             keep_alive=None,     # Ollama's `keep_alive` (see `keep_alive_value`); None: the server's default
             num_ctx:int=None):   # The context window its prompts will ask for (another one would load it again)
        "Load `name` into memory without generating (`/api/generate` with no prompt), waiting up to `timeout` for it."
        body = dict(model=ollama_name(name))
        if keep_alive is not None: body['keep_alive'] = keep_alive
        if num_ctx: body['options'] = dict(num_ctx=num_ctx)
        self._note_use(name)
        self._get('/api/generate', read=self.timeout, json=body)

    def forget(self, names):
        "Forget that this client loaded `names` (they were unloaded): whoever asks for one next loads it, maybe this client."
        tags = set(map(ollama_tag, names))
        self.mine -= tags
        self._asked -= tags

    def _note_use(self, name):
        "On a shared server, before first asking for `name`: if it is not in memory, this client is what loads it."
        if not self.shared or (tag := ollama_tag(name)) in self._asked: return
        self._asked.add(tag)
        try: loaded = {ollama_tag(n) for n in self.loaded() if n}
        except OllamaError: return   # not known: counted as someone else's, which is never unloaded
        if tag not in loaded: self.mine.add(tag)

    def chat(self,
             model:str,                # Ollama name or `ollama_chat/NAME`
             messages:list,            # Messages in `messages.mk_msg` form
             think=None,               # Ollama's `think` field (see `think_value`); None sends nothing
             keep_alive=None,          # Ollama's `keep_alive` (see `keep_alive_value`); None sends nothing
             num_ctx:int=None,         # Context window to load the model with
             max_tokens:int=None,      # Longest reply (`num_predict`)
             seed:int=None,            # Sampling seed (`options.seed`); None sends none
             format:dict=None):        # A JSON Schema the reply must follow (Ollama's structured outputs)
        """Stream a reply as ('content'|'thinking', text) events, then ('done', info); `ReplyStalled` after `timeout`
        seconds without a token."""
        name = ollama_name(model)
        self._note_use(name)
        body = dict(model=name, messages=[_ollama_msg(m) for m in messages], stream=True)
        if format is not None: body['format'] = format
        opts = {k: v for k,v in dict(num_ctx=num_ctx, num_predict=max_tokens, seed=seed).items() if v}
        if opts: body['options'] = opts
        if keep_alive == 0 and self.shared and ollama_tag(name) not in self.mine: keep_alive = None   # others' model
        if keep_alive is not None: body['keep_alive'] = keep_alive
        if think is not None: body['think'] = think
        watch = StallWatch(self.timeout)
        return watch.follow(self._stream(name, body, watch))

    def _stream(self, name, body, watch):
        with self._errors(name, watch):
            r = self.session.post(self.url + '/api/chat', json=body, stream=True,
                                  timeout=(self.connect_timeout, watch.backstop))
        done, tool_calls = False, []   # native tool calls: lenient mode can take them (see lenient.recover_calls)
        with r:  # leaving this block early closes the connection; a stream read to its end keeps it for reuse
            if not watch.arm(r.raw.shutdown): raise watch.stalled(name)
            with self._errors(name, watch, streaming=True):
                if r.status_code != 200: raise self._http_error(r, name, r.raw.read(1 << 16, decode_content=True))
                for line in r.iter_lines(chunk_size=8192):
                    if not line: continue
                    try: d = json.loads(line)
                    except ValueError: d = None
                    if not isinstance(d, dict): raise OllamaError(f'Ollama at {self.where} sent a line that is not a '
                                                                  f'JSON object: {line[:80]!r}', host=self.where, model=name)
                    if isinstance(m := d.get('message'), dict):
                        if isinstance(t := m.get('thinking'), str) and t: yield 'thinking', t
                        if isinstance(c := m.get('content'), str) and c: yield 'content', c
                        if isinstance(calls := m.get('tool_calls'), list): tool_calls += calls
                    elif 'error' in d:
                        raise OllamaError(f'Ollama reported an error in the middle of the reply: {_text(d["error"])}',
                                          host=self.where, model=name)
                    if d.get('done'):
                        done = True
                        yield 'done', dict(finish_reason=_num(d.get('done_reason'), str),
                                           prompt_tokens=_num(d.get('prompt_eval_count')),
                                           completion_tokens=_num(d.get('eval_count')), tool_calls=tool_calls or None,
                                           **_cache_numbers(d))
        if not done:
            raise ReplyBroken(f'The stream from Ollama at {self.where} ended before the reply was done.',
                              host=self.where, model=name)

    def generate(self,
                 model:str,             # Ollama name or `ollama_chat/NAME`
                 prompt:str,            # The text before the cursor (or the whole prompt)
                 suffix:str=None,       # The text after it: fill-in-the-middle, for models with the `insert` capability
                 max_tokens:int=None,   # Longest reply (`num_predict`)
                 stop:list=None,        # Strings that end the reply
                 num_ctx:int=None,      # Context window to load the model with
                 keep_alive=None,       # Ollama's `keep_alive` (see `keep_alive_value`); None sends nothing
                 cancel=None,           # A `threading.Event`: once set, the reply is hung up and ends, no error
                 timeout:float=None):   # Seconds without a token; None: the client's `timeout`
        "Stream a completion's text (`/api/generate`, temperature 0), piece by piece; `ReplyStalled` after `timeout`."
        name = ollama_name(model)
        self._note_use(name)
        opts = {k: v for k,v in dict(num_ctx=num_ctx, num_predict=max_tokens, stop=stop).items() if v}
        body = dict(model=name, prompt=prompt, stream=True, options=dict(opts, temperature=0))
        if suffix is not None: body['suffix'] = suffix
        if keep_alive is not None: body['keep_alive'] = keep_alive
        watch = StallWatch(self.timeout if timeout is None else timeout)
        return watch.follow(self._generated(name, body, watch, cancel))

    def _generated(self, name, body, watch, cancel):
        with self._errors(name, watch):
            r = self.session.post(self.url + '/api/generate', json=body, stream=True,
                                  timeout=(self.connect_timeout, watch.backstop))
        with r:  # leaving this block early (cancelled) closes the connection, which stops Ollama generating
            if not watch.arm(r.raw.shutdown): raise watch.stalled(name)
            with self._errors(name, watch, streaming=True):
                if r.status_code != 200:
                    raise self._insert_error(self._http_error(r, name, r.raw.read(1 << 16, decode_content=True)), name)
                for line in r.iter_lines(chunk_size=1024):
                    if cancel is not None and cancel.is_set(): return
                    try: d = json.loads(line) if line else {}
                    except ValueError: d = None
                    if not isinstance(d, dict): raise OllamaError(f'Ollama at {self.where} sent a line that is not '
                                                                  f'a JSON object: {line[:80]!r}', host=self.where)
                    if 'error' in d: raise OllamaError('Ollama reported an error in the middle of the reply: '
                                                       + _text(d['error']), host=self.where, model=name)
                    if isinstance(t := d.get('response'), str) and t: yield t
                    if d.get('done'): return
        if not (cancel is not None and cancel.is_set()):
            raise ReplyBroken(f'The stream from Ollama at {self.where} ended before the reply was done.',
                              host=self.where, model=name)

    def _insert_error(self, e, name):
        "`e`, or for a model that cannot fill in the middle the error that says which models can."
        if 'does not support insert' not in str(getattr(e, 'body', '')): return e
        return OllamaError(f'{name} cannot fill in the middle (no `insert` capability), so it cannot complete code: '
                           'pick a model that can (qwen2.5-coder, codellama:code, starcoder2, deepseek-coder), e.g. '
                           '`ollama pull qwen2.5-coder:1.5b`.', host=self.where, model=name, status=400, body=e.body)


def _client(client):
    "`client`, or a new client for `OLLAMA_HOST` that is closed after use."
    return nullcontext(client) if client is not None else OllamaClient()


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
        except ModelError as e: warn(f'Could not unload {name}: {e}')
        else: return True
    return False


def sync_ollama_loaded(
    keep,                       # Model ids to keep: Ollama names or ids, `@NAME/MODEL` (MODEL kept, whichever server NAME is)
    client:OllamaClient=None,   # Default: a client for `OLLAMA_HOST`
    warn=_warn,                 # Called with the message of each unload that fails
)->list:                        # The names unloaded
    """Unload every model Ollama holds in memory except those in `keep`: one `/api/ps` when there is nothing to do. On a
    shared server (`client.shared`), only the models this client loaded itself (`client.mine`): others' are theirs."""
    ids = [m for m in keep or () if m]
    keep = {ollama_tag(m) for m in ids if is_ollama_id(m)} | {ollama_tag(p[1]) for p in map(split_endpoint, ids) if p}
    with _client(client) as c:
        mine = c.mine if c.shared else None
        if mine is not None and not mine - keep: return []   # nothing of ours to unload: not even a request
        gone = [n for n in ollama_loaded(c) if ollama_tag(n) not in keep and (mine is None or ollama_tag(n) in mine)
                and unload_ollama_model(n, c, warn)]
        if mine is not None: c.forget(gone)
        return gone


class MemoryTidier:
    """Runs `sync_ollama_loaded` on one background thread whenever asked; asks made while it runs merge
    into one more pass, so scrolling through a model list does not start a thread per model."""
    def __init__(self,
                 picks):  # picks() -> [(client, keep)] to tidy now, one `sync_ollama_loaded` each
        self.picks, self._asked, self._stopping, self._thread = picks, threading.Event(), False, None
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self._asks = self._served = 0   # asks made, and asks a finished pass began after

    def ask(self):
        "Tidy soon, off the calling thread."
        with self._lock:
            if self._stopping: return
            self._asks += 1
            self._asked.set()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name='boopiter-tidy-memory', daemon=True)
                self._thread.start()

    def wait(self, timeout:float=None)->bool:
        "Wait until a pass has run for every ask so far (tests); False on timeout."
        with self._done: return self._done.wait_for(lambda: self._served >= self._asks or self._stopping, timeout)

    def _run(self):
        log = logging.getLogger('boopiter_ext')
        while self._asked.wait() and not self._stopping:
            with self._lock:
                self._asked.clear()
                upto = self._asks
            try: picks = self.picks()
            except Exception:
                log.warning('boopiter_ext: tidying Ollama\'s memory failed', exc_info=True)
                picks = []
            for client, keep in picks:   # one server failing leaves the others tidied
                try: sync_ollama_loaded(keep, client, warn=log.warning)
                except Exception: log.warning('boopiter_ext: tidying the memory of Ollama at %s failed', client.where,
                                              exc_info=True)
            with self._done:
                self._served = upto
                self._done.notify_all()

    def stop(self, timeout:float=5.0):
        "Finish the pass under way (if any) and end the thread."
        with self._lock:
            self._stopping, thread = True, self._thread
            self._done.notify_all()
        self._asked.set()
        if thread is not None: thread.join(timeout)
