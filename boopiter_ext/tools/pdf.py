"""The optional `pdf` tool source, off by default: `read_pdf` reads a PDF under the notebook's folder as text.
`%boop tools pdf on`, the brain menu's tool sources or the `tools` setting turn it on.

`read_pdf` reads a PDF inside the notebook's folder (`paths.confine`) with pypdf, from the optional extra
(`pip install pypdf`, or the `pdf` extra), in a child process capped in memory and killed at its deadline: a PDF bomb costs
at most `_PDF_SECONDS` and never the kernel.

    read_pdf, = pdf_tools(Path('.'))
    read_pdf('report.pdf', pages='1-3')
"""

__all__ = ['PDF_HINT', 'pdf_tools', 'pdf_source', 'parse_pages']

import json, os, re, stat, sys
from pathlib import Path
from ..context.paths import confine
from .readable import _PAGE, _start, _window

PDF_HINT = "error: reading PDFs needs pypdf, which is not installed: pip install pypdf"
_MAX_PDF_BYTES = 50_000_000   # a bigger file is refused unread
_PDF_SECONDS = 10.0           # the child reading it is killed then; what it read by then is shown
_PDF_MEMORY = 1 << 30         # the child's address space: a PDF bomb fails there, not in the kernel
_PDF_STREAM = 30_000_000      # the most one stream may unpack to (pypdf's own limits are 75 MB)
_MAX_PAGES = 50               # pages one call reads at most
_PAGE_CHARS = 100_000         # characters kept from one page

# The child: no notebook-folder modules on its path; limits set before pypdf is imported; one JSON line per event.
_PDF_CHILD = r'''
import sys
if sys.path and sys.path[0] == '': del sys.path[0]   # first: a `json.py` in the notebook's folder is never imported
import json, os, warnings
warnings.simplefilter('ignore')
a = json.loads(sys.argv[1])
try:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (a['memory'], a['memory']))
    resource.setrlimit(resource.RLIMIT_CPU, (a['cpu'], a['cpu'] + 1))
except Exception: pass
def say(**kw):
    sys.stdout.write(json.dumps(kw) + '\n')
    sys.stdout.flush()
try:
    import io, logging
    logging.disable(logging.CRITICAL)
    import pypdf
    limits = ('maximum_declared_stream_length', 'array_based_stream_maximum_output_length',
              'zlib_maximum_output_length', 'lzw_maximum_output_length', 'run_length_maximum_output_length',
              'brotli_maximum_output_length', 'jbig2_maximum_output_length', 'image_maximum_buffer_size')
    if hasattr(pypdf, 'overwrite_configuration'):   # pypdf 7: one configuration object
        import dataclasses
        have = {f.name for f in dataclasses.fields(pypdf.Configuration)}
        pypdf.overwrite_configuration(jbig2dec_binary=None, **{k: a['stream'] for k in limits if k in have})
    else:                                           # pypdf 6: module constants
        import pypdf.filters as f
        for k in ('ZLIB_MAX_OUTPUT_LENGTH', 'LZW_MAX_OUTPUT_LENGTH', 'RUN_LENGTH_MAX_OUTPUT_LENGTH',
                  'JBIG2_MAX_OUTPUT_LENGTH', 'MAX_DECLARED_STREAM_LENGTH', 'MAX_ARRAY_BASED_STREAM_OUTPUT_LENGTH'):
            if isinstance(getattr(f, k, None), int): setattr(f, k, min(getattr(f, k), a['stream']))
        f.JBIG2DEC_BINARY = None
    r = pypdf.PdfReader(io.BytesIO(sys.stdin.buffer.read()))
    if r.is_encrypted and not r.decrypt(''): raise PermissionError('it is encrypted with a password')
    n = len(r.pages)
    say(pages=n)
    got, read = 0, 0
    for lo, hi in a['ranges']:
        for i in range(lo, min(hi or n, n) + 1):
            if read == a['max_pages'] or got > a['want']: raise SystemExit(say(stop=i))
            t = (r.pages[i - 1].extract_text() or '')[:a['page_chars']]
            say(page=i, text=t)
            got, read = got + len(t) + 40, read + 1
except SystemExit: pass
except ModuleNotFoundError: say(error='no pypdf')
except MemoryError: say(error='it needs more memory than a PDF is given')
except RecursionError: say(error='its objects are nested too deeply')
except BaseException as e: say(error=f'{type(e).__name__}: {e}'[:300])
'''


def parse_pages(
    pages,  # '3', '1-3', '2,5-7', '4-' (to the end); '' or None: from the first page; an int: that page
)->list|str:  # [(first, last or None)], 1-based; or an `error: ...` string
    "The page ranges `pages` asks for."
    if pages is None or pages == '': return [(1, None)]
    if isinstance(pages, int) and not isinstance(pages, bool): pages = str(pages)
    if not isinstance(pages, str): return f'error: pages must be text like \'1-3\', not {type(pages).__name__}'
    out = []
    for part in pages.replace(' ', '').split(','):
        m = re.fullmatch(r'(\d{1,7})(?:(-)(\d{1,7})?)?', part)
        if not m or int(m[1]) < 1 or m[3] and int(m[3]) < int(m[1]):
            return f"error: pages={pages!r}: give page numbers from 1, like '3', '1-3', '2,5-7' or '4-'"
        out.append((int(m[1]), int(m[3]) if m[3] else None if m[2] else int(m[1])))
    return out


def _pdf_bytes(p, path)->bytes|str:
    "The bytes of the PDF at `p` (a regular file under the size cap, starting like a PDF); or `error: ...`."
    big = f'error: {path} is over {_MAX_PDF_BYTES // 1_000_000} MB, too big to read'
    try:
        if not stat.S_ISREG(os.stat(p).st_mode): return f'error: {path} is not a regular file'
        with open(os.open(p, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0)), 'rb') as f:   # a FIFO swapped in: no wait
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode): return f'error: {path} is not a regular file'
            if st.st_size > _MAX_PDF_BYTES: return big
            data = f.read(st.st_size + 1)   # not the cap: read(n) allocates n bytes first
    except OSError as e: return f'error: cannot read {path}: {e.strerror or e}'
    if len(data) > _MAX_PDF_BYTES: return big   # it grew since
    return data if b'%PDF-' in data[:1024] else f'error: {path} is not a PDF'


def _run_child(data, args)->tuple:
    "(events, late): what the child reported, and whether it was killed at the deadline."
    import subprocess
    cmd = [sys.executable, '-c', _PDF_CHILD, json.dumps(args)]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try: out, late = p.communicate(data, timeout=_PDF_SECONDS)[0], False
    except subprocess.TimeoutExpired:
        p.kill()
        out, late = p.communicate()[0], True   # what it wrote before is kept
    except BaseException:   # an interrupt: the child goes too
        p.kill()
        p.communicate()
        raise
    events = []
    for line in out.decode('ascii', 'replace').splitlines():
        try: events.append(json.loads(line))
        except ValueError: pass   # the last line, cut by the kill
    return events, late or p.returncode not in (0, None) and not any('error' in e for e in events)


def _pages(n): return f'{n} page{"s" * (n != 1)}'


def _pdf_text(path, events, late)->str|tuple:
    "(header, text) from what the child reported; or `error: ...`."
    said = {k: e[k] for e in events for k in ('pages', 'stop', 'error') if k in e}
    got = [(e['page'], e['text']) for e in events if 'page' in e]
    n, err, stop = said.get('pages'), said.get('error'), said.get('stop')
    if err == 'no pypdf': return PDF_HINT
    if not got:
        if err: return f'error: cannot read {path}: {err}'
        if late or n is None: return f'error: reading {path} stopped after {_PDF_SECONDS:g} s; ask for fewer pages'
        return f'error: {path} has {_pages(n)}; ask for pages from 1 to {n}' if n else f'error: {path} has no pages'
    text = '\n'.join(f'--- page {i} ---\n{t.strip() or "(no text on this page: a scanned image?)"}' for i,t in got)
    note = (f'stopped after {_PDF_SECONDS:g} s: ask for fewer pages' if late else
            f'page {got[-1][0] + 1} could not be read: {err}' if err else
            f'stopped at page {stop}: ask for pages from {stop} on' if stop and len(got) == _MAX_PAGES else '')
    return f'{path}: {_pages(n)}' + (f' [{note}]' if note else ''), text


def pdf_tools(
    root:Path,  # The notebook's folder: read_pdf reads only files under it
)->list:        # [read_pdf]
    "The `pdf` source's tools: read_pdf, confined to `root`."
    root = Path(root).resolve()

    def read_pdf(
        path:str,      # PDF file, relative to the notebook's folder
        pages:str='',  # Pages to read, from 1: '3', '1-3', '2,5-7' or '4-'; empty: from the first
        start:int=0,   # Character to start from, to read on where the last answer stopped
    )->str:            # The page count on the first line, then each page's text under a `--- page N ---` line
        "Read the text of a PDF file, page by page"
        from importlib.util import find_spec
        if find_spec('pypdf') is None: return PDF_HINT
        if isinstance(start := _start(start), str): return start
        if isinstance(ranges := parse_pages(pages), str): return ranges
        if isinstance(p := confine(root, path), str): return p
        if not p.exists(): return f'error: no such file: {path}'
        if isinstance(data := _pdf_bytes(p, path), str): return data
        args = dict(ranges=ranges, want=start + _PAGE, max_pages=_MAX_PAGES, page_chars=_PAGE_CHARS,
                    memory=_PDF_MEMORY, stream=_PDF_STREAM, cpu=int(_PDF_SECONDS) + 2)
        if isinstance(res := _pdf_text(path, *_run_child(data, args)), str): return res
        head, text = res
        if start and start >= len(text): return f'error: those pages have {len(text):,} characters; start is past them'
        shown = pages if isinstance(pages, str) else str(pages)
        return f'{head}\n' + _window(text, start, lambda at: f'read_pdf({path!r}, pages={shown!r}, start={at})',
                                     counted=False)   # the child stops once it has enough text: the rest is not counted

    return [read_pdf]


def pdf_source(ctx)->list:
    "The `pdf` tool source: read_pdf under the notebook's folder (`ctx.root`)."
    return pdf_tools(ctx.root)
