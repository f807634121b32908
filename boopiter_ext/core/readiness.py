"""Getting the model ready before the first prompt: the embedded model started and its prompt cache filled while the
user reads, an Ollama model loaded into memory when it is picked.

On a CPU, the wait before the embedded model's first answer is not its engine (it starts in about a second) but
reading the prompt: on 2 idle cores llama.cpp reads SmolLM2 prompts at about 280 tokens a second (far fewer when other
work loads the machine), and the system prompt, the tools and the notebook come to a thousand tokens and more. So
while the kernel is idle (at load, after each cell, after a pick) a thread of its own sends the embedded model what
the next `%%prompt` will send, with `max_tokens: 1`: llama.cpp keeps it in its cache, and the prompt reads only what
is new. The messages are built by the assistant's own functions (`Assistant.context`, the tools it offers, the cells
above the prompt cell that comes next), so they match the prompt's token for token; they end with its question where
the notebook already holds it (a saved notebook run again, the tour), else with the line `---` that the question
follows. A cell that starts running cancels the warm-up first (the server has one slot, and gives it back at the end
of the batch of 128 tokens it is reading), so no prompt queues behind a warm-up, and no warm-up competes with the
user's code for the cores; nor with a reply that streams on after its cell ended (`background.py`): the next
warm-up waits for its end.

An Ollama model that is picked (bound, configured or set with `%config`) is loaded into memory at once, with the
context window its first prompt will ask for (a different `num_ctx` would make Ollama load it again) and the
`keep_alive` setting, so its keep-alive rules still apply. Which model answers when none is picked is asked of
Ollama at start and after a pick only: a cell's pass sends Ollama nothing.

    r = Readiness(assistant, ip)   # one per kernel, beside the assistant
    r.start()                      # listens to cells and picks; gets ready now, and again after each cell
    r.stop()                       # at unload: cancels the warm-up under way, stops listening and the thread
"""

__all__ = ['Readiness', 'next_prompt', 'known_question', 'prefix']

import hashlib, json, logging, re, sys, threading, uuid
from time import monotonic
from ..context.build import Cell, order_cells, prompt_text
from ..errors import BoopError
from ..models.routes import picked_model, route_name

log = logging.getLogger('boopiter_ext')
_REF = re.compile(r'[$&]`')   # a $`variable` or &`tool` reference (refs.py): its value is read when the prompt runs


def next_prompt(
    executed:list,     # Cells run in this kernel, in execution order (`CellRecorder.cells()`)
    layout:list=None,  # The notebook's cells in order (`Assistant.layout`), None when not known
)->Cell:               # The prompt cell the next prompt most likely runs in
    """The first prompt cell below the cell run last, in the notebook's layout; else a new prompt cell (one the notebook
    does not have yet: it goes below the cells run so far)."""
    new = Cell('%%prompt\n', 'prompt', cell_id=f'boopiter-next-{uuid.uuid4().hex}')
    if not layout or not executed: return new
    last = executed[-1]
    at = next((i for i,c in enumerate(layout) if last.cell_id and c.cell_id == last.cell_id), None)
    if at is None: at = next((i for i,c in enumerate(layout) if c.source.strip() == last.source.strip()), None)
    return new if at is None else next((c for c in layout[at+1:] if c.kind == 'prompt'), new)


def known_question(
    cell:Cell,  # The prompt cell that comes next (`next_prompt`)
)->str:         # Its question, or '' when it is not known or sending it needs the kernel
    """The question a prompt cell the notebook already holds will send: only where its first line has no options (they
    may change the model or the context) and it names no $`variable` or &`tool` (their values are the kernel's)."""
    first, _, body = cell.source.lstrip().partition('\n')
    if first.strip() != '%%prompt' or _REF.search(body): return ''
    return prompt_text(cell.source)


def prefix(
    assistant,      # The `Assistant` whose next prompt it is
    settings,       # `assistant.settings(nb=...)`: the settings of a prompt cell without options
    model:str,      # The model that will answer
    nb=None,        # The notebook's file, if known
    question:bool=True, # Include the next prompt's question where the notebook holds it (`known_question`)
)->tuple:           # (messages, ledger), as the prompt's request will begin
    """What the next prompt will send: the system prompt with the tools offered, the cells above the prompt cell that
    comes next (`next_prompt`), and its question where it is known (else the last message ends with the line `---`
    that the question follows), built as `Assistant._prepare` builds a prompt's."""
    from .assistant import folder
    a = assistant
    info = a.model_info(model, settings, nb)
    layout = a.layout(nb)
    nxt = next_prompt(a.cells.cells(), layout)
    cells = order_cells(a.cells.cells(), layout, nxt)
    asked = known_question(nxt) if question else ''
    return a.context(asked, settings, info, cells, a.tool_list(settings, nb, wait=False), folder(nb), model=model, grow=False)


def _digest(msgs)->str: return hashlib.sha256(json.dumps(msgs, sort_keys=True, default=str).encode()).hexdigest()


def _hang_up(r):
    "Hang up a streamed response from another thread: its socket shut down, the read blocked on it wakes and closes it."
    try: r.raw.shutdown()   # urllib3 >= 2.3
    except (AttributeError, OSError): pass


class Readiness:
    "Gets the answering model ready while the kernel is idle: starts and warms the embedded one, loads a picked Ollama one."
    delay = 0.3          # seconds the kernel stays idle after a cell before a warm-up starts ("Run all" moves on first)
    read_timeout = 120.0 # seconds between two events of a warm-up (a batch of 128 tokens on a very busy machine)

    def __init__(self,
                 assistant,    # The kernel's `Assistant`: its settings, cells, router and context builder
                 shell=None):  # The IPython shell whose cells it follows (None: only `ask`, `hold` and `release`)
        self.assistant, self.shell = assistant, shell
        self._lock = threading.Lock()
        self._wake, self._idle, self._quit = threading.Event(), threading.Event(), threading.Event()
        self._idle.set()
        self._thread = self._response = self._session = None
        self._held = 0            # how many times a cell started: a warm-up checks it did not change under it
        self._in_cell = False     # a cell runs now
        self._warm = None         # digest of the messages the embedded model's cache holds, from the last warm-up
        self._loaded = None       # (host, model, num_ctx, keep_alive) Ollama was last asked to load
        self._auto = None         # the model that answers when none is picked, as last resolved
        self._resolve = True      # resolve it again in the next pass (at start, after a pick): asks Ollama
        self.last = {}            # what the last pass did: model, action, prompt tokens, cached, processed, seconds
        self.progress = {}        # the warm-up under way, as the server reports it: prompt tokens, cached, processed
        self.passes, self._asked, self._served = 0, 0, 0   # passes run; asks made, and answered by a pass that ran
        self.done = threading.Condition(self._lock)

    # -- lifecycle
    def start(self):
        "Follow the shell's cells and the assistant's picks, and get ready now."
        if self.shell is not None:
            self.shell.events.register('pre_run_cell', self.pre_run_cell)
            self.shell.events.register('post_run_cell', self.post_run_cell)
        self.assistant.listeners.append(self._picked)
        self.assistant.background.ended.append(self._reply_ended)
        self.ask(resolve=True)

    def stop(self, timeout:float=5.0):
        "Undo `start`: cancel the warm-up under way, stop listening, end the thread."
        if self.shell is not None:
            for ev,cb in (('pre_run_cell', self.pre_run_cell), ('post_run_cell', self.post_run_cell)):
                try: self.shell.events.unregister(ev, cb)
                except ValueError: pass
        if self._picked in self.assistant.listeners: self.assistant.listeners.remove(self._picked)
        if self._reply_ended in self.assistant.background.ended: self.assistant.background.ended.remove(self._reply_ended)
        self._quit.set()
        self.hold()
        self._wake.set()
        self._idle.set()
        if self._thread is not None: self._thread.join(timeout)
        if self._session is not None: self._session.close()
        self._thread = self._session = None

    # -- what starts and stops a pass
    def pre_run_cell(self, info=None):
        self._in_cell = True
        self.hold()

    def post_run_cell(self, result=None):
        self._in_cell = False
        if self.assistant.background.running: return   # a reply streams on: no warm-up competes with it
        self.release()
        self.ask()

    def _reply_ended(self):
        "A reply that streamed on after its cell ended: get ready again, unless a cell runs now (it will, after)."
        if self._in_cell: return
        self.release()
        self.ask()

    def _picked(self, binding): self.ask(resolve=True)

    def ask(self, resolve:bool=False):
        """Get ready soon, off the calling thread: once the kernel has been idle for `delay` seconds. `resolve`: find
        out again which model answers when none is picked (a request to Ollama); else the last answer holds."""
        if self._quit.is_set(): return
        if resolve: self._resolve = True
        with self._lock:
            self._asked += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name='boopiter-readiness', daemon=True)
                self._thread.start()
        self._wake.set()

    def hold(self):
        "A cell runs: cancel the warm-up under way (a prompt must not queue behind it), and start none until `release`."
        with self._lock:
            self._held += 1
            self._idle.clear()
            self._warm, r = None, self._response   # the cell may use the model: its cache is not known any more
        if r is not None: _hang_up(r)

    def release(self): self._idle.set()

    @property
    def idle(self)->bool: return self._idle.is_set()

    def wait(self, timeout:float=None)->bool:
        "Wait until a pass has run for every ask so far (tests, the bench); False on timeout."
        with self.done: return self.done.wait_for(lambda: self._served >= self._asked, timeout)

    # -- the thread
    def _run(self):
        while self._wake.wait() and not self._quit.is_set():
            with self._lock:
                self._wake.clear()   # asks made from here on get a pass of their own
                upto = self._asked
            try: self._pass()
            except BoopError as e: log.debug('boopiter_ext: getting the model ready failed: %s', e)   # the prompt will say
            except Exception:
                if self._quit.is_set() or sys.is_finalizing(): return   # the process is ending: nothing to get ready for
                log.warning('boopiter_ext: getting the model ready failed', exc_info=True)
            with self.done:
                self.passes, self._served = self.passes + 1, upto
                self.done.notify_all()

    def _pass(self):
        """Get the model the next prompt will ask ready: at once, start the embedded one or load a picked Ollama one
        (neither takes the kernel's cores); once the kernel is idle, fill the embedded one's cache."""
        if (got := self._answering()) is None: return
        model, s, nb = got
        if route_name(model) == 'ollama':
            if picked_model(s)[0]: self._load_ollama(model, s, nb)
            return
        if route_name(model) != 'local' or self._quit.is_set(): return
        self.assistant.router.local.ensure()   # a prompt that comes meanwhile waits for this start: none is lost
        if (held := self._settled()) is None or (got := self._answering()) is None: return   # settings may have moved
        model, s, nb = got
        if route_name(model) == 'local': self._warm_local(model, s, nb, held)

    def _answering(self)->tuple|None:
        "(model, settings, notebook) of the next prompt (a cell without options); None if it asks no model (a replay)."
        a = self.assistant
        nb = a.notebook()
        s = a.settings(nb=nb)
        if s['cassette'] == 'replay': return None
        if not (model := picked_model(s)[0]):
            if self._resolve:   # at start and after a pick only: a cell's pass makes no request to Ollama
                self._resolve = False
                try: self._auto = a.answering_model(s)[0] if s['cassette'] != 'record' else a.router.resolve(s)[0]
                except BoopError as e: self._auto = log.debug('boopiter_ext: no model to get ready: %s', e)
            model = self._auto
        return (model, s, nb) if model else None

    def _settled(self)->int|None:
        "Wait until the kernel has been idle for `delay` seconds; the count of holds then (None: stopping)."
        while not self._quit.is_set():
            self._idle.wait()
            held = self._held
            if self._quit.wait(self.delay): return None
            if self._idle.is_set() and held == self._held: return held
        return None

    def _load_ollama(self, model, s, nb):
        "Load a picked Ollama model with the window and keep-alive its first prompt will ask for (once per choice)."
        from ..models.ollama import keep_alive_value
        client, keep = self.assistant.router.ollama(s), keep_alive_value(s['keep_alive'])
        if keep == 0: return   # it would be unloaded at once: keep-alive says not to keep it
        window = prefix(self.assistant, s, model, nb)[1]['window']
        key = client.url, model, window, keep
        if key == self._loaded: return
        t = monotonic()
        client.load(model, keep_alive=keep, num_ctx=window)
        self._loaded = key
        self.last = dict(model=model, action='loaded', num_ctx=window, seconds=round(monotonic() - t, 3))

    def _warm_local(self, model, s, nb, held):
        "Fill the embedded model's cache with the next prompt's messages (up to its question, or with it)."
        from ..models.openai_client import _openai_msg
        t, url = monotonic(), self.assistant.router.local.url
        if url is None: return   # stopped meanwhile (unloaded)
        msgs, _ = prefix(self.assistant, s, model, nb)
        digest = _digest(msgs)
        if digest == self._warm: return
        body = dict(model=model.partition('/')[2], messages=[_openai_msg(m) for m in msgs], stream=True, max_tokens=1,
                    return_progress=True)   # a progress event per batch: a hang-up is seen at the next batch's end
        got = self._post(url + '/v1/chat/completions', body, held)
        if got is None: return
        with self._lock:
            if held == self._held: self._warm = digest
        self.last = dict(model=model, action='warmed', seconds=round(monotonic() - t, 3), **got)

    def _post(self, url, body, held)->dict|None:
        """Send a warm-up and read it to its end: {prompt tokens, cached, processed}; None if a cell cancelled it."""
        import requests
        if self._session is None: self._session = requests.Session()
        try: r = self._session.post(url, json=body, stream=True, timeout=(5, self.read_timeout))
        except requests.RequestException as e: return log.debug('boopiter_ext: warm-up not sent: %s', e)
        with self._lock:
            cancelled = held != self._held or self._quit.is_set()   # a cell started while the request was on its way
            if not cancelled: self._response = r
        if cancelled: return r.close()
        got = {}
        try:
            if r.status_code != 200: return log.debug('boopiter_ext: warm-up refused: HTTP %s', r.status_code)
            for line in r.iter_lines():
                if not line.startswith(b'data: {'): continue
                try: d = json.loads(line[6:])
                except ValueError: continue
                if isinstance(p := d.get('prompt_progress'), dict):
                    self.progress = got = dict(tokens=p.get('total'), cached=p.get('cache'), processed=p.get('processed'),
                                               time_ms=p.get('time_ms'))
            return got if held == self._held else None
        except (requests.RequestException, OSError): return None   # hung up: a cell started (or the engine stopped)
        finally:
            with self._lock: self._response = None
            r.close()
