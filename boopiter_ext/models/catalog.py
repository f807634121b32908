"""Every model the notebook can use, listed together for the brain menu and `%boop models`.

Sources, in menu order, each giving ids that `%%prompt -m` understands, and that name the source which listed them
whatever the model's name holds (`routes.py`: an id is read by its shape):

- `ollama`: `/api/tags`, with capabilities and context length from `/api/show` (see `OllamaClient.models`): the bare
  name, or `ollama_chat/NAME` for a name with a `/` or a leading `@` (`routes.ollama_id`: Ollama's `openai/x` is
  `ollama_chat/openai/x`, so it is never sent to OpenAI);
- `endpoint`: the OpenAI-compatible server at `api_base` (llama.cpp, vLLM, LM Studio), from its `/models`,
  as `openai/NAME`;
- `@NAME`, one for each named endpoint settings declare, in their order: its models as `@NAME/MODEL`, shown as
  `MODEL @NAME`, with the `ollama` or `endpoint` source of its kind (the menu's grouping and badges stay as they are);
- `declared`: the litellm ids named by the `models` setting;
- `local`: the tiny embedded model, there so everything works out of the box;
- `deaddrop`: sessions answered by another process (`boopiter-deaddrop new ID`). Whatever answers there may
  reason at length, so they are offered as reasoning models too (no effort is sent to them).

A source that fails keeps its last good entries, marked offline with the reason, so an Ollama that is
down greys the menu instead of blanking it. Sources are asked in parallel, each on its own thread with its own
timeouts, and a refresh never waits for one server on behalf of another: it waits for every source at most
`Catalog.patience` seconds, and for a source that was down at the last refresh only as long as the others take (it is
asked again in the background, and its models come back with the next refresh once it answers). So one server that
accepts connections and never answers costs the menu nothing after the first refresh that meets it. A listing also
carries the model that answers when none is picked (`Listing.auto`, the router's own choice), so a menu says what a
prompt does.
"""

__all__ = ['ModelEntry', 'Listing', 'Catalog', 'SOURCES', 'human_size']

import threading
from concurrent.futures import Future, wait
from dataclasses import dataclass, field, replace
from functools import partial
from ..errors import BoopError
from .routes import LOCAL_ID, declared_vision, endpoint_id, is_ollama_id, ollama_id, ollama_tag, split_endpoint
from ..settings import declared_models, public_url

BADGES = dict(tools='🔧', vision='👁️', thinking='🧠')


def human_size(n:int|None)->str:
    "`1_359_000_000` -> '1.4 GB'."
    if not n: return ''
    for unit in ('B', 'KB', 'MB', 'GB', 'TB'):
        if n < 1000 or unit == 'TB': return f'{n:.0f} {unit}' if unit in ('B', 'KB') else f'{n:.1f} {unit}'
        n /= 1000


@dataclass(frozen=True)
class ModelEntry:
    "One model in the menu."
    id: str                      # What `%%prompt -m` and the binding take
    name: str                    # Short name to show
    source: str                  # 'ollama', 'endpoint', 'declared', 'local' or 'deaddrop'
    capabilities: tuple = ()     # 'tools', 'vision', 'thinking', 'completion', ... as the server reports them
    context_length: int = None   # Trained context window in tokens, when known
    size: int = None             # Bytes on disk, when known
    note: str = ''               # Shown after the name, e.g. 'tiny embedded model'
    offline: str = ''            # Why the entry may not answer now (its source failed; this is the last good list)

    @property
    def thinking(self)->bool: return 'thinking' in self.capabilities

    @property
    def label(self)->str:
        "Name, capability badges, size and notes, for a dropdown."
        badges = ''.join(BADGES[c] for c in BADGES if c in self.capabilities)
        bits = [f'{self.name} {badges}'.strip(), human_size(self.size), self.note, 'offline' if self.offline else '']
        return ' · '.join(b for b in bits if b)


@dataclass
class Listing:
    "The result of a refresh: entries in menu order, and the problem of each source that failed."
    entries: list = field(default_factory=list)
    problems: dict = field(default_factory=dict)   # source -> reason
    auto: tuple = None   # (model, why): Ollama's model that answers when none is picked (`Router.auto_model`), if any

    def get(self, model_id:str)->ModelEntry|None:
        """The entry for `model_id`, whichever way an Ollama model's id is written (`ollama_chat/qwen3` finds `qwen3:latest`,
        `@g/qwen3` finds `@g/qwen3:latest`); never another source's model of the same name (`openai/x` is not Ollama's)."""
        want = _tagged(model_id) if model_id else None
        return next((e for e in self.entries if e.id == model_id or want and e.source == 'ollama' and _tagged(e.id) == want),
                    None)


def _tag(name): return name if ':' in name.rpartition('/')[2] else name + ':latest'


def _tagged(model_id):
    "An Ollama model's id as one key, tag included, on the default host or an endpoint; None for any other id."
    if is_ollama_id(model_id): return 'ollama', ollama_tag(model_id)
    if (parts := split_endpoint(model_id)): return '@' + parts[0], _tag(parts[1])   # a name there is taken whole
    return None


def ollama_source(router, settings)->list:
    "Ollama's models (`OllamaClient.models`); one whose `/api/show` failed is listed without capabilities, saying so."
    return [ModelEntry(ollama_id(m['name']), m['name'], 'ollama', tuple(m.get('capabilities') or ()), m.get('context_length'),
                       m.get('size'), note='capabilities unknown' if m.get('problem') else '')
            for m in router.ollama(settings).models() if isinstance(m.get('name'), str) and m['name']]


def endpoint_source(router, settings)->list:
    "The models of the OpenAI-compatible server at `api_base` (its `/models`), as `openai/NAME`."
    base = settings['api_base'].rstrip('/')
    if not base: return []
    names = router.openai(base, router.api_key(settings), settings['timeout']).models()   # a BoopError says why not
    return [ModelEntry(f'openai/{n}', n, 'endpoint', _declared(f'openai/{n}', settings), note=f'at {public_url(base)}')
            for n in names]


def named_source(router, settings, ep)->list:
    "The models of the named endpoint `ep` (Ollama's `/api/tags` with capabilities, or `/models`), as `@NAME/MODEL`."
    client, at = router.endpoint(ep, settings), f'on {ep.name} ({public_url(ep.base)})'
    if ep.kind == 'openai':
        return [ModelEntry(endpoint_id(ep.name, n), f'{n} @{ep.name}', 'endpoint', _declared(endpoint_id(ep.name, n), settings),
                           note=at) for n in client.models()]
    return [ModelEntry(endpoint_id(ep.name, m['name']), f'{m["name"]} @{ep.name}', 'ollama',
                       tuple(m.get('capabilities') or ()), m.get('context_length'), m.get('size'),
                       note=' · '.join(filter(None, [at, 'capabilities unknown' if m.get('problem') else ''])))
            for m in client.models()]


def declared_source(router, settings)->list:
    "The ids the `models` setting names (any litellm id), taken as given."
    return [ModelEntry(m, m, 'declared', _declared(m, settings), note='litellm') for m in declared_models(settings)]


def _declared(model, settings): return ('vision',) if declared_vision(model, settings) else ()


def local_source(router, settings)->list:
    "The embedded model, when it is installed."
    if not router.local.available(): return []
    return [ModelEntry(LOCAL_ID, LOCAL_ID.partition('/')[2], 'local', ('completion',), router.local.n_ctx,
                       note='tiny embedded model: works anywhere, real work wants Ollama')]


def deaddrop_source(router, settings)->list:
    "Dead-drop sessions (`boopiter-deaddrop new ID`), and the legacy `deaddrop/claude` route if its folder exists."
    from . import deaddrop as dd
    root = dd.deaddrop_root(setting=settings['deaddrop_dir'], create=False)
    if not root.is_dir(): return []
    caps = ('vision', 'thinking')   # its responder reads image files, and may be an agent that reasons: a reasoning pick
    entries = [ModelEntry(f'deaddrop/{sid}', sid, 'deaddrop', caps, note=f'dead drop · active {dd.ago(secs)}')
               for sid,secs in dd.list_sessions(root)]
    if (root/'prompts').is_dir(): entries.append(ModelEntry('deaddrop/claude', 'claude', 'deaddrop', caps,
                                                            note='dead drop (legacy route)'))
    return entries


SOURCES = dict(ollama=ollama_source, endpoint=endpoint_source, declared=declared_source, local=local_source,
               deaddrop=deaddrop_source)


def _reason(e):
    return str(e) if isinstance(e, BoopError) else f'{e.__class__.__name__}: {e}'


def _soon(fn)->Future:
    "Run `fn` on a daemon thread (a server that never answers cannot hold up the kernel's exit); its `Future`."
    fut = Future()
    def run():
        try: fut.set_result(list(fn()))
        except BaseException as e: fut.set_exception(e)   # any failure of a source, whatever its library raised
    fut.set_running_or_notify_cancel()
    threading.Thread(target=run, name='boopiter-list', daemon=True).start()
    return fut


class Catalog:
    "The models in reach, refreshed on demand; remembers each source's last good list, and which sources are down."
    patience = 5.0   # seconds a refresh waits for a source; one that takes longer lands with a later refresh
    grace = 0.02     # seconds a refresh waits, after the others, for a source that was down last time
    on_back = None   # on_back(settings): a source the last listing marks offline, still asked then, answered since

    def __init__(self, router):
        self.router, self.last, self.listed, self._good = router, Listing(), False, {}
        self._down, self._asking, self._lock = {}, {}, threading.Lock()   # source -> why; (source, config) -> Future
        self._late = {}   # source -> the Future the last listing did not wait for

    def sources(self, settings)->dict:
        "{source: (what it asks, fn)}: the built-in sources, each named endpoint's after `endpoint`, in menu order."
        eps = getattr(settings, 'endpoints', {}).values()
        named = {f'@{ep.name}': (ep, partial(named_source, self.router, settings, ep)) for ep in eps}
        config = dict(ollama=settings['host'], endpoint=(settings['api_base'], settings['api_key_env']))
        out = {n: (config.get(n, n), partial(f, self.router, settings)) for n,f in SOURCES.items()}
        return {k: out[k] for k in ('ollama', 'endpoint')} | named | {k: out[k] for k in ('declared', 'local', 'deaddrop')}

    def _ask(self, name, config, fn)->Future:
        "The listing of source `name`: one already under way for a down source with the same `config`, else a new one."
        with self._lock:
            if name in self._down and (fut := self._asking.get((name, config))) is not None and not fut.done(): return fut
            self._asking[name, config] = fut = _soon(fn)
        fut.add_done_callback(partial(self._landed, name))
        return fut

    def _landed(self, name, fut):
        "Keep what a source said, whenever it says it (a down source answers after its refresh has returned)."
        with self._lock:
            if fut.exception() is not None: self._down[name] = _reason(fut.exception())
            else:
                self._good[name] = fut.result()
                self._down.pop(name, None)

    def refresh(self,
                settings,      # Resolved settings
                follow=True,   # Whether a source still silent when this returns is listed again once it answers
               )->Listing:
        """Ask every source (in parallel); a failing or silent source keeps its last good entries, marked offline. One
        that answers well after this returned (a down source gets only `grace`, a busy Ollama can take longer) calls
        `on_back(settings)`, so the menu does not show it offline until it is opened again."""
        jobs = {n: self._ask(n, config, fn) for n,(config, fn) in self.sources(settings).items()}
        with self._lock: down = {n for n in jobs if n in self._down}
        # the choice a prompt makes, asked alongside; not of an Ollama that was down (it would answer with the listing)
        auto = None if 'ollama' in down else _soon(lambda: [self.router.auto_model(settings)])
        wait([f for n,f in jobs.items() if n not in down] + ([auto] if auto else []), timeout=self.patience)
        wait([f for n,f in jobs.items() if n in down], timeout=self.grace)
        listing, seen = Listing(), set()
        for n,fut in jobs.items():
            if fut.done() and fut.exception() is None: entries = self._good[n] = fut.result()
            else:
                why = _reason(fut.exception()) if fut.done() else self._silent(n)
                listing.problems[n] = why
                entries = [replace(e_, offline=why) for e_ in self._good.get(n, [])]
            for e in entries:   # a model two sources list (a `models` entry Ollama also has) is shown once
                key = _tagged(e.id) or e.id   # Ollama's `openai/x` is not the declared `openai/x`: another source
                if key not in seen: seen.add(key); listing.entries.append(e)
        if 'ollama' not in listing.problems and auto and auto.done() and auto.exception() is None:
            listing.auto = auto.result()[0]   # kept per kernel by the router
        with self._lock: self.last, self.listed, self._late = listing, True, {}
        if follow and self.on_back is not None:
            for n,fut in jobs.items():
                if n in listing.problems and not fut.done(): self._late[n] = fut
            for n,fut in list(self._late.items()): fut.add_done_callback(partial(self._answered_late, n, settings))
        return listing

    def _answered_late(self, name, settings, fut):
        "Source `name`, silent when the last listing was made, answered: list again if it answered well."
        with self._lock:
            if self._late.get(name) is not fut: return   # a newer listing asked again
            del self._late[name]
        if fut.exception() is None: self.on_back(settings)

    @staticmethod
    def source_of(model, settings)->str|None:
        "The source that lists `model` ('ollama' for none: the automatic choice is Ollama's); None for ids no server lists."
        if not model or is_ollama_id(model): return 'ollama'
        if model == LOCAL_ID: return 'local'
        if (parts := split_endpoint(model)): return '@' + parts[0]
        if model.startswith('openai/') and settings['api_base']: return 'endpoint'
        return None   # a cloud id, a dead drop: asking it says nothing of a listed server

    def seen(self,
             model,      # The model a prompt asked (None: the automatic choice)
             settings,   # Resolved settings
             why='',     # Why its server could not be reached; '' when it answered
            )->str|None: # 'down': the listing now marks it offline; 'up': it was offline, list again; None: no change
        """What a prompt just learnt of the server that lists `model`, in the last listing at once: the menu and the
        toolbar must not show models as usable right after a prompt failed to reach them, nor offline once one answered."""
        source = self.source_of(model, settings)
        if source is None: return None
        with self._lock:
            last, was = self.last, self.last.problems.get(source)
            if not why:
                if was is None: return None
                self._down.pop(source, None)   # the next refresh waits for it again, as for any live server
                return 'up'
            self._down[source] = why
            if was == why: return None
            mine = {e.id for e in self._good.get(source, [])}
            entries = [replace(e, offline=why) if e.id in mine else e for e in last.entries]
            self.last = Listing(entries, {**last.problems, source: why}, None if source == 'ollama' else last.auto)
        return 'down'

    def current(self, settings)->Listing:
        "The last listing; the first time, a refresh: what reads it never says \"no model in reach\" before anyone looked."
        return self.last if self.listed else self.refresh(settings)

    def _silent(self, name)->str:
        "Why a source that has not answered yet is offline: its last failure, else that it is still being asked."
        with self._lock:
            if name not in self._down: self._down[name] = f'no answer within {self.patience:g} s (still asked)'
            return self._down[name]
