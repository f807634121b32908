"""Every model the notebook can use, listed together for the brain menu and `%boop models`.

Sources, in menu order, each giving ids that `%%prompt -m` understands:

- `ollama`: `/api/tags`, with capabilities and context length from `/api/show` (see `OllamaClient.models`);
- `endpoint`: the OpenAI-compatible server at `api_base` (llama.cpp, vLLM, LM Studio), from its `/models`,
  as `openai/NAME`;
- `declared`: the litellm ids named by the `models` setting;
- `local`: the tiny embedded model, there so everything works out of the box;
- `deaddrop`: sessions answered by another process (`boopiter-deaddrop new ID`).

A source that fails keeps its last good entries, marked offline with the reason, so an Ollama that is
down greys the menu instead of blanking it. Sources are asked in parallel.
"""

__all__ = ['ModelEntry', 'Listing', 'Catalog', 'SOURCES', 'human_size']

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from .errors import BoopError
from .routes import LOCAL_ID, declared_vision, is_ollama_id, ollama_tag
from .settings import declared_models, public_url

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

    def get(self, model_id:str)->ModelEntry|None:
        "The entry for `model_id`, whichever way it is written (`ollama_chat/qwen3` finds `qwen3:latest`)."
        want = ollama_tag(model_id) if model_id and is_ollama_id(model_id) else model_id
        return next((e for e in self.entries if e.id == model_id or e.source == 'ollama' and e.id == want), None)


def ollama_source(router, settings)->list:
    "Ollama's models (`OllamaClient.models`); one whose `/api/show` failed is listed without capabilities, saying so."
    return [ModelEntry(m['name'], m['name'], 'ollama', tuple(m.get('capabilities') or ()), m.get('context_length'),
                       m.get('size'), note='capabilities unknown' if m.get('problem') else '')
            for m in router.ollama(settings).models()]


def endpoint_source(router, settings)->list:
    "The models of the OpenAI-compatible server at `api_base` (its `/models`), as `openai/NAME`."
    base = settings['api_base'].rstrip('/')
    if not base: return []
    names = router.openai(base, router.api_key(settings), settings['timeout']).models()   # a BoopError says why not
    return [ModelEntry(f'openai/{n}', n, 'endpoint', _declared(f'openai/{n}', settings), note=f'at {public_url(base)}')
            for n in names]


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
    entries = [ModelEntry(f'deaddrop/{sid}', sid, 'deaddrop', ('vision',), note=f'dead drop · active {dd.ago(secs)}')
               for sid,secs in dd.list_sessions(root)]
    if (root/'prompts').is_dir(): entries.append(ModelEntry('deaddrop/claude', 'claude', 'deaddrop', ('vision',),
                                                            note='dead drop (legacy route)'))
    return entries


SOURCES = dict(ollama=ollama_source, endpoint=endpoint_source, declared=declared_source, local=local_source,
               deaddrop=deaddrop_source)


def _reason(e):
    return str(e) if isinstance(e, BoopError) else f'{e.__class__.__name__}: {e}'


class Catalog:
    "The models in reach, refreshed on demand; remembers each source's last good list."
    def __init__(self, router):
        self.router, self.last, self._good = router, Listing(), {}

    def refresh(self, settings)->Listing:
        "Ask every source (in parallel); a failing source keeps its last good entries, marked offline."
        names = list(SOURCES)
        with ThreadPoolExecutor(len(names), thread_name_prefix='boopiter-list') as ex:
            futures = {n: ex.submit(SOURCES[n], self.router, settings) for n in names}
        listing, seen = Listing(), set()
        for n,fut in futures.items():
            try: self._good[n] = entries = list(fut.result())
            except Exception as e:  # any failure of a source, whatever its library raised, greys it out
                listing.problems[n] = why = _reason(e)
                entries = [replace(e_, offline=why) for e_ in self._good.get(n, [])]
            for e in entries:   # a model two sources list (a `models` entry Ollama also has) is shown once
                key = ollama_tag(e.id) if is_ollama_id(e.id) else e.id
                if key not in seen: seen.add(key); listing.entries.append(e)
        self.last = listing
        return listing
