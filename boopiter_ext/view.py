"""Showing a streaming reply: one display handle updated in place in Jupyter, plain text in a terminal.

The face of `stream.Reply` and `render`: in a kernel (ipykernel), a `display_data` with a display id,
then `update_display_data` with the same two mime types each time, the last one carrying the exact
full text. In a terminal IPython or a bare `InteractiveShell`, the answer is printed as it arrives.
"""

__all__ = ['ReplyView', 'KernelView', 'TerminalView', 'terminal_safe']

import re, sys, uuid
from .render import REPLY_MIME, reply_bundle, reply_plain, summary_line, MIME_KEY
from .sanitize import SafeStream, inline_text

# escape sequences and control characters: model text must not retitle, recolour or rewrite a terminal
_TERMINAL_UNSAFE = re.compile(r'\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])|'
                              r'[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]')


def terminal_safe(s:str)->str:
    "Model text fit to print: no escape sequences, no control characters but newlines and tabs."
    return _TERMINAL_UNSAFE.sub('', s)


def ReplyView(shell, route:dict=None, ledger:dict=None, extension:bool=False):
    "The right view for `shell`: `KernelView` under ipykernel (`extension`: the frontend's renders it), else `TerminalView`."
    if hasattr(shell, 'kernel'): return KernelView(shell, route, ledger, markdown=not extension)
    return TerminalView(shell, route, ledger)


class KernelView:
    "A reply as one Jupyter display, updated in place."
    interval = 0.1   # at most ~10 updates a second: jupyter_server drops iopub messages above 1000/s

    def __init__(self, shell, route=None, ledger=None, markdown=True):
        self.pub, self.route, self.ledger, self.id = shell.display_pub, route, ledger, uuid.uuid4().hex
        self.shown, self.stream = False, SafeStream()   # the answer's finished blocks are made safe once
        self.markdown = markdown   # text/markdown in streaming updates too (else only in the final one)

    def _publish(self, data, md):
        self.pub.publish(data, md, transient={'display_id': self.id}, update=self.shown)
        self.shown = True

    def waiting(self, model:str, note:str=''):
        "Show that the request is on its way (model loading can take a while)."
        text = f'*Waiting for {inline_text(model)}{" · " + inline_text(note) if note else ""} …*'
        data = dict(version=1, kind='reply', model=model, status='waiting', markdown='', reasoning='', reasoning_label='',
                    reasoning_streaming=False, reused=False, summary=f'waiting for {model}' + (f' · {note}' if note else ''),
                    details=[])   # the same mime types as every update: the frontend keeps one view, and its stop button
        self._publish({REPLY_MIME: data, 'text/markdown': text, 'text/plain': ''},
                      {MIME_KEY: dict(reply=True, model=model, status='waiting')})

    def update(self, reply):
        self._publish(*reply_bundle(reply, self.route, self.ledger, self.stream, self.markdown))

    def show(self, data:dict, md:dict)->dict:
        "Show a finished reply as it was saved (a reused one); return it as an nbformat output."
        self._publish(data, md)
        return dict(output_type='display_data', data=data, metadata=md)

    def final(self, reply)->dict:
        "Send the last update (always, with the exact full text) and return it as an nbformat output."
        data, md = reply_bundle(reply, self.route, self.ledger)
        if reply.status != 'done' and not reply.answer and not reply.reasoning:
            data.update({'text/markdown': f'*No reply from {inline_text(reply.model)}.*', 'text/plain': ''})
        self._publish(data, md)
        return dict(output_type='display_data', data=data, metadata=md)


class TerminalView:
    "A reply printed as plain text while it streams (terminal IPython, bare InteractiveShell); reasoning dimmed first."
    interval = 0.02

    def __init__(self, shell, route=None, ledger=None):
        self.route, self.ledger, self.printed, self.thought = route, ledger, 0, 0
        self.dim = sys.stdout.isatty()

    def _write(self, s):
        sys.stdout.write(s)
        sys.stdout.flush()

    def waiting(self, model:str, note:str=''): pass

    def show(self, data:dict, md:dict)->dict:
        "Print a saved reply again (a reused one), marked so."
        self._write(terminal_safe(data.get('text/plain', '')) + '\n[reused: the saved reply to this same conversation]\n')
        return dict(output_type='display_data', data=data, metadata=md)

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
        return dict(output_type='display_data', data=data, metadata=md)
