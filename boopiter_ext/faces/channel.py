"""The frontend's channel: the comm through which the JupyterLab / Notebook 7 extension (js/) and the kernel talk.

The kernel stays the brain: the extension shows what the `state` says and sends what the user picks. One comm
target, `boopiter`, in both directions; JSON messages with a `type` (js/src/protocol/messages.ts mirrors this):

    frontend -> kernel   {type: 'hello', version: 1, binding, cells}   on every connection (the comm's open data): the
                                                                  binding the notebook's metadata holds (unsaved too),
                                                                  and its cells (see `notebook`)
                         {type: 'notebook', cells: [{id, cell_type, source, tags}]}   the notebook as it shows it,
                                                                  unsaved edits included: on changes, and before a
                                                                  prompt cell runs
                         {type: 'refresh'}                        list the models again
                         {type: 'pick', changes: {model: ...}}    a null value removes that pick; a click, so what it
                                                                  turns on of auto-run and the tools that act or reach
                                                                  out is remembered as yours for this notebook
                         {type: 'allow', items: ['auto', 'web']}  the menu's Allow: accept what the notebook proposes
                                                                  (as the menu showed it) for it, on this machine
                         {type: 'preview', id, source}            a prompt cell's dry run: what it would send
                         {type: 'stop', cell_id}                  the reply view's Stop: the reply streaming in that cell
                                                                  ends now, as *interrupted*, and the cell without an
                                                                  error (sent over the comm's subshell, so it is read
                                                                  while the prompt cell runs; no answer)
                         {type: 'edit_result', id, ok, message, status?, cell?}   what the notebook did with an
                                                                  `edit`; for `run`: ran, skipped or stopped, the cell
                         {type: 'fresh', cell_id}                 the reply view's Ask again: the next run of that
                                                                  prompt cell asks the model (sent before the run)
                         {type: 'complete', id, cell_id, prefix, suffix}   ghost text at a code cell's cursor (the
                                                                  inline completer's; answered from a thread)
                         {type: 'rewrite', id, cell_id, instruction, source}   edit this cell: the model's new version
    kernel -> frontend   {type: 'state', version: 1, state}       `menu.menu_state`: after hello, picks, refresh, allow,
                                                                  and when a prompt found its server down or back up
                                                                  (`state.consent`: what the notebook proposes beyond
                                                                  what you allowed, and the line that says so)
                         {type: 'binding', binding}               after every change: the extension saves it in
                                                                  `metadata.boopiter.binding`
                         {type: 'preview', id, markdown, text}    the dry run (Markdown to render untrusted)
                         {type: 'completion', id, text, reason}   the ghost text ('' and why, when there is none)
                         {type: 'rewrite', id, source, reason}    the cell's new version, shown as a diff to accept
                         {type: 'edit', id, op, prompt, ...}      a change the model's notebook tools ask for, allowed
                                                                  by the guards: `add` {after, source, cell_type} made
                                                                  at once; `edit` {cell, source, expect} and `delete`
                                                                  {cell, expect} made once the user accepts the diff
                                                                  in the cell, refused unless the cell's text is still
                                                                  `expect`; `prompt`: the prompt cell asking, whose bar
                                                                  undoes its reply's changes as one step
                         {type: 'edit', id, op: 'run', prompt, source, agent, attend, reason}   agent mode: put the
                                                                  model's cell below the prompt (after its earlier
                                                                  ones), run it on the user's Run (or under "the rest
                                                                  of this reply" of `agent`, unless `attend`: then it
                                                                  asks every time, saying `reason`)
                         {type: 'edit_cancel', id}                the kernel stopped waiting for that edit (interrupt,
                                                                  Stop, or no answer in time): its review is withdrawn
                         {type: 'error', message}                 one line, for the menu to show

The kernel registers the target when the extension loads (so a frontend opens a comm on every page load, kernel
restart or reconnection), and opens one itself with `{type: 'announce', version: 1}` (so a frontend connected before
`%load_ext` learns of it at once, and says hello on it). That hello waits for the comm's subshell, so a prompt cell
queued right behind `%load_ext` (Run All) could run before it: the frontend therefore also opens a comm with a hello
on the main shell as it schedules a prompt while no hello was answered, which the kernel reads right before the
prompt. Once the kernel answers on that comm, the frontend keeps it and closes the announced one.
Messages from the frontend may arrive on a comm subshell's thread while a cell runs; handling never raises: a
failure goes back as an `error` message and to the log.
"""

__all__ = ['Channel', 'TARGET', 'VERSION']

import logging, threading, time, uuid
from ..core.binding import BINDING_KEYS

TARGET, VERSION = 'boopiter', 1
ADD_S, REVIEW_S = 20.0, 600.0   # how long an edit may take: made at once; reviewed by the user first
_MAX_TEXT = 1_000_000   # characters of a cell a completion or an "edit this cell" carries
log = logging.getLogger('boopiter_ext')


class Channel:
    "The comms of every frontend showing this notebook (two browser tabs are two), kept in step with the assistant."
    def __init__(self,
                 assistant,            # The `assistant.Assistant` the frontend shows and steers
                 on_pick=lambda: None, # Called after a pick, on the handling thread (the widget menu redraws)
                 preview=None):        # preview(source) -> (data, metadata): a prompt cell's dry run
        self.assistant, self.on_pick, self.preview, self.comms, self._lock = assistant, on_pick, preview, {}, threading.Lock()
        self.hello = threading.Event()   # set once a frontend has said hello: then there is a menu in its toolbar
        self._edits, self._last = {}, None   # edit id -> [event, result]; the comm that said hello last

    @property
    def connected(self)->bool: return self.hello.is_set() and bool(self.comms)

    def register(self):
        "Take comms the frontend opens, announce this kernel to a frontend already connected, and follow the binding."
        from comm import create_comm, get_comm_manager
        get_comm_manager().register_target(TARGET, self._opened)
        self.assistant.listeners.append(self._binding_changed)
        self.assistant.state_listeners.append(self.refresh_state)
        try: self._add(create_comm(target_name=TARGET, data=dict(type='announce', version=VERSION)))   # cheap: no state
        except Exception: log.debug('boopiter_ext: no frontend took the announcement', exc_info=True)

    def unregister(self):
        "Undo `register`: no target, no listener, every comm closed."
        from comm import get_comm_manager
        manager = get_comm_manager()
        if manager.targets.get(TARGET) == self._opened: manager.unregister_target(TARGET, self._opened)
        if self._binding_changed in self.assistant.listeners: self.assistant.listeners.remove(self._binding_changed)
        if self.refresh_state in self.assistant.state_listeners: self.assistant.state_listeners.remove(self.refresh_state)
        with self._lock: comms, self.comms = list(self.comms.values()), {}
        for c in comms:
            try: c.close()
            except Exception: pass
        self.hello.clear()

    def _add(self, comm):
        with self._lock: self.comms[comm.comm_id] = comm
        # messages from the frontend go where it sent them (JupyterLab's comm subshell), not to the shell that last
        # published on this comm: an edit's result must arrive while the prompt that asked for it still runs
        if hasattr(comm, '_reply_subshell_for'): comm._reply_subshell_for = lambda data, default: default
        comm.on_msg(lambda msg: self._handle(comm, msg['content']['data']))
        comm.on_close(lambda msg: self._closed(comm))

    def _closed(self, comm):
        with self._lock:
            self.comms.pop(comm.comm_id, None)
            # a frontend keeps one comm of two that said hello (its knock, see the module docstring): edits go to the other
            if self._last is comm: self._last = next(reversed(self.comms.values()), None)
        if not self.comms:   # no frontend shows the notebook now: nobody sees a reply streaming on after its cell
            self.hello.clear()
            self.assistant.shown = None
            if self.assistant.background.running: self.assistant.stop()   # every one: stopped, or not sent

    def _opened(self, comm, msg):
        self._add(comm)
        self._handle(comm, msg['content'].get('data') or {})

    # -- from the frontend
    def _handle(self, comm, data):
        "Answer one message; a bad one or a failure is an `error` message, never an exception in the kernel."
        try:
            kind = data.get('type') if isinstance(data, dict) else None
            if kind in ('hello', 'notebook') and 'cells' in data: self.assistant.shown = data['cells']   # checked on use
            if kind == 'notebook': return
            if kind == 'edit_result': return self._edited(data)
            if kind == 'stop': return self._stop(data.get('cell_id'))
            if kind == 'fresh': return self.assistant.ask_again(data.get('cell_id'))   # checked there; no answer
            if kind in ('complete', 'rewrite'): return self._answer_on_thread(comm, data)
            if kind == 'hello':
                self.hello.set()
                self._last = comm
                binding = data.get('binding')
                self.assistant.adopt_binding(binding if isinstance(binding, dict) else None)
                if not self.assistant.catalog.last.entries: self._refresh()
                self._send(comm, self._state_msg())
                self._send(comm, self._binding_msg())
            elif kind == 'preview' and self.preview is not None and isinstance(data.get('source'), str):
                try: body, _ = self.preview(data['source'])
                except Exception as e: body = {'text/markdown': f'*{type(e).__name__}*', 'text/plain': str(e)}
                self._send(comm, dict(type='preview', id=data.get('id'), markdown=body['text/markdown'], text=body['text/plain']))
            elif kind == 'refresh':
                self._refresh()
                self.broadcast(self._state_msg())
            elif kind == 'pick':
                changes = data.get('changes')
                if not isinstance(changes, dict) or not changes or set(changes) - set(BINDING_KEYS):
                    return self._send(comm, dict(type='error', message=f'A pick names only {", ".join(BINDING_KEYS)}.'))
                a = self.assistant
                a.consent.picked(changes, a.notebook(), remember=True)   # your click: yours for this notebook from now
                a.set_binding(**changes)   # the listener sends the binding and the state to every frontend
                self.on_pick()
            elif kind == 'allow':
                items = data.get('items')
                if not isinstance(items, list) or not items or len(items) > 50:
                    return self._send(comm, dict(type='error', message='An allow names what the menu showed: `items`.'))
                a = self.assistant
                nb = a.notebook()
                proposed = a.settings(nb=nb).proposed   # only what is proposed now: a changed proposal needs a new click
                a.consent.accept([i for i in items if i in proposed], nb)
                self.broadcast(self._state_msg())
                self.on_pick()
            else: self._send(comm, dict(type='error', message=f'Unknown message {kind!r} for the boopiter kernel.'))
        except Exception as e:
            log.warning('boopiter_ext: a message from the frontend failed', exc_info=True)
            self._send(comm, dict(type='error', message=str(e) or type(e).__name__))

    def _answer_on_thread(self, comm, data):
        """A completion or an "edit this cell", answered from a thread of its own: it asks a model, and the channel (and
        the kernel's main thread, which may be running a cell) go on meanwhile. Every field is checked here."""
        a, kind, rid = self.assistant, data['type'], data.get('id')
        fields = ('cell_id', 'prefix', 'suffix') if kind == 'complete' else ('cell_id', 'instruction', 'source')
        if not (isinstance(rid, str) and 0 < len(rid) <= 200):
            return self._send(comm, dict(type='error', message=f'A {kind} names its id: a text.'))
        bad = [f for f in fields if not isinstance(data.get(f), str) or len(data[f]) > _MAX_TEXT]
        if not bad and kind == 'rewrite' and not data['instruction'].strip(): bad = ['instruction']
        if bad:   # answered at once, so the page does not wait for it
            why = f'a {kind} needs {", ".join(fields)} as texts; `{bad[0]}` is not one'
            return self._send(comm, dict(type='completion', id=rid, text='', reason=why) if kind == 'complete' else
                              dict(type='rewrite', id=rid, source='', reason=why))
        if kind == 'complete' and not (data['prefix'].strip() or data['suffix'].strip()):
            return a.inline.cancel()   # the user typed on: here, in order, before the next request's thread starts
        def answer():
            if kind == 'complete':
                got = a.inline.complete(data['cell_id'], data['prefix'], data['suffix'])
                msg = dict(type='completion', id=rid, text=got['text'], reason=got['reason'])
            else:
                got = a.inline.rewrite(data['cell_id'], data['instruction'], data['source'])
                msg = dict(type='rewrite', id=rid, source=got['source'], reason=got['reason'])
            self._send(comm, msg)
        threading.Thread(target=answer, name=f'boopiter-{kind}', daemon=True).start()

    def _stop(self, cell_id):
        "The reply view's Stop, on this comm's thread while the prompt cell runs on the main one."
        self.assistant.stop(cell_id if isinstance(cell_id, str) and 0 < len(cell_id) <= 200 else None)

    def _refresh(self):
        a = self.assistant
        a.catalog.refresh(a.settings(nb=a.notebook()))

    # -- the notebook's changes, carried out by the frontend
    def _ask_page(self,
                  request:dict,   # An `edit` request (see the protocol above), without its id
                  given_up,       # given_up(comm) -> bool, asked every 0.2 s: stop waiting, withdraw the request
                 )->tuple:        # (sent, the page's `edit_result` or None once given up); (False, None): no frontend
        """Send `request` to the frontend that said hello last, marked with the prompt cell asking (its Undo bar's),
        and wait for its answer; given up, or interrupted, the request is withdrawn (`edit_cancel`)."""
        comm = self._last if self._last is not None and self._last.comm_id in self.comms else None
        if comm is None or not self.connected: return False, None
        rid, done = uuid.uuid4().hex, threading.Event()
        self._edits[rid] = [done, None]
        prompt = getattr(self.assistant.current, 'cell_id', None)
        self._send(comm, dict(request, type='edit', id=rid, **({'prompt': prompt} if prompt else {})))
        try:
            while not done.wait(0.2):
                if given_up(comm):
                    self._send(comm, dict(type='edit_cancel', id=rid))   # a review still shown would make it later
                    return True, None
            return True, self._edits[rid][1]
        except BaseException:   # an interrupt while the user reviews: the review goes too
            self._send(comm, dict(type='edit_cancel', id=rid))
            raise
        finally: self._edits.pop(rid, None)

    def edit(self,
             request:dict,         # `op` ('add', 'edit' or 'delete') and its fields (see the protocol above)
             timeout:float=None,   # Seconds to wait for the notebook to say what it did; None: `REVIEW_S` for what
                                   # the user reviews (an edit, a deletion), else `ADD_S`
            )->tuple|None:         # (ok, message for the model); None when no frontend is there to do it
        "Ask the frontend to change the notebook (an edit once the user accepts it), and wait for what it did."
        reviewed = request.get('op') in ('edit', 'delete')
        timeout = timeout if timeout is not None else REVIEW_S if reviewed else ADD_S
        deadline = time.monotonic() + timeout
        sent, result = self._ask_page(request, lambda comm: time.monotonic() > deadline)
        if not sent: return None
        if result is None:
            return False, (f'the user did not accept the change within {timeout:g} s, so it was not made' if reviewed else
                           f'the notebook did not say within {timeout:g} s whether it made the change; look at '
                           'the notebook before trying again')
        return bool(result.get('ok')), str(result.get('message') or ('done' if result.get('ok') else 'refused'))[:500]

    def step(self,
             request:dict,               # `op: 'run'` and its fields (see the protocol above)
             stopped:threading.Event,    # Set when the user stops the reply: the wait ends, the step is withdrawn
            )->dict|None:                # The page's `edit_result` ({status, cell, ...}); None: stopped, or no page
        """Ask the frontend to put a cell of the model's below the prompt and run it once the user says (agent mode),
        and wait for what became of it: as long as the user takes to decide and the cell to run, until Stop, or until
        the page is gone."""
        _, got = self._ask_page(request, lambda comm: stopped.is_set() or not self.connected or comm.comm_id not in self.comms)
        if got is None: return None
        cell = got.get('cell')   # the page's word: untrusted, kept only as the protocol has it
        return dict(status=got.get('status') if got.get('status') in ('ran', 'skipped', 'stopped') else 'stopped',
                    cell=cell if isinstance(cell, str) and 0 < len(cell) <= 200 else '')

    def _edited(self, data):
        pending = self._edits.get(data.get('id'))
        if pending is not None:
            pending[1] = data
            pending[0].set()

    # -- to the frontend
    def state(self)->dict:
        "The brain menu's state now (`menu.menu_state`)."
        from ..core.menu import menu_state
        a = self.assistant
        nb = a.notebook()
        s = a.settings(nb=nb)
        listing = a.catalog.current(s)
        return menu_state(s, listing, offered=list(a.tool_list(s, nb, wait=False)), notebook=nb.name if nb else '',
                          window=lambda model: a.menu_window(model, s, listing))

    def _state_msg(self): return dict(type='state', version=VERSION, state=self.state())
    def _binding_msg(self): return dict(type='binding', binding=self.assistant.binding(self.assistant.notebook()))

    def _binding_changed(self, binding):
        self.broadcast(dict(type='binding', binding=binding))
        self.broadcast(self._state_msg())

    def _send(self, comm, msg):
        try: comm.send(msg)
        except Exception: log.debug('boopiter_ext: a frontend went away', exc_info=True)

    def broadcast(self, msg:dict):
        "Send `msg` to every frontend showing this notebook."
        if not self.comms: return
        with self._lock: comms = list(self.comms.values())
        for c in comms: self._send(c, msg)

    def refresh_state(self):
        "Tell every frontend the state again (after a `%config`, `%boop` or a prompt)."
        if self.comms: self.broadcast(self._state_msg())
