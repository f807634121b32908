"""Model ids, and the route each takes: which client answers an id, and which model a notebook's settings pick.

    route_name('qwen3:1.7b')          # 'ollama'
    route_name('local/smollm2-135m')  # 'local': the embedded model
    route_name('deaddrop/review-42')  # 'deaddrop'
    route_name('openai/qwen3')        # 'litellm' unless `api_base` is set (`uses_litellm`): then the direct client

Plain string work, imported by everything that names a model and by no client: `models.Router` holds the clients.
"""

__all__ = ['LOCAL_ID', 'is_ollama_id', 'ollama_name', 'ollama_tag', 'route_name', 'uses_litellm', 'picked_model',
           'declared_vision']

import fnmatch

LOCAL_ID = 'local/smollm2-135m'
_PREFIXES = ('ollama_chat/', 'ollama/')


def is_ollama_id(model:str)->bool:
    "Whether `model` is served by Ollama directly: a bare name, `ollama_chat/NAME`, `ollama/NAME` or `hf.co/...`."
    return model.startswith(_PREFIXES) or model.startswith('hf.co/') or '/' not in model


def ollama_name(model:str)->str:
    "The name Ollama knows `model` by (`ollama_chat/qwen3` -> `qwen3`)."
    return next((model[len(p):] for p in _PREFIXES if model.startswith(p)), model)


def ollama_tag(model:str)->str:
    "The name with its tag, as `/api/tags` and `/api/ps` write it (`ollama_chat/qwen3` -> `qwen3:latest`)."
    name = ollama_name(model)
    return name if ':' in name.rpartition('/')[2] else name + ':latest'


def route_name(model:str)->str:
    "'local', 'deaddrop', 'ollama' or 'litellm': the client that answers `model`."
    if model.startswith(('local/', 'deaddrop/')): return model.partition('/')[0]
    return 'ollama' if is_ollama_id(model) else 'litellm'


def uses_litellm(
    model:str,  # Model id
    settings,   # Resolved settings (`api_base`)
)->bool:
    "Whether litellm answers `model`: any id but Ollama's, the embedded model, a dead drop and `openai/NAME` on `api_base`."
    return route_name(model) == 'litellm' and not (model.startswith('openai/') and settings['api_base'])


def picked_model(settings)->tuple:
    "(model id or '', where the pick came from): a cell's `-m`, else the reasoning model while the toggle is on, else `model`."
    if settings['model'] and settings.source['model'] == 'cell option': return settings['model'], 'cell option'
    if settings['reasoning'] and settings['reasoning_model']:
        return settings['reasoning_model'], settings.source['reasoning_model']
    return settings['model'], settings.source['model'] if settings['model'] else ''


def declared_vision(model:str, settings)->bool:
    "Whether the `vision_models` setting says `model` takes images (ids or shell patterns, comma-separated)."
    return any(fnmatch.fnmatchcase(model, p.strip()) for p in settings['vision_models'].split(',') if p.strip())
