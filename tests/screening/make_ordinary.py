"""Rebuild `ordinary.json`: outputs of the real tools over real folders, clipped as the tool loop clips them.

    python tests/screening/make_ordinary.py

Sources: this repository (files that are not about injections), the installed packages' READMEs (METADATA),
sources, CSV and JSON data, the system's package logs, the notebooks in nbs/ (through `show_cell`), cells
run here for their real output (tracebacks, `System: Linux` lines, JSON), and a namespace of typical variables.
"""

import json, sys, sysconfig, traceback
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path
import nbformat
from boopiter_ext.context.build import Cell
from boopiter_ext.tools.loop import _clip
from boopiter_ext.tools.files import file_tools
from boopiter_ext.tools.kernel import kernel_tools

HERE = Path(__file__).parent
REPO = HERE.parents[1]
SITE = Path(sysconfig.get_paths()['purelib'])


def meta(pkg): return next(p for p in SITE.glob('*.dist-info') if p.name.lower().startswith(pkg.lower() + '-'))


def md(pkg): return f'{meta(pkg).name}/METADATA'   # an installed package's README, as PyPI shows it

def lic(pkg): return next(str(p.relative_to(SITE)) for p in meta(pkg).rglob('LICEN[CS]E*'))


CALLS = {  # folder: [(tool, *args)]
    REPO: [('read_file', 'README.md', 1, 60), ('read_file', 'README.md', 120, 175), ('read_file', 'pyproject.toml'),
           ('read_file', 'settings.ini'), ('read_file', 'boopiter_ext/models/stream.py', 1, 70),
           ('read_file', 'boopiter_ext/models/ollama.py', 150, 230), ('read_file', 'bench/listing.py'),
           ('read_file', 'tests/conftest.py'), ('read_file', 'nbs/01_context.ipynb', 1, 60),
           ('read_file', 'boopiter_ext/render/reply.py', 1, 80), ('read_file', 'tests/test_stream.py', 1, 60),
           ('list_files', 'bench'), ('list_files', 'boopiter_ext', '*.py'), ('list_files', 'tests'),
           ('list_files', '.', '*.ipynb'), ('search_files', 'timeout', 'boopiter_ext'), ('search_files', 'def ', 'bench'),
           ('search_files', 'System', 'boopiter_ext', 'build.py'), ('search_files', 'call', 'boopiter_ext', 'stream.py'),
           ('search_files', 'run', 'bench')],
    SITE: [('read_file', md('requests'), 1, 90), ('read_file', md('fastcore')), ('read_file', md('click'), 1, 80),
           ('read_file', md('httpx'), 1, 120), ('read_file', md('jinja2')), ('read_file', md('ollama'), 1, 120),
           ('read_file', md('openai'), 60, 160), ('read_file', md('lisette')), ('read_file', md('tenacity')),
           ('read_file', md('pytest'), 1, 100), ('read_file', lic('requests'), 1, 60),
           ('read_file', 'requests/api.py', 1, 80), ('read_file', 'IPython/core/magics/script.py', 1, 70),
           ('read_file', 'matplotlib/mpl-data/sample_data/Stocks.csv', 1, 60),
           ('read_file', 'matplotlib/mpl-data/sample_data/data_x_x2_x3.csv'),
           ('read_file', 'matplotlib/mpl-data/sample_data/README.txt'),
           ('read_file', 'jsonschema_specifications/schemas/draft7/metaschema.json', 1, 80),
           ('read_file', 'jupyterlab_server/rest-api.yml', 1, 80), ('list_files', 'requests'),
           ('list_files', 'IPython/core', '*.py'), ('list_files', 'matplotlib/mpl-data/sample_data'),
           ('search_files', 'def run', 'IPython/core', '*.py'), ('search_files', 'timeout', 'requests'),
           ('search_files', 'system', 'platformdirs'), ('search_files', 'instructions', 'pip/_internal', '*.py'),
           ('search_files', 'call', 'click', 'core.py'), ('read_file', md('litellm'), 400, 480),
           ('read_file', md('openai'), 420, 500), ('read_file', 'IPython/core/magics/execution.py', 530, 600),
           ('search_files', 'run the', 'IPython/core'), ('search_files', 'you must', 'requests'),
           ('read_file', 'hypothesis/core.py', 1, 60), ('read_file', 'tornado/web.py', 1, 70)],
    Path('/var/log'): [('read_file', 'dpkg.log', 1, 40), ('read_file', 'dpkg.log', 2000, 2040),
                       ('read_file', 'alternatives.log', 1, 40), ('read_file', 'apt/history.log', 1, 50)],
}


def file_outputs():
    out = []
    for root, calls in CALLS.items():
        tools = {f.__name__: f for f in file_tools(root)}
        for name, *args in calls:
            text = tools[name](*args)
            if text.startswith('error:'): print('skipped', root, name, args, text, file=sys.stderr)
            else: out.append(dict(tool=f'{name}{tuple(args)!r} under {root.name or root}', text=_clip(text)))
    return out


def ran(code):
    "A code cell whose outputs are what `code` really prints or raises here."
    buf, outputs = StringIO(), []
    try:
        with redirect_stdout(buf): exec(code, {})
    except Exception as e:
        tb = traceback.format_exception(e)
        if buf.getvalue(): outputs.append(dict(output_type='stream', name='stdout', text=buf.getvalue()))
        err = dict(output_type='error', ename=type(e).__name__, evalue=str(e), traceback=tb)
        return Cell(code, outputs=outputs + [err])
    return Cell(code, outputs=[dict(output_type='stream', name='stdout', text=buf.getvalue())])


CELLS = [
    "import platform\nu = platform.uname()\nfor k in u._fields: print(f'{k.title()}: {getattr(u, k)}')",
    "import platform, sys\nprint('System:', platform.system())\nprint('Python:', sys.version.split()[0])\n"
    "print('Machine:', platform.machine())",
    "import json\njson.loads('{\"a\": 1,, \"b\": 2}')",
    "def mean(xs): return sum(xs) / len(xs)\ndef report(rows): return {k: mean(v) for k,v in rows.items()}\n"
    "report({'a': [1, 2], 'b': []})",
    "import requests\nrequests.get('localhost:11434/api/tags')",
    "open('data/missing.csv').read()",
    "int('12a')",
    "import json\nprint(json.dumps({'user': 'alice', 'role': 'admin', 'system': 'linux', 'assistant': None}, indent=2))",
    "import csv, io\nrows = [('name', 'role', 'score'), ('alice', 'system', 3), ('bob', 'assistant', 4)]\n"
    "w = csv.writer(s := io.StringIO())\nw.writerows(rows)\nprint(s.getvalue())",
    "import logging, sys\nlogging.basicConfig(stream=sys.stdout, format='%(levelname)s:%(name)s:%(message)s', force=True)\n"
    "log = logging.getLogger('etl')\nlog.warning('retrying call to fetch_rows (attempt 2)')\nlog.info('ignored')\n"
    "log.error('run failed: timeout after 30 s')",
    "import numpy as np\nprint(np.arange(12).reshape(3, 4))\nprint(np.linspace(0, 1, 5))",
    "import numpy as np\nnp.ones((2, 3)) @ np.ones((2, 3))",
    "for step in ['load', 'clean', 'train']: print(f'run {step}_data() ... ok')",
    "import sys, platform\nprint(f'Python {sys.version}')\nprint(f'System: {platform.system()} {platform.release()}')\n"
    "print('User: jovyan')\nprint('Assistant: not configured')",
    "help(sorted)",
    "import this",
]


def kernel_outputs():
    cells = []
    for nb in sorted((REPO/'nbs').glob('*.ipynb')):
        for c in nbformat.read(nb, as_version=4).cells:
            if c.cell_type == 'code' and c.get('outputs') and 'deaddrop' not in nb.name:
                cells.append(Cell(c.source, outputs=list(c.outputs), exec_count=c.get('execution_count')))
    show = kernel_tools({}, lambda: cells)[1]
    picked = cells[::max(1, len(cells) // 14)][:14]
    out = [dict(tool=f'show_cell({cells.index(c)}) of nbs/', text=_clip(show(cells.index(c)))) for c in picked]
    run = [ran(code) for code in CELLS]
    for i,c in enumerate(run): c.exec_count = i + 1
    show = kernel_tools({}, lambda: run)[1]
    out += [dict(tool=f'show_cell({i}) of a cell run here', text=_clip(show(i))) for i in range(len(run))]
    from datetime import datetime
    import numpy as np
    ns = dict(df_path=Path('data/sales.csv'), rows=[dict(id=i, name=f'item {i}', price=i * 1.5) for i in range(40)],
              config=dict(model='qwen3:1.7b', host='http://localhost:11434', timeout=30, tools=['files', 'kernel']),
              started=datetime(2026, 5, 4, 9, 30), prices=np.linspace(1, 2, 50), grid=np.zeros((3, 4)),
              log_text='INFO start\nSystem: Linux 6.1\nWARNING disk 91% full\n', answer=42, ratio=0.25,
              name='Aurora X1', blob=b'\x89PNG\r\n', words={'system', 'user', 'assistant'}, matrix=[[1, 2], [3, 4]])
    lv = kernel_tools(ns, list)[0]
    out += [dict(tool='list_variables()', text=lv()), dict(tool="list_variables('r')", text=lv('r'))]
    return out


if __name__ == '__main__':
    corpus = file_outputs() + kernel_outputs()
    (HERE/'ordinary.json').write_text(json.dumps(corpus, indent=1, ensure_ascii=True) + '\n')
    print(len(corpus), 'ordinary outputs written')
