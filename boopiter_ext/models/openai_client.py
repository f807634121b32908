"""A small OpenAI-compatible client: streaming `/v1/chat/completions` (server-sent events) over one `requests.Session`.

    client = OpenAIClient('http://127.0.0.1:8080/v1', api_key='none', timeout=120)
    for kind, val in client.chat('smollm2-135m', [mk_msg('hi')], max_tokens=64): ...

It answers the embedded model (llama.cpp's server), `openai/NAME` on an `api_base` and `@NAME/MODEL` on a named
OpenAI-compatible endpoint (llama.cpp, vLLM, LM Studio, Ollama's `/v1`, a LiteLLM gateway), reading the event stream directly as `ollama.py` reads Ollama's, so litellm (seconds to import,
~0.1 ms a chunk) is left to cloud ids. It yields the events every client yields (`stream.py`), translates `requests`
failures into boopiter errors here, once, and sends the key only in the `Authorization` header: never in a message,
a log or its `repr`.
"""

__all__ = ['OpenAIClient', 'response_format', 'pooled', 'POOL']

import json
from contextlib import contextmanager
from itertools import chain
import requests
from ..errors import BoopError, ModelError, ModelNotFound, ReplyBroken, Unreachable
from ..redact import register
from .stream import StallWatch
from ..settings import EFFORTS, public_url

_KEY_HELP = ('API keys come from the environment only: name the variable holding the key with `api_key_env` '
             '(settings.ini or `%config BoopMagics.api_key_env`).')

POOL = 32   # connections kept per server: a batch asked from code (`core/batch.py`) sends up to this many at once


def pooled(session):
    "`session` with room for `POOL` connections per server (requests keeps 10), so a batch's requests reuse theirs."
    from requests.adapters import HTTPAdapter
    for scheme in ('http://', 'https://'): session.mount(scheme, HTTPAdapter(pool_connections=4, pool_maxsize=POOL))
    return session


def _strict(s)->bool:
    "Whether a JSON Schema meets OpenAI's strict mode: every object closed (`additionalProperties: false`), all required."
    if not isinstance(s, dict): return True
    if s.get('type') == 'object' or 'properties' in s:
        props = s.get('properties') or {}
        if s.get('additionalProperties') is not False or set(s.get('required') or ()) != set(props): return False
    kids = [*(s.get('properties') or {}).values(), *(s.get('$defs') or {}).values(), *(s.get('anyOf') or ()),
            *([s['items']] if isinstance(s.get('items'), dict) else [])]
    return all(_strict(k) for k in kids)


def response_format(
    schema:dict,   # A JSON Schema
)->dict:           # OpenAI's `response_format` for it (llama.cpp makes a grammar of it; litellm maps it per provider)
    "The `response_format` that asks an OpenAI-compatible server for JSON following `schema` (strict where it can be)."
    return dict(type='json_schema', json_schema=dict(name='answer', schema=schema, strict=_strict(schema)))


def _openai_msg(m):
    "`m` as OpenAI's API takes it: a lisette-style image part carries its URL as a bare string, the API as `{'url'}`."
    c = m.get('content')
    if not isinstance(c, list): return m
    return dict(m, content=[dict(p, image_url={'url': p['image_url']}) if isinstance(p, dict) and
                            isinstance(p.get('image_url'), str) else p for p in c])


def _dropped(e)->bool:
    "Whether a request failed because the server had closed the kept-alive connection it went out on, before answering."
    import http.client
    seen, cause = set(), e
    while cause is not None and id(cause) not in seen:   # requests' ConnectionError <- urllib3's ProtocolError <- ...
        if isinstance(cause, (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)): return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__ or (cause.args[1] if len(getattr(cause, 'args', ())) > 1
                                                         and isinstance(cause.args[1], BaseException) else None)
    return False


def _count(v)->bool: return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 40

def _usage(u):
    "Token counts from an OpenAI `usage` object, numbers only; `cached_tokens`: the prompt's tokens the server reused."
    out = {k: u[k] for k in ('prompt_tokens', 'completion_tokens') if _count(u.get(k))}
    details = u.get('completion_tokens_details')
    if isinstance(details, dict) and _count(n := details.get('reasoning_tokens')) and n: out['reasoning_tokens'] = n
    details = u.get('prompt_tokens_details')
    if isinstance(details, dict) and _count(n := details.get('cached_tokens')): out['cached_tokens'] = n
    return out


def _timings(t):
    """What llama.cpp's `timings` say of the prompt: `cached_tokens` (`cache_n`), `evaluated_tokens` (`prompt_n`, the
    tokens it had to process) and `prompt_ms`; numbers only, as a server may send anything."""
    out = {k: t[src] for k,src in (('cached_tokens', 'cache_n'), ('evaluated_tokens', 'prompt_n')) if _count(t.get(src))}
    ms = t.get('prompt_ms')
    if isinstance(ms, (int, float)) and not isinstance(ms, bool) and 0 <= ms < 1e9: out['prompt_ms'] = round(float(ms), 3)
    return out


def _message(err)->str:
    "The text of an OpenAI-style `error` value (`{'message': ...}` or a string), at most 1000 characters."
    msg = err.get('message') if isinstance(err, dict) else err
    return ' '.join(str(msg or '').split())[:1000]


def _why(e)->str:
    "The root cause of a `requests` failure in a few words ('Connection refused'), not urllib3's paragraph."
    seen = e
    while seen is not None:
        if isinstance(seen, OSError) and seen.strerror: return seen.strerror
        seen = seen.__cause__ or seen.__context__
    return type(e).__name__


def _body(r, limit=1 << 22)->bytes:
    "At most `limit` bytes of a response body: a server cannot make us hold more."
    return r.raw.read(limit, decode_content=True) or b''


class OpenAIClient:
    "One OpenAI-compatible server, one HTTP session: streaming chat and the model list."
    def __init__(self,
                 base:str,                   # Base URL, e.g. `http://127.0.0.1:8080/v1`
                 api_key:str=None,           # Sent as `Authorization: Bearer ...`; None sends no header
                 timeout:float=300.0,        # Seconds to wait for the next token
                 connect_timeout:float=5.0,  # Seconds to wait for a connection
                 where:str=None):            # How to name the server in messages; default `base` without credentials
        self.base, self.api_key, self.timeout, self.connect_timeout = base.rstrip('/'), api_key, timeout, connect_timeout
        self.where, self.fix = where or public_url(self.base), ''   # fix: where the URL is set, for messages
        self.session = pooled(requests.Session())

    def __repr__(self): return f'OpenAIClient({self.where!r})'   # never the key
    def close(self): self.session.close()
    def __enter__(self): return self
    def __exit__(self, *exc): self.close()

    @property
    def _headers(self):
        register(self.api_key)   # never shown: a fault that quotes it (a 401 repeating the key) is masked
        return {'Authorization': f'Bearer {self.api_key}'} if self.api_key else {}

    @contextmanager
    def _errors(self, model=None, watch=None, streaming=False):
        "Translate `requests` failures into boopiter errors, once, here."
        try: yield
        except requests.RequestException as e:
            if watch is not None and watch.expired(): raise watch.stalled(model) from e
            if streaming: raise ReplyBroken(f'The connection to {self.where} dropped in the middle of the reply.',
                                            model=model) from e
            if isinstance(e, requests.ConnectionError):
                raise Unreachable(f'Nothing answers at {self.where}' + (f' for {model}' if model else '') +
                                  f' ({_why(e)}). Check that the server is running and ' + (self.fix or 'that `api_base` '
                                  '(settings.ini, or `%config BoopMagics.api_base`) points at it') + '.', model=model) from e
            raise ModelError(f'Talking to {self.where} failed: {_why(e)}', model=model) from e

    def _http_error(self, r, model=None):
        "The error for a response that is not 200, with the server's own message."
        raw = _body(r, 1 << 16)
        try: msg = _message(json.loads(raw).get('error'))
        except (ValueError, AttributeError): msg = ''
        msg = msg or ' '.join(raw.decode('utf-8', 'replace').split())[:1000] or r.reason or ''
        if r.status_code == 404 and model:
            try: names = ', '.join(self.models()[:8]) or 'none'
            except BoopError: names = 'unknown'
            return ModelNotFound(f'{self.where} does not have the model {model!r} ({msg}). Pick one it has ({names}) '
                                 'with `%%prompt -m openai/NAME`.', model=model, status=404)
        if r.status_code in (401, 403):
            return ModelError(f'{self.where} refused the credentials (HTTP {r.status_code}: {msg}). {_KEY_HELP}',
                              model=model, status=r.status_code)
        return ModelError(f'{self.where} answered HTTP {r.status_code}: {msg}', model=model, status=r.status_code, body=msg)

    def slots(self)->int|None:
        "How many requests the server serves at once, where it says (llama.cpp's `/props`: `total_slots`); else None."
        root = self.base[:-3] if self.base.endswith('/v1') else self.base
        try:
            with self.session.get(root + '/props', headers=self._headers, stream=True,
                                  timeout=(self.connect_timeout, min(self.timeout, 10))) as r:
                n = json.loads(_body(r, 1 << 20)).get('total_slots') if r.status_code == 200 else None
        except (requests.RequestException, ValueError, AttributeError): return None
        return n if _count(n) and 1 <= n <= 1024 else None

    def models(self)->list:
        "The ids of the models the server lists (`/models`), sorted."
        with self._errors():
            r = self.session.get(self.base + '/models', headers=self._headers, stream=True,
                                 timeout=(self.connect_timeout, min(self.timeout, 30)))
            with r:
                if r.status_code not in (200, 404): raise self._http_error(r)
                try: data = json.loads(_body(r)).get('data') if r.status_code == 200 else None
                except (ValueError, AttributeError): data = None
        if not isinstance(data, list):
            raise ModelError(f'{self.where}/models did not answer with a model list: is `api_base` an OpenAI-compatible '
                             'server (it usually ends in `/v1`)?')
        return sorted({str(m['id']) for m in data if isinstance(m, dict) and isinstance(m.get('id'), (str, int))})

    def chat(self,
             model:str,            # The name the server knows the model by (no `openai/` prefix)
             messages:list,        # Messages in `messages.mk_msg` form
             max_tokens:int=None,  # Longest reply
             think:str=None,       # Reasoning effort: 'l', 'm' or 'h'; 'off' and None send nothing
             seed:int=None,        # Sampling seed; None sends none
             response_format:dict=None): # `response_format(schema)`: the reply follows a JSON Schema
        """Stream a reply as ('content'|'thinking', text) events, then ('done', info); `ReplyStalled` after `timeout`
        seconds without a token. `info` has the server's token counts where it gives them: `prompt_tokens`,
        `completion_tokens`, `reasoning_tokens`, and how much of the prompt it took from its cache (`cached_tokens`)
        and had to process (`evaluated_tokens`, `prompt_ms`: llama.cpp's `timings`)."""
        body = dict(model=model, messages=[_openai_msg(m) for m in messages], stream=True,
                    stream_options=dict(include_usage=True))
        if max_tokens: body['max_tokens'] = max_tokens
        if seed: body['seed'] = seed
        if response_format is not None: body['response_format'] = response_format
        if think and think != 'off': body['reasoning_effort'] = EFFORTS.get(think[0], think)
        watch = StallWatch(self.timeout)
        return watch.follow(self._stream(model, body, watch))

    def _post(self, body, watch):
        """The chat request, sent again once if a kept-alive connection turned out closed before any answer (llama.cpp
        closes it after each streamed reply while announcing keep-alive; a batch can reuse it before the close lands)."""
        send = lambda: self.session.post(self.base + '/chat/completions', json=body, headers=self._headers, stream=True,
                                         timeout=(self.connect_timeout, watch.backstop))
        try: return send()
        except requests.ConnectionError as e:
            if not _dropped(e): raise
            return send()

    def _stream(self, model, body, watch):
        with self._errors(model, watch): r = self._post(body, watch)
        info, done = {}, False
        with r:  # leaving this block early closes the connection; a stream read to its end keeps it for reuse
            if not watch.arm(r.raw.shutdown): raise watch.stalled(model)
            with self._errors(model, watch, streaming=True):
                if r.status_code != 200: raise self._http_error(r, model)
                data = []   # the `data:` lines of the event being read; a blank line ends it
                for line in chain(r.iter_lines(chunk_size=8192), (b'',)):   # (b'',): a last event may lack its blank line
                    if line.startswith(b'data:'):
                        data.append(line[6:] if line[5:6] == b' ' else line[5:])
                        continue
                    if line or not data: continue   # another field (`event:`, `id:`), a comment, or no event yet
                    event, data = data[0] if len(data) == 1 else b'\n'.join(data), []
                    if event == b'[DONE]':
                        done = True
                        continue
                    try: d = json.loads(event)
                    except ValueError: d = None
                    if not isinstance(d, dict):
                        raise ModelError(f'{self.where} sent an event that is not a JSON object: {event[:80]!r}',
                                         model=model)
                    if d.get('error'):
                        raise ModelError(f'{self.where} reported an error in the middle of the reply: '
                                         f'{_message(d["error"])}', model=model)
                    if isinstance(u := d.get('usage'), dict): info.update(_usage(u))
                    if isinstance(t := d.get('timings'), dict): info.update(_timings(t))   # llama.cpp's own
                    ch = d.get('choices')
                    if not ch or not isinstance(ch, list) or not isinstance(ch := ch[0], dict): continue
                    if isinstance(delta := ch.get('delta'), dict):
                        if isinstance(t := delta.get('reasoning_content') or delta.get('reasoning'), str) and t:
                            yield 'thinking', t
                        if isinstance(c := delta.get('content'), str) and c: yield 'content', c
                    if isinstance(f := ch.get('finish_reason'), str): info['finish_reason'] = f
        if not (done or 'finish_reason' in info):
            raise ReplyBroken(f'The stream from {self.where} ended before the reply was done.', model=model)
        yield 'done', info
