"""The notebook's binding: the model picks that travel with the `.ipynb` file.

The binding lives in an output, never in a file the extension writes: the brain menu (`%boop`) and
`%boop model NAME` show it as a display with its own mime type,

    application/vnd.boopiter.settings+json   {"version": 1, "model": "qwen3:1.7b", "reasoning": false}
    text/plain                               boopiter binding · model qwen3:1.7b · reasoning off

and keep that display current as picks change. Saving the notebook saves the binding; on load the
extension reads it back from the saved file (the last such output in notebook order wins). Only the
keys in `BINDING_KEYS` are read, each checked against its type, so a notebook cannot point prompts at
another server or carry a secret: hosts, endpoints and keys come from settings and the environment.
"""

__all__ = ['BINDING_MIME', 'BINDING_KEYS', 'clean_binding', 'binding_layer', 'binding_text', 'binding_bundle',
           'saved_binding']

from pathlib import Path
from .render import MIME_KEY
from .settings import SETTINGS

BINDING_MIME = 'application/vnd.boopiter.settings+json'
BINDING_KEYS = ('model', 'reasoning_model', 'reasoning', 'think', 'keep_alive', 'context_size')
VERSION = 1
_EFFORTS = ('l', 'm', 'h', 'off')


def _valid(key, value):
    typ = SETTINGS[key][0]
    if typ is bool: return isinstance(value, bool)
    if typ is int: return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if key == 'think': return value in _EFFORTS
    return isinstance(value, str) and 0 < len(value) <= 300 and value.isprintable()


def clean_binding(
    data,  # A binding as found in a notebook (untrusted)
)->dict:   # Only the known keys whose values have the right type, in `BINDING_KEYS` order
    "The usable part of a binding: unknown keys, wrong types and empty values dropped."
    if not isinstance(data, dict): return {}
    return {k: data[k] for k in BINDING_KEYS if data.get(k) is not None and _valid(k, data[k])}


def binding_layer(binding:dict)->dict:
    "The binding as a settings layer: the effort picked for the reasoning model applies only while it answers."
    layer = dict(binding or {})
    if not layer.get('reasoning'): layer.pop('think', None)
    return layer


def binding_text(binding:dict)->str:
    "One readable line, for the plain-text side of the display (and `nbconvert --to markdown`)."
    b = binding or {}
    if not b: return 'boopiter binding · none (settings.ini and defaults apply)'
    bits = [f'model {b.get("model") or "auto"}']
    if b.get('reasoning_model') or 'reasoning' in b:
        effort = f', effort {b["think"]}' if b.get('think') else ''
        bits.append(f'reasoning {"on" if b.get("reasoning") else "off"} ({b.get("reasoning_model") or "no model"}{effort})')
    if 'keep_alive' in b: bits.append(f'keep-alive {b["keep_alive"]} min' if b['keep_alive'].lstrip('-').isdigit()
                                      else f'keep-alive {b["keep_alive"]}')
    if 'context_size' in b: bits.append(f'context {b["context_size"]:,} tokens' if b['context_size'] else 'context auto')
    return 'boopiter binding · ' + ' · '.join(bits)


def binding_bundle(binding:dict)->tuple:
    "(data, metadata) for the binding's display; the metadata keeps it out of the model's context."
    b = clean_binding(binding)
    return {BINDING_MIME: {'version': VERSION, **b}, 'text/plain': binding_text(b)}, {MIME_KEY: {'binding': True}}


def _payload(output):
    data = output.get('data') if isinstance(output, dict) else None
    value = data.get(BINDING_MIME) if isinstance(data, dict) else None
    if isinstance(value, str):   # some writers keep JSON mime types as text
        import json
        try: value = json.loads(value)
        except ValueError: return None
    return value if isinstance(value, dict) else None


def saved_binding(
    path:Path,  # The notebook file
)->dict|None:   # The binding saved in it, or None if it has none or cannot be read
    "The binding in the saved notebook at `path`: the last binding output in notebook order."
    from .notebook import saved_cells
    found = [p for c in saved_cells(path) or [] for p in map(_payload, c.outputs) if p is not None]
    return clean_binding(found[-1]) if found else None
