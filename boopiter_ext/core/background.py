"""Replies that stream while the notebook stays usable: one at a time, in order, each on a thread of its own.

A face that can show a display's later updates (JupyterLab, Notebook 7) lets a prompt cell end as soon as its request
is on its way; the rest of the reply (the stream, its last update, its fault) runs here. Each thread runs in a copy of
its cell's `contextvars` context: ipykernel keeps a request's parent header in one, so every output a reply makes
(updates by display id, a fault's one line) lands in its own prompt cell, whatever cell runs meanwhile.

Order stays what the notebook says: a prompt started while a reply streams is queued behind it (its thread waits for
the one before), so it is composed and sent only once that reply has ended and sees all of it. A queued prompt can be
cancelled before it is sent (`cancel`: its Stop, the cell run again, Interrupt); its job is told so. The replies ask
nothing of the kernel's main thread (a tool loop waits in its cell), so nothing here can deadlock with a cell.

    bg = Background()
    bg.start(job, cell_id='c3', fault=show_one_line)   # job(cancelled) runs after the jobs before it; a raise -> fault
    bg.running, bg.holds('c3')                         # a reply streams or waits; one of that cell does
    bg.cancel('c4')                                    # that cell's queued prompt is not sent (its job sees `cancelled`)
    bg.wait(timeout=1.0)                               # True once none streams or waits
    bg.ended.append(callback)                          # callback() once the last one has ended (readiness)
"""

__all__ = ['Background']

import contextvars, logging, threading

log = logging.getLogger('boopiter_ext')


class _Job:
    "One reply's place in the queue: its cell, cancelled before it started, started, done (and every one before it)."
    def __init__(self, cell_id):
        self.cell_id, self.cancelled, self.done, self.started, self.thread = cell_id, threading.Event(), threading.Event(), False, None


class Background:
    "The replies streaming, or queued to stream, off the main thread: started, cancelled, waited for, told of."
    def __init__(self):
        self._lock, self._jobs = threading.Lock(), []   # in order; the first one streams
        self._tail = None   # the thread started last: it ends after every other one, its callbacks told
        self.ended = []   # callback() once no reply streams or waits, on the last one's thread

    @property
    def running(self)->bool:
        with self._lock: return bool(self._jobs)

    def holds(self, cell_id)->bool:
        "Whether a reply of cell `cell_id` streams or waits."
        with self._lock: return any(j.cell_id == cell_id for j in self._jobs)

    def start(self,
              job,            # job(cancelled): the reply's stream, its last update and record; may raise its fault
              cell_id=None,   # The prompt cell it streams into (the frontend's cell id), if known
              fault=None,     # fault(exception): show a fault in the prompt cell (called on the reply's thread)
             ):
        "Run `job` on a thread of its own once the replies before it have ended, in a copy of the calling context."
        entry = _Job(cell_id)
        with self._lock:
            before = self._jobs[-1] if self._jobs else None
            self._jobs.append(entry)
            ctx = contextvars.copy_context()
            entry.thread = self._tail = threading.Thread(target=ctx.run, args=(self._run, entry, before, job, fault),
                                                         name='boopiter-reply', daemon=True)
        entry.thread.start()

    def _run(self, entry, before, job, fault):
        try:
            while before is not None and not before.done.wait(0.05):
                if entry.cancelled.is_set(): break   # told at once; its place in the queue is kept below
            with self._lock: entry.started = not entry.cancelled.is_set()
            job(entry.cancelled)
        except Exception as e:   # a BoopError says what to do; anything else is a bug, still told in one line
            if not hasattr(e, '_render_traceback_'): log.warning('boopiter_ext: a reply failed', exc_info=True)
            if fault is not None:
                try: fault(e)
                except Exception: log.warning('boopiter_ext: showing a fault failed', exc_info=True)
        finally:
            if before is not None: before.done.wait()   # the ones after it wait for every one before it
            entry.done.set()
            with self._lock:
                self._jobs.remove(entry)
                last = not self._jobs   # the callbacks see none streaming
            if last: self._told()

    def _told(self):
        for cb in list(self.ended):
            try: cb()
            except Exception: log.warning('boopiter_ext: %r failed after a reply', cb, exc_info=True)

    def cancel(self,
               cell_id=None,  # The cell whose queued prompt is not to be sent; None: every queued one
              )->bool:        # Whether one was waiting
        "Cancel queued prompts that have not started (a streaming reply is stopped by its own Stop)."
        with self._lock:   # under the lock: a job starts either cancelled or not at all yet
            found = [j for j in self._jobs if not j.started and (cell_id is None or j.cell_id == cell_id)]
            for j in found: j.cancelled.set()
        return bool(found)

    def wait(self,
             timeout:float=None,  # Seconds at most; None: as long as it takes
            )->bool:              # Whether no reply streams or waits now
        "Wait for every reply streaming or queued now (in steps, so a KeyboardInterrupt in the main thread ends the wait)."
        with self._lock: last = self._tail
        if last is None: return True
        if timeout is not None: last.join(timeout)
        else:
            while last.is_alive(): last.join(0.1)
        return not last.is_alive()
