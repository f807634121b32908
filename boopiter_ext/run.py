"""`boopiter-run`: execute a notebook headless and print its prompts and replies.

    boopiter-run nbs/00_tour.ipynb                 # prints each %%prompt and its reply
    boopiter-run nbs/00_tour.ipynb -o tour.ipynb   # also saves the executed notebook
    boopiter-run analysis.ipynb --record           # saves every model turn to analysis.cassette.json
    boopiter-run analysis.ipynb --replay           # answers from it: offline, deterministic (CI)

It runs the notebook in its own folder with nbclient, and sets `BOOPITER_NOTEBOOK` so the kernel
knows which file it is running (cell order, settings.ini lookup). The original file is never written.
The exit status is 1 if a cell failed.
"""

__all__ = ['main', 'run_notebook']

import argparse, os, sys, textwrap
from pathlib import Path


def _plain(out): return ''.join(out.get('data', {}).get('text/plain', ''))


def _show_cell(cell, write):
    from .context import is_prompt, prompt_text
    if cell.cell_type != 'code': return
    for out in cell.outputs:
        if out.output_type == 'error':
            write(f'\n!! {out.ename}: {out.evalue}\n')
        md = out.get('metadata', {}).get('boopiter')
        if not (md and md.get('reply')): continue
        if is_prompt(cell.source): write(f'\n>>> {textwrap.indent(prompt_text(cell.source), "    ").strip()}\n')
        bits = [md.get('model', '?'), f'{md.get("completion_tokens", 0)} tokens']
        if md.get('tokens_per_s'): bits.append(f'{md["tokens_per_s"]} tok/s')
        if md.get('finish_reason') == 'length': bits.append('cut at max_tokens')
        write(f'--- reply ({" · ".join(bits)}) ---\n{_plain(out).strip()}\n')


def run_notebook(
    path:Path,             # Notebook to execute
    output:Path=None,      # Where to save the executed copy (None: don't save)
    timeout:int=600,       # Seconds allowed per cell
    write=sys.stdout.write,# Where to print prompts and replies
    cassette:str='',       # 'record' or 'replay' the notebook's cassette (`BOOPITER_CASSETTE`); '' leaves it as set
)->bool:                   # True if every cell ran without error
    "Execute `path` headless, printing each prompt cell's question and reply as the cell finishes."
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    path = Path(path).resolve()
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name=nb.metadata.get('kernelspec', {}).get('name', 'python3'),
                            resources={'metadata': {'path': str(path.parent)}},
                            on_cell_executed=lambda cell, **kw: _show_cell(cell, write))
    ok = True
    env = {**os.environ, 'BOOPITER_NOTEBOOK': str(path), **({'BOOPITER_CASSETTE': cassette} if cassette else {})}
    try: client.execute(env=env)
    except CellExecutionError: ok = False
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
    sys.exit(0 if run_notebook(args.notebook, args.output, args.timeout, cassette=args.cassette or '') else 1)


if __name__ == '__main__': main()
