"""A reply that streams while the notebook stays usable: one reply at a time on a thread of its own.

A face that can show a display's later updates (JupyterLab, Notebook 7) lets a prompt cell end as soon as its request
is on its way; the rest of the reply (the stream, its last update, its fault) runs here. The thread runs in a copy of
the cell's `contextvars` context: ipykernel keeps a request's parent header in one, so every output the reply makes
(updates by display id, a fault's one line) lands in the prompt cell, whatever cell runs meanwhile.

Order stays what the notebook says: a later prompt waits for the reply streaming now (`wait`), so it sees the whole
reply, never half of it; the reply asks nothing of the kernel's main thread (a tool loop waits in its cell), so that
wait cannot deadlock.

    bg = Background()
    bg.start(job, cell_id='c3', fault=show_one_line)   # job() streams the reply; a BoopError it raises goes to fault
    bg.running, bg.cell_id                             # a reply streams, in that cell
    bg.wait(timeout=1.0)                               # True once none streams
    bg.ended.append(callback)                          # callback() after each reply (readiness gets ready again)
"""

__all__ = ['Background']

import contextvars, logging, threading

log = logging.getLogger('boopiter_ext')


class Background:
    "The reply streaming off the main thread, if any: started, waited for, and told of when it ends."
    def __init__(self):
        self._lock, self._thread, self.cell_id = threading.Lock(), None, None
        self.ended = []   # callback() after each reply ends, on its thread

    @property
    def running(self)->bool:
        with self._lock: return self._thread is not None

    def start(self,
              job,            # job() -> None: the reply's stream, its last update and record; may raise its fault
              cell_id=None,   # The prompt cell it streams into (the frontend's cell id), if known
              fault=None,     # fault(exception): show a fault in the prompt cell (called on the reply's thread)
             ):
        "Run `job` on a thread of its own, in a copy of the calling context (the cell's); one at a time."
        if self.running: raise RuntimeError('a reply is streaming already: `wait` for it first')
        ctx = contextvars.copy_context()
        t = threading.Thread(target=ctx.run, args=(self._run, job, fault), name='boopiter-reply', daemon=True)
        with self._lock: self._thread, self.cell_id = t, cell_id
        t.start()

    def _run(self, job, fault):
        try: job()
        except Exception as e:   # a BoopError says what to do; anything else is a bug, still told in one line
            if not hasattr(e, '_render_traceback_'): log.warning('boopiter_ext: a reply failed', exc_info=True)
            if fault is not None:
                try: fault(e)
                except Exception: log.warning('boopiter_ext: showing a fault failed', exc_info=True)
        finally:
            with self._lock: self._thread = self.cell_id = None   # ended: the callbacks see none streaming
            for cb in list(self.ended):
                try: cb()
                except Exception: log.warning('boopiter_ext: %r failed after a reply', cb, exc_info=True)

    def wait(self,
             timeout:float=None,  # Seconds at most; None: as long as it takes
            )->bool:              # Whether no reply streams now
        "Wait for the reply streaming now to end (in steps, so a KeyboardInterrupt in the main thread ends the wait)."
        with self._lock: t = self._thread
        if t is None: return True
        if timeout is not None: t.join(timeout)
        else:
            while t.is_alive(): t.join(0.1)
        return not t.is_alive()
