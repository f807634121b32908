"""`boopiter-run`: execute a notebook headless and print what a reader of it would see, as it happens.

    boopiter-run nbs/00_tour.ipynb                 # prints each cell, its output, each %%prompt and its reply
    boopiter-run nbs/00_tour.ipynb -o tour.ipynb   # also saves the executed notebook
    boopiter-run analysis.ipynb --record           # saves every model turn to analysis.cassette.json
    boopiter-run analysis.ipynb --replay           # answers from it: offline, deterministic (CI)

It runs the notebook in its own folder with nbclient, and sets `BOOPITER_NOTEBOOK` so the kernel
knows which file it is running (cell order, settings.ini lookup). The original file is never written.
Each code cell is shown as it starts (`[3/12]` and its first lines: the question, for a prompt cell), then its
output as it comes (text, clipped; one line naming an image or a widget), Markdown headings as they pass; a reply is
printed whole as it streams, after what it waits for (the embedded model's start, how far the prompt has been read,
and for how long: rewritten in place on a terminal, a line per step or every few seconds elsewhere); the run ends
with one line of totals. On POSIX the kernel talks over local sockets (ipc), not TCP. The exit status is 1 if a cell
failed.
"""

__all__ = ['main', 'run_notebook', 'Printer']

import argparse, os, re, sys, textwrap
from pathlib import Path
from types import SimpleNamespace
from time import monotonic

_WIDGET_VIEW = 'application/vnd.jupyter.widget-view+json'
_BARE_REPR = re.compile(r'<[\w.]+ object(?: at 0x[0-9a-fA-F]+)?>')   # IPython's repr of a display object: says nothing
_FENCE = re.compile(r'\s*(```|~~~)')


def _text(v): return ''.join(v) if isinstance(v, list) else v if isinstance(v, str) else ''
def _first_line(source, width=72):
    line = next((ln for ln in source.strip().splitlines() if ln.strip()), '')
    return line if len(line) <= width else line[:width - 1] + '…'


def _elapsed(seconds:float)->str:
    "Seconds as the waiting line says them: '' in the first one, then `12 s`, `1 min 05 s`."
    s = int(seconds)
    return '' if s < 1 else f'{s} s' if s < 60 else f'{s // 60} min {s % 60:02d} s'


def headings(source:str)->list:
    "The heading lines of a Markdown cell (`# Title`, `## Section`), outside code fences."
    found, fenced = [], False
    for line in source.splitlines():
        if _FENCE.match(line): fenced = not fenced
        elif not fenced and re.match(r'#{1,6}\s+\S', line): found.append(line.strip())
    return found


def shown(data:dict)->str:
    """What a terminal can show of a rich output (`data`: its mime bundle): its text (text/plain, else Markdown), or one
    line naming what only Jupyter draws (an image, a widget, HTML)."""
    from .magics import WIDGET_MIME
    if WIDGET_MIME in data or _WIDGET_VIEW in data:
        kind = (data.get(WIDGET_MIME) or {}).get('kind') if isinstance(data.get(WIDGET_MIME), dict) else None
        what = {'menu': 'the brain menu', 'code_actions': 'Run and Copy-to-cell buttons'}.get(kind, 'a widget')
        return f'[{what}: a widget, drawn in Jupyter]'
    plain = _text(data.get('text/plain')).strip('\n')
    plain = '' if _BARE_REPR.fullmatch(plain.strip()) else plain
    if (image := next((m for m in data if m.startswith('image/')), None)):
        return f'[{image}' + (f': {plain}' if plain and '\n' not in plain else '') + ']'
    if plain: return plain
    if (md := _text(data.get('text/markdown')).strip('\n')): return md
    return f'[{next(iter(data), "an empty output")}]'


class Printer:
    """What `boopiter-run` prints, fed the kernel's messages as they arrive: the cell being run (its first lines), its
    output (at most `max_lines` lines of `width` characters a cell), each reply whole as it grows (the growth of its
    `text/plain`, one display id per reply), what a reply waits for and for how long, errors, and the totals. `live`
    (a terminal): the waiting line is rewritten in place each second; else a line per step, and every `every` seconds."""
    code_lines, max_lines, width, every = 6, 20, 200, 10.0

    def __init__(self, write=sys.stdout.write, total:int=0, live:bool=False):
        self.write, self.total, self.live, self.started = write, total, live, monotonic()
        self.cells = self.answered = self.reused = self.errors = 0
        self.last_error = None   # (ename, evalue) of the last error printed
        self.replies = {}        # display id -> what was printed of it
        self._lines = self._col = self._hidden = 0   # the running cell's output: lines shown, the open line, lines left out
        self._hidden_open, self._stderr = False, ''  # a line left out under way; the cell's stderr (a `UsageError` is only that)
        self._waiting = False    # a waiting line is on screen, to be rewritten (live) or cleared

    # -- low level: every write goes through `_emit`, which clears a live waiting line first
    def _emit(self, s:str):
        if self._waiting and self.live: self.write('\r\x1b[2K')
        self._waiting = False
        self.write(s)

    def _close_line(self):
        "End an output line left open (a `print(..., end='')`), so what follows starts on its own."
        if self._col: self._emit('\n')
        self._lines, self._col = self._lines + bool(self._col), 0

    def _end_cell(self):
        self._close_line()
        if (hidden := self._hidden + self._hidden_open):
            self._emit(f'… {hidden} more line{"s" * (hidden != 1)} of output\n')
        self._lines = self._hidden = 0
        self._hidden_open, self._stderr = False, ''

    def output(self, text:str):
        "Output text of the running cell, as it comes, made terminal-safe: `max_lines` lines, each cut at `width`."
        from .view import terminal_safe
        for piece in re.split(r'(\n)', terminal_safe(text)):
            if not piece: continue
            if self._lines >= self.max_lines:   # left out, and counted: a line under way counts once
                if piece == '\n': self._hidden, self._hidden_open = self._hidden + 1, False
                else: self._hidden_open = True
                continue
            if piece == '\n':
                self._emit('\n')
                self._lines, self._col = self._lines + 1, 0
                continue
            room = self.width - self._col
            if room > 0: self._emit(piece if len(piece) <= room else piece[:room - 1] + '…')
            self._col += len(piece) if len(piece) <= room else max(room, 1)

    # -- what nbclient tells
    def cell(self, source:str):
        "A code cell starts: `[n/total]` and its first lines, or the question of a prompt cell (a saved file's text: made safe)."
        from ..context.build import is_prompt, prompt_text
        from .view import terminal_safe
        self._end_cell()
        self.cells += 1
        head = f'[{self.cells}/{self.total}] '
        if is_prompt(source):
            question = textwrap.indent(prompt_text(source), '    ').strip()
            self._emit(terminal_safe(f'\n{head}{_first_line(source)}\n>>> {question}\n'))
            return
        lines = [terminal_safe(ln) for ln in source.strip('\n').rstrip().splitlines()] or ['']
        shown_lines = [ln[:self.width] for ln in lines[:self.code_lines]]
        more = len(lines) - len(shown_lines)
        body = ('\n' + ' ' * len(head)).join(shown_lines)
        if more: body += f'\n{" " * len(head)}… {more} more line{"s" * (more != 1)}'
        self._emit(f'\n{head}{body}\n')

    def markdown(self, source:str):
        "A Markdown cell passes: its headings, so the reader knows where the run is."
        from .view import terminal_safe
        self._end_cell()
        for h in headings(source): self._emit(f'\n{terminal_safe(h)[:self.width]}\n')

    def message(self, msg_type:str, content:dict):
        "One iopub message of the running cell."
        if msg_type == 'error': return self.error(content)
        if msg_type == 'stream':
            if content.get('name') == 'stderr': self._stderr = (self._stderr + _text(content.get('text')))[-4000:]
            return self.output(_text(content.get('text')))
        if msg_type not in ('display_data', 'update_display_data', 'execute_result'): return
        md = (content.get('metadata') or {}).get('boopiter') or {}
        did = (content.get('transient') or {}).get('display_id')
        if md.get('reply') and did: return self._reply(did, md, _text((content.get('data') or {}).get('text/plain')))
        if msg_type == 'update_display_data': return   # a display shown before, updated (the binding's): shown once
        self._close_line()
        self.output(shown(content.get('data') or {}) + '\n')

    def error(self, content:dict):
        self.errors += 1
        self.last_error = content.get('ename'), content.get('evalue')
        self._close_line()
        self._emit(f'\n!! {content.get("ename", "Error")}: {content.get("evalue", "")}\n')

    def stopped(self, ename:str, evalue:str):
        "The run stopped at a failing cell: an error already printed counts once; one IPython sent only as stderr counts."
        if self.last_error == (ename, evalue): return
        if f'{ename}: {evalue}' in self._stderr:   # a `UsageError`: its line is on screen already
            self.errors, self.last_error = self.errors + 1, (ename, evalue)
        else: self.error(dict(ename=ename, evalue=evalue))

    # -- replies
    def _wait(self, r, md):
        "A reply waits for its first token: why this model (once), then the step and the time so far."
        from .view import terminal_safe
        now = monotonic()
        if r['since'] is None:
            r['since'] = now
            self._close_line()
            if md.get('why'): self._emit(terminal_safe(f'... {md["why"]}') + '\n')
        step = md.get('step') or 'waiting for the first token'
        if str(md.get('model', '')).startswith('local/') and not step.startswith(('reading', 'waiting for')):
            step = f'starting the model: {step}'   # the embedded model's start: starting the engine, loading the weights
        line = terminal_safe(' · '.join(filter(None, [f'... {step}', _elapsed(now - r['since'])])))
        if self.live:
            self._emit(line)
            self._waiting = True
            return
        kind = re.sub(r'[\d,]+', '#', step)   # the step, its counts aside: a new one is said at once, a count every few s
        if kind == r['kind'] and now - r['told'] < self.every: return
        r['kind'], r['told'] = kind, now
        self._emit(line + '\n')

    def _reply(self, did, md, text):
        from ..render.reply import kept_line
        from .view import terminal_safe
        r = self.replies.setdefault(did, dict(printed='', since=None, kind=None, told=0.0, head=False, done=False))
        if r['done']: return
        if md.get('status') == 'waiting': return self._wait(r, md)
        if not r['head']:
            r['head'] = True
            self._close_line()
            how = ', reused' if md.get('reused') else ', stale' if md.get('stale') else ', kept' if md.get('kept') else ''
            self._emit(f'--- reply ({md.get("model", "?")}{how}) ---\n')
        new = text[len(r['printed']):] if text.startswith(r['printed']) else '\n' + text   # rewritten: all of it again
        self._emit(terminal_safe(new))
        r['printed'] = text
        if md.get('status') == 'streaming': return
        r['done'] = True
        saved = bool(md.get('reused') or md.get('kept') or md.get('stale'))   # a saved reply shown again: no model asked
        self.reused += saved
        self.answered += not saved and md.get('status') == 'done'
        if isinstance(md.get('stale'), str): self._emit('\n' + terminal_safe(f'[{md["stale"]}]'))
        elif md.get('kept'): self._emit('\n' + terminal_safe(f'[{kept_line(SimpleNamespace(model=md.get("model")), md)}]'))
        bits = [f'{md.get("completion_tokens", 0)} tokens']
        if md.get('tokens_per_s'): bits.append(f'{md["tokens_per_s"]} tok/s')
        if md.get('ttft_s') is not None: bits.append(f'first token {md["ttft_s"]:.1f} s')
        if md.get('finish_reason') == 'length': bits.append('cut at max_tokens')
        if md.get('status') != 'done': bits.append(str(md.get('status')))
        self._emit(f'\n--- {" · ".join(bits)} ---\n')

    def summary(self)->str:
        "The last line: cells run, prompts answered and reused, errors, seconds."
        self._end_cell()
        line = (f'{self.cells} cell{"s" * (self.cells != 1)} run · {self.answered} prompt{"s" * (self.answered != 1)} '
                f'answered, {self.reused} reused · {self.errors} error{"s" * (self.errors != 1)} · '
                f'{monotonic() - self.started:.1f} s')
        self._emit(f'\n{line}\n')
        return line


# boopiter loaded before the first cell, silently; the notebook's own `%load_ext boopiter_ext` adopts it quietly
_LOAD = '__import__("boopiter_ext")._frontend_load(get_ipython())'


def _client(nb, printer, **kw):
    """An nbclient `NotebookClient` that hands `printer` each code cell as it starts and each message as it arrives, and
    loads boopiter first in a notebook with prompt cells."""
    from nbclient import NotebookClient
    from ..context.build import is_prompt

    class _Client(NotebookClient):
        def process_message(self, msg, cell, cell_index):
            printer.message(msg['msg_type'], msg['content'])   # before nbclient, which renames update_display_data
            return super().process_message(msg, cell, cell_index)

    def on_start(cell, **_):
        if cell.cell_type == 'code': printer.cell(cell.source)
        elif cell.cell_type == 'markdown': printer.markdown(cell.source)
    client = _Client(nb, on_cell_start=on_start, **kw)
    if any(c.cell_type == 'code' and is_prompt(c.source) for c in nb.cells):
        async def load(**_):   # as the frontend does: a notebook without a `%load_ext` cell above its prompts runs too
            await client.async_wait_for_reply(client.kc.execute(_LOAD, silent=True, store_history=False))
        client.on_notebook_start = load
    return client


def _kernel_manager(name):
    """A kernel manager on local sockets (ipc) where the OS has them: the kernel then does not warn that it runs over
    TCP without encryption, and no port is open at all. None elsewhere (nbclient's default, TCP on loopback)."""
    if os.name != 'posix': return None
    import uuid
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.paths import jupyter_runtime_dir
    runtime = Path(jupyter_runtime_dir())
    runtime.mkdir(parents=True, exist_ok=True)
    # the sockets' path prefix, absolute: the kernel runs in the notebook's folder, and binds relative to it
    return AsyncKernelManager(kernel_name=name, transport='ipc', ip=str(runtime/f'boopiter-{uuid.uuid4().hex[:12]}'))


def import_nbformat():
    """`nbformat`, imported without the IRI syntax checks jsonschema adds when `rfc3987_syntax` is installed (Jupyter's
    own dependencies install it): that module builds 38 parsers when imported, 2.8 s of nbformat's 3.7 s here, on
    every headless run. No notebook schema has an IRI format, and nbformat checks no formats."""
    if not {'nbformat', 'jsonschema', 'rfc3987_syntax'} & set(sys.modules):
        sys.modules['rfc3987_syntax'] = None   # its import raises ImportError: jsonschema leaves those two checks out
        try: import nbformat
        finally: del sys.modules['rfc3987_syntax']
    import nbformat
    return nbformat


def run_notebook(
    path:Path,             # Notebook to execute
    output:Path=None,      # Where to save the executed copy (None: don't save)
    timeout:int=600,       # Seconds allowed per cell
    write=sys.stdout.write,# Where to print the cells, prompts and replies
    cassette:str='',       # 'record' or 'replay' the notebook's cassette (`BOOPITER_CASSETTE`); '' leaves it as set
    live:bool=False,       # `write` goes to a terminal: the waiting line is rewritten in place
)->bool:                   # True if every cell ran without error
    "Execute `path` headless, printing each cell, its output and each reply as they come, then the totals."
    nbformat = import_nbformat()
    from nbclient.exceptions import CellExecutionError
    path = Path(path).resolve()
    nb = nbformat.read(path, as_version=4)
    name = nb.metadata.get('kernelspec', {}).get('name', 'python3')
    printer = Printer(write, total=sum(c.cell_type == 'code' for c in nb.cells), live=live)
    client = _client(nb, printer, km=_kernel_manager(name), timeout=timeout, kernel_name=name,
                     resources={'metadata': {'path': str(path.parent)}})
    ok = True
    env = {**os.environ, 'BOOPITER_NOTEBOOK': str(path), **({'BOOPITER_CASSETTE': cassette} if cassette else {})}
    try: client.execute(env=env, cleanup_kc=True)   # shut the kernel down, as nbclient does with a manager it made
    except CellExecutionError as e:   # a `UsageError` reaches us only as stderr text: say what stopped the run
        ok = False
        printer.stopped(e.ename, e.evalue)
    finally: printer.summary()
    if output: nbformat.write(nb, output)
    return ok


def main(argv=None):
    p = argparse.ArgumentParser(prog='boopiter-run', description=__doc__.split('\n\n')[0])
    p.add_argument('notebook', type=Path)
    p.add_argument('-o', '--output', type=Path, help='save the executed notebook here')
    p.add_argument('--timeout', type=int, default=600, help='seconds allowed per cell (default 600)')
    mode = p.add_mutually_exclusive_group()
    mode.add_argument('--record', action='store_const', const='record', dest='cassette',
                      help="save every model turn to the notebook's cassette (NOTEBOOK.cassette.json)")
    mode.add_argument('--replay', action='store_const', const='replay', dest='cassette',
                      help='answer every prompt from the cassette, asking no model; a changed prompt fails the run')
    args = p.parse_args(argv)
    if not args.notebook.is_file(): p.error(f'no notebook at {args.notebook}')
    write = lambda s: (sys.stdout.write(s), sys.stdout.flush())   # a reply streams: each piece shows as it comes
    ok = run_notebook(args.notebook, args.output, args.timeout, write, args.cassette or '', live=sys.stdout.isatty())
    sys.exit(0 if ok else 1)


if __name__ == '__main__': main()
