"""When a prompt cell ends before its reply does: the kernel's side of `core/background.py`.

In JupyterLab and Notebook 7, with boopiter's extension showing the replies, a prompt cell ends once its request is on
its way, and the reply streams on into it (updates by display id) while other cells run. This module decides when
that applies, and does what only ipykernel can:

- `streams_on(magics, settings)`: whether a reply asked now streams on after its cell, and why (`%boop status` says
  it). The request running now tells who runs the cell: JupyterLab and Notebook 7 send the cell's id and answer input;
  nbclient, papermill and `boopiter-run` answer no input (they must save whole replies), VS Code's cell ids say so.
- `queue_prompt`: a prompt started while a reply streams ends at once too; its view says it waits (with its Stop), and
  it is composed and sent on its own thread once the replies before it have ended, so it sees them whole.
- `wait_for_reply`: where a prompt's cell must end with its reply (a tool loop, a headless run), it waits in its cell,
  saying so, for the replies streaming now.
- `IdleInterrupt`: Kernel › Interrupt while no cell runs stops the streaming reply (ipykernel ignores SIGINT when idle;
  it puts back `kernel.saved_sigint_handler` after every request). An interrupt while a cell runs stays that cell's.
- `show_fault`: a fault of a background reply, one line in its own cell (the thread keeps the cell's parent header).
"""

__all__ = ['streams_on', 'queue_prompt', 'wait_for_reply', 'IdleInterrupt', 'show_fault']

import signal, threading
from ..errors import BoopError, ReplyInterrupted


def _from_lab(shell)->bool:
    "Whether the request running now comes from JupyterLab or Notebook 7: it carries their cell id and answers input."
    try: parent = shell.kernel.get_parent() or {}
    except Exception: return False
    cell_id = (parent.get('metadata') or {}).get('cellId')
    return bool((parent.get('content') or {}).get('allow_stdin')) and isinstance(cell_id, str) and bool(cell_id) \
        and not cell_id.startswith('vscode-notebook-cell:')


def streams_on(
    magics,     # The `BoopMagics`: its shell and whether the extension shows this kernel's replies
    settings,   # The prompt's settings
)->tuple:       # (whether a reply asked now streams on after its cell ends, why, in a few words)
    "Whether a prompt cell run now ends once its request is on its way (the reply streaming on into it), and why."
    if not settings['background']: return False, f'the cell ends with its reply: `background` is off ({settings.source["background"]})'
    if settings['auto']: return False, 'the cell ends with its reply: a tool loop (auto mode) runs your kernel\'s code'
    if not _from_lab(magics.shell): return False, ('the cell ends with its reply: it was not run from JupyterLab or '
                                                   'Notebook 7 (a headless run: nbclient, papermill, boopiter-run; VS '
                                                   'Code; a terminal), so a saved notebook holds whole replies')
    if not magics.frontend: return False, ("the cell ends with its reply: boopiter's extension does not show this "
                                           "notebook's replies here")
    return True, 'the cell ends once its request is on its way; the reply streams on into it while other cells run'


def queue_prompt(
    magics,               # The `BoopMagics` whose prompt cell runs now
    question:str,         # The prompt's question
    settings,             # Its settings, as they are now
    with_context:bool,    # Send the notebook above it
    fault,                # fault(exception): one line in its cell
):
    """Queue a prompt behind the replies streaming now and end its cell: its view says it waits (its Stop cancels it),
    and once they have ended it is composed (the notebook above it, those replies whole) and sent on its own thread."""
    from .view import ReplyView
    a, cell = magics.assistant, magics.recorder.current
    shown = ReplyView(magics.shell, extension=magics.frontend)
    shown.queued('waiting for the reply above to end, so that this prompt sees all of it')
    def view(route, ledger):   # the request starts: the same display goes on with the reply
        shown.route, shown.ledger = route, ledger
        return shown
    def job(cancelled):
        if cancelled.is_set(): return shown.queued('stopped before it was sent', 'interrupted')
        a.here(cell)   # the notebook above this cell, and its record, whatever cell runs now
        try: a.answer(question, settings, view=view, show=magics._show_raw, with_context=with_context)
        except Exception:
            if shown.route is None: shown.queued('not sent', 'error')   # its fault says why, in one line below
            raise
    a.background.start(job, getattr(cell, 'cell_id', None), fault)


def wait_for_reply(
    assistant,       # The kernel's `Assistant`
):
    """Wait, in the cell, for the replies streaming or queued now, saying so. An interrupt ends the wait (those
    replies stream on) and nothing is sent."""
    from IPython.display import clear_output
    bg = assistant.background
    if not bg.running: return
    print('Waiting for the reply streaming above to end, so that this prompt sees all of it …', flush=True)
    try: bg.wait()
    except KeyboardInterrupt:
        raise ReplyInterrupted('Interrupted while waiting for the reply above to end; nothing was sent.') from None
    clear_output(wait=True)   # the waiting line goes when this reply's first output comes


def show_fault(shell, e:BaseException):
    "Show a background reply's fault in its cell as one line (a bug too: its traceback goes to the log, not the cell)."
    if not isinstance(e, BoopError): e = BoopError(f'The reply failed: {type(e).__name__}: {e}. This is a bug in '
                                                   'boopiter_ext; the kernel log has its traceback.')
    shell.showtraceback((type(e), e, e.__traceback__))


class IdleInterrupt:
    "Kernel › Interrupt while no cell runs: stop the reply streaming in the background."
    def __init__(self,
                 kernel,   # The ipykernel kernel (its `saved_sigint_handler`)
                 stop):    # stop(): stop the streaming reply, if any
        self.kernel, self.stop, self._was = kernel, stop, None
        self.handler = lambda signum, frame: self.stop()

    def install(self):
        "From now on an idle kernel's SIGINT stops the reply (ipykernel puts this handler back after each request)."
        self._was = getattr(self.kernel, 'saved_sigint_handler', signal.SIG_IGN)
        self.kernel.saved_sigint_handler = self.handler   # put in place when the request running now ends
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            signal.signal(signal.SIGINT, self.handler)   # loaded outside a request (ipython_config): idle now

    def uninstall(self):
        "Undo `install`: the idle kernel ignores SIGINT again."
        if self._was is None: return
        if getattr(self.kernel, 'saved_sigint_handler', None) is self.handler: self.kernel.saved_sigint_handler = self._was
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is self.handler:
            signal.signal(signal.SIGINT, self._was)
        self._was = None
