"""The in-kernel assistant, as plain Python: the notebook's settings and binding, the models in reach, and the
pipeline that answers a prompt (model, context, reuse and cassettes, the stream, the tool loop).

It knows nothing of IPython, displays, widgets or the frontend. Its faces give it what it reads and show what it
returns: the magics (`%%prompt`, `%boop`), the frontend channel, the widget fallback and the bench.

    a = Assistant(recorder, ip.user_ns, notebook=lambda: path)
    settings = a.settings(dict(model='qwen3:1.7b'))
    answer = a.answer('Why does the loop print twice?', settings, view=make_view, show=show_raw)
    answer.reply.answer, answer.blocks       # the reply, and its python blocks the tool loop did not run

`view(route, ledger)` makes the live display of one reply (`waiting`, `update`, `show`, `final`; see `view.py`);
`show(data, metadata)` shows a tool round or the loop's summary. Faults are `BoopError`s whose message says what to
do; a partial reply is shown before its fault is raised.
"""

__all__ = ['Assistant', 'Answer', 'folder']

import contextvars, logging, re, sys, threading
from typing import TYPE_CHECKING
from dataclasses import dataclass, field
from pathlib import Path
from .background import Background
from .binding import clean_binding, saved_binding, screen_binding, stamp
from .consent import Consent
from ..context.build import SYSTEM_PROMPT
from ..errors import BoopError, OllamaUnreachable, ReplyBroken, ReplyInterrupted, ReplyStalled, ReplyTooLong, SettingsError
from ..models.routes import LOCAL_ID, picked_model
from ..settings import DEFAULTS, load_settings, public_url, short_source
from ..redact import scrub
if TYPE_CHECKING: from ..models.stream import Reply

log = logging.getLogger('boopiter_ext')


_HERE = contextvars.ContextVar('boopiter_prompt_cell', default=None)   # a queued prompt's cell, on its reply's thread
_CELL_MODEL = re.compile(r'(?:^|\s)(?:-m|--model)(?:\s+|=)(\S+)')   # `%%prompt -m NAME` (the cell's first line)
# settings `%boop status` tells within another row: the model line, `tools` (auto-run), `context`, `cassette`
_IN_ROWS = {'model', 'reasoning_model', 'reasoning', 'auto', 'tools', 'context_size', 'cassette', 'cassette_file',
            'background', 'completions', 'completion_model'}   # `background`: the magics' `streaming` row


def _shown(key, value)->str:
    "A setting's value as `%boop status` shows it, on one line: URLs without credentials, the system prompt's length."
    if key == 'system_prompt': return f'{len(value):,} characters'
    return public_url(str(value)) if key in ('host', 'api_base') else str(value)


def folder(nb)->Path|None:
    "The folder files are read from (file tools, image links): the notebook's, else the working one, but never / or ~."
    root = nb.parent if nb else Path.cwd()
    return None if root.resolve() in (Path('/'), Path.home().resolve()) else root


AGENT_NEEDS = ('agent mode runs the code as cells of the notebook: it needs the boopiter extension in JupyterLab or '
               'Notebook 7 (here its code is offered as blocks), and is not combined with auto mode')


class _Ended(Exception):
    "Agent mode's first reply was not asked of the model (a saved reply shown again): nothing runs again."


@dataclass
class Answer:
    "What answering a prompt gave: the last reply, and its python blocks that no tool loop ran (for Run buttons)."
    reply: object
    blocks: list = field(default_factory=list)


def _scrubbed(msgs)->list:
    "The messages with every key-shaped string, and every key the kernel sends, replaced by a marker (`redact.scrub`)."
    def part(p): return {**p, 'text': scrub(p['text'])} if p.get('type') == 'text' else p
    return [{**m, 'content': scrub(c) if isinstance(c := m['content'], str) else [part(p) for p in c]} for m in msgs]


class _Stopper:
    "The user's Stop for the reply streaming now (set from a comm's thread): its event, and the stall watches to hang up."
    def __init__(self, cell_id):
        self.cell_id, self.event, self.watches, self._lock = cell_id, threading.Event(), [], threading.Lock()

    @property
    def stopped(self)->bool: return self.event.is_set()

    def join(self, watch):
        "A client's `StallWatch` for this reply (`stream.watching`): hung up at once if Stop came first."
        with self._lock: self.watches.append(watch)
        if self.stopped: watch.stop()

    def stop(self):
        self.event.set()
        with self._lock: watches = list(self.watches)
        for w in watches: w.stop()

    def until(self, events):
        "`events` until Stop (a route without a watch, the dead drop, ends at its next event)."
        for ev in events:
            if self.stopped: return
            yield ev


def _request_options(route, settings, ledger, fmt=None)->dict:
    "The options that change a reply, as a request's digest covers them (`replay.request_digest`); `fmt`: a JSON Schema."
    return dict(think=route.get('effort'), max_tokens=settings['max_tokens'], num_ctx=ledger['window'],
                seed=settings['seed'], format=fmt, **({'agent': True} if route.get('agent') else {}))   # only when on:
                # every other request's digest, saved replies' and cassettes', stays as it was


class Assistant:
    "The notebook's settings, binding and models, and the pipeline that answers its prompts."
    def __init__(self,
                 cells,                   # What ran: `.cells()` in execution order, `.current` the running cell
                 namespace:dict,          # The user's namespace: tools are put there, variables read from it
                 notebook=lambda: None,   # () -> the notebook's file, or None when it is not known
                 config=lambda: ({}, {})):# () -> (values set with `%config` since loading, values configured at load)
        self.cells, self.namespace, self.notebook, self.config = cells, namespace, notebook, config
        self._router = self._catalog = self._tidier = self._tape = None
        self._binding, self._pushed, self._told, self.stopped = None, {}, set(), False
        self.shown = None   # the notebook's cells as its frontend shows them (the extension sends them), if it does
        self.edit = None    # edit(request) -> (ok, message): a change carried out by the frontend (the channel's)
        self.step = None    # step(request, stopped) -> result dict or None: a cell run by the frontend (agent mode)
        self._halts = []    # (cell id, Event) of each agent loop running: Stop sets it
        self._windows = {}  # model -> the largest context window asked of it in this kernel
        self._lock = threading.RLock()   # a comm thread and the main one may pick at once
        self.listeners = []   # listener(binding) after every change of the binding: displays, the channel, the menu
        self.consent = Consent()   # auto-run and the tools that act or reach out: a notebook proposes, you allow (consent.py)
        self._stopper, self._user_stopped = None, False   # the reply streaming now (`_Stopper`); whether Stop ended the last
        self.state_listeners = []   # listener() when what the menu shows changed behind its back (a source down or up)
        self._inline = None   # ghost text and "Edit this cell" (`inline`), made on first use
        from ..tools.registry import SOURCE_LISTENERS
        SOURCE_LISTENERS.append(self._tell_state)   # a tool source declared by code: the menu shows it (`close` undoes)
        self._fresh = set()   # cells whose next run asks again: the reply view's Ask again (a click, never a file)
        self._reuse_here = False   # the binding's `reuse` was picked in this kernel (a click), not read from the file
        self.background = Background()   # the reply streaming while the notebook stays usable (background.py)
        self._memory = None   # the replies asked from code, by request digest (`memory`)

    @property
    def current(self):
        """The record of the prompt cell being answered: the running cell's, or on a queued prompt's thread the cell it
        was run in (`here`)."""
        return _HERE.get() or self.cells.current

    def here(self, cell):
        "Answer for `cell` from now on in this context (a queued prompt's thread: another cell may run meanwhile)."
        _HERE.set(cell)

    # -- lifecycle
    @property
    def router(self):
        if self._router is None:
            from ..models.router import Router
            self._router = Router()
        return self._router

    @property
    def catalog(self):
        if self._catalog is None:
            from ..models.catalog import Catalog
            self._catalog = Catalog(self.router)
            self._catalog.on_back = self._relist
        return self._catalog

    @property
    def memory(self):
        "The replies asked from code (`asking.py`) in this kernel, by request digest: asked again, none is asked again."
        if self._memory is None:
            from .batch import ReplyMemory
            self._memory = ReplyMemory()
        return self._memory

    def close(self):
        "Stop tidying memory, take the pushed tools back, close every HTTP session and the embedded model."
        with self._lock: self.stopped, tidier = True, self._tidier
        if tidier is not None: tidier.stop()
        if self.background.running:   # a reply streaming: stopped, what arrived kept and marked, before its route closes
            self.stop()
            self.background.wait(5)
        self._tidier = self._catalog = None
        self.withdraw()
        from ..tools.registry import SOURCE_LISTENERS
        if self._tell_state in SOURCE_LISTENERS: SOURCE_LISTENERS.remove(self._tell_state)
        if (mcp := sys.modules.get('boopiter_ext.tools.mcp')) is not None: mcp.stop_servers()
        if self._inline is not None: self._inline.close()
        if self._router is not None: self._router.close()
        self._router = None

    # -- settings and the binding (binding.py): picks saved in this notebook's outputs
    def _resolve(self, cell, nb, binding):
        runtime, configured = self.config()
        configured = {k: v for k,v in configured.items() if v != DEFAULTS[k]}
        return load_settings(cell=cell, binding=binding, runtime=runtime, config=configured, start=nb.parent if nb else None)

    def settings(self, cell:dict=None, nb=None):
        "Resolved settings for a cell (see `settings.load_settings` for the precedence); `nb` is the notebook file."
        binding, screened = (self._binding, []) if self._binding is not None else self._saved_binding(nb)
        s = self._resolve(cell, nb, binding)
        reasoning_answers = s['reasoning'] and s['reasoning_model'] and picked_model(s)[0] == s['reasoning_model']
        if s.source['think'] == 'notebook binding' and not reasoning_answers:   # the menu's effort is the reasoning model's
            s = self._resolve(cell, nb, {k: v for k,v in binding.items() if k != 'think'})
        if s.mcp or 'boopiter_ext.tools.mcp' in sys.modules:   # its MCP servers as tool sources, before consent reads them
            from ..tools.mcp import sync_sources
            said = sync_sources(s.mcp)
            s.warnings += said
            s.notes += said
        s.screened = screened
        s.warnings += screened
        self.consent.screen(s, nb)   # what a notebook or project wants of auto-run and the outward tools, unless allowed
        return s

    def _saved_binding(self, nb)->tuple:
        "(binding, warnings): the binding saved in the notebook file `nb`, without ids a notebook may not choose."
        saved = saved_binding(nb) if nb else None
        return screen_binding(saved, self._resolve(None, nb, None)) if saved else ({}, [])

    def binding(self, nb=None)->dict:
        "The notebook's binding: the picks made in this kernel, else those saved in the notebook file `nb`."
        return self._binding if self._binding is not None else self._saved_binding(nb)[0]

    @property
    def picked_here(self)->bool: return self._binding is not None

    def set_binding(self, **changes)->dict:
        "Change the binding (None removes a pick), tell the listeners, then tidy Ollama's memory; return the binding."
        with self._lock:   # two picks at once publish in the order they were made
            old = self.binding(self.notebook())
            new = clean_binding({**old, **changes})
            if 'reuse' in changes: self._reuse_here = True   # the menu's switch, clicked here: your choice
            if new != old: new = stamp(new)   # an unchanged pick keeps its time: re-running a cell makes no diff
            self._binding = new
            for listener in list(self.listeners): listener(new)
            picks_changed = any(old.get(k) != new.get(k) for k in ('model', 'reasoning_model'))
            if picks_changed and not self.stopped and self.settings(nb=self.notebook())['unload_others']:
                if self._tidier is None:
                    from ..models.ollama import MemoryTidier
                    self._tidier = MemoryTidier(self._memory_picks)
                self._tidier.ask()
        return new

    def adopt_binding(self, binding)->dict:
        """Take the binding a frontend holds for this notebook (in its metadata, unsaved picks included) if it was picked
        after the one that applies now and passes the screen a file's binding passes (else it is ignored whole, as a
        crafted one must be); return the binding that applies."""
        from .binding import Binding, newest
        nb = self.notebook()
        got, refused = screen_binding(Binding(clean_binding(binding)), self._resolve(None, nb, None)) if binding else ({}, [])
        mine = self.binding(nb)
        if got.get('picked_at') and not refused and newest(mine, got) is got and got != mine:
            with self._lock: self._binding = dict(got)
            for listener in list(self.listeners): listener(self._binding)
        elif refused: log.warning('boopiter_ext: the binding in the notebook\'s metadata was ignored: %s', '; '.join(refused))
        return self.binding(nb)

    def _memory_picks(self)->list:
        """[(Ollama client, models to keep in memory)]: the standard, reasoning and completion picks stay, on Ollama's host and on
        each named Ollama endpoint this kernel asked (a shared one loses only models this kernel loaded there)."""
        from ..errors import OllamaError
        s = self.settings(nb=self.notebook())
        try: model = s['model'] or self.router.auto_model(s)[0]   # none picked: the automatic choice stays loaded
        except OllamaError: return []
        keep = [model, s['reasoning_model'], s['completion_model']]   # the ghost text's model stays warm too
        return [(c, keep) for c in [self.router.ollama(s), *self.router.endpoint_clients()]]

    def cloud_model(self)->str:
        """The first id this notebook picks or names that litellm answers (a cloud id), '' if none: the model and
        reasoning model (settings, `%config`, the binding), the `models` setting, and `-m` in its prompt cells. With
        none, litellm is never imported: Ollama, the embedded model and OpenAI-compatible servers need none of it."""
        from ..models.routes import uses_litellm
        from ..settings import declared_models
        nb = self.notebook()
        s = self.settings(nb=nb)
        named = [s['model'], s['reasoning_model'], *declared_models(s)]
        named += [m.group(1) for c in (self.layout(nb) or []) if c.kind == 'prompt'
                  if (m := _CELL_MODEL.search(c.source.lstrip().partition('\n')[0]))]
        return next((m for m in named if m and uses_litellm(m, s)), '')

    def check_model(self, name:str, thinking:bool=False)->str:
        """Refuse a model Ollama says it does not have (or, for reasoning, one that cannot think); other ids are trusted.
        Return what to tell about a model that could not be checked (Ollama not reachable now: it is bound anyway)."""
        from ..errors import OllamaError, OllamaModelNotFound
        from ..models.routes import is_ollama_id, ollama_name
        if not is_ollama_id(name): return ''
        settings = self.settings(nb=self.notebook())
        if settings['cassette'] == 'replay': return ''   # the cassette answers: what this Ollama has does not matter
        client = self.router.ollama(settings)
        try: caps = client.model_info(ollama_name(name))['capabilities']
        except OllamaModelNotFound: raise
        except OllamaError as e:   # bind anyway: a prompt will say what is wrong and what to do
            why = 'is not reachable now' if isinstance(e, OllamaUnreachable) else 'could not be asked now'
            return f'Bound, but Ollama at {client.where} {why}; the first prompt will say what to do.'
        if thinking and caps and 'thinking' not in caps:
            raise SettingsError(f'{name} is not a thinking model (its capabilities: {", ".join(caps)}); pick one that '
                                'lists `thinking` (`%boop models` shows them).')
        return ''

    # -- answering
    def _prepare(self, question, settings, with_context=True, offer=True)->dict:
        """Everything a prompt sends, decided but not sent: the model and what it says of itself, the effort, the tools
        (pushed into the namespace when `offer`), the references in the question, the messages and the ledger."""
        return self.compose(self.plan(settings, offer), question, settings, with_context, offer=offer)

    def plan(self,
             settings,          # `settings(options)`
             offer:bool=True,   # Push the selected tools into the namespace; else only list them, and a model that cannot
                                # say what it is costs a note, not an error (a dry run)
             strict:bool=None,  # Whether a model that cannot say what it is is an error; default: as `offer`
            )->dict:            # `model`, `info`, `tools` and `route`: what every question asked with `settings` shares
        "What holds for every question asked with `settings`: the model and what it says of itself, the effort, the tools."
        nb, router = self.notebook(), self.router
        model, note = self.answering_model(settings)
        try: info = self.model_info(model, settings, nb)
        except BoopError as e:
            if offer if strict is None else strict: raise
            info, note = {}, '; '.join(filter(None, [note, f'what {model} says of itself is not known now ({e})']))
        effort, effort_note = router.effort(model, settings, info)
        if effort_note and settings.source['think'] == 'cell option':   # asked for in this cell: a mistake worth a word
            raise SettingsError(f'{model} is not a thinking model (its capabilities: '
                                f'{", ".join(info.get("capabilities") or ())}), so `--think` cannot apply; drop it or pick '
                                'a thinking model with `-m`.', setting='think')
        tools = self.offer_tools(settings, nb) if offer else self.tool_list(settings, nb, wait=False)
        source = picked_model(settings)[1]
        route = dict(router.describe(model, settings), note='; '.join(filter(None, [note, effort_note])),
                     picked_by=short_source(source), effort=effort,
                     reasoning_model=bool(settings['reasoning'] and settings['reasoning_model'] and source != 'cell option'),
                     model_info={k: info[k] for k in ('capabilities', 'context_length', 'vision') if info.get(k) is not None})
        return dict(model=model, info=info, tools=tools, route=route)

    def compose(self,
                plan:dict,              # `plan(settings)`
                question:str,           # The question
                settings,               # The settings `plan` was made with
                with_context:bool=True, # The notebook above the running cell too
                offer:bool=True,        # As `plan`'s: say a refused setting once, and grow the model's window
               )->dict:                 # `plan`, with `msgs`, `ledger`, `auto` and the request's `route`
        "The request for `question` under `plan`: its references, the messages (the notebook above, when asked) and ledger."
        from .refs import prompt_refs
        nb, model, info, offered = self.notebook(), plan['model'], plan['info'], plan['tools']
        r = prompt_refs(question, self.namespace, self.hidden(nb).names)   # a hidden cell's: never shown
        tools = {**offered, **r.tools}   # a prompt's own &`name` tools are described with its question
        cells = self.cells_above(nb) if with_context else []
        asked = question + ('\n\n' + r.text if r.text else '')
        msgs, ledger = self.context(asked, settings, info, cells, offered, folder(nb), model=model, grow=offer)
        told = [n for n in settings.notes if n not in self._told] if offer else []   # a refused setting: said once
        self._told.update(told)
        note = '; '.join(filter(None, [plan['route']['note'], *settings.screened, *r.notes, *told]))
        route = dict(plan['route'], note=note, cell_id=getattr(self.current, 'cell_id', None))
        return dict(plan, tools=tools, auto=settings['auto'] and bool(tools), msgs=msgs, ledger=ledger, route=route)

    def answer(self,
               question:str,          # The prompt's question
               settings,              # `settings(cell options)`
               view,                  # view(route, ledger) -> the live display of one reply
               show=None,             # show(data, metadata): a tool round, the tool loop's summary
               with_context:bool=True,# Send the notebook above the prompt
               confirm=None,          # confirm(name, args) -> bool|None, before a side effect runs
               background:bool=False, # Stream the reply on a thread of its own and return at once (not a tool loop)
               fault=None,            # fault(exception): a background reply's fault, shown in its cell
               must_call:str=None,    # In auto mode, the first reply must call a tool: '*' any, or the one named
               fixes:str=None,        # The id of the cell this prompt asks to fix: the page offers the reply's code for it
               agent:bool=False,      # Agent mode: the reply's code runs as cells of the notebook, on the user's clicks
              )->Answer:
        """Resolve the model, offer the tools, build the context, and stream the reply (or run the tool loop). With
        `background`, a reply asked of the model streams on after this returns (`self.background`); its `reply` is
        still streaming then, and the blocks are offered by the reply's own view."""
        from ..errors import Unreachable
        try: p = self._prepare(question, settings, with_context)
        except Unreachable as e:   # its server is down before a request could start (listing, what the model says)
            self._seen(picked_model(settings)[0] or None, settings, e)
            raise
        if fixes: p['route']['fixes'] = fixes
        if agent and self.step is not None and not p['auto']:
            p['route']['agent'] = True   # its own request: a prompt's saved reply without --agent is not its answer
            return Answer(self._agent(p, settings, view, fault))
        if agent:   # said in the reply; the code is offered under its buttons as usual
            p['route']['note'] = '; '.join(filter(None, [p['route']['note'], AGENT_NEEDS]))
        reply = self.respond(p, question, settings, view, show, confirm, background, fault, must_call)
        return Answer(reply, self._unrun_blocks(reply, p['tools']) if reply.status != 'streaming' else [])

    def respond(self,
                p:dict,         # `compose(...)`: the request
                question:str,   # The question as the user wrote it (the only text that may ask for a side effect)
                settings,       # The settings it was composed with
                view,           # view(route, ledger) -> the display (or sink) of one reply
                show=None,      # show(data, metadata): a tool round, the tool loop's summary
                confirm=None,   # confirm(name, args) -> bool|None, before a side effect runs
                background:bool=False, # As `answer`'s: a reply asked of the model streams on a thread (not a tool loop)
                fault=None,     # As `answer`'s
                must_call:str=None,   # As `answer`'s
               )->'Reply':      # The last reply; `via` says where it came from: 'cassette', 'saved', 'kept' or 'asked'
        "The reply to a composed request: replayed, reused or streamed into `view`, or the tool loop's when `p['auto']`."
        model, info, route, ledger = p['model'], p['info'], p['route'], p['ledger']
        if p['auto']: return self._tool_loop(question, model, p['msgs'], settings, info, route, ledger, p['tools'], view,
                                             show, confirm, must_call)   # its tools run the kernel's code: it waits
        return self._stream(model, p['msgs'], settings, info, route, ledger, view, background=background, fault=fault)

    def preview(self,
                question:str,          # The prompt's question
                settings,              # `settings(cell options)`
                with_context:bool=True,# The notebook above the prompt too
               )->dict:                # What would be sent (see `render.preview_bundle`): nothing is
        "Exactly what answering would send, and to which model, sending nothing: messages, ledger, tokens, images, tools."
        import inspect
        def signature(fn):
            try: return f'{fn.__name__}{inspect.signature(fn)}'
            except (TypeError, ValueError): return f'{fn.__name__}(...)'
        from .replay import request_digest
        p = self._prepare(question, settings, with_context, offer=False)
        ledger, route = p['ledger'], p['route']
        options = _request_options(route, settings, ledger)
        if settings['cassette'] == 'replay': kind, found = 'replay', None
        elif p['auto']: kind, found = None, None   # its tool loop asks the model again after a first round anyway
        else: kind, found = self.reusable(request_digest(p['model'], p['msgs'], options), p['model'], p['msgs'], options,
                                          settings, route, ledger)
        by = found[0]['metadata']['boopiter'].get('model') if kind == 'kept' else None
        why = found[2] if kind == 'stale' else found if kind is None and isinstance(found, str) else ''
        if kind is None and why and self.own_reply(done=False, same=False) is not None: kind = 'ask'   # it replaces a saved reply
        return dict(model=p['model'], route=route, window=ledger['window'], tokens=ledger['tokens'],
                    reserve=ledger['reserve'], ledger=ledger, messages=p['msgs'], auto=p['auto'],
                    tools=[signature(fn) for fn in p['tools'].values()], reuse=kind, kept_from=by, why=why)

    @staticmethod
    def _unrun_blocks(reply, tools)->list:
        "The reply's python blocks that the tool loop did not run: what the user may run, on their click."
        from ..tools.blocks import python_blocks
        from ..tools.loop import tool_blocks
        ran = {b for b,_ in tool_blocks(reply, tools)} if reply.info.get('tool_loop') else set()
        return [b for b in python_blocks(reply.answer) if b not in ran]

    # -- tools (tools/: registry.py, guards.py, loop.py)
    def tool_list(self, settings, nb, wait:bool=True)->dict:
        """The selected tools by name; the file tools only where there is a folder to confine them to. `wait=False`: only
        a look (the menu, `%boop status`, a dry run), which starts no server it would wait for."""
        from ..tools.registry import DEFAULT_SELECTION, ToolContext, get_tool_list, parse_selection
        root, selection = folder(nb), parse_selection(settings['tools'])
        if root is None: selection = {**(selection or DEFAULT_SELECTION), 'files': False, 'pdf': False, 'nbfiles': False}
        from ..context.build import HIDE_TAG
        def shown(cells): return [c for c in cells if HIDE_TAG not in c.tags]   # a hidden cell reaches no tool either
        ctx = ToolContext(root=root or Path.cwd(), namespace=self.namespace, cells=lambda: shown(self.cells_above(nb)),
                          notebook=lambda: shown(self.notebook_cells(nb)), edit=self.edit, settings=settings,
                          hidden=lambda: self.hidden(nb), notebook_file=lambda: nb, wait=wait)
        return {fn.__name__: fn for fn in get_tool_list(selection, ctx)}

    def withdraw(self, keep=()):
        "Take the tools this assistant pushed out of the user namespace (but `keep`, and any name the user reassigned)."
        ns = self.namespace
        for name,fn in self._pushed.items():
            if name not in keep and ns.get(name) is fn: del ns[name]
        self._pushed = {}

    def offer_tools(self, settings, nb)->dict:
        "The selected tools by name, pushed into the user namespace (and deselected ones taken out)."
        from ..tools.kernel import is_tool
        ns, offered = self.namespace, {}
        for name,fn in self.tool_list(settings, nb).items():
            if name not in ns or ns[name] is fn or is_tool(ns[name]): offered[name] = fn
            else: log.warning('boopiter_ext: tool %s not offered: your variable of that name stays', name)
        self.withdraw(keep=offered)
        ns.update(offered)
        self._pushed = offered
        return offered

    def _tool_loop(self, question, model, msgs, settings, info, route, ledger, tools, view, show, confirm, must_call=None):
        "Auto mode: each reply streams into its own display, each round's calls are shown, then how the loop ended."
        from ..context.build import estimate_tokens
        from ..context.messages import msg_text
        from ..render.reply import loop_bundle, round_bundle
        from ..tools.loop import run_tool_loop
        from ..tools.kernel import tool_namespace
        from ..tools.registry import tool_error_hook
        def tokens(messages): return sum(estimate_tokens(msg_text(m)) for m in messages)
        def fits(messages): return tokens(messages) + ledger['reserve'] <= ledger['cap']
        last = {}   # the round's reply and its display: once its calls ran, the display says which blocks ran
        def shown(route, ledger):
            last['view'] = view(route, ledger)
            return last['view']
        def ask(messages):   # each round sized to its conversation, which grows with the tools' results
            window = self.window(model, tokens(messages) + ledger['reserve'], info, settings)
            last['reply'] = self._stream(model, messages, settings, info, route, {**ledger, 'window': window}, shown,
                                         raise_interrupt=False, first=False)
            return last['reply']
        def on_round(rnd, steps):
            if (ran := list(dict.fromkeys(s.block for s in steps if s.ran and s.block))) and 'view' in last:
                last['reply'].info['ran_blocks'] = ran   # the frontend offers no "Insert and run" for what ran
                last['view'].refresh(last['reply'])
            if show is not None: show(*round_bundle(rnd, steps))
        if must_call not in (None, '*') and must_call not in tools:
            raise SettingsError(f'The first call must be to `{must_call}`, which is not offered here: '
                                f'{", ".join(sorted(tools)) or "no tool is"} (`%boop tools` lists them).', setting='tools')
        ns = tool_namespace(self.namespace, self.hidden(self.notebook()).names)   # a hidden cell's names: refused, said why
        result = run_tool_loop(ask, msgs, tools, question, namespace=ns,
                               max_rounds=settings['max_rounds'], lenient=settings['lenient'], confirm=confirm,
                               fits=fits, on_round=on_round, on_error=tool_error_hook(), must_call=must_call,
                               vision=bool(info.get('vision')), max_side=settings['image_size'])
        if show is not None: show(*loop_bundle(result))
        if result.error is not None: raise result.error
        if result.stop == 'cancelled' and not self._user_stopped:   # a Stop ends the loop, no fault
            ran = [s.source for s in result.steps if s.ran]
            raise ReplyInterrupted('Interrupted: the tool loop stopped' + (f'; these calls had already run and keep '
                                   f'their effects: {", ".join(ran)}.' if ran else '; no tool had run.'))
        result.reply.info['tool_loop'] = result.stop
        return result.reply

    # -- context (context/: build.py, nbfile.py)
    def layout(self, nb)->list|None:
        "The notebook's cells in order: as its frontend shows them (with their saved outputs), else as its file holds them."
        from ..context.nbfile import saved_cells, shown_cells
        saved = saved_cells(nb) if nb else None
        return saved if self.shown is None else shown_cells(self.shown, saved)

    def notebook_cells(self, nb)->list:
        "Every cell of the notebook, in its order: as it ran in this kernel, else as the notebook holds it."
        from ..context.build import order_cells
        return order_cells(self.cells.cells(), self.layout(nb))

    def hidden(self, nb):
        "What the notebook's hidden cells hold (as it shows them, as saved, as they ran): for no tool or reference to show."
        from ..context.build import hidden_parts
        return hidden_parts(self.notebook_cells(nb))

    def cells_above(self, nb):
        "The notebook above the running prompt: cells as they ran here, else as the notebook holds them, in its order."
        from ..context.build import order_cells
        return order_cells(self.cells.cells(), self.layout(nb), self.current)

    def window(self, model, needed, info, settings, grow=True)->int:
        """The context window to ask `model` for: sized to `needed` in steps, capped by the model, and never smaller than
        one this kernel asked it for before (Ollama reloads a model whose `num_ctx` changes, losing its cache)."""
        from ..context.build import context_window
        w = context_window(needed, info.get('context_length'), settings['context_size'], floor=self._windows.get(model, 4096))
        if grow and not settings['context_size']: self._windows[model] = max(w, self._windows.get(model, 0))
        return w

    def context(self, question, settings, info, cells, tools=None, root=None, model='', grow=True)->tuple:
        "(messages, ledger): `cells` and the question, budgeted to the model's window, which goes in the ledger."
        from ..context.build import build_context
        from ..tools.registry import tools_system_prompt
        model_max, requested = info.get('context_length'), settings['context_size']
        cap = min(filter(None, (requested, model_max))) if requested or model_max else 8192
        reserve = settings['max_tokens'] or min(1024, cap // 4)  # room left for the reply
        system = '\n\n'.join(p for p in (SYSTEM_PROMPT, settings['system_prompt'],
                                         tools_system_prompt(list((tools or {}).values()))) if p)
        msgs, ledger = build_context(cells, question, limit=cap - reserve, system=system, clip_chars=settings['clip'],
                                     vision=bool(info.get('vision')), root=root and root.resolve(),
                                     max_images=settings['max_images'], max_side=settings['image_size'])
        msgs, ledger['asked'] = _scrubbed(msgs), scrub(ledger['asked'])   # a key in a cell or the question: not sent, not saved
        from .replay import context_fingerprint
        ledger['cells'] = context_fingerprint(ledger['sent'])   # saved with the reply: a rerun says what changed
        ledger['window'] = window = self.window(model, ledger['tokens'] + reserve, info, settings, grow)
        ledger['cap'], ledger['reserve'] = cap, reserve
        if ledger['tokens'] > window:   # Ollama would cut the start of the prompt without a word
            ledger['warning'] = (f'The prompt (~{ledger["tokens"]:,} tokens) is longer than the {window:,}-token context '
                                 'window, so the model sees only part of it. Shorten the question, or raise `context_size`'
                                 + (f' (this model takes up to {model_max:,}).' if model_max and model_max > window else '.'))
        return msgs, ledger

    # -- agent mode (agent.py): the reply's code runs as cells, on the user's clicks, its outputs back to the model
    def _agent(self, p, settings, view, fault)->'Reply':
        """Agent mode, on a thread of its own (the page runs the model's cells meanwhile, on the kernel's main thread):
        one reply view holds every round, so the notebook saves it whole under the first request's digest; a rerun
        shows that saved reply again and runs nothing (the cells it made are in the notebook, below it)."""
        import uuid
        from ..context.build import cell_text, estimate_tokens
        from ..context.messages import msg_text
        from ..models.stream import Reply
        from ..tools.screening import quarantine, screen_output
        from .agent import run_agent, steps_line
        model, info, route, ledger, cell = p['model'], p['info'], p['route'], p['ledger'], self.current
        from ..tools.guards import INTENT_ATTR, OUTBOUND_ATTR
        cell_id, agent_id, last, ran, halt = getattr(cell, 'cell_id', None), uuid.uuid4().hex, {}, [], threading.Event()
        def acts(f):
            try: return callable(f) and (getattr(f, INTENT_ATTR, None) is not None or bool(getattr(f, OUTBOUND_ATTR, None)))
            except Exception: return True   # an object that will not say: asked for
        acting = {n for n, f in list(self.namespace.items()) if acts(f)}   # a call of one asks every time
        def viewing(route, ledger):
            last['view'] = view(route, ledger)
            return last['view']
        def recorded(): last['output'] = cell.outputs[-1] if cell is not None and cell.outputs else None
        def ask(msgs, rnd):
            if rnd == 1:
                reply = self._stream(model, msgs, settings, info, route, ledger, viewing, raise_interrupt=False)
                if reply.via != 'asked': raise _Ended()
            elif halt.is_set():   # stopped between two rounds: the transcript so far is the reply
                reply = Reply.continuing(last['reply'], '')
                reply.finish('interrupted')
            else:   # the same view, the transcript so far first: one reply in the record
                shown = last['view']
                shown.ledger = {**shown.ledger, 'window': self.window(
                    model, sum(estimate_tokens(msg_text(m)) for m in msgs) + ledger['reserve'], info, settings)}
                if last['output'] in getattr(cell, 'outputs', ()): cell.outputs.remove(last['output'])
                seed = Reply.continuing(last['reply'], f"\n\n*{steps_line(last['steps'])}*\n\n")
                seed.info['ran_blocks'] = list(ran)
                reply, _ = self._ask(model, msgs, settings, info, shown, False, cell, reply=seed)
            recorded()
            last['reply'] = reply
            return reply
        def step(code, reason, rnd):
            if halt.is_set(): return 'stopped', '', ''
            # "the rest of this reply" is this round's: the next reply was written after reading these cells' outputs
            got = self.step(dict(op='run', source=code.rstrip('\n'), agent=f'{agent_id}:{rnd}', attend=bool(reason),
                                 reason=reason), halt) or {}
            status, made = got.get('status') or 'stopped', got.get('cell') or ''
            if status != 'ran': return status, made, ''
            ran.append(code)
            rec = next((c for c in reversed(self.cells.cells()) if made and c.cell_id == made), None)
            if rec is None: return 'ran', made, '(it ran; its outputs were not recorded)'
            errors = [o for o in rec.outputs if isinstance(o, dict) and o.get('output_type') == 'error']
            if any(o.get('ename') == 'KeyboardInterrupt' for o in errors): return 'stopped', made, ''   # the user's interrupt
            text = cell_text(rec)[0].partition('\nOutput:\n')[2]   # what it printed or raised: its code is the model's own
            return 'failed' if errors else 'ran', made, text
        def screen(text):
            return quarantine(text, labels) if (labels := screen_output(text)) else text
        def job(cancelled):
            if cancelled.is_set(): return
            self.here(cell)
            with self._lock: self._halts.append((cell_id, halt))
            try: result = run_agent(ask, p['msgs'], step, settings['max_rounds'], screen, acting=acting,
                                    on_steps=lambda done: last.__setitem__('steps', done))
            except _Ended: return   # a saved reply shown again: the cells it made are in the notebook already
            finally:
                with self._lock: self._halts.remove((cell_id, halt))
            reply, made = result.reply, result.cells
            said = f'agent mode: {len(made)} cell{"s" * (len(made) != 1)} made' + (f' ({", ".join(made)})' if made else '')
            reply.note = '; '.join(filter(None, [reply.note, f'{said}; ended: {result.stop}']))
            reply.info['ran_blocks'] = list(ran)
            if 'view' in last and last.get('output') is not None:   # the last update, with the note: recorded in its place
                if last['output'] in cell.outputs: cell.outputs.remove(last['output'])
                self._record(last['view'].final(reply), cell)
        self.background.start(job, cell_id, fault)
        return Reply(model)

    # -- one reply: replayed, reused or asked (replay.py, stream.py)
    def _stream(self, model, msgs, settings, info, route, ledger, view, raise_interrupt=True, first=True,
                background=False, fault=None, fmt=None, stopper=None):
        """Show the reply to `msgs` in one display and return it: replayed from the cassette, reused from a saved reply
        to the same request, or streamed from the model (recorded when recording). Faults keep the partial reply
        and end as one-paragraph errors; with `raise_interrupt=False` an interrupted reply is returned (marked).
        `first`: the prompt's own request (not a later round of the tool loop): a stale saved reply may be kept for it,
        and one the model's answer replaces is kept in the new reply's metadata (`previous`). `background`: a reply
        asked of the model streams on `self.background`'s thread, `fault(e)` shows its fault; a streaming `Reply` is
        returned at once. `fmt`: a JSON Schema the reply must follow (the route's constrained output); `stopper`: the
        `_Stopper` of a reply asked from code (`asking.py`), which the notebook's Stop does not reach."""
        from .replay import request_digest
        from ..models.stream import Reply
        options = _request_options(route, settings, ledger, fmt)
        digest, mode = request_digest(model, msgs, options), settings['cassette']
        route = {**route, 'digest': digest}
        kind, found = (None, None) if mode == 'replay' else self.reusable(digest, model, msgs, options, settings, route,
                                                                         ledger if first else None)
        if kind is None and mode != 'replay':
            self._fresh.discard(getattr(self.current, 'cell_id', None))   # Ask again: this once
            if first and (prev := self.previous_reply()) is not None: route['previous'] = prev   # recoverable
        shown = view(route, ledger)
        if mode == 'replay':
            reply = Reply.restore(model, self.cassette(settings).reply(digest, model))
            reply.via, output = 'cassette', shown.final(reply)
            self._record(output)
            return reply
        if kind == 'saved':
            from ..render.reply import reply_bundle
            from .replay import saved_snapshot
            reply = Reply.restore(model, saved_snapshot(found))   # drawn again by the renderer: a file's HTML never is
            reply.via = 'saved'
            bundle = getattr(shown, 'bundle', reply_bundle)   # a view that shows nothing makes a lighter one (asking.py)
            self._record(shown.show(*bundle(reply, {**route, 'reused': True}, ledger)))
            return reply
        if kind in ('kept', 'stale'):
            reply = self._keep(*found, model, settings, route, ledger, shown)
            reply.via = kind
            return reply
        cell = self.current   # the prompt's record: a background reply ends after it stopped being current
        self._waiting(model, shown)
        def ask(stopper=None):
            reply, output = self._ask(model, msgs, settings, info, shown, raise_interrupt, cell, stopper, fmt)
            reply.via = 'asked'
            if reply.status == 'done' and getattr(cell, 'origin', None) == 'code': self.memory.put(digest, output)
            if reply.status == 'done':
                if mode == 'record':
                    self.cassette(settings, recording=True).add(digest, model, options, reply.snapshot(), route.get('model_info'))
                if settings['cache_dir']:
                    from .replay import DiskCache
                    DiskCache(settings['cache_dir']).put(digest, output)
            return reply
        if not background: return ask(stopper)
        stopper = self._replying(getattr(cell, 'cell_id', None))   # Stop reaches it from now on, before its thread runs
        self.background.start(lambda cancelled: ask(stopper), getattr(cell, 'cell_id', None), fault)
        return Reply(model)

    def _record(self, output, cell=None):
        "Record a reply output shown in `cell` (the running cell's record by default; the next prompt's context reads it)."
        if (cell := cell or self.current) is not None: cell.outputs.append(output)
        return output

    def _waiting(self, model, view):
        "Show that the request to `model` is on its way, and until its first token what it waits for."
        if model.startswith('local/'):   # its start, then how far it has read the prompt (progress.py)
            from .progress import PromptProgress
            view.waiting(model, progress=PromptProgress(self.router.local, (view.ledger or {}).get('tokens') or 0))
        else: view.waiting(model)

    def _ask(self, model, msgs, settings, info, view, raise_interrupt=True, cell=None, stopper=None, fmt=None,
             reply=None)->tuple:
        """(reply, output): the model's reply streamed into `view` (its waiting line shown: `_waiting`), recorded in
        `cell` (the running cell's by default); faults keep the partial reply and raise one paragraph. The frontend's
        Stop reaches it (`stop`). `reply`: the one to stream into (agent mode's, carrying its earlier rounds)."""
        from ..models.stream import Reply, pump, watching
        current = cell or self.current
        reply, events, err = reply or Reply(model), None, None
        stop = stopper or self._replying(getattr(current, 'cell_id', None))
        try:
            meta = dict(notebook=str(self.notebook() or ''), cell_id=getattr(current, 'cell_id', None))
            with watching(stop.join):   # the clients' stall watches: Stop hangs them up
                events = self.router.chat(model, msgs, settings, info, num_ctx=view.ledger['window'], meta=meta, fmt=fmt)
                view.route.update(self.router.describe(model, settings))   # the embedded model's address, once started
                pump(stop.until(events), reply, view.update, view.interval, limit=settings['max_reply'])
            reply.finish('interrupted' if stop.stopped else 'done')
        except KeyboardInterrupt:
            reply.finish('interrupted')
            err = ReplyInterrupted(f'Interrupted after {reply.chunks:,} tokens; the partial reply is kept above.'
                                   if reply.chunks else 'Interrupted before the model answered.')
        except BoopError as e:
            if stop.stopped: reply.finish('interrupted')   # the hang-up Stop made: not a fault
            else:
                reply.finish({ReplyBroken: 'broken', ReplyStalled: 'stalled', ReplyTooLong: 'too long'}.get(type(e), 'error'))
                err = e
        finally:
            with self._lock:
                if self._stopper is stop: self._stopper, self._user_stopped = None, stop.stopped
            if events is not None: events.close()   # hangs up if the stream is still open
            if reply.status == 'streaming': reply.finish('error')   # a bug escaped: keep what arrived anyway
            output = view.final(reply)
            self._record(output, current)
            self._seen(model, settings, err)
        if err is not None and (raise_interrupt or not isinstance(err, ReplyInterrupted)):
            if reply.chunks and not isinstance(err, (ReplyInterrupted, ReplyTooLong)):
                err.args = (f'{err} The partial reply is kept above.',)
            raise err
        return reply, output

    def _replying(self, cell_id)->'_Stopper':
        "The Stop of the reply that starts streaming now (the one `stop` reaches until it ends)."
        stopper = _Stopper(cell_id)
        with self._lock: self._stopper = stopper
        return stopper

    def stop(self,
             cell_id:str=None,  # The cell whose reply to stop (the frontend's cell id); None: every one
            )->bool:            # Whether a reply was streaming or queued and is stopped now
        """Stop the reply streaming now, from any thread (the frontend's Stop, on a comm's subshell): it ends within a
        moment as *interrupted*, what arrived kept, and the cell ends without an error. A prompt queued behind it
        (`background`) is not sent."""
        dropped = self.background.cancel(cell_id)
        with self._lock:
            stopper = self._stopper
            halts = [h for c, h in self._halts if cell_id is None or c == cell_id]
        for h in halts: h.set()   # an agent loop: no next click waited for, no next round asked
        dropped = dropped or bool(halts)
        if stopper is None or cell_id and stopper.cell_id and cell_id != stopper.cell_id: return dropped
        stopper.stop()
        return True

    def halt_agents(self)->bool:
        """End every agent loop at its next click or round (whether one was running): a prompt that must hold the
        kernel until the replies above end would otherwise wait on a click whose cell cannot run meanwhile."""
        with self._lock: halts = [h for _, h in self._halts]
        for h in halts: h.set()
        return bool(halts)

    def _seen(self, model, settings, err):
        """What a prompt learnt of its model's server: down (it could not be reached) or up again; the catalog, and so
        the menu and the toolbar, say so at once (`state_listeners`)."""
        from ..errors import Unreachable
        if err is not None and not isinstance(err, Unreachable): return   # a fault of the model, not of its server
        try: changed = self.catalog.seen(model, settings, str(err) if err is not None else '')
        except Exception: return log.debug('boopiter_ext: the catalog could not take what a prompt saw', exc_info=True)
        if changed == 'down': self._tell_state()
        elif changed == 'up':   # its models and the automatic choice: listed again, off the main thread
            threading.Thread(target=self._relist, args=(settings,), name='boopiter-relist', daemon=True).start()

    def _relist(self, settings):
        """A server the menu shows offline is up (a prompt reached it, or it answered after the listing was made): list
        the models and the automatic choice again, and tell the menu. Not followed further: a server slower than the
        catalog's patience each time is listed once more, not polled."""
        catalog = self._catalog
        if catalog is None: return   # closed meanwhile
        try: catalog.refresh(settings, follow=False)
        except Exception: log.debug('boopiter_ext: listing the models again failed', exc_info=True)
        self._tell_state()

    def _tell_state(self):
        for listener in list(self.state_listeners):
            try: listener()
            except Exception: log.debug('boopiter_ext: a state listener failed', exc_info=True)

    def menu_window(self, model, settings, listing)->int|None:
        """The context window the next request to `model` asks for (`num_ctx`), as the reply details will say it: the
        size set, else the smallest automatic step (or the largest this kernel asked of it), capped by the model."""
        if not model: return None
        entry = listing.get(model)
        return self.window(model, 0, {'context_length': entry.context_length if entry else None}, settings, grow=False)

    def reusable(self, digest, model, msgs, options, settings, route, ledger=None)->tuple:
        """(kind, found) of a saved reply the request would show instead of asking: ('saved', output) to exactly this
        request; ('kept', (output, digest)) that another model wrote (`kept_reply`); ('stale', (output, digest, line))
        this prompt cell's to the same question over another context (`stale_reply`, given the `ledger`); (None, why):
        the model is asked, and why."""
        if settings['cassette'] == 'record': return None, 'recording the cassette'
        if (why := self.asks_again(settings)): return None, why
        if (saved := self.saved_reply(digest, settings)) is not None: return 'saved', saved
        if self._memory is not None and (kept := self._memory.get(digest)) is not None: return 'saved', kept
        by_name = route.get('picked_by') == 'cell option'   # `-m`: that model is asked on purpose
        if not by_name and (kept := self.kept_reply(model, msgs, options)) is not None: return 'kept', kept
        if ledger is not None and (stale := self.stale_reply(model, by_name, ledger)) is not None: return 'stale', stale
        return None, 'no saved reply to this question' if self.own_reply(done=False) is None else \
            'its saved reply is from another model, named with `-m`, or did not finish'

    def asks_again(self, settings)->str:
        """Why this prompt asks the model whatever it saved ('' if it need not): the reply view's Ask again, `--fresh`,
        or `reuse = off` from your own layers (`%config`, your settings.ini, the menu's switch clicked in this kernel);
        a notebook's binding or a project's settings.ini never makes a rerun spend model calls."""
        if getattr(self.current, 'cell_id', None) in self._fresh: return 'Ask again'
        if settings['reuse']: return ''
        source = settings.source['reuse']
        if source == 'cell option': return '`--fresh`'
        if source == 'notebook binding': return "the menu's reuse switch is off" if self._reuse_here else ''
        if source == settings.project: return ''
        return f'`reuse` is off ({short_source(source)})'

    # -- ghost text and "edit this cell" (inline.py): asked by the frontend, on a thread of their own
    @property
    def inline(self):
        "Ghost text and \"Edit this cell\" for this notebook (`inline.Inline`)."
        with self._lock:
            if self._inline is None:
                from .inline import Inline
                self._inline = Inline(self)
            return self._inline

    def ask_again(self, cell_id:str):
        "The reply view's Ask again: the next run of that prompt cell asks the model, whatever it saved (once)."
        if isinstance(cell_id, str) and 0 < len(cell_id) <= 256:
            with self._lock:
                if len(self._fresh) >= 1000: self._fresh.clear()
                self._fresh.add(cell_id)

    def own_reply(self, done=True, same=True)->dict|None:
        """The newest reply this prompt cell showed (this kernel's record first, then the notebook file's), finished only if
        `done`, to the question it asks now if `same`: found by its cell id; without one (headless, a terminal), the saved
        prompt cell asking the same question at the same turn (the first such cell for its first run here, the second
        for the second); in a terminal, none (each input is a new question, not a cell run again)."""
        from ..context.build import prompt_text
        from ..context.nbfile import saved_cells
        from .replay import latest_reply
        current, nb = self.current, self.notebook()
        if current is None or current.kind != 'prompt': return None   # a question asked from code has no cell of its own
        saved, question = (saved_cells(nb) or []) if nb else [], prompt_text(current.source)
        def asks(c, same=True): return c.kind == 'prompt' and (not same or prompt_text(c.source) == question)
        if current.cell_id:
            mine = [c for c in [*self.cells.cells(), *saved] if c.cell_id == current.cell_id and c is not current]
            return next((r for c in mine if asks(c, same) and (r := latest_reply([c], done)) is not None), None)
        ran = [c for c in self.cells.cells() if c is not current and not c.cell_id and asks(c)]
        copies = [c for c in saved if asks(c)]
        return latest_reply([copies[len(ran)]], done) if len(ran) < len(copies) else None   # a terminal: each input is new

    def stale_reply(self, model, by_name, ledger)->tuple|None:
        """(output, digest, line): this prompt cell's saved reply to the same question, made over another context, kept
        and marked with what changed since (`replay.stale_line`); None if there is none (or `-m` names another model)."""
        from .replay import clean_fingerprint, context_changes, stale_line, _DIGEST
        from ..settings import check_setting
        if (out := self.own_reply()) is None: return None
        md = out['metadata']['boopiter']
        if not check_setting('model', md.get('model')) or by_name and md['model'] != model: return None
        ctx = md.get('context') if isinstance(md.get('context'), dict) else {}
        changes = context_changes(clean_fingerprint(ctx.get('cells')), ledger.get('sent') or [])
        asked = ctx.get('asked')
        question = isinstance(asked, str) and asked != ledger.get('asked')
        digest = md.get('digest') if isinstance(md.get('digest'), str) and _DIGEST.fullmatch(md['digest']) else None
        return out, digest, stale_line(changes, question)

    def rerun_line(self, settings, nb)->str:
        """What running the notebook again would do with each prompt's saved reply, for `%boop status`: shown again, kept
        but stale (which cells changed since), or asked (and why); from the cells as the notebook holds them now."""
        from ..context.build import HIDE_TAG, adds_nothing, is_own, order_cells, prompt_text
        from .replay import clean_fingerprint, context_changes, latest_reply, stale_line
        layout = self.layout(nb)
        if not layout: return 'no notebook known: each prompt says what it does when it runs (`--dry-run` too)'
        if settings['cassette'] == 'replay': return 'the cassette answers every prompt: no model is asked'
        if settings['cassette'] == 'record': return 'recording the cassette: every prompt asks its model'
        if (why := self.asks_again(settings)): return f'every prompt asks the model again: {why}'
        shown, stale, asks = 0, [], []
        for c in layout:
            if c.kind != 'prompt' or not prompt_text(c.source): continue
            ran = next((r for r in self.cells.cells() if c.cell_id and r.cell_id == c.cell_id), c)
            q = f'`{prompt_text(c.source).splitlines()[0][:40]}`'
            if (out := latest_reply([ran])) is None:
                asks.append(f'{q} (no saved reply)')
                continue
            ctx = out['metadata']['boopiter'].get('context')
            above = [a for a in order_cells(self.cells.cells(), layout, c)
                     if HIDE_TAG not in a.tags and not is_own(a) and not adds_nothing(a)]
            changes = context_changes(clean_fingerprint(ctx.get('cells') if isinstance(ctx, dict) else None), above)
            if changes['changed'] or changes['new'] or changes['unknown']:
                stale.append(f'{q} ({stale_line(changes).partition("since this reply, ")[2].partition(". Kept")[0]})')
            else: shown += 1
        bits = [f'{shown} saved repl{"y" if shown == 1 else "ies"} shown again'] if shown else []
        if stale: bits.append(f'{len(stale)} kept but marked stale: ' + '; '.join(stale[:5]) + (' …' if len(stale) > 5 else ''))
        if asks: bits.append(f'{len(asks)} asked: ' + '; '.join(asks[:5]) + (' …' if len(asks) > 5 else ''))
        head = 'Run All asks no model' if not asks else f'Run All asks {len(asks)} prompt{"s" * (len(asks) != 1)}'
        return f'{head}: ' + ('; '.join(bits) if bits else 'no prompt cells') + ('' if not stale else
                                                                               ' (`--fresh` or Ask again asks)')

    def previous_reply(self)->dict|None:
        "The reply this prompt cell shows now, which asking again replaces: {model, answer}, bounded (`replay.clean_previous`)."
        from .replay import clean_previous, saved_snapshot
        if (out := self.own_reply(done=False, same=False)) is None: return None
        return clean_previous(dict(model=out['metadata']['boopiter'].get('model'), answer=saved_snapshot(out).get('answer')))

    def saved_reply(self, digest, settings)->dict|None:
        "A finished reply to this exact request: shown in this kernel, saved in the notebook, or in `cache_dir`."
        from ..context.nbfile import saved_cells
        from .replay import DiskCache, find_saved_reply
        nb = self.notebook()
        found = find_saved_reply(digest, self.cells.cells(), saved_cells(nb) if nb else None,
                                 cell_id=getattr(self.current, 'cell_id', None))
        if found is None and settings['cache_dir']: found = DiskCache(settings['cache_dir']).get(digest)
        return found

    def kept_reply(self, model, msgs, options)->tuple|None:
        """(output, digest): a saved reply of the asking prompt cell (its own outputs, else those of a cell asking the
        same question) that another model wrote to exactly these messages: only the model differs."""
        from ..context.build import prompt_text
        from ..context.nbfile import saved_cells
        from .replay import find_kept_reply
        current, nb = self.current, self.notebook()
        if current is None or current.kind != 'prompt': return None
        cells = [*self.cells.cells(), *((saved_cells(nb) or []) if nb else [])]   # this kernel's first, then the file's
        question = prompt_text(current.source)
        def own(c): return bool(current.cell_id) and c.cell_id == current.cell_id
        same = [c for c in cells if not own(c) and c.kind == 'prompt' and prompt_text(c.source) == question]
        return find_kept_reply(model, msgs, options, [c for c in cells if own(c)] + same)

    def _keep(self, output, digest, *rest):
        """Show a kept reply (`kept_reply`: answered by its model, not `model`) or a stale one (`stale_reply`: over another
        context; `rest` starts with its mark) through the renderer, marked; return it."""
        stale, (model, settings, route, ledger, shown) = (rest[0], rest[1:]) if len(rest) == 6 else ('', rest)
        from ..render.reply import reply_bundle
        from .replay import MAX_CONTEXT_LENGTH, _number, clean_fingerprint, clean_model_info, saved_snapshot
        from ..settings import THINK_LEVELS
        from ..models.stream import Reply
        md, by = output['metadata']['boopiter'], output['metadata']['boopiter'].get('model_source')
        by = by if isinstance(by, str) and len(by) <= 100 else None
        info = clean_model_info(md['model_info']) if isinstance(md.get('model_info'), dict) else None
        reply = Reply.restore(md['model'], saved_snapshot(output))   # drawn by the renderer: a file's HTML never is
        kept_route = {**route, **self.router.describe(md['model'], settings), 'kept': model if md['model'] != model else None,
                      'stale': stale or None, 'digest': digest, 'picked_by': by, 'note': '',
                      'effort': md['effort'] if md.get('effort') in THINK_LEVELS else None,   # a file's: checked
                      'reasoning_model': bool(md.get('reasoning_model')),
                      'model_info': {k: v for k,v in (info or {}).items() if v is not None}}
        ctx = md.get('context') if isinstance(md.get('context'), dict) else {}
        saved = {k: v for k,v in ctx.items() if k in ('window', 'asked', 'cells')}   # as it was made (checked when read)
        if not isinstance(saved.get('asked'), str): saved.pop('asked', None)
        if not _number(MAX_CONTEXT_LENGTH, int, lo=1)(saved.get('window')): saved.pop('window', None)
        if saved.get('cells') is not None and (cells := clean_fingerprint(saved['cells'])) is not None: saved['cells'] = cells
        else: saved.pop('cells', None)
        if stale: ledger = {k: v for k,v in ledger.items() if k != 'cells'}   # unknown stays unknown: never today's
        self._record(shown.show(*reply_bundle(reply, kept_route, {**ledger, **saved})))
        return reply

    def cassette(self, settings, recording=False):
        "The cassette; one being replayed is read once, and again only when its file changes."
        from .replay import Cassette, cassette_path
        path = cassette_path(self.notebook(), settings['cassette_file'])
        if recording: return Cassette(path, recording)   # `add` reloads it under its lock anyway
        try: key = path, path.stat().st_mtime_ns, path.stat().st_size
        except OSError: key = None
        if key is None or self._tape is None or self._tape[0] != key: self._tape = key, Cassette(path)
        return self._tape[1]

    def answering_model(self, settings)->tuple:
        "(model, note): the picked model, else `Router.resolve`'s; replaying with none picked, the one that was recorded."
        from .binding import may_choose
        if settings['cassette'] == 'replay' and not picked_model(settings)[0]:
            if (auto := self.cassette(settings).auto_model): return auto, 'the model that answered when recording'
        model, note = self.router.resolve(settings)
        if model == LOCAL_ID and note:   # Ollama is out of reach: the model that answered before keeps its saved replies
            from ..context.nbfile import saved_cells
            from .replay import saved_auto_model
            nb = self.notebook()
            before = saved_auto_model(self.cells.cells(), saved_cells(nb) if nb else None)
            if before not in (None, LOCAL_ID) and may_choose(before, settings):   # a notebook may not pick a provider
                return before, (f'{note.partition(",")[0]}; {before} answered these prompts before, so its saved replies '
                                'are shown again (a changed prompt needs it running)')
        if note and settings['cassette'] == 'record':
            cassette = self.cassette(settings, recording=True)
            cassette.auto_model = model
            cassette.save()
        return model, note

    def model_info(self, model, settings, nb)->dict:
        "What the model says of itself; replaying, what it said when recorded; offline, what a saved reply noted."
        from ..context.nbfile import saved_cells
        from .replay import saved_model_info
        if settings['cassette'] == 'replay' and (info := self.cassette(settings).models.get(model)) is not None: return info
        try: return self.router.model_info(model, settings)
        except BoopError:
            if (info := saved_model_info(model, self.cells.cells(), saved_cells(nb) if nb else None)) is None: raise
            return info

    # -- what faces show of it
    def status(self, nb=None)->tuple:
        "(rows, warnings) for `%boop status`: the model and endpoint, tools, context, binding, notebook, and settings set."
        from .binding import binding_text
        from .replay import cassette_path
        s = self.settings(nb=nb)
        model_line, endpoint, info, problem = '', '-', {}, []
        replaying = s['cassette'] == 'replay'
        try:
            model, note = self.answering_model(s) if replaying else self.router.resolve(s)   # who answers a new prompt
            model_line = f'auto → {model} ({note})' if note else f'{model} (from {picked_model(s)[1]})'
            if s['reasoning'] and s['reasoning_model'] == model: model_line += ', the reasoning model'
            if replaying: endpoint = 'none: the cassette answers, and no model is asked'
            else:
                route = self.router.describe(model, s)
                endpoint = (f'{route["name"]} at {route["endpoint"]}' if route['endpoint'] else route['name']
                            + (', started by the first prompt that uses it' if model == LOCAL_ID else ''))
                info = self.router.model_info(model, s)
        except BoopError as e:
            if model_line: problem = [str(e)]   # the model is known, what it says of itself is not
            else: model_line = f'none: {e}'
        ctx = f'{s["context_size"]:,} tokens ({s.source["context_size"]})' if s['context_size'] else 'auto (sized to each prompt'
        if not s['context_size']: ctx += f', up to {info["context_length"]:,} tokens)' if info.get('context_length') else ')'
        tools = self.tool_list(s, nb, wait=False)
        tools = f'{", ".join(tools) or "none"} ({"auto-run" if s["auto"] else "run on your click"})'
        binding = self.binding(nb)
        rows = dict(model=model_line, endpoint=endpoint, tools=tools, context=ctx,
                    binding=binding_text(binding).partition(' · ')[2]
                            + (' · as saved in the notebook' if binding and self._binding is None and nb else ''),
                    notebook=str(nb) if nb else 'unknown (cells in execution order; set BOOPITER_NOTEBOOK for headless runs)',
                    cells=f'{len(self.cells.cells())} recorded', replies=self.rerun_line(s, nb))
        if not replaying:   # which model gives the ghost text (replaying, no model is asked, not even for a list)
            from .menu import completing
            ghost = completing(s, self.catalog.current(s))
            rows['completions'] = f'{ghost["model"]} ({ghost["why"]})' if ghost['on'] else f'off: {ghost["why"]}'
        if s['cassette'] in ('record', 'replay'):
            name = cassette_path(nb, s['cassette_file']).name
            rows['cassette'] = f'replaying {name}' if replaying else f'recording every model turn to {name}'
        rows.update({k: f'{_shown(k, s[k])} ({s.source[k]})' for k in DEFAULTS   # every setting that is not a default
                     if k not in _IN_ROWS and s.source[k] != 'default'})
        runtime, _ = self.config()
        outranked = [f'`%config BoopMagics.{k}` is outranked by the notebook\'s binding ({k} = {s[k]}); '
                     f'`%boop model --clear` or the menu changes it' for k in sorted(runtime)
                     if s.source[k] == 'notebook binding' and runtime[k] != s[k]]
        warnings = s.warnings + problem + outranked
        return rows, warnings
