"""Asking many: items and templates, lanes of requests at each server's own limit, results in input order, failures
kept in place, interrupts that keep what finished, progress as plain data, and the memory of replies asked from code.

    rows, shape = items_of(df)                      # DataFrame rows as dicts, and how to give results back (a Series)
    prompts = fill('Label: {text}', rows)           # TemplateError before any request if a row lacks a field
    values = run_batch(len(prompts), ask, [Lane('qwen3:1.7b', Ramp())], progress=TextProgress())
    shape(values)                                   # a Series aligned with df's index

`ask(i, lane, stop)` answers item `i` on `lane` (a server, or a model on one) and returns (value, how), `how` being
'asked' when a request was made; it raises for an item that failed, which becomes a `Failed` in its place. Each lane
keeps at most its limit in flight: a fixed number (`parallel=`, or the slots a server reports), or a `Ramp` that
measures: it starts at 2 at once and doubles while that raises the throughput by a quarter, then keeps the best. An
interrupt (KeyboardInterrupt in the calling thread) stops the requests in flight and takes no new item; what finished
is kept (the caller's memory of replies), and `ReplyInterrupted` says how many are missing.

No pandas import here unless a pandas object is given (its module is already loaded then).
"""

__all__ = ['Failed', 'ReplyMemory', 'Lane', 'Ramp', 'Progress', 'TextProgress', 'items_of', 'fill', 'run_batch']

import dataclasses, glob, os, string, sys, threading
from collections import OrderedDict
from pathlib import Path
from time import monotonic
from ..errors import BoopError, ReplyInterrupted, TemplateError

MAX_FILE = 1 << 20   # bytes of one file read as an item's text


# ---- the memory of replies asked from code

class ReplyMemory:
    """Replies asked from code in this kernel, as outputs by request digest, the newest kept (bounded by count and
    characters): a batch run again asks only for what is missing. Prompt cells keep theirs in the notebook."""
    def __init__(self, max_items:int=50_000, max_chars:int=64_000_000):
        self.max_items, self.max_chars, self.chars = max_items, max_chars, 0
        self._d, self._lock = OrderedDict(), threading.Lock()

    def __len__(self): return len(self._d)

    def put(self, digest:str, output:dict):
        "Keep `output` (a finished reply, as a view's `final` returns it) as the reply to the request `digest`."
        md = output['metadata'].get('boopiter') or {}
        size = len(output['data'].get('text/plain') or '') + len(md.get('reasoning') or '')
        with self._lock:
            if (old := self._d.pop(digest, None)) is not None: self.chars -= old[1]
            self._d[digest] = (output, size)
            self.chars += size
            while self._d and (len(self._d) > self.max_items or self.chars > self.max_chars):
                self.chars -= self._d.popitem(last=False)[1][1]

    def get(self, digest:str)->dict|None:
        "The output kept for `digest`, if any."
        with self._lock:
            if (got := self._d.get(digest)) is None: return None
            self._d.move_to_end(digest)
            return got[0]


# ---- items, templates and results

class Failed:
    "An item that got no answer, in its place among the results: falsy, with its `error` (and `item`, its position)."
    def __init__(self, error:BaseException, item=None): self.error, self.item = error, item
    def __bool__(self): return False
    def __repr__(self): return f'Failed({type(self.error).__name__}: {_one_line(self.error)})'
    __str__ = __repr__

def _one_line(e, n=160)->str:
    s = ' '.join(str(e).split())
    return s if len(s) <= n else s[:n] + '…'


def _pandas(x, kind)->bool:
    return type(x).__module__.split('.')[0] == 'pandas' and type(x).__name__ == kind


def _read(path:Path)->dict:
    "A file as an item: its text (UTF-8), `name`, `stem` and `path`; `TemplateError` for one that is not text."
    data = path.read_bytes()[:MAX_FILE + 1]
    if len(data) > MAX_FILE: raise TemplateError(f'{path} is over {MAX_FILE >> 20} MB: ask about a part of it, or split it.')
    if b'\0' in data: raise TemplateError(f'{path} is not a text file (it holds NUL bytes); leave it out of the folder or the glob.')
    return dict(text=data.decode('utf-8', 'replace'), name=path.name, stem=path.stem, path=str(path))


def _files(spec)->list:
    "The files a folder (every file in it, not hidden) or a glob names, sorted; `TemplateError` when there are none."
    p = Path(spec).expanduser()
    if p.is_dir(): found = [f for f in p.iterdir() if f.is_file() and not f.name.startswith('.')]
    elif glob.has_magic(str(spec)): found = [Path(f) for f in glob.glob(os.path.expanduser(str(spec)), recursive=True) if Path(f).is_file()]
    elif p.is_file(): found = [p]
    else: raise TemplateError(f'No folder or file {spec!s}: give a folder, a glob such as "notes/*.txt", or a list of items.')
    if not found: raise TemplateError(f'{spec!s} names no file: check the folder or the glob.')
    return sorted(found)


def items_of(
    items,   # A list or other iterable; a dict; a pandas Series or DataFrame (its rows); a folder, a glob or a file (Path or str)
)->tuple:    # (rows, index, shape): the items, their labels, and shape(values) -> the results as the input was shaped
    "The items of a batch, and how its results come back: a list, a dict by key or file, a Series with the input's index."
    if _pandas(items, 'DataFrame'):
        index = list(items.index)
        rows = [dict(r, index=i) for i,r in zip(index, items.to_dict('records'))]
        return rows, index, lambda vs: type(items.iloc[:, 0])(vs, index=items.index, dtype=object)
    if _pandas(items, 'Series'):
        return list(items), list(items.index), lambda vs: type(items)(vs, index=items.index, name=items.name, dtype=object)
    if isinstance(items, (str, Path)):
        files = _files(items)
        root = Path(items).expanduser() if Path(items).expanduser().is_dir() else None
        keys = [str(f.relative_to(root)) if root else str(f) for f in files]
        return [_read(f) for f in files], keys, lambda vs: dict(zip(keys, vs))
    if isinstance(items, dict):
        keys = list(items)
        return list(items.values()), keys, lambda vs: dict(zip(keys, vs))
    try: rows = list(items)
    except TypeError: raise TemplateError(f'ask_all takes a list, a dict, a pandas Series or DataFrame, or a folder or glob of '
                                          f'files, not {type(items).__name__}.') from None
    return rows, list(range(len(rows))), list


def _fields(row)->dict|None:
    "The named fields of an item: a dict's keys, a dataclass's or a namedtuple's fields; None for a plain value."
    if isinstance(row, dict): return row
    if dataclasses.is_dataclass(row) and not isinstance(row, type): return {f.name: getattr(row, f.name) for f in dataclasses.fields(row)}
    if isinstance(row, tuple) and hasattr(row, '_asdict'): return row._asdict()
    return None


def fill(
    template:str,   # `{field}` placeholders; `{}` or `{item}` for the item itself; format specs as str.format takes them
    rows:list,      # The items (`items_of`)
    index:list=None,# Their labels, for messages (default: positions)
)->list:            # One prompt per item
    "The prompt of every item, before any request: `TemplateError` naming the first item without a field the template uses."
    if not isinstance(template, str) or not template.strip(): raise TemplateError('The template is empty: write the prompt, '
                                                                                   'with {field} where each item goes.')
    fmt, index = string.Formatter(), index if index is not None else list(range(len(rows)))
    try: named = [f for _, f, _, _ in fmt.parse(template) if f is not None]
    except ValueError as e: raise TemplateError(f'The template cannot be read: {e} (write {{{{ and }}}} for a brace itself).') from None
    if not named and len(rows) > 1:
        raise TemplateError('The template names no field, so every item would get the same prompt: write {} (or {item}) '
                            'where the item goes, or {field} for a field of it.')
    out = []
    for n, row in enumerate(rows):
        fields = _fields(row)
        values = {**(fields or {}), 'item': (fields or {}).get('item', row)}
        try: out.append(fmt.vformat(template, (row,), values))
        except (KeyError, IndexError, AttributeError) as e:
            has = ', '.join(map(str, list(fields)[:12])) if fields else 'none: it is one value, {} or {item}'
            raise TemplateError(f'The template names {e}, which item {index[n]!r} does not have (its fields: {has}). '
                                'Fix the template or the item; nothing was asked.') from None
        except ValueError as e:
            raise TemplateError(f'Item {index[n]!r} does not fit the template: {e}. Nothing was asked.') from None
    return out


# ---- lanes, limits and the runner

class Ramp:
    """A limit found by measuring: start at `start` requests at once, double while the throughput of asked items grows
    by `gain` or more (a server with more slots answers more at once), then keep the best level. Reused items, which
    ask nothing, do not count; the first completion, which may carry the model's load, starts the clock."""
    def __init__(self, start:int=2, cap:int=16, gain:float=1.25):
        self.limit, self.cap, self.gain, self.settled = start, cap, gain, False
        self.best = (start, 0.0)          # (level, throughput) measured best so far
        self._n, self._t0, self._lock = 0, None, threading.Lock()

    def window(self)->int: return max(4, 3 * self.limit)   # completions measured at one level

    def asked(self, t:float)->bool:
        "Count one asked item done at `t`; whether the limit changed."
        with self._lock:
            if self.settled: return False
            if self._t0 is None:   # the first completion starts the clock
                self._t0 = t
                return False
            self._n += 1
            if self._n < self.window(): return False
            rate = self._n / max(t - self._t0, 1e-6)
            if rate >= self.best[1] * self.gain and self.limit < self.cap:
                self.best = (self.limit, rate)
                self.limit, self._n, self._t0 = min(self.cap, self.limit * 2), 0, t
            else:
                if rate > self.best[1]: self.best = (self.limit, rate)
                self.limit, self.settled = self.best[0], True
            return True


@dataclasses.dataclass
class Lane:
    "A server a batch sends requests to (a model id on it), and at most how many at once: a number, or a `Ramp`."
    model: str
    limit: object = 4       # int, or a `Ramp`
    why: str = ''           # how the limit was chosen, for the progress line
    asked: int = 0          # items asked here (not reused)
    done: int = 0

    @property
    def now(self)->int: return self.limit.limit if isinstance(self.limit, Ramp) else self.limit
    @property
    def most(self)->int: return self.limit.cap if isinstance(self.limit, Ramp) else self.limit


@dataclasses.dataclass
class Progress:
    "Where a batch is: counts, speed and time left; `finished` once it ended (`interrupted` if it was)."
    total: int
    done: int = 0           # answered (asked, reused or replayed)
    reused: int = 0         # answered without a request
    failed: int = 0
    elapsed: float = 0.0
    rate: float = 0.0       # answered items a second (reused ones aside, once any was asked)
    left: float = None      # seconds left, estimated
    parallel: int = 0       # requests at once, over every lane
    finished: bool = False
    interrupted: bool = False
    errors: dict = dataclasses.field(default_factory=dict)   # error type -> count

    @property
    def asked(self)->int: return self.done - self.reused

    def line(self)->str:
        "One line for a terminal: count, speed, time left, requests at once, failures."
        bits = [f'{self.done + self.failed}/{self.total}']
        if self.rate: bits.append(f'{self.rate:.1f}/s')
        if self.left is not None and not self.finished: bits.append(f'{_duration(self.left)} left')
        if self.parallel and not self.finished: bits.append(f'{self.parallel} at a time')
        if self.failed: bits.append(f'{self.failed} failed')
        return ' · '.join(bits)

    def summary(self)->str:
        "The closing line: what was answered, asked and reused, what failed and why, and how long it took."
        got = f'{self.done} answered ({self.asked} asked, {self.reused} reused)'
        why = ', '.join(f'{k} ×{n}' for k,n in self.errors.items())
        failed = f', {self.failed} failed ({why})' if self.failed else ''
        end = (f'; interrupted: {self.total - self.done - self.failed} not asked yet; run it again to ask only for those'
               if self.interrupted else '')
        return f'{self.total} items in {_duration(self.elapsed)}: {got}{failed}{end}'


def _duration(s:float)->str:
    s = max(0.0, s)
    return f'{s:.1f} s' if s < 60 else f'{int(s // 60)} min {int(s % 60):02d} s'


class TextProgress:
    "A batch's progress as text: one line rewritten in place on a terminal, else a line every `every` seconds; then a summary."
    def __init__(self, stream=None, every:float=5.0):
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, 'isatty', lambda: False)())
        self.every, self._last = (0.2 if self.tty else every), -1e9

    def __call__(self, p:Progress):
        now = monotonic()
        if not p.finished and now - self._last < self.every: return
        self._last = now
        bar = _bar(p) + ' ' if self.tty else ''
        if p.finished: self.stream.write(('\r\x1b[2K' if self.tty else '') + p.summary() + '\n')
        else: self.stream.write(f'\r\x1b[2K{bar}{p.line()}' if self.tty else p.line() + '\n')
        self.stream.flush()


def _bar(p:Progress, width:int=24)->str:
    n = round(width * (p.done + p.failed) / p.total) if p.total else width
    return '[' + '#' * n + '.' * (width - n) + ']'


class _Gate:
    "At most `lane.now` items at once on a lane; the limit may move while items run (a `Ramp`)."
    def __init__(self, lane):
        self.lane, self.busy, self.cond = lane, 0, threading.Condition()

    def enter(self, stopped)->bool:
        "Wait for room; False once the batch is stopped (then nothing was entered)."
        with self.cond:
            self.cond.wait_for(lambda: stopped.is_set() or self.busy < self.lane.now)
            if stopped.is_set(): return False
            self.busy += 1
            return True

    def leave(self):
        with self.cond:
            self.busy -= 1
            self.cond.notify_all()

    def wake(self):
        with self.cond: self.cond.notify_all()


_MISSING = object()


def run_batch(
    n:int,              # How many items
    ask,                # ask(i, lane, stop) -> (value, how): item i answered on `lane`; raises if it failed
    lanes:list,         # [`Lane`]: the servers, each at its own limit
    progress=None,      # progress(Progress) as items finish (throttled by the face), and once at the end
    stopper=None,       # () -> a stop for one item's request (`.stop()` hangs it up, `.stopped`), for interrupts
)->list:                # One value or `Failed` per item, in input order
    "Answer items 0..n-1 on `lanes`, each at its own limit; failures in place; an interrupt keeps what finished."
    results, lock, stopped, done = [_MISSING] * n, threading.Lock(), threading.Event(), threading.Event()
    todo, p, t0 = iter(range(n)), Progress(n), monotonic()
    live, first = {}, []   # live: thread -> the stop of the request it waits for; first: when the first request went

    def tell(final=False):
        p.elapsed = monotonic() - t0
        asking = p.elapsed - (first[0] - t0) if first else 0
        p.rate = p.asked / asking if p.asked and asking > 0 else (p.done / p.elapsed if p.elapsed > 0 else 0)
        p.left = (n - p.done - p.failed) / p.rate if p.rate else None
        p.parallel, p.finished = sum(ln.now for ln in lanes), final
        if progress is None: return
        try: progress(p)
        except Exception: pass   # a face that fails costs its display, never the batch

    def record(i, lane, value, how):
        results[i] = value
        lane.done += 1
        if how == 'failed':
            p.failed += 1
            p.errors[type(value.error).__name__] = p.errors.get(type(value.error).__name__, 0) + 1
            return
        p.done += 1
        if how == 'asked': lane.asked += 1
        else: p.reused += 1

    def work(lane, gate):
        while gate.enter(stopped):
            try:
                with lock: i = next(todo, None)
                if i is None: return
                stop = stopper() if stopper is not None else None
                with lock:
                    live[threading.get_ident()] = stop
                    if not first: first.append(monotonic())
                try: value, how = ask(i, lane, stop)
                except BaseException as e:   # an item's failure is its own; a bug too, reported in its place
                    value, how = Failed(e, i), 'failed'
                with lock:
                    live.pop(threading.get_ident(), None)
                    if stopped.is_set() and isinstance(value, Failed) and isinstance(value.error, ReplyInterrupted):
                        continue   # cut short by the interrupt: not answered, asked again next time
                    record(i, lane, value, how)
                    moved = how == 'asked' and isinstance(lane.limit, Ramp) and lane.limit.asked(monotonic())
                    tell()
                if moved: gate.wake()
            finally: gate.leave()

    gates = [_Gate(lane) for lane in lanes]
    threads = [threading.Thread(target=work, args=(lane, g), name='boopiter-batch', daemon=True)
               for lane, g in zip(lanes, gates) for _ in range(lane.most)]
    for t in threads: t.start()
    def join():
        for t in threads: t.join()
        done.set()
    threading.Thread(target=join, name='boopiter-batch-join', daemon=True).start()
    try:
        while not done.wait(0.1): tell()
    except KeyboardInterrupt:
        stopped.set()
        with lock: stops = [s for s in live.values() if s is not None]
        for s in stops: s.stop()   # the requests in flight hang up; no new item is taken
        for g in gates: g.wake()
        done.wait(30)
        p.interrupted = True
        tell(final=True)
        raise ReplyInterrupted(f'Interrupted: {p.done} of {n} answered and kept, {n - p.done - p.failed} not: run the same '
                               'call again to ask only for those (the answered ones come back from memory).') from None
    tell(final=True)
    return [Failed(BoopError('not answered'), i) if r is _MISSING else r for i,r in enumerate(results)]
