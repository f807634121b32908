"""Cloud ids and other providers' protocols, through litellm (`routes.uses_litellm` says which ids).

    for kind, text in LitellmClient().chat('anthropic/claude-sonnet-4-5', msgs): ...

The embedded model and `openai/NAME` on an `api_base` stream directly (`openai_client.py`). litellm is imported
on first use only (seconds of CPU: 9.5 s for litellm 1.110 on a 2-core machine, 3 s for earlier ones; a kernel that
names no cloud id never imports it), with `LITELLM_LOCAL_MODEL_COST_MAP=True` so importing it never downloads a
price map. `warm_up(model)` imports it, and what its first request loads, ahead of that request (`magics.py` calls
it on a background thread once a cloud id is picked or named). API keys come from the environment, as litellm reads
them; none is ever written anywhere by boopiter. A reply that yields no token for `timeout` seconds is hung up: the
watch (`stream.StallWatch`) shuts down the socket under the SDK's stream, found through httpx's `network_stream`.
"""

__all__ = ['LitellmClient', 'import_litellm', 'warm_up']

import logging, os, socket, threading
from ..errors import BoopError, ModelError, ModelNotFound, ReplyBroken, ReplyStalled, Unreachable, install_hint
from ..redact import register, register_environment
from .stream import StallWatch
from ..settings import EFFORTS, public_url

_lock = threading.Lock()
log = logging.getLogger('boopiter_ext')


def import_litellm():
    "Import litellm once, configured to do as little per chunk as it can; `ModelError` saying how if it is not installed."
    os.environ.setdefault('LITELLM_LOCAL_MODEL_COST_MAP', 'True')
    with _lock:
        try: import litellm
        except ImportError as e:
            raise ModelError(f"Cloud model ids go through litellm, which is not installed: {install_hint('cloud')}"
                             ' (Ollama models, the embedded model and `openai/NAME` on your `api_base` need nothing more).'
                             ) from e
        litellm.suppress_debug_info = True        # no "Give Feedback" banner in error messages
        litellm.disable_streaming_logging = True  # its per-chunk logging is most of its ~0.9 ms/chunk
    return litellm


def _takes(litellm, model, param)->bool:
    "Whether litellm knows `model`'s provider to take the OpenAI parameter `param` (it refuses one it does not)."
    try: return param in (litellm.get_supported_openai_params(model=model) or ())
    except Exception: return False


def _chunks(resp):
    "The chunks to read: the OpenAI SDK stream under litellm's wrapper when there is one (~0.09 ms/chunk, not ~0.9)."
    import openai
    raw = getattr(resp, 'completion_stream', None)
    return raw if isinstance(raw, openai.Stream) else resp


def _hang_up(resp):
    "A function that shuts down the socket under `resp`'s stream (httpx's `network_stream`), or None if it is not found."
    http = getattr(getattr(resp, 'completion_stream', None), 'response', None)   # the SDK stream's httpx response
    stream = (getattr(http, 'extensions', None) or {}).get('network_stream')
    sock = stream.get_extra_info('socket') if stream is not None else None
    return (lambda: sock.shutdown(socket.SHUT_RDWR)) if sock is not None else None


class LitellmClient:
    "Streams chat replies through litellm, as the same events the Ollama client yields."
    def chat(self,
             model:str,               # litellm model id, e.g. `openai/NAME`
             messages:list,           # Messages in `messages.mk_msg` form
             api_base:str=None,       # Base URL, e.g. `http://127.0.0.1:8080/v1`
             api_key:str=None,        # Only for keyless local servers ('none'); real keys come from the environment
             max_tokens:int=None,     # Longest reply
             think:str=None,          # Reasoning effort: 'l', 'm' or 'h'
             timeout:float=300.0,     # Seconds to wait for the next token
             where:str=None,          # How to name the endpoint in messages
             seed:int=None,           # Sampling seed, for the providers that take one; None sends none
             response_format:dict=None): # OpenAI's `response_format` (`openai_client.response_format`), which litellm
                                         # maps to each provider's constrained output
        """Stream a reply as ('content'|'thinking', text) events, then ('done', info); `ReplyStalled` after `timeout`
        seconds without a token."""
        litellm, watch = import_litellm(), StallWatch(timeout)   # importing (seconds, once) is not waiting for a token
        register_environment()   # the cloud keys litellm reads from the environment: masked in any fault that quotes one
        register(api_key)
        return watch.follow(self._stream(litellm, model, messages, api_base, api_key, max_tokens, think, watch,
                                         where or (public_url(api_base) if api_base else model), seed,
                                         response_format))

    def _stream(self, litellm, model, messages, api_base, api_key, max_tokens, think, watch, where, seed,
                response_format=None):
        import httpx
        kw = dict(model=model, messages=messages, stream=True, num_retries=0, max_retries=0,
                  timeout=httpx.Timeout(watch.backstop, connect=10.0), stream_options={'include_usage': True})
        if api_base: kw['api_base'] = api_base
        if api_key: kw['api_key'] = api_key
        if max_tokens: kw['max_tokens'] = max_tokens
        if seed and _takes(litellm, model, 'seed'): kw['seed'] = seed   # Anthropic's API has none: not sent, not refused
        if think and think != 'off': kw['reasoning_effort'] = EFFORTS.get(think[0], think)
        if response_format is not None: kw['response_format'] = response_format
        try:
            resp = litellm.completion(**kw)
        except Exception as e: raise _translate(e, model, where, watch=watch) from e
        info = {}
        try:
            if not watch.arm(_hang_up(resp)): raise watch.stalled(model)
            for chunk in _chunks(resp):
                if (u := getattr(chunk, 'usage', None)):
                    info.update(prompt_tokens=u.prompt_tokens, completion_tokens=u.completion_tokens)
                    details = getattr(u, 'completion_tokens_details', None)
                    if (r := getattr(details, 'reasoning_tokens', None)): info['reasoning_tokens'] = r
                if not chunk.choices: continue
                ch = chunk.choices[0]
                d = ch.delta
                if isinstance(t := getattr(d, 'reasoning_content', None), str) and t: yield 'thinking', t
                if isinstance(c := d.content, str) and c: yield 'content', c
                if ch.finish_reason: info['finish_reason'] = ch.finish_reason
        except BoopError: raise
        except Exception as e: raise _translate(e, model, where, streaming=True, watch=watch) from e
        finally: resp.close()   # closes the SDK stream and its HTTP response: the server sees the hang-up
        yield 'done', info


def _translate(e, model, where, streaming=False, watch=None):
    "A boopiter error for a litellm, openai or httpx exception, keeping the server's message."
    if watch is not None and watch.expired(): return watch.stalled(model)
    import httpx, litellm, openai
    msg = str(getattr(e, 'message', '') or e).strip()
    status = getattr(e, 'status_code', None)
    causes = _causes(e)
    if any(isinstance(c, (openai.APIConnectionError, httpx.TransportError)) for c in causes):
        e = next(c for c in causes if isinstance(c, (openai.APIConnectionError, httpx.TransportError)))
    if isinstance(e, (litellm.Timeout, openai.APITimeoutError, httpx.TimeoutException)):
        return ReplyStalled(f'No token from {model} for a while, so boopiter stopped waiting ({msg}). Raise `timeout` '
                            'in settings.ini or `%config BoopMagics.timeout = 600` if the model is just slow.', model=model)
    if isinstance(e, (litellm.APIConnectionError, openai.APIConnectionError, httpx.TransportError)):
        if streaming: return ReplyBroken(f'The connection to {where} dropped in the middle of the reply: {msg}', model=model)
        return Unreachable(f'Nothing answers at {where} for {model}: {msg}. Check that the server is running and '
                           'that `api_base` (settings.ini, or `%config BoopMagics.api_base`) points at it.', model=model)
    if isinstance(e, (litellm.NotFoundError, openai.NotFoundError)) or status == 404:
        return ModelNotFound(f'{where} does not know the model {model!r}: {msg}', model=model, status=404)
    if isinstance(e, (litellm.AuthenticationError, openai.AuthenticationError)):
        return ModelError(f'{model} refused the credentials: {msg}. API keys come from the environment only: for a '
                          'custom `api_base`, name the variable holding the key with `api_key_env` (settings.ini '
                          'or `%config BoopMagics.api_key_env`).', model=model, status=status)
    return ModelError(f'{model} at {where} failed: {msg}', model=model, status=status)


def _causes(e):
    "`e` and the exceptions behind it (litellm re-wraps a refused connection as a 500)."
    seen = []
    while e is not None and e not in seen:
        seen.append(e)
        e = getattr(e, 'original_exception', None) or e.__cause__ or e.__context__
    return seen


def warm_up(model:str):
    """Import litellm and load what its first request for `model` loads (its provider's code, the SDK's HTTP stack),
    sending nothing: a mock reply, streamed as a prompt's is. After it, the first real request costs ~0.1 s, not ~2 s."""
    litellm = import_litellm()
    import httpcore, httpcore._sync.connection_pool, httpcore._sync.http11   # noqa: F401  the transport's first connection
    try:
        for _ in litellm.completion(model=model, messages=[{'role': 'user', 'content': 'warm'}], mock_response='warm',
                                    stream=True): pass
    except Exception as e: log.debug('boopiter_ext: litellm warm-up for %s: %s', model, e)   # the imports are what count
