"""The assistant's side of ghost text and "Edit this cell": which model, what it may read, and when it must wait.

The frontend asks on its comm; the channel answers each request from a thread of its own (faces/channel.py), so these
run beside the kernel's main thread, which may be running a cell. They read the notebook as the page shows it and the
settings, never the user's objects beyond their names, and they never raise: a failure is the answer's one-line reason.

- What a completion reads: the cell around the cursor, the code cells above it and the user's names, all minus what
  is hidden from the model (a cell tagged `boop-hide`, and the names only hidden cells define); nothing at all in a
  hidden cell.
- Where it goes: the completion model (`menu.completing`: a pick, else the smallest fill-in-the-middle model) on
  Ollama's host, a named Ollama endpoint of your own settings (never one a project's settings.ini declared: typing
  would send your code to a server a cloned repository chose), or the embedded model once it is running (a keystroke
  does not start it).
- When it waits: a prompt in flight or an "Edit this cell" asking the model wins it over completions (`busy`).

    inline = Inline(assistant)
    inline.complete('c3', 'def area(r):\\n    return ', '')   # {'text': 'math.pi * r ** 2', 'reason': '', 'ms': 120}
    inline.rewrite('c3', 'add a docstring', source)            # {'source': '...', 'reason': ''}
"""

__all__ = ['Inline']

import logging, threading, types
from ..context.build import HIDE_TAG

log = logging.getLogger('boopiter_ext')
_MAX_NAMES = 40


class Inline:
    "Ghost text and \"Edit this cell\" for one assistant (`Assistant.inline`)."
    def __init__(self, assistant):
        self.a, self._rewrites, self._lock, self._completer = assistant, 0, threading.Lock(), None

    @property
    def completer(self):
        "The kernel's `Completer`: the newest request wins, and a prompt or a rewrite in flight wins over all of them."
        with self._lock:
            if self._completer is None:
                from .completion import Completer
                self._completer = Completer(self._client, busy=self.busy, local=self._local_url)
            return self._completer

    def busy(self)->bool:
        "Whether the model is asked for something the user waits for: a prompt's reply, or a cell's new version."
        a = self.a
        return a._stopper is not None or a.background.running or self._rewrites > 0

    def cancel(self):
        "Stop the completion in flight: the user typed on."
        if self._completer is not None: self._completer.cancel()

    def close(self):
        "Stop what is in flight (`Assistant.close`)."
        if self._completer is not None: self._completer.close()

    def _local_url(self)->str:
        "The embedded model's address, once a prompt started it; a keystroke never starts it."
        local = self.a.router.local
        if not local.running:
            from ..errors import LocalModelError
            raise LocalModelError('The embedded model is not running yet: a prompt to it starts it.')
        return local.url

    def _client(self, model):
        "The Ollama client that serves `model`: Ollama's host, or a named Ollama endpoint of your own settings; else None."
        from ..models.routes import endpoint_of, route_name
        s = self.a.settings(nb=self.a.notebook())
        if route_name(model) == 'ollama': return self.a.router.ollama(s)
        if route_name(model) != 'endpoint': return None
        ep, _ = endpoint_of(model, s)
        if ep.kind != 'ollama' or (s.project and ep.where == s.project): return None   # a project's server: not as you type
        return self.a.router.endpoint(ep, s)

    def complete(self,
                 cell_id:str,  # The code cell typed in (its frontend id)
                 prefix:str,   # Its text before the cursor
                 suffix:str,   # Its text after it
                )->dict:       # {text, reason, ms}
        "A ghost-text completion at the cursor; never an exception."
        from .menu import completing
        a = self.a
        try:
            s = a.settings(nb=(nb := a.notebook()))
            if not s['completions']: return dict(text='', reason='completions are off', ms=0)
            cells = a.layout(nb) or []
            if any(c.cell_id == cell_id and HIDE_TAG in c.tags for c in cells):
                return dict(text='', reason='this cell is hidden from the model', ms=0)
            pick = completing(s, a.catalog.current(s))
            if not pick['on']: return dict(text='', reason=pick['why'], ms=0)
            return self.completer.complete(pick['model'], prefix, suffix, _above(cells, cell_id), self._names(nb))
        except Exception as e:   # a completion never breaks the notebook: its reason is a line
            log.debug('boopiter_ext: a completion failed', exc_info=True)
            return dict(text='', reason=f'{type(e).__name__}: {e}', ms=0)

    def _names(self, nb)->list:
        """Up to 40 names the user defined (no modules, tools or IPython's own, none only a hidden cell defines). Only
        names and types are read: nothing of the user's objects runs on this thread."""
        try: items = list(self.a.namespace.items())   # a copy from a thread: a change mid-copy makes it skip, rarely
        except RuntimeError: return []
        hidden = self.a.hidden(nb).names
        skip = {'In', 'Out', 'get_ipython', 'exit', 'quit'}
        return [k for k,v in items if not k.startswith('_') and k not in skip and k not in hidden
                and not isinstance(v, types.ModuleType) and not _tool(v)][:_MAX_NAMES]

    def rewrite(self,
                cell_id:str,      # The code cell to write anew
                instruction:str,  # What should change, in the user's words
                source:str,       # The cell as it stands
               )->dict:           # {source, reason}: the new version ('' and why, when there is none)
        "Edit this cell: the answering model's new version, which the page shows as a diff to accept or reject."
        from .rewrite import rewrite_messages, rewritten
        from ..models.stream import Reply, pump
        a = self.a
        with self._lock: self._rewrites += 1   # the model is the user's now: completions wait
        try:
            s = a.settings(nb=(nb := a.notebook()))
            cells = a.layout(nb) or []
            if any(c.cell_id == cell_id and HIDE_TAG in c.tags for c in cells):
                return dict(source='', reason='this cell is hidden from the model: show it to the model first (the eye)')
            model, _ = a.answering_model(s)
            reply, events = Reply(model), None
            try:
                events = a.router.chat(model, rewrite_messages(instruction, source, _above(cells, cell_id)), s,
                                       a.model_info(model, s, nb))
                pump(events, reply, lambda r: None, 1.0, limit=s['max_reply'] or 200_000)
            finally:
                if events is not None: events.close()
            new = rewritten(reply.answer, source)
            return dict(source=new, reason='' if new else 'the model gave no new version of the cell (no ```python block)')
        except Exception as e:   # one line in the page: the model, its server, or the answer
            return dict(source='', reason=f'{type(e).__name__}: {e}')
        finally:
            with self._lock: self._rewrites -= 1


def _above(cells, cell_id)->list:
    "The code cells above `cell_id`, hidden ones left out (as the model never sees them)."
    end = next((i for i,c in enumerate(cells) if c.cell_id == cell_id), len(cells))
    return [c.source for c in cells[:end] if c.kind == 'code' and HIDE_TAG not in c.tags]


def _tool(v)->bool:
    "Whether `v` is one of boopiter's tools, read off a function's own attributes (no user `__getattr__` runs)."
    return isinstance(v, types.FunctionType) and v.__dict__.get('boopiter_tool') is True
