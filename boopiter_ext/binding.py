"""The notebook's binding: the model picks that travel with the `.ipynb` file.

The binding lives in an output, never in a file the extension writes: the brain menu (`%boop`) and
`%boop model NAME` show it as a display with its own mime type,

    application/vnd.boopiter.settings+json   {"version": 1, "model": "qwen3:1.7b", "picked_at": "2026-..."}
    text/plain                               boopiter binding · model qwen3:1.7b

and keep that display current as picks change. Saving the notebook saves the binding; until this
kernel picks something, the extension reads it from the saved file (the most recent pick wins, so an
output an earlier session left behind cannot). Only the keys in `BINDING_KEYS` are read, each checked
against its type, and only model ids that stay on servers you configured (`screen_binding`): a
notebook cannot point prompts at another server or carry a secret. Hosts, endpoints and keys come
from settings and the environment.
"""

__all__ = ['BINDING_MIME', 'BINDING_KEYS', 'clean_binding', 'screen_binding', 'binding_text',
           'binding_bundle', 'saved_binding', 'stamp']

import json, re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from .models import route_name
from .render import MIME_KEY
from .settings import SETTINGS, THINK_LEVELS, declared_models

BINDING_MIME = 'application/vnd.boopiter.settings+json'
BINDING_KEYS = ('model', 'reasoning_model', 'reasoning', 'think', 'keep_alive', 'context_size', 'tools', 'auto', 'reuse')
MAX_CONTEXT = 1 << 20
VERSION = 1
_TOOLS = re.compile(r'[\w\-, ]{1,200}')   # tool source names
_KEEP_ALIVE = re.compile(r'-?\d+(\.\d+)?([mh]|ms|s)?')


def _valid(key, value):
    typ = SETTINGS[key][0]
    if typ is bool: return isinstance(value, bool)
    if typ is int: return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_CONTEXT
    if not isinstance(value, str): return False
    if key == 'think': return value in THINK_LEVELS
    if key == 'keep_alive': return bool(_KEEP_ALIVE.fullmatch(value))
    if key == 'tools': return bool(_TOOLS.fullmatch(value))
    return 0 < len(value) <= 300 and value.isprintable() and ' ' not in value


def clean_binding(
    data,  # A binding as found in a notebook (untrusted)
)->dict:   # Only the known keys whose values have the right type, in `BINDING_KEYS` order, then `picked_at`
    "The usable part of a binding: unknown keys, wrong types and empty values dropped."
    if not isinstance(data, dict): return {}
    b = {k: data[k] for k in BINDING_KEYS if data.get(k) is not None and _valid(k, data[k])}
    if _when(data.get('picked_at')) is not None: b['picked_at'] = data['picked_at']
    return b


def _when(stamp):
    "The time of a `picked_at` stamp, or None if it is not one (a notebook could hold anything there)."
    try: t = datetime.fromisoformat(stamp) if isinstance(stamp, str) and len(stamp) <= 40 else None
    except ValueError: return None
    return t if t is not None and t.tzinfo is not None else None


def stamp(binding:dict)->dict:
    """`binding` marked with the time of this pick, so the newest pick wins on load, not an output an old session
    left. Never earlier than the pick it replaces, in case that one came from a machine whose clock runs ahead."""
    now, before = datetime.now(timezone.utc), _when(binding.get('picked_at'))
    if before is not None and before >= now: now = before + timedelta(milliseconds=1)
    return {**binding, 'picked_at': now.isoformat(timespec='milliseconds')}


def _session_exists(model, settings):
    "A dead-drop id a notebook may choose: a session someone opened on this machine (never one the notebook invents)."
    from . import deaddrop as dd
    sid = model.partition('/')[2]
    root = dd.deaddrop_root(setting=settings['deaddrop_dir'], create=False)
    return (root/'prompts').is_dir() if sid == 'claude' else dd.is_session(root, sid)


def _may_choose(model, settings):
    "Whether a saved notebook may choose `model`: only ids answered on this machine or by servers the user configured."
    route = route_name(model)
    if route == 'deaddrop': return _session_exists(model, settings)
    return (route in ('local', 'ollama') or model.startswith('openai/') and bool(settings['api_base'])
            or model in declared_models(settings))


def screen_binding(
    binding:dict,  # A binding read from a notebook file
    settings,      # The settings without it (for `api_base` and `models`)
)->tuple:          # (binding, warnings): the binding without the model ids a notebook may not choose
    """Drop model ids that would send the notebook, with your keys, to a provider no setting names.

    A notebook someone sent you may choose Ollama models, the embedded model, `openai/NAME` on the
    configured `api_base`, and ids the `models` setting lists; anything else (`anthropic/...`,
    `openai/gpt-4o` with no `api_base`) is ignored until you pick it yourself."""
    out, warnings = dict(binding), []
    for k in ('model', 'reasoning_model'):
        if k in out and not _may_choose(out[k], settings):
            warnings.append(f'the saved binding names `{out.pop(k)}`, which a notebook may not choose by itself: '
                            f'pick it in the menu or with `%boop model`, or list it in the `models` setting')
    return out, warnings


def _keep_alive_text(v):
    return {'0': 'unload after each reply', '-1': 'keep loaded forever'}.get(v, f'keep-alive {v} min' if v.isdigit()
                                                                          else f'keep-alive {v}')


def binding_text(binding:dict)->str:
    "One readable line, for the plain-text side of the display (and `nbconvert --to markdown`)."
    b = {k: v for k,v in (binding or {}).items() if k in BINDING_KEYS}
    if not b: return 'boopiter binding · none (settings.ini and defaults apply)'
    bits = [f'model {b.get("model") or "from settings"}']
    if b.get('reasoning_model') or 'reasoning' in b:
        effort = f', effort {b["think"]}' if b.get('think') else ''
        bits.append(f'reasoning {"on" if b.get("reasoning") else "off"} ({b.get("reasoning_model") or "no model"}{effort})')
    if 'keep_alive' in b: bits.append(_keep_alive_text(b['keep_alive']))
    if 'context_size' in b: bits.append(f'context {b["context_size"]:,} tokens' if b['context_size'] else 'context auto')
    if 'tools' in b: bits.append(f'tools {b["tools"]}')
    if 'auto' in b: bits.append('auto-run tool calls' if b['auto'] else 'tool calls wait for Run')
    if 'reuse' in b: bits.append('saved replies reused' if b['reuse'] else 'every prompt asks the model')
    return 'boopiter binding · ' + ' · '.join(bits)


def binding_bundle(binding:dict)->tuple:
    "(data, metadata) for the binding's display; the metadata keeps it out of the model's context."
    b = clean_binding(binding)
    return {BINDING_MIME: {'version': VERSION, **b}, 'text/plain': binding_text(b)}, {MIME_KEY: {'binding': True}}


def _payload(output):
    data = output.get('data') if isinstance(output, dict) else None
    value = data.get(BINDING_MIME) if isinstance(data, dict) else None
    if isinstance(value, str):   # some writers keep JSON mime types as text
        try: value = json.loads(value)
        except ValueError: return None
    return value if isinstance(value, dict) else None


def saved_binding(
    path:Path,  # The notebook file
)->dict|None:   # The binding saved in it, or None if it has none or cannot be read
    "The binding saved in the notebook at `path`: the most recently picked one, else the last in notebook order."
    from .notebook import saved_cells
    found = [clean_binding(p) for c in saved_cells(path) or [] for p in map(_payload, c.outputs) if p is not None]
    if not found: return None
    never = datetime.min.replace(tzinfo=timezone.utc)
    return max(reversed(found), key=lambda b: _when(b.get('picked_at')) or never)   # ties: the last in notebook order
