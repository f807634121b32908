"""`boopiter-run`: execute a notebook headless and print its prompts and replies as they stream.

    boopiter-run nbs/00_tour.ipynb                 # prints each cell it runs, each %%prompt and its reply
    boopiter-run nbs/00_tour.ipynb -o tour.ipynb   # also saves the executed notebook
    boopiter-run analysis.ipynb --record           # saves every model turn to analysis.cassette.json
    boopiter-run analysis.ipynb --replay           # answers from it: offline, deterministic (CI)

It runs the notebook in its own folder with nbclient, and sets `BOOPITER_NOTEBOOK` so the kernel
knows which file it is running (cell order, settings.ini lookup). The original file is never written.
Each code cell is announced as it starts (`[3/12] %%prompt`); a reply is printed as it arrives, with what it
waits for before its first token (the embedded model's start, reading the prompt); the run ends with one line
of totals. On POSIX the kernel talks over local sockets (ipc), not TCP. The exit status is 1 if a cell failed.
"""

__all__ = ['main', 'run_notebook', 'Printer']

import argparse, os, sys, textwrap
from pathlib import Path
from types import SimpleNamespace
from time import monotonic


def _text(v): return ''.join(v) if isinstance(v, list) else v if isinstance(v, str) else ''
def _first_line(source, width=72):
    line = next((ln for ln in source.strip().splitlines() if ln.strip()), '')
    return line if len(line) <= width else line[:width - 1] + '…'


class Printer:
    """What `boopiter-run` prints, fed the kernel's messages as they arrive: the cell being run, each reply's new text
    (the growth of its `text/plain`, one display id per reply), what a reply waits for, errors, and the totals."""
    def __init__(self, write=sys.stdout.write, total:int=0):
        self.write, self.total, self.started = write, total, monotonic()
        self.cells = self.answered = self.reused = self.errors = 0
        self.last_error = None   # (ename, evalue) of the last error printed
        self.replies = {}   # display id -> dict(printed, said, done)

    def cell(self, source:str):
        "A code cell starts: `[n/total] its first line`, and the question of a prompt cell."
        from ..context.build import is_prompt, prompt_text
        self.cells += 1
        self.write(f'\n[{self.cells}/{self.total}] {_first_line(source)}\n')
        if is_prompt(source): self.write(f'>>> {textwrap.indent(prompt_text(source), "    ").strip()}\n')

    def message(self, msg_type:str, content:dict):
        "One iopub message of the running cell."
        if msg_type == 'error': return self.error(content)
        if msg_type not in ('display_data', 'update_display_data'): return
        md = (content.get('metadata') or {}).get('boopiter') or {}
        did = (content.get('transient') or {}).get('display_id')
        if md.get('reply') and did: self._reply(did, md, _text((content.get('data') or {}).get('text/plain')))

    def error(self, content:dict):
        self.errors += 1
        self.last_error = content.get('ename'), content.get('evalue')
        self.write(f'\n!! {content.get("ename", "Error")}: {content.get("evalue", "")}\n')

    def _reply(self, did, md, text):
        from ..render.reply import kept_line
        from .view import terminal_safe
        r = self.replies.setdefault(did, dict(printed='', step=None, head=False, done=False))
        if r['done']: return
        if md.get('status') == 'waiting':   # what it waits for: why this model (once), then each new step
            if md.get('why') and r['step'] is None: self.write(terminal_safe(f'... {md["why"]}') + '\n')
            if md.get('step') and md['step'] != r['step']: self.write(terminal_safe(f'... {md["step"]}') + '\n')
            r['step'] = md.get('step') or ''
            return
        if not r['head']:
            r['head'] = True
            how = ', reused' if md.get('reused') else ', kept' if md.get('kept') else ''
            self.write(f'--- reply ({md.get("model", "?")}{how}) ---\n')
        new = text[len(r['printed']):] if text.startswith(r['printed']) else '\n' + text   # rewritten: all of it again
        self.write(terminal_safe(new))
        r['printed'] = text
        if md.get('status') == 'streaming': return
        r['done'] = True
        saved = bool(md.get('reused') or md.get('kept'))   # a saved reply shown again: no model was asked
        self.reused += saved
        self.answered += not saved and md.get('status') == 'done'
        if md.get('kept'): self.write('\n' + terminal_safe(f'[{kept_line(SimpleNamespace(model=md.get("model")), md)}]'))
        bits = [f'{md.get("completion_tokens", 0)} tokens']
        if md.get('tokens_per_s'): bits.append(f'{md["tokens_per_s"]} tok/s')
        if md.get('ttft_s') is not None: bits.append(f'first token {md["ttft_s"]:.1f} s')
        if md.get('finish_reason') == 'length': bits.append('cut at max_tokens')
        if md.get('status') != 'done': bits.append(str(md.get('status')))
        self.write(f'\n--- {" · ".join(bits)} ---\n')

    def summary(self)->str:
        "The last line: cells run, prompts answered and reused, errors, seconds."
        line = (f'{self.cells} cell{"s" * (self.cells != 1)} run · {self.answered} prompt{"s" * (self.answered != 1)} '
                f'answered, {self.reused} reused · {self.errors} error{"s" * (self.errors != 1)} · '
                f'{monotonic() - self.started:.1f} s')
        self.write(f'\n{line}\n')
        return line


def _client(nb, printer, **kw):
    "An nbclient `NotebookClient` that hands `printer` each code cell as it starts and each message as it arrives."
    from nbclient import NotebookClient

    class _Client(NotebookClient):
        def process_message(self, msg, cell, cell_index):
            printer.message(msg['msg_type'], msg['content'])   # before nbclient, which renames update_display_data
            return super().process_message(msg, cell, cell_index)

    def on_start(cell, **_):
        if cell.cell_type == 'code': printer.cell(cell.source)
    return _Client(nb, on_cell_start=on_start, **kw)


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


def run_notebook(
    path:Path,             # Notebook to execute
    output:Path=None,      # Where to save the executed copy (None: don't save)
    timeout:int=600,       # Seconds allowed per cell
    write=sys.stdout.write,# Where to print the cells, prompts and replies
    cassette:str='',       # 'record' or 'replay' the notebook's cassette (`BOOPITER_CASSETTE`); '' leaves it as set
)->bool:                   # True if every cell ran without error
    "Execute `path` headless, printing each cell as it starts and each reply as it streams, then the totals."
    import nbformat
    from nbclient.exceptions import CellExecutionError
    path = Path(path).resolve()
    nb = nbformat.read(path, as_version=4)
    name = nb.metadata.get('kernelspec', {}).get('name', 'python3')
    printer = Printer(write, total=sum(c.cell_type == 'code' for c in nb.cells))
    client = _client(nb, printer, km=_kernel_manager(name), timeout=timeout, kernel_name=name,
                     resources={'metadata': {'path': str(path.parent)}})
    ok = True
    env = {**os.environ, 'BOOPITER_NOTEBOOK': str(path), **({'BOOPITER_CASSETTE': cassette} if cassette else {})}
    try: client.execute(env=env, cleanup_kc=True)   # shut the kernel down, as nbclient does with a manager it made
    except CellExecutionError as e:   # a `UsageError` reaches us only as stderr text: say what stopped the run
        ok = False
        if printer.last_error != (e.ename, e.evalue): printer.error(dict(ename=e.ename, evalue=e.evalue))
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
    sys.exit(0 if run_notebook(args.notebook, args.output, args.timeout, write, args.cassette or '') else 1)


if __name__ == '__main__': main()
