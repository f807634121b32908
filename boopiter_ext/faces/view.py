"""Showing a streaming reply: one display handle updated in place in Jupyter, plain text in a terminal.

The face of `stream.Reply` and `render`: in a kernel (ipykernel), a `display_data` with a display id,
then `update_display_data` with the same two mime types each time, the last one carrying the exact
full text. In a terminal IPython or a bare `InteractiveShell`, the answer is printed as it arrives.

Until the first token, the view says what the request waits for, and keeps saying it (every `tick` seconds, from a
thread of its own): the time so far, the step (`progress()`: the embedded model's start, else reading the prompt),
and why the tiny embedded model answers when nobody picked it. That reason stays visible above the reply.

    view.waiting('local/smollm2-135m', progress=router.local.status)   # 'loading the weights · 2 s', ...
"""

__all__ = ['ReplyView', 'KernelView', 'TerminalView', 'terminal_safe', 'why_line']

import re, sys, threading, uuid
from time import monotonic
from types import SimpleNamespace
from ..render.reply import REPLY_MIME, kept_line, reply_bundle, reply_plain, summary_line, MIME_KEY
from ..redact import mask, masked
from ..models.routes import route_name
from ..render.sanitize import SafeStream, inline_text

# escape sequences and control characters: model text must not retitle, recolour or rewrite a terminal
_TERMINAL_UNSAFE = re.compile(r'\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])|'
                              r'[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]')


def terminal_safe(s:str)->str:
    "Model text fit to print: no escape sequences, no control characters but newlines and tabs."
    return _TERMINAL_UNSAFE.sub('', s)


def why_line(model:str, route:dict=None)->str:
    "Why `model` answers, when it is the embedded model and nobody picked it (Ollama out of reach): the route's note."
    route = route or {}
    if route_name(model) != 'local' or route.get('picked_by') not in (None, '', 'auto'): return ''
    return route.get('note') or ''


def _elapsed(since)->str:
    "The time since `since`, in whole seconds ('' in the first one)."
    s = int(monotonic() - since)
    return '' if s < 1 else f'{s} s' if s < 60 else f'{s // 60} min {s % 60:02d} s'


class _Waiting:
    """What a reply waits for before its first token, told again every `tick` seconds by a thread of its own until
    `stop`: `say(self, why, step, elapsed)` shows it, under the view's lock, and never after `stop`."""
    def __init__(self, model, note, progress, route, ledger, say, lock, tick):
        self.model, self.note, self.progress, self.route, self.ledger = model, note, progress, route or {}, ledger or {}
        self.say, self.lock, self.tick, self.since, self.done = say, lock, tick, monotonic(), threading.Event()
        self.tell()
        threading.Thread(target=self._run, name='boopiter-waiting', daemon=True).start()

    def step(self)->str:
        "The embedded model's start (`progress()`, else the note), then reading the prompt (its estimated tokens)."
        try: step = self.progress() if self.progress is not None else self.note
        except Exception: step = self.note   # a progress source that fails costs the line its step, not the reply
        if step or route_name(self.model) != 'local': return step or ''
        return f'reading ~{self.ledger["tokens"]:,} prompt tokens' if self.ledger.get('tokens') else 'reading the prompt'

    def tell(self):
        why, step = why_line(self.model, self.route), self.step()
        with self.lock:
            if not self.done.is_set(): self.say(self, why, step, _elapsed(self.since))

    def _run(self):
        while not self.done.wait(self.tick): self.tell()

    def stop(self): self.done.set()


def ReplyView(shell, route:dict=None, ledger:dict=None, extension:bool=False):
    "The right view for `shell`: `KernelView` under ipykernel (`extension`: the frontend's renders it), else `TerminalView`."
    if hasattr(shell, 'kernel'): return KernelView(shell, route, ledger, markdown=not extension)
    return TerminalView(shell, route, ledger)


class KernelView:
    "A reply as one Jupyter display, updated in place."
    interval = 0.1   # at most ~10 updates a second: jupyter_server drops iopub messages above 1000/s
    tick = 0.5       # while waiting for the first token: the time so far and the step, twice a second

    def __init__(self, shell, route=None, ledger=None, markdown=True):
        self.pub, self.route, self.ledger, self.id = shell.display_pub, route, ledger, uuid.uuid4().hex
        self.shown, self.stream = False, SafeStream()   # the answer's finished blocks are made safe once
        self.markdown = markdown   # text/markdown in streaming updates too (else only in the final one)
        self._lock, self._waiting, self._said = threading.Lock(), None, None   # the waiting line's thread, last text
        self._last = None   # (data, metadata) sent last

    def _publish(self, data, md):
        data, md = masked(data), masked(md)   # a key a server echoed is never shown or saved
        self.pub.publish(data, md, transient={'display_id': self.id}, update=self.shown)
        self.shown = True

    def _send(self, data, md):
        "Publish a reply's update: the waiting line stops first, so no late tick can cover the reply."
        if self._waiting is not None: self._waiting.stop()
        with self._lock: self._publish(data, md)
        self._last = data, md

    def waiting(self,
                model:str,       # The model asked
                note:str='',     # What it waits for, when `progress` is not given
                progress=None):  # progress() -> the step it waits for now ('' once the model reads the prompt)
        "Show that the request is on its way, then, until the first token, for how long and at which step."
        if self._waiting is not None: self._waiting.stop()
        self._said = None
        self._waiting = _Waiting(model, note, progress, self.route, self.ledger, self._say_waiting, self._lock, self.tick)

    def _say_waiting(self, w, why, step, elapsed):
        said = ' · '.join(filter(None, [why, step]))
        if (said, elapsed) == self._said: return   # seconds shown whole: most ticks change nothing
        self._said = said, elapsed
        line = ' · '.join(filter(None, [f'waiting for {w.model}', said, elapsed]))
        data = dict(version=1, kind='reply', model=w.model, status='waiting', blocks=[], reasoning='', reasoning_label='',
                    reasoning_streaming=False, reused=False, summary=line, details=[],
                    **dict(note=said) if said else {})   # the frontend's live line shows the note, and its own timer
        # the same mime types as every update: the frontend keeps one view, and its stop button
        text = f'*{inline_text(line[0].upper() + line[1:])} …*'
        self._publish({REPLY_MIME: data, 'text/markdown': text, 'text/plain': ''},
                      {MIME_KEY: dict(reply=True, model=w.model, status='waiting', **{k: v for k,v in
                                      dict(why=why, step=step).items() if v})})   # `boopiter-run` prints them

    def queued(self,
               line:str,               # What it waits for, or why it ended before it was sent
               status:str='waiting'):  # 'waiting' while queued; 'interrupted' or 'error' when it ends unsent
        "A prompt queued behind the reply streaming now: its view says so (with its Stop) until its own request starts."
        data = dict(version=1, kind='reply', model='', status=status, blocks=[], reasoning='', reasoning_label='',
                    reasoning_streaming=False, reused=False, summary=line, details=[], note=line)
        self._send({REPLY_MIME: data, 'text/markdown': f'*{inline_text(line[0].upper() + line[1:])}*', 'text/plain': ''},
                   {MIME_KEY: dict(reply=True, model='', status=status)})

    def _with_why(self, data, reply):
        "The bundle with why the embedded model answers, visible: a line above the answer, and in the frontend's note."
        why = why_line(reply.model, self.route)
        if not why or REPLY_MIME not in data: return data
        data = dict(data)
        data[REPLY_MIME] = {**data[REPLY_MIME], 'note': '; '.join(filter(None, [why, data[REPLY_MIME].get('note')]))}
        if 'text/markdown' in data: data['text/markdown'] = f'*ℹ {inline_text(why)}*\n\n' + data['text/markdown']
        return data

    def update(self, reply):
        data, md = reply_bundle(reply, self.route, self.ledger, self.stream, self.markdown)
        self._send(self._with_why(data, reply), md)

    def show(self, data:dict, md:dict)->dict:
        "Show a finished reply as it was saved (a reused one); return it as an nbformat output."
        data, md = masked(data), masked(md)
        self._send(data, md)
        return dict(output_type='display_data', data=data, metadata=md)

    def final(self, reply)->dict:
        "Send the last update (always, with the exact full text) and return it as an nbformat output."
        data, md = reply_bundle(reply, self.route, self.ledger)
        if reply.status != 'done' and not reply.answer and not reply.reasoning:
            data.update({'text/markdown': f'*No reply from {inline_text(reply.model)}.*', 'text/plain': ''})
        data, md = masked(self._with_why(data, reply)), masked(md)
        self._send(data, md)
        return dict(output_type='display_data', data=data, metadata=md)

    def refresh(self, reply):
        "Send the reply's last bundle again (reused, kept or asked) with what was learnt of it since: the blocks that ran."
        if self._last is None or REPLY_MIME not in self._last[0]: return
        data, md = self._last
        self._send({**data, REPLY_MIME: {**data[REPLY_MIME], 'ran_blocks': reply.info.get('ran_blocks')}}, md)


class TerminalView:
    "A reply printed as plain text while it streams (terminal IPython, bare InteractiveShell); reasoning dimmed first."
    interval = 0.02
    tick = 0.5

    def __init__(self, shell, route=None, ledger=None):
        self.route, self.ledger, self.printed, self.thought = route, ledger, 0, 0
        self.dim = sys.stdout.isatty()
        self._lock, self._waiting, self._line = threading.Lock(), None, None   # _line: the waiting line shown last

    def _write(self, s):
        sys.stdout.write(mask(s))
        sys.stdout.flush()

    def waiting(self, model:str, note:str='', progress=None):
        """Say why this model answers (once), and what the request waits for: "starting the model …" while the
        embedded model starts. On a terminal one line is rewritten in place, with the time so far, until the first
        token; elsewhere (a pipe, a test) each new step gets a line of its own."""
        if self._waiting is not None: self._waiting.stop()
        self._line = None
        self._waiting = _Waiting(model, note, progress, self.route, self.ledger, self._say_waiting, self._lock, self.tick)

    def _say_waiting(self, w, why, step, elapsed):
        if self._line is None and why: self._write(terminal_safe(f'[{why}]') + '\n')
        if route_name(w.model) == 'local' and step and not step.startswith('reading'):   # the embedded model starts
            step = 'starting the model' + ('' if step == w.note else f': {step}')
        if step and self.dim: self._write(f'\r\x1b[2K{terminal_safe(" · ".join(filter(None, [step, elapsed])))} …')
        elif step and step != self._line: self._write(terminal_safe(f'{step} …') + '\n')
        self._line = step

    def _end_waiting(self):
        "Stop the waiting line; on a terminal, clear it for the reply."
        if self._waiting is None: return
        self._waiting.stop()
        with self._lock:
            if self.dim and self._line: self._write('\r\x1b[2K')
            self._waiting = self._line = None

    def show(self, data:dict, md:dict)->dict:
        "Print a saved reply again (a reused or kept one), marked so."
        self._end_waiting()
        b = md.get(MIME_KEY, {})
        mark = (b['stale'] if isinstance(b.get('stale'), str) else
                kept_line(SimpleNamespace(model=b.get('model')), b) if b.get('kept') else
                'reused: the saved reply to this same conversation')
        self._write(terminal_safe(data.get('text/plain', '') + f'\n[{mark}]') + '\n')
        return dict(output_type='display_data', data=masked(data), metadata=masked(md))

    def _think(self, reply):
        "Print reasoning as it grows, until the answer starts (a terminal cannot fold it away afterwards)."
        text = reply.reasoning
        if self.printed or len(text) <= self.thought: return
        new = text[self.thought:]
        if not self.thought: new = 'reasoning: ' + new.lstrip()
        new = terminal_safe(new)
        self._write(f'\x1b[2m{new}\x1b[0m' if self.dim else new)
        self.thought = len(text)

    def update(self, reply):
        self._end_waiting()
        self._think(reply)
        text = reply.answer
        if text and self.thought and not self.printed: self._write('\n\n')
        self._write(terminal_safe(text[self.printed:]))
        self.printed = len(text)

    def final(self, reply)->dict:
        if reply.unclosed and self.thought and not self.printed:   # what was printed as reasoning became the answer
            self.printed = len(reply.answer)
        self.update(reply)
        plain = reply_plain(reply)
        warning = f'\n[warning: {self.ledger["warning"]}]' if (self.ledger or {}).get('warning') else ''
        note = f'\n[{reply.note}]' if reply.note else ''
        self._write(terminal_safe(plain[self.printed:] + f'\n[{summary_line(reply)}]{note}{warning}') + '\n')
        data, md = reply_bundle(reply, self.route, self.ledger)
        return dict(output_type='display_data', data=masked(data), metadata=masked(md))

    def refresh(self, reply): "A terminal printed the reply once: nothing to send again."
