"""What the model sees: the notebook cells above a prompt, as chat messages within a token budget.

Cells are plain records (`Cell`) with nbformat-style outputs, whether they were captured live in the
kernel, recovered from the input history, or read from the saved notebook. `order_cells` puts them
in notebook order; `build_context` turns them into messages: earlier prompt cells and their replies
become user/assistant turns (each question as its request sent it, each reply exactly as generated),
everything else is shown to the model as the cells it ran. Long outputs are clipped with a visible
marker, and when the whole does not fit, the oldest cells are dropped first, never the current prompt.
Images (outputs, Markdown attachments and image links) go to vision models as images, newest first
within a budget, scaled down (`images.py`); other models get a short placeholder. The returned ledger
says what was sent, clipped and dropped, images included.

Prefix reuse: while a notebook only grows, each prompt's messages extend the previous prompt's, so a
local server (llama.cpp, Ollama) takes all but the new part from its prompt cache: nothing in an
earlier cell's text depends on what came after it, and the budget drops cells (and stops sending old
images) in large steps, on a grid fixed from the notebook's start, not one at a time.

    msgs, ledger = build_context(order_cells(executed, saved, current), 'Why is this slow?', limit=6000)
"""

__all__ = ['Cell', 'is_prompt', 'is_own', 'prompt_text', 'reply_text', 'order_cells', 'clip', 'cell_text', 'fenced',
           'build_context', 'context_window', 'estimate_tokens', 'cell_tags', 'SYSTEM_PROMPT', 'HIDE_TAG', 'PIN_TAG', 'MODEL_TAG',
           'Hidden', 'hidden_parts', 'bound_names', 'is_hidden', 'adds_nothing']

import ast, dataclasses, functools, json, re
from dataclasses import dataclass, field
from .images import IMAGE_MIMES, ImagePicker, image_tokens, markdown_images
from .messages import mk_msg, image_part

SYSTEM_PROMPT = ("You are a helpful assistant inside a Jupyter notebook. The user's messages show the notebook "
                 "cells they ran (code with its outputs and errors, and Markdown notes), followed by their "
                 "question after a line with `---`. Answer that question. Write Markdown, and put code in "
                 "fenced blocks with a language tag.")
_MSG_OVERHEAD = 4       # tokens a chat template adds around each message
_ANSI = re.compile(r'\x1b\[[0-9;?]*[A-Za-z]')
_TEXT_MIMES = ('text/markdown', 'text/plain', 'text/html', 'application/json', 'text/latex')
_OWN_LINE = re.compile(r'\s*(%(load_ext|reload_ext)\s+boopiter_ext|%boop\b|%config\s+BoopMagics\b)')
HIDE_TAG, PIN_TAG = 'boop-hide', 'boop-pin'   # cell tags: never sent; never dropped to fit the window
MODEL_TAG = 'boop-model'   # cell tag: the cell holds code a reply wrote (the extension's Insert), marked so to the model


@dataclass
class Cell:
    "One notebook cell as the model may see it; `outputs` are nbformat-style output dicts."
    source: str
    kind: str = 'code'                  # 'code', 'prompt' or 'markdown'
    outputs: list = field(default_factory=list)
    cell_id: str = None
    exec_count: int = None
    origin: str = 'live'                # 'live' (captured), 'history' (ran before loading), 'file' (saved) or
                                        # 'frontend' (as the notebook shows it now, unsaved edits included)
    attachments: dict = field(default_factory=dict)   # a Markdown cell's attachments: {name: {mime: base64}}
    tags: tuple = ()                    # the cell's tags (`boop-hide`, `boop-pin`, any other)


def cell_tags(meta)->tuple:
    "The tags in a cell's metadata (from a file, a frontend or an execute request), as plain strings only."
    tags = meta.get('tags') if isinstance(meta, dict) else None
    return tuple(t for t in tags if isinstance(t, str) and 0 < len(t) <= 100)[:50] if isinstance(tags, list) else ()


def is_hidden(cell)->bool: return HIDE_TAG in cell.tags


def _targets(node):
    "The names an assignment target binds: `a`, `a, (b, *c)`, not `a.b` or `a[0]`."
    if isinstance(node, ast.Name): return {node.id}
    if isinstance(node, (ast.Tuple, ast.List)): return set().union(*map(_targets, node.elts))
    if isinstance(node, ast.Starred): return _targets(node.value)
    return set()


@functools.lru_cache(maxsize=4096)
def _binding(source):
    "(names the cell binds anew, names it binds or stores into), `bound_names` below."
    try: tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):   # every name in it, to be safe, and none replaced
        return frozenset(), frozenset(re.findall(r'[^\W\d]\w*', source))
    new, into = set(), set()
    for n in ast.walk(tree):
        if isinstance(n, ast.AugAssign): into |= _targets(n.target)   # `x += 1`: still the value x had
        elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)): new.add(n.id)
        elif isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store):   # `d[k] = v`: d holds v now
            while isinstance(n, (ast.Subscript, ast.Attribute)): n = n.value
            if isinstance(n, ast.Name): into.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)): new.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            new |= {a.asname or a.name.split('.')[0] for a in n.names if a.name != '*'}
            if any(a.name == '*' for a in n.names): into |= set(re.findall(r'[^\W\d]\w*', source))   # anything at all
        elif isinstance(n, ast.ExceptHandler) and n.name: new.add(n.name)
        elif isinstance(n, ast.Global): into |= set(n.names)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name: new.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest: new.add(n.rest)
    return frozenset(new - into), frozenset(new | into)


def bound_names(
    source:str,   # A code cell's source
)->frozenset:     # The names it may bind in the namespace
    """The names a cell binds or stores into: assignments (augmented, annotated, walrus; `d[k] = v` and `o.a = v` store
    into `d` and `o`), imports, `def` and `class`, `for` and `with` targets, `except ... as`, `match` captures, `global`
    declarations; a cell that does not parse as Python (magics, `x = !ls`): every name in it, to be safe."""
    return _binding(source)[1]


@dataclass
class Hidden:
    """What the hidden cells hold, to keep from every tool and reference: their ids and sources (a notebook file holds
    them too) and the names whose values came from them."""
    ids: frozenset = frozenset()
    sources: frozenset = frozenset()
    names: frozenset = frozenset()

    def __bool__(self): return bool(self.ids or self.sources or self.names)


def _ran(c): return c.origin in ('live', 'history')


def hidden_parts(
    cells:list,   # Every cell of the notebook (`order_cells` without a current one): those that ran, with their tags
)->Hidden:
    """The hidden cells' ids, sources and names. A name is hidden when a hidden cell binds or stores into it and no
    visible cell that ran in this kernel bound it anew after the last hidden one that ran (a hidden cell that did not run
    here counts as first; `x += 1` or `d[k] = v` in a visible cell keeps what the hidden one put there)."""
    hidden = [c for c in cells if is_hidden(c)]
    if not hidden: return Hidden()
    hid, vis = {}, {}   # name -> when a hidden cell last touched it / a visible one bound it anew (-1: did not run here)
    def when(c): return (c.exec_count or 0) if _ran(c) else -1
    for c in hidden:
        for n in _binding(c.source)[1] if c.kind == 'code' else (): hid[n] = max(hid.get(n, when(c)), when(c))
    if not hid: return Hidden(frozenset(c.cell_id for c in hidden if c.cell_id),
                              frozenset(c.source.strip() for c in hidden if c.source.strip()))
    named = re.compile(r'(?<!\w)(?:' + '|'.join(map(re.escape, sorted(hid, key=len, reverse=True))) + r')(?!\w)')
    for c in cells:   # a visible cell that ran is parsed only if it names one of them: most never do
        if c.kind != 'code' or is_hidden(c) or not _ran(c) or not named.search(c.source): continue
        for n in _binding(c.source)[0] & hid.keys(): vis[n] = max(vis.get(n, when(c)), when(c))
    names = frozenset(n for n,h in hid.items() if h > vis.get(n, -2))
    return Hidden(frozenset(c.cell_id for c in hidden if c.cell_id), frozenset(c.source.strip() for c in hidden
                                                                              if c.source.strip()), names)


def is_prompt(source:str)->bool: return source.lstrip().startswith('%%prompt')

def prompt_text(source:str)->str:
    "The question in a prompt cell: everything after the `%%prompt` line."
    return source.lstrip().partition('\n')[2].strip() if is_prompt(source) else source.strip()

_NO_DIGITS = str.maketrans('', '', '0123456789')

def estimate_tokens(text:str)->int:
    """A rough token count: ~4 ASCII characters per token, but a token per digit (local models' tokenizers split
    numbers into digits: a table of floats is ~0.85 tokens a character), and ~1 per other character (CJK, emoji)."""
    wide = len(text) - len(text.encode('ascii', 'ignore'))
    digits = len(text) - len(text.translate(_NO_DIGITS))
    return (len(text) - wide - digits) // 4 + digits + wide + 1

def adds_nothing(cell:Cell)->bool:
    """Whether `cell` adds nothing to a context: an empty cell, or a code cell that never ran (from the file or the page,
    with no execution count and no output), so running it later changes no prompt's context below it."""
    if not cell.source.strip(): return True
    return cell.kind == 'code' and cell.origin in ('file', 'frontend') and cell.exec_count is None and not cell.outputs


def is_own(cell:Cell)->bool:
    "Whether `cell` only loads or configures boopiter (nothing the model needs to see)."
    lines = [ln for ln in cell.source.splitlines() if ln.strip()]
    return cell.kind == 'code' and bool(lines) and all(_OWN_LINE.match(ln) for ln in lines)


def reply_text(cell:Cell)->str|None:
    "The reply a prompt cell shows (its boopiter output's text/plain), or None."
    for o in reversed(cell.outputs):
        if _own(o).get('reply'): return _join(_data(o).get('text/plain', ''))
    return None


def _asked(
    cell:Cell,      # An earlier prompt cell, with its reply
    question:str,   # Its question, as its text has it now
    limit:int=0,    # Most characters its request may have added (a reply is clipped at as much); 0: any
)->str:
    """The question as its reply's request sent it (with the values of its $`variables`, which its reply's metadata
    keeps: `render.reply_metadata`), so a later prompt repeats that turn token for token; else `question`."""
    for o in reversed(cell.outputs):
        if not _own(o).get('reply'): continue
        sent = _field(_own(o), 'context').get('asked')
        ok = isinstance(sent, str) and sent.startswith(question) and (not limit or len(sent) - len(question) <= limit)
        return sent if ok else question
    return question


# Live outputs come from whatever the kernel published, saved ones from a file anyone can write (`nbfile.py`
# cleans those): these read either without trusting its shape.
def _join(v): return ''.join(s for s in v if isinstance(s, str)) if isinstance(v, list) else v if isinstance(v, str) else ''
def _field(o, k): return v if isinstance(o, dict) and isinstance(v := o.get(k), dict) else {}
def _meta(o): return _field(o, 'metadata')
def _data(o): return _field(o, 'data')
def _own(o): return _field(_meta(o), 'boopiter')
def _word(v): return v if isinstance(v, str) else str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else ''


def clip(
    text:str,    # Text to shorten
    limit:int,   # Characters to keep; 0 keeps everything
)->tuple:        # (text, was_clipped)
    "Keep the head and tail of `text`, with a visible marker where the middle was cut."
    if not limit or len(text) <= limit: return text, False
    head, tail = text[:limit*2//3], text[-(limit//3):] if limit >= 3 else ''
    return f'{head}\n… [clipped {len(text)-len(head)-len(tail):,} of {len(text):,} characters] …\n{tail}', True


def fenced(
    text:str,     # Any text, backticks included
    lang:str='',  # Info string
)->str:           # `text` in a code fence no backtick run inside it can close
    "A fenced code block around `text`, with a fence longer than any run of backticks in it."
    ticks = max([3] + [len(m) + 1 for m in re.findall(r'`{3,}', text)])
    return f'{"`"*ticks}{lang}\n{text.rstrip()}\n{"`"*ticks}'


def _stream_text(s):
    "Terminal-like text: a carriage return rewrites its line (progress bars shrink to their last state)."
    s = _ANSI.sub('', s)
    return '\n'.join(line.rsplit('\r', 1)[-1] for line in s.split('\n')) if '\r' in s else s


def _display_text(data):
    for mime in _TEXT_MIMES:
        if mime not in data: continue
        if mime == 'application/json':
            try: return json.dumps(data[mime], indent=1, ensure_ascii=False, default=str)
            except (ValueError, TypeError, RecursionError): continue   # circular, or nested too deep to write
        text = _join(data[mime])
        if mime == 'text/plain' and re.fullmatch(r'<[\w.]+ object(?: at 0x[0-9a-f]+)?>', text.strip()): continue
        return re.sub(r'<[^>]+>', ' ', text) if mime == 'text/html' else text
    return None


def _output_parts(o, pick, where):
    "(text, images) for one output: `pick` decides whether an image goes to the model or becomes a placeholder."
    kind = o.get('output_type')
    if kind == 'stream': return _stream_text(_join(o.get('text'))), []
    if kind == 'error':
        tb = o.get('traceback')
        tb = '\n'.join(s for s in (tb if isinstance(tb, list) else [tb]) if isinstance(s, str))
        tb = _ANSI.sub('', tb).strip().splitlines()[-12:]
        head = f'{_word(o.get("ename"))}: {_word(o.get("evalue"))}'
        return '\n'.join(tb) if tb and head in tb[-1] else '\n'.join(tb + [head]), []
    data = _data(o)
    if (mime := next((m for m in IMAGE_MIMES if m in data), None)):
        raw = data[mime]   # bytes as a display hook sees a PIL image's repr (the kernel base64-encodes it when sending)
        text, imgs = pick(where, mime, raw if isinstance(raw, bytes) else _join(raw))
        if not imgs and (alt := _display_text({k: v for k,v in data.items() if k != 'text/plain'})): return alt, []
        return text, imgs
    text = _display_text(data)
    return (text, []) if text is not None else (f'[{", ".join(data) or "empty"} output omitted]', [])


_DATA_URL = re.compile(r'data:image/[\w.+-]+;base64,[A-Za-z0-9+/=\s]{64,}')


def without_data_urls(text:str)->str:
    "`text` with inline base64 images shortened: the image goes as an image, or not at all, never as text."
    return _DATA_URL.sub(lambda m: m[0].partition(',')[0] + ',…', text)


def _markdown_parts(text, attachments, root, pick, where):
    "(lines to add, images) for the images a Markdown text shows."
    lines, imgs = [], []
    attachments = attachments if isinstance(attachments, dict) else {}
    attachments = {k: {m: _join(v) for m,v in b.items()} for k,b in attachments.items() if isinstance(b, dict)}
    for name, img, why in markdown_images(text, attachments, root):
        if img is None: pick.skip(where, name, why)
        else:
            t, i = pick(where, img[0], img[1], name=name)
            lines.append(t); imgs += i
    return lines, imgs


def cell_text(
    cell:Cell,            # A code or Markdown cell
    clip_chars:int=4000,  # Characters kept per output (0: all)
    pick:ImagePicker=None,# Decides which images go to the model (default: none, placeholders instead)
    root=None,            # The notebook's folder, where Markdown image links are read from
)->tuple:                 # (text, images, clipped): images as `images.ContextImage`s
    "How one non-prompt cell reads to the model."
    pick, where = pick or ImagePicker(), _label(cell)
    if cell.kind == 'markdown':
        lines, imgs = _markdown_parts(cell.source, cell.attachments, root, pick, where)
        return '\n'.join([f'Markdown note:\n{without_data_urls(cell.source.strip())}', *lines]), imgs, False
    label = f'In [{cell.exec_count}]' if cell.exec_count else 'Code cell'
    if MODEL_TAG in cell.tags: label += ' (code from an earlier reply of the assistant, put in the notebook)'
    out, imgs, clipped, streams = [], [], False, ''
    outputs = [o for o in cell.outputs if isinstance(o, dict) and not _meta(o).get('boopiter')]
    for o in outputs + [{}]:
        if o.get('output_type') == 'stream':
            streams += _join(o.get('text'))
            continue
        if streams:
            t, c = clip(_stream_text(streams), clip_chars)
            out.append(t); clipped |= c
            streams = ''
        if not o: break
        t, im = _output_parts(o, pick, where)
        t, c = clip(t, clip_chars)
        out.append(t); imgs += im; clipped |= c
    text = f'{label}:\n{fenced(cell.source, "python")}'
    if out: text += '\nOutput:\n' + fenced('\n'.join(out))
    return text, imgs, clipped


def _label(cell):
    n = f' [{cell.exec_count}]' if cell.exec_count else ''
    if cell.kind == 'markdown': return 'Markdown note' + (' (unsaved edit)' if cell.origin == 'frontend' else '')
    where = {'history': ' (ran before loading)', 'file': ' (saved, from an earlier run)'}.get(cell.origin, '')
    if cell.kind == 'code' and cell.origin == 'frontend': where = ' (not run in this kernel)'
    if cell.kind == 'prompt': return f'Prompt{n} and reply{where}'
    return f'In{n or " [ ]"}{where}'


def order_cells(
    executed:list,      # Cells run in this kernel, in execution order, one per cell (re-runs replaced)
    saved:list=None,    # The notebook's cells in order: its file's, or as its frontend shows them (None: unknown)
    current:Cell=None,  # The prompt cell being run
)->list:
    """The notebook above `current`, in notebook order: each cell as it ran in this kernel, else as the notebook holds
    it (code with its saved outputs, earlier prompts with their saved replies, notes); cells run here that the notebook
    does not have yet follow, in execution order. With the notebook unknown: the cells run here."""
    mine = current.cell_id if current is not None else None
    executed = [c for c in executed if c is not current and not (mine and c.cell_id == mine)]  # a re-run replaces
    if saved is None: return executed
    by_id = {c.cell_id: i for i,c in enumerate(saved) if c.cell_id}
    by_source = {}
    for i,c in enumerate(saved): by_source.setdefault(c.source.strip(), []).append(i)
    taken = set()
    def place(c):
        p = by_id.get(c.cell_id)
        if p is None or p in taken: p = next((i for i in by_source.get(c.source.strip(), []) if i not in taken), None)
        if p is not None: taken.add(p)
        return p
    exact = current is not None and current.cell_id in by_id
    cur = place(current) if exact else None
    spots = [(place(c), c) for c in sorted(executed, key=lambda c: c.cell_id not in by_id)]   # exact ids claim first
    if current is not None and not exact: cur = place(current)   # by its text: after the copies that already ran
    placed, unplaced = [], []
    for p,c in spots:
        if p is None: unplaced.append(c)
        elif cur is None or p < cur:
            if c.origin == 'history' and not c.outputs: c.outputs = saved[p].outputs
            tags = c.tags or saved[p].tags
            if is_hidden(saved[p]) and HIDE_TAG not in tags: tags += (HIDE_TAG,)   # hidden since it ran: hidden now
            if tags != c.tags: c = dataclasses.replace(c, tags=tags)   # as the notebook tags it now; the record stays
            placed.append((p, c))
    # where the prompt is not in the notebook yet, the cells below the last one run here are not above it
    end = cur if cur is not None else max((p for p,_ in placed), default=-1) + 1 if current is not None else len(saved)
    placed += [(i, c) for i,c in enumerate(saved) if i not in taken and i < end]
    order = {id(c): n for n,c in enumerate(executed)}
    return [c for p,c in sorted(placed, key=lambda t: t[0])] + sorted(unplaced, key=lambda c: order[id(c)])


def _units(cells, clip_chars, pick, root):
    "Group cells into budget units: a non-prompt cell, or a prompt with its reply; newest first, as images are picked."
    units = []
    for c in reversed(cells):
        if is_own(c) or adds_nothing(c): continue
        n = len(pick.records)
        if c.kind == 'prompt':
            q, a = prompt_text(c.source), reply_text(c)
            if not q: continue
            _, imgs = _markdown_parts(q, None, root, pick, _label(c))   # images an earlier question linked
            q = _asked(c, without_data_urls(q), clip_chars * 4) if a else without_data_urls(q)
            a, clipped = clip(a, clip_chars * 4) if a else (a, False)
            units.append(dict(cell=c, kind='turn', text=q, reply=a, images=imgs, clipped=clipped, records=pick.records[n:],
                              tokens=estimate_tokens(q) + estimate_tokens(a or '') + 2*_MSG_OVERHEAD + _image_cost(imgs)))
        else:
            t, imgs, clipped = cell_text(c, clip_chars, pick, root)
            units.append(dict(cell=c, kind='cell', text=t, images=imgs, clipped=clipped, records=pick.records[n:],
                              tokens=estimate_tokens(t) + _image_cost(imgs)))
    return units[::-1]


def _image_cost(imgs): return sum(image_tokens(i.width, i.height) for i in imgs)


class _Counting:
    "Stands in for an `ImagePicker` to count the images a context would ask about, fitting none."
    def __init__(self): self.asked, self.records = 0, []
    def __call__(self, where, mime, data, name=None):
        self.asked += 1
        return '', []
    def skip(self, where, what, why): pass


class _Stepped:
    """An `ImagePicker` that tries only the newest `allowed` images it is asked about (newest first): the older ones
    get the placeholder the picker gives past its budget, and the picker's own budget still applies."""
    def __init__(self, pick:ImagePicker, allowed:int): self.pick, self.allowed, self.asked = pick, allowed, 0
    @property
    def records(self): return self.pick.records
    def skip(self, where, what, why): self.pick.skip(where, what, why)
    def __call__(self, where, mime, data, name=None):
        self.asked += 1
        if self.asked <= self.allowed: return self.pick(where, mime, data, name)
        what, n = name or f'{mime} output', self.pick.max_images
        self.pick.skip(where, what, f'over the budget of {n} image{"s" * (n != 1)} (`max_images`)')
        return f'[{what} omitted: too many images]', []


def _image_picker(cells, prompt, vision, max_images, max_side, clip_chars, root):
    """The picker for a context: past `max_images`, the oldest images stop being sent half a budget at a time (counted
    from the notebook's start), not one per new image, so what the model was sent of older cells stays put while the
    notebook grows (a server's cache holds it)."""
    pick = ImagePicker(vision, max_images, max_side)
    if not vision or max_images <= 0: return pick
    count = _Counting()
    _markdown_parts(prompt, None, root, count, 'the prompt')
    _units(cells, clip_chars, count, root)
    step = max(1, max_images // 2)
    over = count.asked - max_images
    return pick if over <= 0 else _Stepped(pick, count.asked - -(-over // step) * step)


def _droppable(units, total, limit, keep, fixed)->set:
    """The units to drop to fit `limit`: the oldest, never a pinned one, cut on a grid of steps of `1-keep` of the budget
    counted from the notebook's start. A notebook that outgrows the budget loses its oldest cells down to about `keep`
    of it; then the cut stays put while it grows (each prompt's request extends the last one, so a server's cache
    serves all but the new cells) until the rest no longer fits, and moves a whole step. A question shorter than a
    sixteenth of the budget counts as that much, so the cut depends on the cells alone, not on each question."""
    if limit is None: return set()
    settled = total - fixed + max(fixed, limit // 16)
    if settled <= limit and total <= limit: return set()
    free = [i for i,u in enumerate(units) if PIN_TAG not in u['cell'].tags]
    step, top = max(1.0, limit * (1 - keep)), limit * (1 + keep) / 2   # kept: within (top - step, top], ~keep on average
    steps = max(1, -int(-(settled - top) // step)) if settled > limit else 0
    while True:
        done, dropped = 0, set()
        for i in free:   # up to the cell boundary nearest the cut
            if done + units[i]['tokens'] / 2 > steps * step: break
            done += units[i]['tokens']
            dropped.add(i)
        if total - done <= limit or len(dropped) == len(free): return dropped
        steps += 1   # this question does not fit even so: a step more for it alone


def _messages(units, prompt, prompt_images, system):
    msgs = [mk_msg(system, 'system')] if system else []
    pending, images = [], []
    def user(question, extra_images=()):
        body = '\n\n'.join(pending + ['---', question] if pending else [question])
        imgs = images + list(extra_images)
        msgs.append(mk_msg([body] + [image_part(i.data, i.mime) for i in imgs], 'user') if imgs else mk_msg(body, 'user'))
        pending.clear(); images.clear()
    for u in units:
        if u['kind'] == 'cell':
            pending.append(u['text']); images.extend(u['images'])
        elif u['reply']:
            user(u['text'], u['images'])
            msgs.append(mk_msg(u['reply'], 'assistant'))
        else:
            pending.append(f'Earlier question (no reply):\n{u["text"]}'); images.extend(u['images'])
    user(prompt, prompt_images)
    return msgs


def build_context(
    cells:list,           # Cells above the prompt, in order (see `order_cells`)
    prompt:str,           # The question in the current prompt cell
    limit:int=None,       # Token budget for the whole context (None: no limit)
    system:str=SYSTEM_PROMPT, # System prompt ('' for none)
    clip_chars:int=4000,  # Characters kept per output
    vision:bool=False,    # Send images as images (vision models)
    root=None,            # The notebook's folder: Markdown image links (in notes and the prompt) are read inside it
    max_images:int=8,     # Most images sent with one prompt; the newest are kept (past it, half as many go at once)
    max_side:int=1024,    # Longest side of an image sent, in pixels
    keep:float=0.75,      # Past the budget, the oldest cells go in steps of `1-keep` of it: ~`keep` of it is kept
)->tuple:                 # (messages, ledger)
    """Messages for the model and a ledger of what was sent, clipped, dropped and hidden. Each prompt's messages extend
    the previous prompt's while the notebook only grows (same system prompt, same text for every earlier cell, earlier
    prompts as the turns their requests sent), so a server's prompt cache serves all but what is new."""
    shown = [c for c in cells if HIDE_TAG not in c.tags]
    pick = _image_picker(shown, prompt, vision, max_images, max_side, clip_chars, root)
    _, prompt_images = _markdown_parts(prompt, None, root, pick, 'the prompt')   # the newest images of all
    n_prompt, prompt = len(pick.records), without_data_urls(prompt)
    hidden = [c for c in cells if HIDE_TAG in c.tags and not is_own(c)]
    units = _units(shown, clip_chars, pick, root)
    system_tokens = estimate_tokens(system) + _MSG_OVERHEAD
    fixed = system_tokens + estimate_tokens(prompt) + _MSG_OVERHEAD + _image_cost(prompt_images)
    total = fixed + sum(u['tokens'] for u in units)
    dropped = _droppable(units, total, limit, keep, fixed - system_tokens)
    for i in dropped:
        total -= units[i]['tokens']
        for r in units[i]['records']: r.update(status='dropped', why='its cell was dropped to fit the window')
    sent = [u for i,u in enumerate(units) if i not in dropped]
    def status(i, u): return ('dropped' if i in dropped else 'clipped' if u['clipped'] else 'sent') + \
                             (' (pinned)' if PIN_TAG in u['cell'].tags else '')
    items = [(u['cell'], dict(label=_label(u['cell']), tokens=u['tokens'], images=[i.size for i in u['images']],
                              status=status(i, u))) for i,u in enumerate(units)]
    where = {id(c): n for n,c in enumerate(cells)}   # the ledger in notebook order, hidden cells in their places
    items = [it for _,it in sorted(items + [(c, dict(label=_label(c), tokens=0, images=[], status='hidden')) for c in hidden],
                                   key=lambda t: where[id(t[0])])]
    notes = []
    if limit is not None and total > limit:
        notes.append(f'the prompt alone (~{fixed:,} tokens) exceeds the budget of {limit:,} tokens; sent anyway'
                     if not any(PIN_TAG in u['cell'].tags for u in sent) else
                     f'the prompt and the pinned cells (~{total:,} tokens) exceed the budget of {limit:,} tokens; sent anyway')
    records = [r for u in units for r in u['records']] + pick.records[:n_prompt]   # in context order
    ledger = dict(items=items, tokens=total, limit=limit, clipped=sum(i['status'].startswith('clipped') for i in items),
                  dropped=len(dropped), hidden=len(hidden), images=sum(r['status'] == 'sent' for r in records),
                  image_records=records, notes=notes, asked=prompt,   # asked: the reply keeps it for the next prompts
                  sent=[u['cell'] for u in sent])   # the cells sent: a reply's metadata keeps their fingerprint
    return _messages(sent, prompt, prompt_images, system), ledger


def context_window(
    needed:int,         # Tokens the request needs: context plus room for the reply
    model_max:int=None, # The model's trained context length, if known
    requested:int=0,    # A context size the user set (0: automatic)
    floor:int=4096,     # Smallest automatic window
)->int:
    "The `num_ctx` to ask for: the user's, else the next power-of-two step that fits; never more than the model's."
    if requested: return min(requested, model_max) if model_max else requested   # past it, the model only babbles
    w = floor
    while w < needed: w *= 2
    return min(w, model_max) if model_max else w
