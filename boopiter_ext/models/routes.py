"""Model ids, and the route each takes: which client answers an id, and which model a notebook's settings pick.

    route_name('qwen3:1.7b')          # 'ollama'
    route_name('local/smollm2-135m')  # 'local': the embedded model
    route_name('deaddrop/review-42')  # 'deaddrop'
    route_name('openai/qwen3')        # 'litellm' unless `api_base` is set (`uses_litellm`): then the direct client
    route_name('@gpu1/qwen3:8b')      # 'endpoint': `qwen3:8b` on the server settings name `gpu1`

A model on a named endpoint (`[boopiter.endpoint.NAME]` in a settings file) is `@NAME/MODEL`: `@` then the endpoint's
name, a `/`, then the name the server knows the model by, whatever it holds (`@vllm/meta-llama/Llama-3.1-8B`,
`@gpu1/openai/x`). No litellm id starts with `@`, so the prefix can never be mistaken for one; a notebook saves the id,
and each reader's own settings say which server `NAME` is.

An id is read by its shape alone, so an id a source lists must name that source whatever the model's name holds:
the default Ollama host's model is its bare name only when that name has no `/` and does not start with `@`, else
`ollama_chat/NAME` (`ollama_id`): Ollama's `openai/gpt-4o-mini` is `ollama_chat/openai/gpt-4o-mini`, never the cloud's
`openai/gpt-4o-mini`; the `api_base` server's models are `openai/NAME` and a named endpoint's `@NAME/MODEL`, whatever
NAME and MODEL hold.

Plain string work, imported by everything that names a model and by no client: `router.Router` holds the clients.
"""

__all__ = ['LOCAL_ID', 'is_ollama_id', 'ollama_id', 'ollama_name', 'ollama_tag', 'route_name', 'uses_litellm', 'picked_model',
           'declared_vision', 'endpoint_id', 'split_endpoint', 'endpoint_of', 'route_kind']

import fnmatch
from ..settings import ENDPOINT_NAME

LOCAL_ID = 'local/smollm2-135m'
_PREFIXES = ('ollama_chat/', 'ollama/')


def is_ollama_id(model:str)->bool:
    "Whether `model` is served by the default Ollama host: a bare name, `ollama_chat/NAME`, `ollama/NAME` or `hf.co/...`."
    return model.startswith(_PREFIXES) or model.startswith('hf.co/') or '/' not in model and not model.startswith('@')


def ollama_id(
    name:str,  # A model's name as the default Ollama host lists it (`/api/tags`), whatever it holds
)->str:        # The id that reaches exactly that model there
    "The id of the default Ollama host's model `name`: the bare name when its shape says Ollama, else `ollama_chat/NAME`."
    return name if '/' not in name and not name.startswith('@') else 'ollama_chat/' + name


def endpoint_id(
    name:str,   # An endpoint's name (`settings.ENDPOINT_NAME`)
    model:str,  # The model's name on that server
)->str:         # `@name/model`
    "The id of `model` on the named endpoint `name`."
    return f'@{name}/{model}'


def split_endpoint(model:str)->tuple|None:
    "(endpoint name, model name on it) of an `@NAME/MODEL` id; None for any other id, or one that does not parse."
    if not isinstance(model, str) or not model.startswith('@'): return None
    name, sep, rest = model[1:].partition('/')
    return (name, rest) if sep and rest and ENDPOINT_NAME.fullmatch(name) else None


def endpoint_of(
    model:str,  # An `@NAME/MODEL` id
    settings,   # Resolved settings (`endpoints`)
)->tuple:       # (Endpoint, the model's name on it)
    "The endpoint settings name for `model`, and the model's name there; SettingsError saying what to declare if none."
    from ..errors import SettingsError
    if (parts := split_endpoint(model)) is None:
        raise SettingsError(f'`{model[:80]}` is not an endpoint model id: write `@NAME/MODEL`, NAME being an endpoint '
                            'your settings declare (`%boop models` lists their models).', model=model)
    name, inner = parts
    if (ep := getattr(settings, 'endpoints', {}).get(name)) is None:
        known = ', '.join(getattr(settings, 'endpoints', {})) or 'none'
        raise SettingsError(f'No endpoint named `{name}` (declared: {known}). Declare it in your settings.ini as '
                            f'`[boopiter.endpoint.{name}]` with `kind = ollama` or `openai` and its `url`.', model=model)
    return ep, inner


def ollama_name(model:str)->str:
    "The name Ollama knows `model` by (`ollama_chat/qwen3` -> `qwen3`)."
    return next((model[len(p):] for p in _PREFIXES if model.startswith(p)), model)


def ollama_tag(model:str)->str:
    "The name with its tag, as `/api/tags` and `/api/ps` write it (`ollama_chat/qwen3` -> `qwen3:latest`)."
    name = ollama_name(model)
    return name if ':' in name.rpartition('/')[2] else name + ':latest'


def route_name(model:str)->str:
    "'local', 'deaddrop', 'endpoint' (`@NAME/MODEL`), 'ollama' or 'litellm': the client that answers `model`."
    if model.startswith(('local/', 'deaddrop/')): return model.partition('/')[0]
    if model.startswith('@'): return 'endpoint'
    return 'ollama' if is_ollama_id(model) else 'litellm'


def uses_litellm(
    model:str,  # Model id
    settings,   # Resolved settings (`api_base`)
)->bool:
    "Whether litellm answers `model`: any id but Ollama's, the embedded model, a dead drop and `openai/NAME` on `api_base`."
    return route_name(model) == 'litellm' and not (model.startswith('openai/') and settings['api_base'])


def route_kind(model:str, settings)->str:
    """The protocol `model` is asked in: 'ollama' (the default host or an Ollama endpoint), 'openai' (`openai/NAME` on
    `api_base`, an OpenAI-compatible endpoint), 'local', 'deaddrop' or 'litellm'; SettingsError for an unknown endpoint."""
    route = route_name(model)
    if route == 'endpoint': return endpoint_of(model, settings)[0].kind
    return 'openai' if route == 'litellm' and not uses_litellm(model, settings) else route


def picked_model(settings)->tuple:
    "(model id or '', where the pick came from): a cell's `-m`, else the reasoning model while the toggle is on, else `model`."
    if settings['model'] and settings.source['model'] == 'cell option': return settings['model'], 'cell option'
    if settings['reasoning'] and settings['reasoning_model']:
        return settings['reasoning_model'], settings.source['reasoning_model']
    return settings['model'], settings.source['model'] if settings['model'] else ''


def declared_vision(model:str, settings)->bool:
    "Whether the `vision_models` setting says `model` takes images (ids or shell patterns, comma-separated)."
    return any(fnmatch.fnmatchcase(model, p.strip()) for p in settings['vision_models'].split(',') if p.strip())
