"""Ghost-text completion's kernel core: what a fill-in-the-middle model reads, its answer made fit to show, and one
request at a time per kernel.

    c = Completer(lambda model: router.ollama(settings), busy=lambda: replying, local=LocalModel())
    c.complete('qwen2.5-coder:1.5b', 'def add(a, b):\\n    return', '', above=cells)   # {'text': ' a + b', 'reason': '', ...}

Rules: an Ollama model must have the `insert` capability (Ollama fills in the middle only then, and refuses a `suffix`
otherwise); the embedded model (SmolLM2, no fill-in-the-middle) continues the text before the cursor over llama.cpp's
`/v1/completions`. A prompt in flight wins: `busy()` refuses a completion at once, and stops one when a prompt starts.
Only the newest request matters: starting one stops the one in flight, which answers 'superseded'. `timeout` bounds the
whole wait, however the server behaves. Nothing raises: a failure is the one-line `reason` beside an empty `text`.
Plain Python, no IPython: the frontend channel calls `complete` from its worker threads.
"""

__all__ = ['FIM', 'pick_completion_model', 'fim_parts', 'tidy', 'Completer']

import json, logging, threading
from time import monotonic
from ..errors import BoopError, LocalModelError, ModelError
from ..models.routes import LOCAL_ID, split_endpoint
from ..models.stream import StallWatch, watching

FIM = 'insert'   # Ollama's capability name for fill-in-the-middle models (qwen2.5-coder, codellama:code, starcoder2...)
BUSY = 'a prompt is using the model'
NAMES_CAP = 200  # characters of the `# names defined: ...` line at most
log = logging.getLogger('boopiter_ext')


def pick_completion_model(
    entries,   # Catalog entries (`catalog.ModelEntry`: `id`, `source`, `capabilities`, `size`, `offline`)
)->tuple:      # (model id or None, one line saying why)
    "The smallest Ollama model that can fill in the middle, or None and what to do to have one."
    fim = [e for e in entries if e.source == 'ollama' and FIM in (e.capabilities or ()) and not e.offline]
    if not fim: return None, ('no model with fill-in-the-middle (`insert`) in reach: `ollama pull qwen2.5-coder:1.5b`, '
                              'or pick one in the brain menu')
    best = min(fim, key=lambda e: (e.size is None, e.size or 0, e.id))
    return best.id, f'{best.id}: the smallest model with fill-in-the-middle (`insert`) in reach'


def _tail(s:str, n:int)->str: return s[max(0, len(s) - max(0, n)):]   # the last `n` characters (none for n <= 0)


def _clip_start(s:str, n:int)->str:
    "The last `n` characters of `s`, from a line's start where a line was cut."
    if len(s) <= n: return s
    t = _tail(s, n)
    return t.partition('\n')[2] if '\n' in t else ''


def _names_line(names, room:int)->str:
    "`# names defined: a, b, ...` within `room` (and NAMES_CAP) characters, newline included; '' when none fit."
    room, out = min(room, NAMES_CAP) - 1, ''
    for n in (n for n in names if isinstance(n, str) and n.isidentifier()):
        line = f'{out}, {n}' if out else f'# names defined: {n}'
        if len(line) > room: break
        out = line
    return out + '\n' if out else ''


def _above(cells, room:int)->str:
    "The cells, oldest first, joined with blank lines: the newest that fit in `room`, the oldest kept clipped at its start."
    kept = []
    for c in reversed([c for c in cells if isinstance(c, str) and c.strip()]):
        c = c.strip('\n')
        if (left := room - len(c) - 2) < 0:
            if (part := _clip_start(c, room - 2).strip('\n')): kept.append(part)
            break
        kept.append(c)
        room = left
    return '\n\n'.join(reversed(kept)) + '\n\n' if kept else ''


def fim_parts(
    prefix:str,       # The current cell's text before the cursor
    suffix:str,       # Its text after the cursor
    above=(),         # Sources of the cells above, oldest first (hidden ones already left out)
    names=(),         # Names the kernel defines, most useful first
    budget:int=4000,  # Characters of prompt at most; the suffix gets a quarter of it
)->tuple:             # (prompt, suffix)
    "The prompt and suffix of one fill-in-the-middle request: the text nearest the cursor kept first, whole."
    budget = max(0, budget)
    prefix = _tail(prefix or '', budget)
    names_line = _names_line(names, budget - len(prefix))
    head = _above(above, budget - len(prefix) - len(names_line))
    return head + names_line + prefix, (suffix or '')[:budget // 4]


_OVERLAP = 200   # characters of the suffix a completion's end is compared with


def _overlap(text:str, suffix:str)->int:
    "Length of the longest end of `text` that starts `suffix` (or `suffix` without its leading space)."
    ends = (k for s in (suffix, suffix.lstrip()) for k in range(min(len(text), len(s), _OVERLAP), 0, -1)
            if text.endswith(s[:k]))
    return max(ends, default=0)


def _before_repeat(text:str, first:str, head:str)->str:
    "`text` cut before a line that is `first`, the suffix's first line (its own first line read after `head`)."
    lines = text.split('\n')
    same = lambda i, l: ((head if i == 0 else '') + l).strip() == first
    if first: lines = lines[:next((i for i,l in enumerate(lines) if same(i, l)), len(lines))]
    return '\n'.join(lines).rstrip()


def tidy(
    text:str,          # What the model returned
    prefix:str,        # The text before the cursor (its last line and the completion's first make one line)
    suffix:str,        # The text after it
    max_lines:int=8,   # Lines to show at most
)->str:                # The ghost text; '' when nothing is worth showing
    "A completion made fit to show: cut where it starts repeating the suffix, at `max_lines` lines, trailing space stripped."
    if not isinstance(text, str) or not text.strip(): return ''
    suffix = suffix if isinstance(suffix, str) else ''
    first = next((l.strip() for l in suffix.split('\n') if l.strip()), '')
    head = prefix.rpartition('\n')[2] if isinstance(prefix, str) else ''
    out = _before_repeat('\n'.join(text.split('\n')[:max(1, max_lines)]), first, head)
    out = out[:len(out) - _overlap(out, suffix)].rstrip()   # once: `f(a))` before `)` is `f(a)`, never `f(a`
    return out if out.strip() else ''


def _line(e)->str:
    "An error (or a server's text) as one line, not endless."
    msg = str(e) if isinstance(e, (BoopError, str)) else f'{type(e).__name__}: {e}'
    return ' '.join(msg.split())[:300]


class _Request:
    "One completion in flight: the pieces so far, why it was stopped ('' while it runs) and the streams to hang up then."
    def __init__(self):
        self.cancel, self.over, self.why, self.pieces = threading.Event(), threading.Event(), '', []
        self._watches, self._lock = [], threading.Lock()

    def join(self, watch):
        "Hang up `watch` (the request's stream) when the request is stopped: at once if it already is."
        with self._lock:
            self._watches.append(watch)
            if not self.cancel.is_set(): return
        watch.stop()

    def stop(self, why:str):
        "Stop the request for `why`, waking a read that waits for the server (the first reason stays)."
        with self._lock:
            if self.cancel.is_set(): return
            self.why = why
            self.cancel.set()
            watches = list(self._watches)
        for w in watches: w.stop()
        self.over.set()


class Completer:
    """One per kernel: completes code with an Ollama fill-in-the-middle model or the embedded one, the newest request
    winning and a prompt winning over any; `complete` is safe to call from many threads at once.

        c = Completer(lambda model: router.ollama(settings), busy=lambda: replying, local=LocalModel())
        c.complete('qwen2.5-coder:1.5b', 'x = ', '\\nprint(x)')   # {'text': '1', 'reason': '', 'ms': 120}"""
    def __init__(self,
                 client,               # client(model) -> an `OllamaClient` for `model`, or None where none answers it
                 busy=lambda: False,   # busy() -> whether a prompt is using the model now
                 local=None):          # The embedded model: a `LocalModel`, or a callable returning its base URL
        self.client, self.busy, self.local = client, busy, local
        self._lock, self._req, self._session = threading.Lock(), None, None
        self._wire = threading.Lock()   # one request on the wire: a server reads a request it was sent, hung up or not,
                                        # until its first byte, so a superseded one that waits is never sent at all

    def cancel(self):
        "Stop whatever completion is in flight."
        with self._lock: req = self._req
        if req is not None: req.stop('cancelled')

    def close(self):
        "Stop what is in flight and let go of the embedded model's connection."
        self.cancel()
        if self._session is not None: self._session.close()

    def complete(self,
                 model:str,             # Model id: an Ollama model with `insert`, or `LOCAL_ID`
                 prefix:str,            # The current cell's text before the cursor
                 suffix:str,            # Its text after the cursor
                 above=(),              # Sources of the cells above, oldest first (hidden ones left out)
                 names=(),              # Names the kernel defines
                 max_tokens:int=48,     # Longest completion, in tokens
                 timeout:float=10,      # Seconds for the whole request
                 num_ctx:int=None,      # Ollama's context window: the one prompts load the model with, or it loads again
                )->dict:                # {'text': ghost text or '', 'reason': why it is empty or '', 'ms': time taken}
        "A completion for the cursor between `prefix` and `suffix`; never raises."
        t0 = monotonic()
        if self._busy(): return _result('', BUSY, t0)
        req = self._begin()
        try:
            prompt, after = fim_parts(prefix, suffix, above, names)
            args = (req, model, prompt, after, max_tokens, timeout, num_ctx)
            threading.Thread(target=self._run, args=args, name='boopiter-complete', daemon=True).start()
            self._wait(req, t0 + timeout)
        finally: self._end(req)
        if req.why: return _result('', req.why, t0)
        text = tidy(''.join(req.pieces), prefix, suffix)
        return _result(text, '' if text else 'nothing to suggest here', t0)

    def _busy(self)->bool:
        try: return bool(self.busy())
        except Exception: return False   # a broken check must not break completion, nor say busy for ever

    def _begin(self)->_Request:
        "A new request, the current one: the one in flight is superseded."
        req = _Request()
        with self._lock: old, self._req = self._req, req
        if old is not None: old.stop('superseded')
        return req

    def _end(self, req):
        with self._lock:
            if self._req is req: self._req = None

    def _wait(self, req, deadline):
        "Wait for `req` to end, stopping it when a prompt starts or `deadline` passes."
        while not req.over.wait(max(0.0, min(0.05, deadline - monotonic()))):
            if self._busy(): req.stop(BUSY)
            elif monotonic() >= deadline: req.stop('timed out')

    def _run(self, req, model, prompt, suffix, max_tokens, timeout, num_ctx):
        "The request itself, on a thread of its own (`complete` returns when it is stopped, whatever the server does)."
        while not self._wire.acquire(timeout=0.05):   # the one before it still waits for its server's first byte
            if req.cancel.is_set(): return req.over.set()
        try:
            if req.cancel.is_set(): return   # superseded while it waited: never sent
            with watching(req.join):
                for piece in self._pieces(model, prompt, suffix, max_tokens, timeout + 1, num_ctx, req.cancel):
                    if req.cancel.is_set(): break
                    req.pieces.append(piece)
        except Exception as e:   # whatever failed, `complete` answers one line
            if not isinstance(e, (BoopError, ConnectionError)): log.debug('boopiter_ext: completion failed', exc_info=True)
            req.stop(_line(e))
        finally:
            self._wire.release()
            req.over.set()

    def _pieces(self, model, prompt, suffix, max_tokens, timeout, num_ctx, cancel):
        "The completion's text as it streams, from the model's server."
        if model == LOCAL_ID: return self._local(prompt, max_tokens, timeout, cancel)
        if (client := self.client(model)) is None:
            raise ModelError(f'{model} cannot complete code here: pick an Ollama model with fill-in-the-middle '
                             '(`insert`), such as qwen2.5-coder, or the embedded model.', model=model)
        # an empty suffix would make Ollama use the model's chat template instead of its fill-in-the-middle one
        model = (split_endpoint(model) or (None, model))[1]   # a named endpoint's model, by its name there
        return client.generate(model, prompt, suffix or '\n', max_tokens=max_tokens, num_ctx=num_ctx, cancel=cancel,
                               timeout=timeout)

    def _local(self, prompt, max_tokens, timeout, cancel):
        "The embedded model continuing `prompt` (it has no fill-in-the-middle), streamed from llama.cpp's server."
        if self.local is None: raise LocalModelError('The embedded model is not set up in this kernel.')
        url = self.local.ensure() if hasattr(self.local, 'ensure') else self.local()
        body = dict(prompt=prompt, max_tokens=max_tokens, temperature=0, stop=['\n\n'], stream=True)
        watch = StallWatch(timeout)
        return watch.follow(self._events(url.rstrip('/') + '/v1/completions', body, watch, cancel))

    def _http(self):
        if self._session is None:
            import requests   # ~75 ms: not at `%load_ext`
            self._session = requests.Session()
        return self._session

    def _events(self, url, body, watch, cancel):
        import requests
        try:
            with self._http().post(url, json=body, stream=True, timeout=(5, watch.backstop)) as r:
                if not watch.arm(r.raw.shutdown) or cancel.is_set(): return
                if r.status_code != 200:
                    raise LocalModelError(f'The embedded model answered HTTP {r.status_code}: {_line(r.text)}')
                for line in r.iter_lines(chunk_size=1024):
                    if cancel.is_set() or line.strip() == b'data: [DONE]': return
                    if line.startswith(b'data:'): yield _choice_text(line[5:])
        except requests.RequestException as e:
            raise LocalModelError(f'The embedded model did not answer: {_line(e)}') from e


def _choice_text(data:bytes)->str:
    "The text of one `/v1/completions` stream event ('' for anything else)."
    try: text = (json.loads(data).get('choices') or [{}])[0].get('text')
    except (ValueError, AttributeError, LookupError, TypeError): return ''
    return text if isinstance(text, str) else ''


def _result(text:str, reason:str, t0:float)->dict:
    return dict(text=text, reason=reason, ms=round((monotonic() - t0) * 1000))
