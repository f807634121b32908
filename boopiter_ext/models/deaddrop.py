"""The dead drop: prompt cells answered by another process (a person in a terminal, a coding agent) through files.

From a terminal, `boopiter-deaddrop` (faces/deaddrop_cli.py) answers them:

    boopiter-deaddrop new review-42                    # the brain menu now lists deaddrop/review-42
    boopiter-deaddrop next review-42 --wait            # prints the oldest waiting prompt: its id, then its text
    boopiter-deaddrop reply review-42 PROMPT_ID --model "me" < answer.md   # or `... | boopiter-deaddrop reply ...`

The same from Python, for agents that prefer code:

    p = await_prompt(root, 'review-42')                         # {'id', 'prompt', 'meta', 'images', ...}
    reply_stream(root, 'review-42', p['id'], chunks, model='me')

Protocol (a public interface; only files, so any language can take part):

- Root: `$BOOPITER_DEADDROP_DIR`, else the `setting` value, else `~/dead_drop`; created with mode 0700.
- Session `<id>` (model id `deaddrop/<id>`): `<root>/<id>/inbox/` and `<root>/<id>/outbox/`. Ids are 1 to 64 of
  `[A-Za-z0-9._-]`, not starting with `.`, without `..`; `claude`, `prompts` and `responses` are reserved.
  A folder is a session when both sub-folders exist.
- A prompt is a bundle folder `inbox/<time_ns>-<8 hex>/`, built under a `.tmp-` name and made visible by one
  atomic rename. It holds `prompt.md` (the full context as a model would get it, ending with `REPLY_INSTRUCTION`),
  `meta.json` (`id`, `created`, `notebook`, `cell_id`, `model`, ...) and the images a vision model would get
  (`image-1.png`, `image-2.jpg`, ...).
- The reply is `outbox/<same id>.md`, only ever appended to. It ends with an optional `---MODEL: <name>---` line,
  then a `---DONE---` line. Neither line, nor the newline just before them, is part of the reply.
- A prompt whose bundle holds a `cancelled` file was cancelled (the kernel was interrupted): skip it. A reply for
  an unknown or cancelled id is refused.
- The legacy route `deaddrop/claude`: `<root>/prompts/<id>` (one file, written as `.tmp-<id>` then renamed) is
  answered by `<root>/responses/<same id>`, with the same terminators.

Followers poll (every 0.25 s by default) and read only the bytes appended since the last look; nothing is ever
deleted by the notebook side. Every file is read as untrusted: a reply that is not a regular file (a FIFO, a link to
a device or out of its session) is refused, reads are bounded, and a `meta.json` that is not a small JSON object
of plain values counts as no metadata.
"""

__all__ = ['REPLY_INSTRUCTION', 'DONE', 'deaddrop_root', 'valid_session', 'is_session', 'valid_prompt_id', 'new_session',
           'list_sessions', 'drop_prompt', 'find_pending', 'follow_reply', 'cancel', 'drop_legacy', 'follow_legacy',
           'next_prompt', 'await_prompt', 'reply_stream', 'show', 'ago']

import codecs, json, os, re, secrets, shutil, stat, tempfile, time
from pathlib import Path
from ..errors import DeadDropError, ReplyStalled
from ..context.images import image_mime

DONE = '---DONE---'
REPLY_INSTRUCTION = ("\n\n[system: when your reply is complete, end it with two lines of their own: first "
                     "---MODEL: <your model name and version>--- (e.g. ---MODEL: Claude Opus 4.8---), then ---DONE---. "
                     "They are parsed out and shown separately, not as part of the reply.]")
_SID = re.compile(r'[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}')
_PID = re.compile(r'[0-9]{1,20}-[0-9a-f]{8}')
_MODEL = re.compile(r'\s*---MODEL:\s*(.*?)\s*---\s*')
_RESERVED = ('claude', 'prompts', 'responses')
_IMAGE_EXT = {'image/png': '.png', 'image/jpeg': '.jpg', 'image/gif': '.gif', 'image/webp': '.webp'}
_CELL_ID = re.compile(r'[A-Za-z0-9_-]{1,64}')   # nbformat's cell id
_MAX_META, _MAX_PROMPT, _MAX_SHOW = 1 << 16, 1 << 26, 1 << 24   # bytes read at most from meta.json, prompt.md, a reply
_MAX_TERMINATOR = 512   # a partial line longer than this is reply text, never a `---MODEL: ...---` line


def deaddrop_root(
    environ:dict=None,  # Environment (default `os.environ`)
    setting:str='',     # The configured folder, if any (settings.ini)
    create:bool=True,   # Make it (mode 0700) if missing; listing sessions does not need to
)->Path:                # The root folder
    "The dead-drop root: `$BOOPITER_DEADDROP_DIR`, else `setting`, else `~/dead_drop`; created with mode 0700."
    environ = os.environ if environ is None else environ
    root = Path(environ.get('BOOPITER_DEADDROP_DIR') or setting or '~/dead_drop').expanduser()
    if create and not root.is_dir(): _mkdir(root, parents=True)
    return root


def _mkdir(p, parents=False):
    "Make `p` with mode 0700 whatever the umask; an existing folder is left as it is."
    try: p.mkdir(mode=0o700, parents=parents)
    except FileExistsError: return p
    os.chmod(p, 0o700)
    return p


def valid_session(
    sid:str,  # A session id from a user, a model id or the command line
)->str:       # The same id
    "Check that `sid` names a folder directly under the root, or raise `DeadDropError`."
    if not isinstance(sid, str) or not _SID.fullmatch(sid) or '..' in sid:
        raise DeadDropError(f'Bad session id {sid!r}: use 1 to 64 letters, digits, `.`, `_` or `-`, '
                            'not starting with `.`, e.g. `review-42`', session=sid)
    if sid.lower() in _RESERVED:
        raise DeadDropError(f'Session id {sid!r} is reserved; pick another, e.g. `{sid}-1`', session=sid)
    return sid


def valid_prompt_id(
    pid:str,  # A prompt id, `<time_ns>-<8 hex>`
)->str:       # The same id
    "Check that `pid` has the shape `drop_prompt` gives ids, or raise `DeadDropError`."
    if not isinstance(pid, str) or not _PID.fullmatch(pid):
        raise DeadDropError(f'Bad prompt id {pid!r}: ids look like `1767225600000000000-1a2b3c4d`; '
                            '`boopiter-deaddrop next SESSION` prints one', prompt_id=pid)
    return pid


def _new_id(): return f'{time.time_ns()}-{secrets.token_hex(4)}'
def _order(pid): return int(pid.partition('-')[0]), pid
def _session(root, sid): return Path(root)/valid_session(sid)


def is_session(
    root:Path,  # The dead-drop root
    sid:str,    # A session id, trusted or not
)->bool:
    "Whether `sid` is a session someone opened under `root`: a valid id whose folder holds `inbox/` and `outbox/`."
    try: d = _session(root, sid)
    except DeadDropError: return False
    return (d/'inbox').is_dir() and (d/'outbox').is_dir()


def _inbox(root, sid):
    "The session's inbox, or a `DeadDropError` saying how to start the session."
    d = _session(root, sid)
    if not is_session(root, sid):
        raise DeadDropError(f'No dead-drop session {sid!r} in {root}; start one with `boopiter-deaddrop new {sid}`',
                            session=sid)
    return d/'inbox'


def _bundle(root, sid, pid):
    "The bundle folder of prompt `pid`, or a `DeadDropError` if there is none."
    b = _inbox(root, sid)/valid_prompt_id(pid)
    if not b.is_dir() or b.is_symlink():
        raise DeadDropError(f'No prompt {pid} in session {sid!r}; `boopiter-deaddrop next {sid}` shows the waiting one',
                            session=sid, prompt_id=pid)
    return b


def new_session(
    root:Path,  # The dead-drop root
    sid:str,    # Session id, e.g. 'review-42'
)->Path:        # The session folder
    "Create session `sid` (its inbox and outbox); an existing session is left as it is."
    d = _mkdir(_session(root, sid))
    for sub in ('inbox', 'outbox'): _mkdir(d/sub)
    return d


def _last_active(d):
    paths = [d/'inbox', d/'outbox', *(d/'outbox').iterdir()]
    return max((p.stat().st_mtime for p in paths if p.exists()), default=0)


def list_sessions(
    root:Path,  # The dead-drop root
)->list:        # (session id, seconds since it was last active), by id
    "The sessions under `root`: folders with a valid id holding both `inbox/` and `outbox/`."
    root, now = Path(root), time.time()
    if not root.is_dir(): return []
    ds = [d for d in root.iterdir() if is_session(root, d.name)]
    return sorted((d.name, max(0.0, now - _last_active(d))) for d in ds)


def _image_name(i, img):
    ext = Path(img).suffix.lower() if isinstance(img, (str, Path)) else _IMAGE_EXT.get(image_mime(img), '.png')
    return f'image-{i}{ext or ".png"}'


def _fill_bundle(d, pid, prompt_md, meta, images):
    (d/'prompt.md').write_text(prompt_md, encoding='utf-8')
    meta = dict(meta or {}, id=pid)
    meta.setdefault('created', time.strftime('%Y-%m-%dT%H:%M:%S%z'))
    (d/'meta.json').write_text(json.dumps(meta, indent=1, default=str), encoding='utf-8')
    for i,img in enumerate(images, 1):
        if isinstance(img, (str, Path)): shutil.copyfile(img, d/_image_name(i, img))
        else: (d/_image_name(i, img)).write_bytes(bytes(img))


def drop_prompt(
    root:Path,       # The dead-drop root
    sid:str,         # Session id
    prompt_md:str,   # The full prompt, ending with `REPLY_INSTRUCTION`
    meta:dict=None,  # `notebook`, `cell_id`, `model`, ...; `id` and `created` are added
    images=(),       # Image bytes (PNG, JPEG, GIF, WebP) or paths of image files
)->str:              # The prompt id, `<time_ns>-<8 hex>`
    "Drop a prompt bundle into the session's inbox, made visible by one atomic rename."
    inbox, pid = _inbox(root, sid), _new_id()
    tmp = Path(tempfile.mkdtemp(prefix='.tmp-', dir=inbox))
    try:
        _fill_bundle(tmp, pid, prompt_md, meta, images)
        os.rename(tmp, inbox/pid)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)   # our own temporary folder, never visible as a prompt
        raise
    return pid


def _open(
    path:Path,         # A file in the dead drop
    inside:Path=None,  # Follow a link at `path` if it leads to a file in this folder; None refuses every link
    append:bool=False, # Open to append (created if missing), not to read
):                     # An unbuffered binary file, or None if there is no file to read
    "Open the regular file at `path`, or raise `DeadDropError`: a FIFO, a device or a link out of `inside` is never read."
    real = Path(path)
    if inside is not None and real.is_symlink():
        real = real.resolve()
        if not real.is_relative_to(Path(inside).resolve()): raise _not_regular(path, 'a link out of its folder')
    mode = os.O_WRONLY | os.O_APPEND | os.O_CREAT if append else os.O_RDONLY
    flags = mode | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try: fd = os.open(real, flags, 0o600)   # O_NONBLOCK: opening a FIFO must not wait for a writer
    except FileNotFoundError:
        if append: raise
        return None
    except OSError as e: raise _not_regular(path, e.strerror) from e
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _not_regular(path, 'not a regular file')
    return os.fdopen(fd, 'ab' if append else 'rb', buffering=0)


def _not_regular(path, why):
    return DeadDropError(f'Refusing {path} ({why}): dead-drop files must be plain files in their folder. Delete it '
                         '(prompts come from the notebook, replies from `boopiter-deaddrop reply` or plain appends).',
                         path=str(path))


def _read(path, limit, inside=None)->bytes|None:
    "At most `limit` bytes from the start of the regular file at `path`, or None if it is missing (see `_open`)."
    f = _open(path, inside)
    if f is None: return None
    with f: return f.read(limit)


def _reply_done(path:Path, inside:Path)->bool:
    "Whether the reply file at `path` exists and ends with the `---DONE---` line; `DeadDropError` if it is no plain file."
    f = _open(path, inside)
    if f is None: return False
    with f:
        f.seek(max(0, os.fstat(f.fileno()).st_size - 64))
        tail = f.read(64)
    return tail.decode('utf-8', 'replace').rstrip().rpartition('\n')[2].strip() == DONE


def _read_meta(b)->dict:
    "The bundle's `meta.json`: a JSON object's plain values, with checked ids; anything else counts as no metadata."
    try:
        raw = _read(b/'meta.json', _MAX_META + 1)
        meta = json.loads(raw) if raw and len(raw) <= _MAX_META else None
    except (OSError, ValueError, RecursionError): return {}   # DeadDropError (not a file) and bad UTF-8 are ValueErrors
    if not isinstance(meta, dict): return {}
    meta = {k: v for k,v in meta.items() if v is None or isinstance(v, (str, int, float, bool))}
    if meta.get('id') != b.name: meta.pop('id', None)
    if not (isinstance(cid := meta.get('cell_id'), str) and _CELL_ID.fullmatch(cid)): meta.pop('cell_id', None)
    return meta


def _bundles(inbox):
    "Prompt ids in `inbox`, oldest first (temporary `.tmp-` folders are not prompts yet, and a link is never one)."
    return sorted((p.name for p in inbox.iterdir() if _PID.fullmatch(p.name) and p.is_dir() and not p.is_symlink()),
                  key=_order)


def find_pending(
    root:Path,      # The dead-drop root
    sid:str,        # Session id
    prompt_md:str,  # The prompt text as it would be dropped
    cell_id:str,    # The cell's id (meta `cell_id`); None never re-attaches
    notebook:str=None,  # The notebook's path (meta `notebook`): a copy of the notebook never re-attaches
)->str|None:        # The newest matching prompt id, if any
    "A dropped prompt with this text, notebook and cell, neither cancelled nor fully answered (to re-attach, not re-ask)."
    if not cell_id: return None
    inbox, want = _inbox(root, sid), prompt_md.encode('utf-8')
    for pid in reversed(_bundles(inbox)):
        b = inbox/pid
        try:
            if (b/'cancelled').exists() or _reply_done(inbox.parent/'outbox'/f'{pid}.md', inbox.parent): continue
            meta = _read_meta(b)
            if meta.get('cell_id') != cell_id or (meta.get('notebook') or None) != (notebook or None): continue
            if _read(b/'prompt.md', len(want) + 1) == want: return pid
        except (OSError, DeadDropError): continue   # a reply or prompt that is no plain file: never re-attach to it
    return None


class _Terminators:
    "Strips the `---MODEL: name---` and `---DONE---` lines from text fed in pieces, holding back what may be one."
    def __init__(self): self.buf, self.nl, self.mid, self.model = '', '', False, None

    def _line(self, line, out):
        "Handle one whole line that began at a line start; True at `---DONE---`."
        if len(line) <= _MAX_TERMINATOR and line.strip() == DONE: return True
        if len(line) <= _MAX_TERMINATOR and (m := _MODEL.fullmatch(line)): self.model = m.group(1) or self.model
        else:
            out.append(self.nl + line)
            self.nl = '\n'
        return False

    def at_rest(self)->bool:
        "Whether the text so far ends with a `---DONE---` line that has no newline yet (done if nothing follows)."
        return not self.mid and self.buf.strip() == DONE

    def feed(self, s:str)->tuple:
        "(text safe to show, whether the reply is done) after appending `s`."
        head, sep, self.buf = (self.buf + s).rpartition('\n')
        out = []
        if sep:
            lines = head.split('\n')
            if self.mid:
                out.append(lines.pop(0))
                self.mid, self.nl = False, '\n'
            if '---' not in head:   # no terminator line possible: one append, not one per line
                if lines: out.append(self.nl + '\n'.join(lines))
                self.nl = '\n' if lines else self.nl
            else:
                for line in lines:
                    if self._line(line, out): return ''.join(out), True
        if self.buf and (self.mid or not _maybe_terminator(self.buf)):
            out.append(self.nl + self.buf)
            self.buf, self.nl, self.mid = '', '', True
        return ''.join(out), False


def _maybe_terminator(part):
    "Whether a partial line could still grow into a terminator line (a long one cannot: nothing holds text unboundedly)."
    if len(part) > _MAX_TERMINATOR: return False
    q = part.lstrip()
    return DONE.startswith(q.rstrip()) or '---MODEL:'.startswith(q) or q.startswith('---MODEL:')


def _follow(path, poll, timeout, what, inside):
    """Yield ('content', text) as `path` grows, then ('done', info); `ReplyStalled` after `timeout` s without new text
    (bytes the terminator parser holds back do not count), `DeadDropError` if `path` is no plain file in `inside`."""
    dec, term, f = codecs.getincrementaldecoder('utf-8')('replace'), _Terminators(), None
    last, idle = time.monotonic(), False
    try:
        while True:
            if f is None: f = _open(path, inside)
            data = f.read(1 << 20) if f else b''
            if data:
                text, done = term.feed(dec.decode(data))
                if text:
                    yield 'content', text
                    last = time.monotonic()   # counted from the consumer's return: its time is not the responder's
                if done:
                    yield 'done', dict(model=term.model) if term.model else {}
                    return
            elif idle and term.at_rest():   # a last `---DONE---` without a newline, and a whole poll with nothing more
                yield 'done', dict(model=term.model) if term.model else {}
                return
            if timeout is not None and time.monotonic() - last > timeout:
                raise ReplyStalled(f'No reply text for {timeout:g} s ({what}, {path}); the prompt stays in '
                                   'the dead drop: re-run the cell to follow it again, or raise the timeout',
                                   path=str(path), timeout=timeout)
            if not data: time.sleep(poll)
            idle = not data
    finally:
        if f: f.close()


def follow_reply(
    root:Path,             # The dead-drop root
    sid:str,               # Session id
    pid:str,               # Prompt id from `drop_prompt`
    poll:float=0.25,       # Seconds between looks at the reply file
    timeout:float=None,    # Seconds without new reply text before `ReplyStalled`; None waits forever
):                         # ('content', text) events, then ('done', {'model': name} or {})
    "Stream the reply to prompt `pid` as the responder appends it, without its terminator lines."
    session = _inbox(root, sid).parent
    return _follow(session/'outbox'/f'{valid_prompt_id(pid)}.md', poll, timeout, f'dead-drop session {sid!r}, prompt {pid}',
                   session)


def cancel(
    root:Path,  # The dead-drop root
    sid:str,    # Session id
    pid:str,    # Prompt id
)->Path:        # The marker file
    "Mark prompt `pid` cancelled (atomically), so responders skip it and its reply is refused."
    b = _bundle(root, sid, pid)
    fd, tmp = tempfile.mkstemp(prefix='.tmp-', dir=b)
    with os.fdopen(fd, 'w') as f: f.write(time.strftime('%Y-%m-%dT%H:%M:%S%z\n'))
    os.replace(tmp, b/'cancelled')
    return b/'cancelled'


def drop_legacy(
    root:Path,  # The dead-drop root
    text:str,   # The full prompt, ending with `REPLY_INSTRUCTION`
)->str:         # The prompt id; the reply is `<root>/responses/<id>`
    "Drop a prompt for the legacy route `deaddrop/claude`: `<root>/prompts/<id>`, written then renamed."
    d, pid = _mkdir(Path(root)/'prompts'), _new_id()
    _mkdir(Path(root)/'responses')
    fd, tmp = tempfile.mkstemp(prefix='.tmp-', dir=d)
    with os.fdopen(fd, 'w', encoding='utf-8') as f: f.write(text)
    os.rename(tmp, d/pid)
    return pid


def follow_legacy(
    root:Path,           # The dead-drop root
    pid:str,             # Prompt id from `drop_legacy`
    poll:float=0.25,     # Seconds between looks at the reply file
    timeout:float=None,  # Seconds without new reply text before `ReplyStalled`; None waits forever
):                       # ('content', text) events, then ('done', info)
    "Stream `<root>/responses/<pid>` as it grows, like `follow_reply`."
    d = Path(root)/'responses'
    return _follow(d/valid_prompt_id(pid), poll, timeout, f'legacy dead drop, prompt {pid}', d)


def _load(b, sid):
    "The prompt in bundle folder `b` as a dict."
    imgs = sorted((p for p in b.iterdir() if p.name.startswith('image-')), key=lambda p: (len(p.stem), p.stem))
    raw = _read(b/'prompt.md', _MAX_PROMPT + 1)
    if raw is None or len(raw) > _MAX_PROMPT:
        raise DeadDropError(f'Prompt {b.name} in session {sid!r} has ' + ('no prompt.md' if raw is None else
                            f'a prompt.md over {_MAX_PROMPT >> 20} MB') + '; skip it', session=sid, prompt_id=b.name)
    return dict(id=b.name, session=sid, prompt=raw.decode('utf-8', 'replace'), meta=_read_meta(b),
                images=[str(p) for p in imgs])


def next_prompt(
    root:Path,           # The dead-drop root
    sid:str,             # Session id
    wait:bool=False,     # Wait until a prompt arrives
    poll:float=0.25,     # Seconds between looks while waiting
    timeout:float=None,  # Seconds to wait at most; None waits forever
)->dict|None:            # {'id', 'session', 'prompt', 'meta', 'images': [paths]}, or None
    "The oldest prompt of the session that is not cancelled and has no reply file yet."
    inbox, end = _inbox(root, sid), None if timeout is None else time.monotonic() + timeout
    outbox = inbox.parent/'outbox'
    while True:
        for pid in _bundles(inbox):
            if (inbox/pid/'cancelled').exists() or (outbox/f'{pid}.md').exists(): continue
            try: return _load(inbox/pid, sid)
            except DeadDropError: continue   # no readable prompt.md: not a prompt, and it must not block the queue
        if not wait or end is not None and time.monotonic() >= end: return None
        time.sleep(poll)


def await_prompt(
    root:Path,           # The dead-drop root
    sid:str,             # Session id
    poll:float=0.25,     # Seconds between looks
    timeout:float=None,  # Seconds to wait at most; None waits forever
)->dict|None:            # As `next_prompt`; None only after `timeout`
    "Wait for the next prompt of the session (`next_prompt` with `wait=True`)."
    return next_prompt(root, sid, wait=True, poll=poll, timeout=timeout)


def _refuse_cancelled(b, sid):
    if (b/'cancelled').exists():
        raise DeadDropError(f'Prompt {b.name} in session {sid!r} was cancelled; `boopiter-deaddrop next {sid}` '
                            'gives the next one', session=sid, prompt_id=b.name)


def reply_stream(
    root:Path,       # The dead-drop root
    sid:str,         # Session id
    pid:str,         # Prompt id being answered
    chunks,          # Iterable of str or bytes, appended as they come
    model:str=None,  # Name of whoever answers, written as the `---MODEL: name---` line
)->Path:             # The reply file
    "Append `chunks` to the reply of prompt `pid`, then the terminator lines; refuses unknown and cancelled prompts."
    b = _bundle(root, sid, pid)
    _refuse_cancelled(b, sid)
    path = b.parent.parent/'outbox'/f'{pid}.md'
    if _reply_done(path, None): raise DeadDropError(f'Prompt {pid} in session {sid!r} is already answered', session=sid)
    last = b'\n'
    with _open(path, append=True) as f:
        for c in chunks:
            if not c: continue
            _refuse_cancelled(b, sid)
            c = c.encode('utf-8') if isinstance(c, str) else bytes(c)
            f.write(c)
            f.flush()
            last = c[-1:]
        name = ' '.join(str(model).split()) if model else ''
        ends = (f'---MODEL: {name}---\n' if name else '') + DONE + '\n'
        f.write((b'' if last == b'\n' else b'\n') + ends.encode())
    return path


def show(
    root:Path,  # The dead-drop root
    sid:str,    # Session id
    pid:str,    # Prompt id
)->dict:        # As `next_prompt`, plus `status` and the `reply` so far (without terminators)
    "A prompt with its state: 'waiting', 'replying', 'answered' or 'cancelled', and its reply so far."
    b = _bundle(root, sid, pid)
    p, path = _load(b, sid), b.parent.parent/'outbox'/f'{pid}.md'
    raw = _read(path, _MAX_SHOW + 1, b.parent.parent)
    term, cut = _Terminators(), raw is not None and len(raw) > _MAX_SHOW
    reply, done = term.feed((raw or b'')[:_MAX_SHOW].decode('utf-8', 'replace'))
    status = ('cancelled' if (b/'cancelled').exists() else 'answered' if done else
              'replying' if raw is not None else 'waiting')
    reply = reply if done else reply + term.nl + term.buf
    return dict(p, status=status, reply=reply + (f'\n[... cut at {_MAX_SHOW >> 20} MB]' if cut else ''), model=term.model)


def ago(s:float)->str:
    "Seconds as a short human duration: '42 s', '7 min', '3 h', '2 days'."
    return (f'{s:.0f} s' if s < 90 else f'{s/60:.0f} min' if s < 5400 else f'{s/3600:.0f} h' if s < 172800
            else f'{s/86400:.0f} days')

