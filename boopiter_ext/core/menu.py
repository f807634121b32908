"""What the brain menu shows, as plain data: the one answer both menus render (the frontend's toolbar menu and the
ipywidgets fallback), so they can never disagree on which model answers and why.

    state = menu_state(settings, listing, offered=['list_files', ...])
    state['answering']   # {'model': 'qwen3:1.7b', 'why': 'notebook binding', 'window': 4096, 'context_length': 40960, ...}

The shape is the frontend's `MenuState` (js/src/protocol/messages.ts); every value is JSON.
"""

__all__ = ['KEEP_ALIVE', 'CONTEXT_SIZES', 'EFFORTS', 'answering', 'completing', 'completion_models', 'consent_state', 'menu_state', 'size_label']

from ..models.routes import LOCAL_ID, picked_model
from ..settings import short_source

KEEP_ALIVE = [('default', ''), ('unload after each reply', '0'), ('1 min', '1'), ('5 min', '5'),
              ('15 min', '15'), ('1 hour', '60'), ('forever', '-1')]
CONTEXT_SIZES = [2048, 4096, 8192, 16384, 32768, 65536, 131072]
EFFORTS = [('auto', ''), ('L', 'l'), ('M', 'm'), ('H', 'h')]


def size_label(n:int)->str: return 'auto' if not n else f'{n // 1024}k' if n % 1024 == 0 else f'{n:,}'


def answering(
    settings,     # Resolved settings
    listing,      # The catalog's last `Listing`
    window=None,  # window(model) -> the context window its next request asks for (`num_ctx`), if known
)->dict:          # {model, why, auto, window?, context_length?, size?, reasoning}
    """The model that will answer the next prompt and why: a pick, else Ollama's automatic choice (`auto` is True and
    `why` says `auto: why this one`), else the tiny embedded one. `window` is the context the request uses (what its
    reply details will say); `context_length` the most the model takes (the menu's context sizes stop there)."""
    model, source = picked_model(settings)
    why = short_source(source)
    if not model:
        online = listing.auto is not None   # set when Ollama answered the last listing
        auto = listing.auto or ('', 'Ollama is not reachable')
        model = auto[0] or (LOCAL_ID if listing.get(LOCAL_ID) else '')
        why = (f'auto: {auto[1]}' if model and model == auto[0] else
               f'auto: {auto[1]}, so the tiny embedded model' if model else auto[1] if online else 'no model in reach')
    entry = listing.get(model) if model else None
    reasoning = bool(settings['reasoning'] and settings['reasoning_model'] and model == settings['reasoning_model'])
    out = dict(model=model, why=why, auto=not source, reasoning=reasoning)
    if model and window is not None and (w := window(model)): out['window'] = w
    if entry and entry.context_length: out['context_length'] = entry.context_length
    if entry and entry.size: out['size'] = entry.size
    return out


def completing(
    settings,   # Resolved settings
    listing,    # The catalog's last `Listing`
)->dict:        # {model, why, on}
    "The model of ghost-text completions and why (a pick, else the smallest fill-in-the-middle model), or why none."
    from .completion import pick_completion_model
    if not settings['completions']:
        return dict(model='', why=f'completions are off ({short_source(settings.source["completions"])})', on=False)
    if (model := settings['completion_model']): return dict(model=model, why=short_source(settings.source['completion_model']),
                                                           on=True)
    model, why = pick_completion_model(listing.entries)
    return dict(model=model or '', why=f'auto: {why}' if model else why, on=bool(model))


def completion_models(listing)->list:
    "The models the menu offers for completions: those with fill-in-the-middle, then the embedded one."
    from .completion import FIM
    return [e.id for e in listing.entries if FIM in e.capabilities] + [e.id for e in listing.entries if e.id == LOCAL_ID]


def _entry(e)->dict:
    d = dict(id=e.id, label=e.name, source=e.source, capabilities=list(e.capabilities))   # badges are the menu's
    d.update({k: v for k,v in dict(size=e.size, context_length=e.context_length, offline=e.offline, note=e.note).items() if v})
    return d


def consent_state(
    settings,       # Resolved settings, screened (`consent.screen`)
    notebook='',    # The notebook's file name, where an acceptance is remembered; '' if not known (this kernel only)
)->dict:            # {proposed, text, notebook}: what the menu says, and what its Allow button accepts
    "What a notebook or project proposes beyond what you allowed (auto-run, tools that act or reach out), for a menu."
    return dict(proposed=list(getattr(settings, 'proposed', [])), text=getattr(settings, 'consent', ''), notebook=notebook)


def menu_state(
    settings,        # Resolved settings
    listing,         # The catalog's last `Listing`
    offered=(),      # Names of the tools offered now
    notebook='',     # The notebook's file name (`consent_state`)
    window=None,     # window(model) -> the context window its next request asks for (`answering`)
)->dict:             # The frontend's `MenuState`
    """Everything the brain menu shows: who answers and why, the current picks (as they apply: what a notebook only
    proposes is off), what the notebook proposes beyond them, every model in reach, the options."""
    from ..tools.registry import DEFAULT_SELECTION, SOURCES, parse_selection
    chosen = parse_selection(settings['tools']) or DEFAULT_SELECTION
    picks = {k: settings[k] for k in ('model', 'reasoning_model', 'reasoning', 'think', 'keep_alive', 'context_size',
                                      'tools', 'auto', 'reuse', 'completion_model')}
    return dict(answering=answering(settings, listing, window), settings=picks, models=[_entry(e) for e in listing.entries],
                problems=dict(listing.problems), offered_tools=list(offered), consent=consent_state(settings, notebook),
                completion=completing(settings, listing),
                options=dict(keep_alive=[list(kv) for kv in KEEP_ALIVE], context_sizes=CONTEXT_SIZES,
                             efforts=[list(kv) for kv in EFFORTS], completion_models=completion_models(listing),
                             tool_sources=[dict(name=n, description=doc, on=bool(chosen.get(n)))
                                           for n,(_, _, doc) in SOURCES.items()]))
