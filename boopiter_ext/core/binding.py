"""The notebook's binding: the model picks that travel with the `.ipynb` file.

The binding lives in an output, never in a file the extension writes: the brain menu (`%boop`) and
`%boop model NAME` show it as a display with its own mime type,

    application/vnd.boopiter.settings+json   {"version": 1, "model": "qwen3:1.7b", "picked_at": "2026-..."}
    text/plain                               boopiter binding · model qwen3:1.7b

and keep that display current as picks change. Saving the notebook saves the binding; until this
kernel picks something, the extension reads it from the saved file (the most recent pick wins, so an
output an earlier session left behind cannot). Only the keys in `BINDING_KEYS` are read, each checked
against its setting's rule (`settings.RULES`; a value that breaks it is ignored with a warning), and
only model ids that stay on servers you configured (`screen_binding`): a notebook cannot point prompts
at another server or carry a secret. Hosts, endpoints and keys come from settings and the environment. Its `auto` and
the tool sources in its `tools` that act or reach out (`web`, `notebook`) are proposals: they apply once you allowed
them (`consent.py`), whoever wrote the file. A model id is read by its shape (`routes.py`): a bare `openai/x` is x on
your `api_base` or a cloud id, never the Ollama model of that name (`ollama_chat/openai/x`).

A `picked_at` stamp counts only if it is a time with a zone, from 2000 on, and at most a day ahead of
this machine's clock (a clock may run a little ahead; more is a crafted stamp, which would otherwise
outrank every pick made after it): any other stamp is ignored, as if the pick had none.
"""

__all__ = ['BINDING_MIME', 'BINDING_KEYS', 'Binding', 'clean_binding', 'screen_binding', 'may_choose', 'binding_text',
           'binding_bundle', 'saved_binding', 'newest', 'stamp']

from datetime import datetime, timedelta, timezone
from pathlib import Path
from ..models.routes import route_name, split_endpoint
from ..render.reply import MIME_KEY
from ..settings import check_setting, declared_models, refusal

BINDING_MIME = 'application/vnd.boopiter.settings+json'
BINDING_KEYS = ('model', 'reasoning_model', 'reasoning', 'think', 'keep_alive', 'context_size', 'tools', 'auto', 'reuse',
                'completion_model')
VERSION = 1
_EARLIEST, _AHEAD = datetime(2000, 1, 1, tzinfo=timezone.utc), timedelta(days=1)   # believable `picked_at` stamps


class Binding(dict):
    "A binding read from a notebook; `refused` says which of its values were ignored (`screen_binding` passes it on)."
    def __init__(self, values, refused=()):
        super().__init__(values)
        self.refused = list(refused)


def clean_binding(
    data,               # A binding as found in a notebook (untrusted)
    refused:list=None,  # Gets a warning for each known key whose value was ignored
    where:str='the saved binding',  # What the warnings call it
)->dict:                # Only the known keys whose values pass their rules, in `BINDING_KEYS` order, then `picked_at`
    "The usable part of a binding: unknown keys, bad values and empty values dropped."
    if not isinstance(data, dict): return {}
    given = {k: data[k] for k in BINDING_KEYS if not (data.get(k) is None or data[k] == '')}
    b = {k: v for k,v in given.items() if check_setting(k, v)}
    if refused is not None: refused += [refusal(where, k, v) for k,v in given.items() if k not in b]
    if _when(data.get('picked_at')) is not None: b['picked_at'] = data['picked_at']
    return b


def _when(stamp):
    "The time of a `picked_at` stamp in UTC, or None if it is not a believable one (see the module's docstring)."
    if not isinstance(stamp, str) or len(stamp) > 40: return None
    try: t = datetime.fromisoformat(stamp)
    except ValueError: return None
    if t.tzinfo is None: return None
    try: t = t.astimezone(timezone.utc)   # `0001-01-01T00:00+01:00` is before the first representable time
    except (OverflowError, ValueError): return None
    return t if _EARLIEST <= t <= datetime.now(timezone.utc) + _AHEAD else None


def stamp(binding:dict)->dict:
    """`binding` marked with the time of this pick, so the newest pick wins on load, not an output an old session
    left. Never earlier than the pick it replaces, in case that one came from a machine whose clock runs (a little) ahead."""
    now, before = datetime.now(timezone.utc), _when(binding.get('picked_at'))
    if before is not None and before >= now: now = before + timedelta(milliseconds=1)
    return {**binding, 'picked_at': now.isoformat(timespec='milliseconds')}


def _session_exists(model, settings):
    "A dead-drop id a notebook may choose: a session someone opened on this machine (never one the notebook invents)."
    from ..models import deaddrop as dd
    sid = model.partition('/')[2]
    root = dd.deaddrop_root(setting=settings['deaddrop_dir'], create=False)
    return (root/'prompts').is_dir() if sid == 'claude' else dd.is_session(root, sid)


def may_choose(
    model:str,  # A model id a notebook file names (its binding, or the model that answered its saved replies)
    settings,   # The settings without the binding (for `api_base`, `models` and `deaddrop_dir`)
)->bool:        # Whether a saved notebook may choose `model` by itself
    "Only ids answered on this machine or by servers the user configured: never a provider no setting names."
    route = route_name(model)
    if route == 'deaddrop': return _session_exists(model, settings)
    if route == 'endpoint': return (split_endpoint(model) or ('',))[0] in getattr(settings, 'endpoints', {})
    return (route in ('local', 'ollama') or model.startswith('openai/') and bool(settings['api_base'])
            or model in declared_models(settings))


def screen_binding(
    binding:dict,  # A binding read from a notebook file
    settings,      # The settings without it (for `api_base` and `models`)
)->tuple:          # (binding, warnings): the binding without the model ids a notebook may not choose
    """Drop model ids that would send the notebook, with your keys, to a provider no setting names.

    A notebook someone sent you may choose Ollama models, the embedded model, `openai/NAME` on the
    configured `api_base`, `@NAME/MODEL` on an endpoint your settings name `NAME` (whichever server that is for
    you), and ids the `models` setting lists; anything else (`anthropic/...`, `openai/gpt-4o` with no `api_base`,
    an endpoint no setting declares) is ignored until you pick it yourself."""
    out, warnings = dict(binding), list(getattr(binding, 'refused', ()))   # a saved binding's values already ignored
    for k in ('model', 'reasoning_model'):
        if k in out and not may_choose(out[k], settings):
            warnings.append(_not_chosen(out.pop(k)))
    return out, warnings


def _not_chosen(model)->str:
    "Why a saved binding's `model` is ignored, and what to do."
    if (parts := split_endpoint(model)):
        return (f'the saved binding names `{model}`, on an endpoint `{parts[0]}` your settings do not declare: declare '
                f'`[boopiter.endpoint.{parts[0]}]` (its `kind` and `url`) in your settings.ini, or pick another model')
    ollama = (f' (an Ollama model of that name is `ollama_chat/{model}`: an id is read by its shape, so `{model}` is '
              'never sent to Ollama)') if '/' in model and not model.startswith(('ollama_chat/', 'ollama/')) else ''
    return (f'the saved binding names `{model}`, which a notebook may not choose by itself: pick it in the menu or with '
            f'`%boop model`, or list it in the `models` setting{ollama}')


def _keep_alive_text(v):
    return {'0': 'unload after each reply', '-1': 'keep loaded forever'}.get(v, f'keep-alive {v} min' if v.isdigit()
                                                                          else f'keep-alive {v}')


def binding_text(binding:dict)->str:
    "One readable line, for the plain-text side of the display (and `nbconvert --to markdown`)."
    b = {k: v for k,v in clean_binding(binding).items() if k in BINDING_KEYS}
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
    if 'completion_model' in b: bits.append(f'completions {b["completion_model"]}')
    return 'boopiter binding · ' + ' · '.join(bits)


def binding_bundle(binding:dict)->tuple:
    "(data, metadata) for the binding's display; the metadata keeps it out of the model's context."
    b = clean_binding(binding)
    return {BINDING_MIME: {'version': VERSION, **b}, 'text/plain': binding_text(b)}, {MIME_KEY: {'binding': True}}


def _payload(output):
    from ..context.nbfile import load_json
    data = output.get('data') if isinstance(output, dict) else None
    value = data.get(BINDING_MIME) if isinstance(data, dict) else None
    if isinstance(value, str):   # some writers keep JSON mime types as text
        try: value = load_json(value)
        except ValueError: return None
    return value if isinstance(value, dict) else None


def newest(
    *bindings,  # Bindings, oldest first where their stamps tie
)->dict|None:   # The one picked last (by `picked_at`), ties going to the later; None if none is given
    "The binding picked most recently: a stamp from the future beyond a day counts as none (see the docstring)."
    never = datetime.min.replace(tzinfo=timezone.utc)
    return max(reversed(bindings), key=lambda b: _when(b.get('picked_at')) or never) if bindings else None


def saved_binding(
    path:Path,  # The notebook file
)->Binding|None:# The binding saved in it (with what of it was ignored), or None if it has none or cannot be read
    """The binding saved in the notebook at `path`: the most recently picked of the bindings its outputs show and the
    one the frontend extension keeps in its metadata (`metadata.boopiter.binding`); ties go to the last."""
    from ..context.nbfile import saved_notebook
    cells, meta = saved_notebook(path) or ([], {})
    where = f'the binding saved in {Path(path).name}'
    payloads = [p for c in cells for p in map(_payload, c.outputs) if p is not None]
    if isinstance(ours := meta.get(MIME_KEY), dict) and isinstance(ours.get('binding'), dict): payloads.append(ours['binding'])
    return newest(*[Binding(clean_binding(p, refused := [], where), refused) for p in payloads])
