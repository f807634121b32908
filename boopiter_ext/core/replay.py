"""Reproducible replies: what identifies a request, saved replies reused, and cassettes.

Every model request gets a digest (`request_digest`): SHA-256 over the model id, the options that change
the reply (effort, `max_tokens`, context window) and the messages, images included, exactly as sent,
except for what differs between two runs of the same notebook: execution counts in cell labels and
traceback frames, the kernel's process id in traceback paths, and memory addresses in object reprs
(`<Foo object at 0x7f3a…>`). Asking the same again is recognised by it:

- **Reply cache.** Each reply's output carries its digest in its metadata (`boopiter.digest`), so it
  travels with the notebook. Before asking, `find_saved_reply` looks through the replies this kernel
  showed and those saved in the notebook file; `DiskCache` is an optional folder of replies as well.
- **Kept replies.** When the model that would answer is not the one that wrote a prompt cell's saved reply (the
  automatic choice or the binding changed), that reply is kept, not replaced, if only the model differs:
  `find_kept_reply` recomputes the digest with the saved reply's own model, effort and context window over the
  messages about to be sent, and keeps it on a match.
- **Stale replies.** A rerun never asks again behind your back. Each reply's metadata holds a fingerprint of the
  cells its context held (`context.cells`: [cell id, 12 hex digits of SHA-256 over what the cell showed the model],
  `context_fingerprint`). When a prompt cell with a saved reply to the same question runs again and its context
  differs, that reply is shown again, marked *stale* with the cells that changed (`context_changes`, `stale_line`);
  asking again is deliberate (`--fresh`, the reply's Ask again, or `reuse = off` in your own settings), and the
  replaced reply's text stays in the new one's metadata (`previous`, bounded: `clean_previous`).
- **Cassettes.** `Cassette` is a JSON file next to the notebook (`analysis.cassette.json`): each model
  turn recorded with its digest, reply text, reasoning, counts and timings, and what each model said of
  itself. Replaying serves every request from it, through the real loop, tools and guards; a request
  it has no turn for is refused (`CassetteDrift`: re-record), never invented.

What is read back from a file (a saved reply's metadata, a cassette, a cache file) is checked at the
boundary: `clean_snapshot` and `clean_model_info` keep known keys with values of the right type and range,
and a cassette that cannot be read at all is refused with one line, never a traceback.

The cassette format, version 1 (keys in this order; turns in the order they were recorded)::

    {"format": "boopiter-cassette", "version": 1,
     "models": {"qwen3:1.7b": {"capabilities": [...], "context_length": 40960, "vision": false}},
     "auto_model": "qwen3:1.7b",             # what answered when no model was picked, if that happened
     "turns": [{"digest": "sha256:…", "model": "qwen3:1.7b", "options": {"think": "h", ...},
                "reply": {"answer": "…", "reasoning": "…", "info": {...}, "ttft": 0.21, ...},
                "recorded_at": "2026-11-30T10:00:00Z"}]}
"""

__all__ = ['request_digest', 'find_saved_reply', 'find_kept_reply', 'cell_hash', 'context_fingerprint',
           'clean_fingerprint', 'context_changes', 'stale_line', 'latest_reply', 'clean_previous', 'PREVIOUS_CHARS',
           'saved_model_info', 'saved_snapshot', 'saved_auto_model',
           'clean_snapshot', 'clean_model_info', 'DiskCache', 'Cassette', 'cassette_path', 'CASSETTE_FORMAT',
           'CASSETTE_VERSION', 'MAX_CONTEXT_LENGTH']

import hashlib, json, os, re, tempfile, time
from collections import OrderedDict
from contextlib import contextmanager, suppress
from pathlib import Path
from ..errors import CassetteDrift
from ..context.build import prompt_text, reply_text
from ..context.nbfile import clean_output, json_value, load_json
from ..settings import THINK_LEVELS, check_setting, refusal
from ..models.stream import STATUS_NOTES

CASSETTE_FORMAT, CASSETTE_VERSION = 'boopiter-cassette', 1
_DIGEST = re.compile(r'[\w:.-]{1,100}')   # `sha256:<hex>`
_VOLATILE = [  # what differs between two runs of the same notebook, and only that: never a number the user wrote
    (re.compile(r'^In \[\d+\]:$', re.M), 'In [ ]:'),                      # the label `context.cell_text` writes
    (re.compile(r'\b((?:Cell|Input) In ?\[)\d+\]'), r'\1 ]'),               # traceback frames: `Cell In[7], line 2`
    (re.compile(r'ipykernel_\d+'), 'ipykernel_…'),                          # /tmp/ipykernel_<pid>/<hash>.py frames
    (re.compile(r'( at 0x)[0-9a-fA-F]+>'), r'\1…>')]                        # object reprs: `<Foo object at 0x7f…>`


def _stable(text):
    for rx, sub in _VOLATILE: text = rx.sub(sub, text)
    return text


_image_digests = OrderedDict()


def _image_digest(url):
    "SHA-256 of an image part's data URL, remembered: a notebook's images are hashed once, not on every prompt."
    key = hash(url), len(url), url[:64], url[-64:]   # never holds the image; Python keeps a string's hash
    if key not in _image_digests:
        _image_digests[key] = hashlib.sha256(url.encode()).hexdigest()
        if len(_image_digests) > 256: _image_digests.popitem(last=False)
    return _image_digests[key]


def _stable_part(p):
    if p.get('type') == 'text': return dict(p, text=_stable(p['text']))
    if p.get('type') == 'image_url':
        url = p['image_url']['url'] if isinstance(p['image_url'], dict) else p['image_url']
        return dict(type='image', sha256=_image_digest(url))
    return p


def _stable_msg(m):
    c = m['content']
    return dict(role=m['role'], content=_stable(c) if isinstance(c, str) else [_stable_part(p) for p in c])


def request_digest(
    model:str,      # Model id as asked
    messages:list,  # Messages in `messages.mk_msg` form, exactly as sent
    options:dict,   # What else changes the reply: effort, max_tokens, num_ctx
)->str:             # 'sha256:<hex>'
    "The identity of a request: the same notebook asking the same model the same thing gets the same digest."
    body = dict(model=model, options={k: v for k,v in sorted(options.items()) if v not in (None, '', 0)},
                messages=[_stable_msg(m) for m in messages])
    return 'sha256:' + hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _meta(o)->dict:
    "An output's `boopiter` metadata, or {} (live outputs are not cleaned like saved ones: any shape may turn up)."
    md = o.get('metadata') if isinstance(o, dict) else None
    md = md.get('boopiter') if isinstance(md, dict) else None
    return md if isinstance(md, dict) else {}


def _reply_outputs(cells):
    "Every boopiter reply output of `cells` (`context.Cell`s), newest cell last."
    for c in cells:
        for o in c.outputs:
            if (md := _meta(o)).get('reply'): yield o, md


def find_saved_reply(
    digest:str,          # `request_digest` of the request about to be made
    *sources,            # Lists of `context.Cell`s: this kernel's, the saved notebook's
    cell_id:str=None,    # The asking cell's id: its own earlier reply wins over another cell's with the same digest
)->dict|None:            # The newest finished reply output with that digest; texts joined
    "A finished reply to exactly this request among the outputs of `sources` (the asking cell's own first, newest first)."
    for own in ((True, False) if cell_id else (False,)):
        for cells in sources:
            for o, md in reversed(list(_reply_outputs(c for c in cells or [] if not own or c.cell_id == cell_id))):
                if md.get('digest') == digest and md.get('status') == 'done' and isinstance(o.get('data'), dict):
                    return _joined(o)
    return None


def _saved_options(md)->dict|None:
    "The effort and context window a saved reply was asked with (its metadata), if they are well formed."
    effort, ctx = md.get('effort'), md.get('context')
    window = ctx.get('window') if isinstance(ctx, dict) else None
    if effort is not None and effort not in THINK_LEVELS: return None
    if window is not None and not _number(MAX_CONTEXT_LENGTH, int, lo=1)(window): return None
    return dict(think=effort, num_ctx=window)


def find_kept_reply(
    model:str,           # The model that would answer now
    messages:list,       # The messages about to be sent
    options:dict,        # The options about to be sent (their `max_tokens`; effort and window are the reply's own)
    cells:list,          # `context.Cell`s whose replies may be kept, the likeliest first (the asking cell's own)
)->tuple|None:           # (output, digest): the finished reply and its digest; texts joined
    """A finished reply among `cells`' outputs from a model other than `model` to exactly these messages: its digest
    equals `request_digest` recomputed with its own model, effort and context window. Each (model, effort, window)
    is hashed once."""
    digests = {}
    for c in cells:
        for o, md in reversed(list(_reply_outputs([c]))):
            if md.get('status') != 'done' or not isinstance(o.get('data'), dict) or md.get('model') == model: continue
            if not check_setting('model', md.get('model')) or (opts := _saved_options(md)) is None: continue
            key = md['model'], opts['think'], opts['num_ctx']
            if key not in digests:
                if len(digests) >= 16: return None   # bounded work, whatever a notebook holds
                digests[key] = request_digest(md['model'], messages, {**options, **opts})
            if md.get('digest') == digests[key]: return _joined(o), digests[key]
    return None


FINGERPRINT_CELLS, PREVIOUS_CHARS = 5000, 20_000   # cells a fingerprint lists; characters of a replaced reply kept
_HASH, _CELL_KEY = re.compile(r'[0-9a-f]{12}'), re.compile(r'[\w.:-]{0,256}')


def _joined_text(v): return ''.join(s for s in v if isinstance(s, str)) if isinstance(v, list) else v if isinstance(v, str) else ''


def _output_bits(o):
    "What one output showed the model, for a cell's hash: its texts (run counters aside), each image by its bytes."
    if not isinstance(o, dict) or _meta(o): return   # a reply, the binding, a tool round: not the cell's own output
    if o.get('output_type') == 'stream': yield _stable(_joined_text(o.get('text')))
    elif o.get('output_type') == 'error':
        tb = o.get('traceback')
        yield _stable('\n'.join([_joined_text(o.get('ename')), _joined_text(o.get('evalue')),
                                 *(t for t in (tb if isinstance(tb, list) else []) if isinstance(t, str))]))
    data = o.get('data')
    for m,v in sorted(data.items()) if isinstance(data, dict) else ():
        if isinstance(v, list) and all(isinstance(x, str) for x in v): v = ''.join(v)
        elif not isinstance(v, str):   # JSON data (a file's is depth-checked when read; a live one may be anything)
            try: v = json.dumps(v, sort_keys=True, default=str)
            except (ValueError, TypeError, RecursionError): v = repr(type(v))
        yield m + ':' + (_image_digest(v) if m.startswith('image/') else _stable(v))


def cell_hash(
    cell,   # A `context.Cell` as the context holds it
)->str:     # 12 hex digits
    """What a cell showed the model, hashed: a prompt's question and reply, a note's text and images, a code cell's source
    and outputs (images by their bytes); run counters, process ids and memory addresses aside (as `request_digest`)."""
    if cell.kind == 'prompt': parts = ['prompt', prompt_text(cell.source), reply_text(cell) or '']
    elif cell.kind == 'markdown':
        parts = ['markdown', cell.source.strip(), *(f'{n}:{m}:{_image_digest(str(v))}' for n,b in (cell.attachments or {}).items()
                                                   for m,v in (b.items() if isinstance(b, dict) else ()))]
    else: parts = ['code', cell.source.strip(), *(b for o in cell.outputs for b in _output_bits(o))]
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode('utf-8', 'replace')).hexdigest()[:12]


def context_fingerprint(
    cells:list,   # The cells a request's context held (`build_context`'s ledger: `sent`)
)->list:          # [[cell id or '', cell_hash], ...], the newest `FINGERPRINT_CELLS`
    "The fingerprint a reply's metadata keeps of its context: which cells it held, and what each showed the model."
    return [[c.cell_id if isinstance(c.cell_id, str) and _CELL_KEY.fullmatch(c.cell_id) else '', cell_hash(c)]
            for c in cells[-FINGERPRINT_CELLS:]]


def clean_fingerprint(v)->list|None:
    """A fingerprint read from a file (untrusted): a list of at most `FINGERPRINT_CELLS` [id, 12 hex digits] pairs, ids
    of word characters, `.`, `:` and `-`; None (unknown) if anything in it is of another shape."""
    if not isinstance(v, list) or len(v) > FINGERPRINT_CELLS: return None
    ok = all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and _CELL_KEY.fullmatch(p[0])
             and isinstance(p[1], str) and _HASH.fullmatch(p[1]) for p in v)
    return [list(p) for p in v] if ok else None


def context_changes(
    saved:list|None,  # `clean_fingerprint` of the saved reply's context (None: not known)
    cells:list,       # The cells the context holds now
)->dict:              # changed, new: the cells now whose text the reply never saw; gone: how many it saw are not there
    """What changed in a prompt's context since its reply: a cell it holds now whose text the reply did not see is
    `changed` (the reply saw that cell with another text) or `new` (it ran or appeared since); `gone` counts the cells
    the reply saw that are neither here nor changed. Matched by content, then by id: headless runs have no ids."""
    if saved is None: return dict(changed=[], new=[], gone=0, unknown=True)
    now = [(c, cell_hash(c)) for c in cells]
    seen, ids = {h for _,h in saved}, {i for i,_ in saved if i}
    changed = [c for c,h in now if h not in seen and c.cell_id and c.cell_id in ids]
    new = [c for c,h in now if h not in seen and not (c.cell_id and c.cell_id in ids)]
    here, here_ids = {h for _,h in now}, {c.cell_id for c,_ in now if c.cell_id}
    gone = sum(h not in here and not (i and i in here_ids) for i,h in saved)
    return dict(changed=changed, new=new, gone=gone, unknown=False)


def _named(cell)->str:
    "A cell as a user finds it: its label and its first line."
    text = prompt_text(cell.source) if cell.kind == 'prompt' else cell.source
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), '')
    line = line if len(line) <= 40 else line[:39] + '…'
    kind = {'prompt': 'prompt', 'markdown': 'note'}.get(cell.kind, f'In [{cell.exec_count}]' if cell.exec_count else 'cell')
    return f'{kind} `{line.replace("`", "ʹ")}`'


def stale_line(
    changes:dict,       # `context_changes`
    question:bool=False,# Whether the question as sent differs (the values of its $`names`)
    how:str='run `%%prompt --fresh` to ask again',   # The action that asks again
)->str:                 # One line: what changed, and how to ask again
    "The mark of a stale reply: which cells changed since it was made, and the one action that asks again."
    def some(cells, n=4): return ', '.join(map(_named, cells[:n])) + (f' and {len(cells) - n} more' if len(cells) > n else '')
    bits = [f'{some(changes["changed"])} changed'] if changes['changed'] else []
    if changes['new']: bits.append(f'{some(changes["new"])} {"is" if len(changes["new"]) == 1 else "are"} new or ran')
    if changes['gone']: bits.append(f'{changes["gone"]} cell{"s" * (changes["gone"] != 1)} it saw '
                                    f'{"is" if changes["gone"] == 1 else "are"} gone')
    if question: bits.append('the values its question shows changed')
    if changes.get('unknown'): bits.append('its context changed (which cells is not recorded)')
    what = '; '.join(bits) or 'what it would send changed (settings, tools or options)'
    return f'Stale: since this reply, {what}. Kept as it was; {how}.'


def latest_reply(cells, done:bool=True)->dict|None:
    "The newest reply output among `cells`' outputs (finished only, if `done`), texts joined; None if there is none."
    for o, md in reversed(list(_reply_outputs(cells))):
        if isinstance(o.get('data'), dict) and (not done or md.get('status') == 'done'): return _joined(o)
    return None


def clean_previous(v)->dict|None:
    "A replaced reply as a reply's metadata keeps it (untrusted when read): {model, answer}, the answer bounded."
    if not isinstance(v, dict) or not isinstance(v.get('answer'), str) or not v['answer'].strip(): return None
    model = v.get('model') if isinstance(v.get('model'), str) and 0 < len(v['model']) <= 200 else ''
    answer = json_value(v['answer'])
    return dict(model=json_value(model), answer=answer[:PREVIOUS_CHARS] + (' …' if len(answer) > PREVIOUS_CHARS else ''))


def _joined(o):
    "An output with its multi-line texts joined (nbformat saves them as lists of lines)."
    return {**o, 'data': {k: ''.join(s for s in v if isinstance(s, str)) if isinstance(v, list) else v
                          for k,v in o['data'].items()}}


def _number(hi, *types, lo=0): return lambda v: isinstance(v, types) and not isinstance(v, bool) and lo <= v <= hi

_TEXT, _COUNT, _SECONDS = (lambda v: isinstance(v, str)), _number(10**12, int), _number(10**7, int, float)
_SNAPSHOT = dict(  # key: check
    answer=_TEXT, reasoning=_TEXT, note=_TEXT, status=lambda v: v == 'done' or isinstance(v, str) and v in STATUS_NOTES,
    info=lambda v: isinstance(v, dict), chunks=_COUNT, reasoning_chunks=_COUNT, unclosed=lambda v: isinstance(v, bool),
    ttft=_SECONDS, reasoning_s=_SECONDS, tokens_per_s=_number(10**9, int, float))
_INFO = dict(finish_reason=lambda v: isinstance(v, str) and len(v) <= 100, prompt_tokens=_COUNT, completion_tokens=_COUNT,
             reasoning_tokens=_COUNT, cached_tokens=_COUNT, evaluated_tokens=_COUNT,
             prompt_ms=lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1e9,
             # native tool calls: lenient mode turns them into Python calls that pass the guards
             tool_calls=lambda v: isinstance(v, list) and all(isinstance(c, dict) for c in v))


def clean_snapshot(d)->dict:
    """A reply snapshot (`stream.Reply.snapshot`) from a file someone else may have written: known keys with values of
    the right types and ranges only, so restoring it can neither fail nor carry anything but text the renderer makes
    safe."""
    try: d = json_value(d) if isinstance(d, dict) else {}   # strings that encode; nothing nested deep enough to recurse on
    except ValueError: d = {}
    snap = {k: d[k] for k,ok in _SNAPSHOT.items() if ok(d.get(k))}
    snap['info'] = {k: v for k,v in (snap.get('info') or {}).items() if k in _INFO and _INFO[k](v)}
    return snap


def saved_snapshot(output:dict)->dict:
    """A saved reply output as a snapshot: the answer from `text/plain`, the rest from its metadata. Its saved
    Markdown is never shown again as it is (it could be anything: a notebook is a file anyone can write)."""
    md, data = _meta(output), output.get('data') if isinstance(output, dict) else None
    answer = data.get('text/plain', '') if isinstance(data, dict) else ''
    return clean_snapshot(dict(answer=answer, reasoning=md.get('reasoning', ''), note=md.get('note', ''),
                               chunks=md.get('completion_tokens', 0), reasoning_chunks=md.get('reasoning_chunks', 0),
                               ttft=md.get('ttft_s'), reasoning_s=md.get('reasoning_s'), tokens_per_s=md.get('tokens_per_s'),
                               info={k: md.get(k) for k in _INFO}))


def saved_auto_model(*sources)->str|None:
    "The model that answered these notebooks' prompts when none was picked (the newest such saved reply), if any."
    for cells in sources:
        for o, md in reversed(list(_reply_outputs(cells or []))):
            if md.get('model_source') == 'auto' and check_setting('model', md.get('model')): return md['model']
    return None


MAX_CONTEXT_LENGTH = 1 << 24   # tokens: past any model's context window today (10M), short of arithmetic trouble
def _names(v): return [c for c in v if isinstance(c, str) and 0 < len(c) <= 64 and c.isprintable()][:64]

_MODEL_INFO = dict(  # key: (the valid value, or None; what a valid value is)
    capabilities=(lambda v: _names(v) if isinstance(v, list) else None, 'a list of capability names'),
    context_length=(lambda v: v if _number(MAX_CONTEXT_LENGTH, int, lo=1)(v) else None,
                    f'a whole number of tokens from 1 to {MAX_CONTEXT_LENGTH}'),
    vision=(lambda v: v if isinstance(v, bool) else None, 'true or false'))


def clean_model_info(
    d,                  # What a file says a model said of itself (untrusted)
    refused:list=None,  # Gets (key, value, what a valid value is) for each value that was ignored or trimmed
)->dict:                # `capabilities` and `vision` where valid, and `context_length` (None unless valid)
    "What a model said of itself: `capabilities` (names), `context_length` (1 to `MAX_CONTEXT_LENGTH`) and `vision`."
    d = d if isinstance(d, dict) else {}
    info = {k: v for k,(valid,_) in _MODEL_INFO.items() if k in d and (v := valid(d[k])) is not None}
    if refused is not None: refused += [(k, d[k], what) for k,(_,what) in _MODEL_INFO.items()
                                        if d.get(k) is not None and info.get(k) != d[k]]
    return dict(info, context_length=info.get('context_length'))


def saved_model_info(model:str, *sources)->dict|None:
    "What `model` said of itself when a saved reply was made (`capabilities`, `context_length`, `vision`), if any."
    for cells in sources:
        for o, md in reversed(list(_reply_outputs(cells or []))):
            if md.get('model') == model and isinstance(info := md.get('model_info'), dict): return clean_model_info(info)
    return None


def _write_json(path, obj):
    "Write `obj` as JSON to `path` atomically: a reader sees the old file or the new one, never half of one."
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix='.tmp-', dir=path.parent)
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as f: json.dump(obj, f, ensure_ascii=False, indent=1)
        os.replace(tmp, path)
    except BaseException:   # a full disk, a value JSON cannot hold, an interrupt: no `.tmp-` file left behind
        with suppress(OSError): os.unlink(tmp)
        raise


class DiskCache:
    "Reply outputs by digest in a folder (`cache_dir`), for replies to outlive the notebook's outputs."
    def __init__(self, folder): self.folder = Path(folder).expanduser()
    def _path(self, digest): return self.folder/f'{digest.partition(":")[2]}.json'

    def get(self, digest:str)->dict|None:
        "The reply output kept for `digest`, in a notebook output's shape, or None (missing, unreadable or not one)."
        try: o = clean_output(load_json(self._path(digest).read_text(encoding='utf-8')))
        except (OSError, ValueError): return None
        return o if o is not None and o.get('data') else None

    def put(self, digest:str, output:dict): _write_json(self._path(digest), output)


def cassette_path(notebook:Path=None, setting:str='')->Path:
    "The cassette's file: the `cassette_file` setting, else `<notebook>.cassette.json` next to the notebook."
    if setting: return Path(setting).expanduser()
    if notebook is None: return Path.cwd()/'boopiter.cassette.json'
    return notebook.with_name(notebook.stem + '.cassette.json')


def _usable_turn(t):
    "Whether a cassette's turn has what replaying needs: a digest, a model id and a reply."
    return (isinstance(t, dict) and isinstance(t.get('digest'), str) and bool(_DIGEST.fullmatch(t['digest']))
            and check_setting('model', t.get('model')) and isinstance(t.get('reply'), dict))


class Cassette:
    """Recorded model turns by digest, in one JSON file; `add` saves at once (an interrupted run keeps what it got),
    under a lock, so two kernels recording into one cassette keep each other's turns."""
    def __init__(self,
                 path:Path,             # The cassette file
                 recording:bool=False): # A file that cannot be read is set aside as `.bak` and recorded afresh
        self.path, self.models, self.auto_model, self.turns, self.warnings = Path(path), {}, None, {}, []
        try:
            if self.path.exists(): self._load()
        except CassetteDrift:
            if not recording: raise
            self.path.replace(self.path.with_name(self.path.name + '.bak'))

    def _load(self):
        "Read the file; `CassetteDrift` if it is not a cassette at all, `warnings` for the parts of it that were ignored."
        try: d = json_value(load_json(self.path.read_text(encoding='utf-8')))
        except (OSError, ValueError) as e:
            why = 'nested too deeply' if str(e) == 'nested too deeply' else e.__class__.__name__
            raise CassetteDrift(f'The cassette {self.path} cannot be read ({why}); delete or fix it, '
                                'or record it again (`%boop record` sets the unreadable file aside).') from None
        if not isinstance(d, dict) or d.get('format') != CASSETTE_FORMAT or d.get('version') != CASSETTE_VERSION:
            raise CassetteDrift(f'{self.path} is not a boopiter cassette of version {CASSETTE_VERSION}; delete it, or '
                                'record it again (`%boop record` sets it aside).')
        models, auto, turns, name = d.get('models'), d.get('auto_model'), d.get('turns'), self.path.name
        models, turns = models if isinstance(models, dict) else {}, turns if isinstance(turns, list) else []
        self.models, self.warnings = {}, []
        for m,v in models.items():
            if not check_setting('model', m) or not isinstance(v, dict):
                self.warnings.append(refusal(name, f'models.{m}', v, 'a model id with what the model said of itself'))
                continue
            self.models[m] = clean_model_info(v, bad := [])
            self.warnings += [refusal(name, f'models.{m}.{k}', x, what) for k,x,what in bad]
        self.auto_model = auto if check_setting('model', auto) else None
        if auto is not None and self.auto_model is None: self.warnings += [refusal(name, 'auto_model', auto, 'a model id')]
        usable = [t for t in turns if _usable_turn(t)]
        self.turns = {t['digest']: {**t, 'options': t['options'] if isinstance(t.get('options'), dict) else {}}
                      for t in usable}
        if len(usable) < len(turns):
            self.warnings.append(f'{name}: {len(turns) - len(usable)} of its {len(turns)} turns ignored: each needs a '
                                 'digest, a model id and a reply')

    @contextmanager
    def _locked(self):
        "An exclusive lock on `<cassette>.lock` while a turn is added (POSIX; elsewhere, no lock)."
        try: import fcntl
        except ImportError: yield; return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + '.lock'), 'w') as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try: yield
            finally: fcntl.flock(f, fcntl.LOCK_UN)

    def save(self):
        _write_json(self.path, dict(format=CASSETTE_FORMAT, version=CASSETTE_VERSION, models=self.models,
                                    auto_model=self.auto_model, turns=list(self.turns.values())))

    def add(self, digest:str, model:str, options:dict, reply:dict, info:dict=None):
        "Record one turn (one with the same digest is replaced; an identical one kept as it was) and what `model` says."
        with self._locked():
            if self.path.exists(): self._load()   # another kernel may have added turns meanwhile
            old = self.turns.get(digest)
            if old is None or old.get('reply') != reply or old.get('model') != model:
                self.turns.pop(digest, None)
                self.turns[digest] = dict(digest=digest, model=model, options=options, reply=reply,
                                          recorded_at=time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()))
            if info is not None: self.models[model] = info
            self.save()

    def reply(self, digest:str, model:str)->dict:
        "The recorded reply to this exact request; `CassetteDrift` (re-record) if there is none."
        if (turn := self.turns.get(digest)) is not None: return clean_snapshot(turn['reply'])
        had = sum(t['model'] == model for t in self.turns.values())
        raise CassetteDrift(f'Replay refused: the cassette {self.path.name} has no reply from {model} to this exact '
                            f'conversation ({had} turn{"s" * (had != 1)} of it recorded). A prompt, a tool, a setting '
                            'or a cell above it changed since recording. Re-record: `%boop record`, then run the '
                            'notebook against the live model.', digest=digest, model=model)

    def __len__(self): return len(self.turns)
