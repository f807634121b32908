"""Turning a model's stream into a reply: answer and reasoning apart, counts, timings, throttled updates.

Every client yields the same small events: `('content', text)`, `('thinking', text)` and, last,
`('done', info)` where `info` may hold `finish_reason`, `prompt_tokens`, `completion_tokens` and
`reasoning_tokens` (where the server reports them).

    reply = Reply('qwen3')
    pump(client.chat(...), reply, update=view.update, limit=400_000)   # view.update(reply) at most every 0.1 s
    reply.finish('done')

A reply is bounded: past `limit` characters `pump` cuts it there and raises `ReplyTooLong`, so an endless stream
costs no more memory than the bound. Updates come less often as a reply grows (every `interval` seconds, or one
second per 2 MB of text if that is longer), so showing a long reply costs time in proportion to its length.

`<think>...</think>` at the start of the content goes to `reply.reasoning`, never to the answer. A
`<think>` never closed keeps what arrived: at the end of the reply it becomes the answer, with a note.
"""

__all__ = ['Reply', 'pump', 'StallWatch', 'STATUS_NOTES', 'watching']

import contextvars, threading
from contextlib import contextmanager
from time import monotonic
from ..errors import ReplyStalled, ReplyTooLong

_OPEN, _CLOSE = '<think>', '</think>'
STATUS_NOTES = {'interrupted': 'interrupted', 'broken': 'connection lost', 'stalled': 'timed out', 'error': 'failed',
                'too long': 'too long: stopped at `max_reply` characters'}
_BYTES_PER_S = 2e6   # a long reply is shown again at most once per this many characters a second


def _tag_prefix(s, tag):
    "Length of the longest proper prefix of `tag` that `s` ends with (a tag split across chunks)."
    return next((n for n in range(min(len(tag)-1, len(s)), 0, -1) if s.endswith(tag[:n])), 0)


class Reply:
    "A reply as it streams: answer and reasoning text, token counts, timings, and how it ended."
    def __init__(self, model:str, started:float=None):
        self.model, self.started = model, started or monotonic()
        self.parts, self.reasoning_parts, self.info = [], [], {}
        self.first_token_at = self.answer_at = self.ended_at = None   # answer_at: the answer's first visible text
        self.chunks, self.reasoning_chunks, self.status, self.note = 0, 0, 'streaming', ''
        self.size, self._grew = 0, self.parts   # characters received; the list the last text went to
        self._in_think, self._held, self._started = False, '', False   # _started: the answer has non-space text
        self._opened = None   # (reasoning parts, reasoning chunks) when a `<think>` tag opened
        self.unclosed, self.fixed = False, {}   # fixed: timings of a replayed reply, as they were measured
        self.carried = 0   # characters of the answer carried over from earlier rounds (`continuing`)

    @classmethod
    def continuing(cls, prev:'Reply', text:str)->'Reply':
        "A new reply whose answer starts with `prev`'s and then `text` (agent mode: the rounds read as one reply)."
        r = cls(prev.model, prev.started)
        r.parts, r._started, r.answer_at, r.first_token_at = [prev.answer + text], True, prev.answer_at, prev.first_token_at
        r.reasoning_parts, r.carried = list(prev.reasoning_parts), len(prev.answer + text)
        return r

    @property
    def round_answer(self)->str:
        "The answer of this round alone: without what `continuing` carried over."
        return self.answer[self.carried:]

    @property
    def answer(self)->str: return ''.join(self.parts)
    @property
    def reasoning(self)->str: return ''.join(self.reasoning_parts)

    def add_content(self, s:str):
        "Add answer text, routing any `<think>` section to the reasoning."
        self.chunks, self.size = self.chunks + 1, self.size + len(s)
        if self.first_token_at is None: self.first_token_at = monotonic()
        if self._held or self._in_think or '<' in s:
            n = len(self.reasoning_parts)
            self._route(self._held + s)
            self.reasoning_chunks += len(self.reasoning_parts) > n
            self._grew = self.reasoning_parts if len(self.reasoning_parts) > n else self.parts
        else:
            self._grew = self.parts
            self.parts.append(s)
            if not self._started and not s.isspace(): self._started = True
        if self._started and self.answer_at is None: self.answer_at = monotonic()

    def add_thinking(self, s:str):
        "Add reasoning text the server sent apart from the answer."
        self.chunks, self.size, self._grew = self.chunks + 1, self.size + len(s), self.reasoning_parts
        if self.first_token_at is None: self.first_token_at = monotonic()
        self.reasoning_chunks += 1
        self.reasoning_parts.append(s)

    def _route(self, s):
        self._held = ''
        while s:
            if self._in_think:
                i = s.find(_CLOSE)
                if i < 0:
                    n = _tag_prefix(s, _CLOSE)
                    self.reasoning_parts.append(s[:len(s)-n])
                    self._held = s[len(s)-n:]
                    return
                self.reasoning_parts.append(s[:i])
                self._in_think, s = False, s[i+len(_CLOSE):].lstrip('\n')
                continue
            if self._started:  # `<think>` only opens reasoning before any answer text
                self.parts.append(s)
                return
            i = s.find(_OPEN)
            if i >= 0 and not s[:i].strip():
                self._in_think, s = True, s[i+len(_OPEN):]
                self._opened = len(self.reasoning_parts), self.reasoning_chunks
                continue
            n = _tag_prefix(s, _OPEN)
            if n and s[:len(s)-n].strip(): n = 0
            self.parts.append(s[:len(s)-n])
            self._started = bool(s[:len(s)-n].strip())
            self._held = s[len(s)-n:]
            return

    def cut(self, limit:int):
        "Drop what arrived past `limit` characters: from the end of the text that grew last, then of the other."
        over = self.size - limit
        for parts in (self._grew, self.reasoning_parts if self._grew is self.parts else self.parts):
            while over > 0 and parts:
                last = parts.pop()
                if len(last) > over: parts.append(last[:len(last) - over])
                over -= len(last)
        self.size, self._held = min(self.size, limit), ''

    def finish(self, status:str='done', info:dict=None):
        """Close the reply. What an unclosed `<think>` holds becomes the answer (marked), unless the reply was cut off
        while reasoning; reasoning the server sent apart stays reasoning either way."""
        if info: self.info.update(info)
        if self._held: (self.reasoning_parts if self._in_think else self.parts).append(self._held)
        self._held = ''
        if self._in_think and not self.answer.strip() and status == 'done':
            if self.info.get('finish_reason') == 'length':
                self.note = 'cut off while reasoning (by `max_tokens` or the context window), before any answer'
            else:
                (at, chunks), self.unclosed = self._opened, True
                self.parts, self.reasoning_parts = [''.join(self.reasoning_parts[at:])], self.reasoning_parts[:at]
                self.reasoning_chunks = chunks
                self.note = 'the model opened <think> and never closed it; what it wrote there is shown as the answer'
        self._in_think = False
        self.status, self.ended_at = status, monotonic()

    @property
    def completion_tokens(self)->int: return self.info.get('completion_tokens') or self.chunks
    @property
    def ttft(self)->float|None:
        if 'ttft' in self.fixed: return self.fixed['ttft']
        return None if self.first_token_at is None else self.first_token_at - self.started

    @property
    def reasoning_tokens(self)->tuple:
        "(count, exact): the server's count where it reports one, else the reasoning chunks streamed (about one token each)."
        if self.info.get('reasoning_tokens'): return self.info['reasoning_tokens'], True
        return self.reasoning_chunks, False

    @property
    def reasoning_s(self)->float|None:
        "Seconds spent reasoning before the answer began, when there was reasoning."
        if 'reasoning_s' in self.fixed: return self.fixed['reasoning_s']
        if not self.reasoning_chunks or self.first_token_at is None: return None
        return (self.answer_at or self.ended_at or monotonic()) - self.first_token_at

    @property
    def tokens_per_s(self)->float|None:
        if 'tokens_per_s' in self.fixed: return self.fixed['tokens_per_s']
        if self.first_token_at is None or self.ended_at is None: return None
        dt = self.ended_at - self.first_token_at
        return self.completion_tokens / dt if dt > 0 else None

    def snapshot(self)->dict:
        "Everything showing this reply again needs: texts, counts, how it ended, and its timings as measured."
        return dict(answer=self.answer, reasoning=self.reasoning, status=self.status, note=self.note, info=self.info,
                    chunks=self.chunks, reasoning_chunks=self.reasoning_chunks, unclosed=self.unclosed,
                    ttft=self.ttft, reasoning_s=self.reasoning_s, tokens_per_s=self.tokens_per_s)

    @classmethod
    def restore(cls, model:str, snap:dict)->'Reply':
        "A finished reply from a `snapshot` (a cassette's turn, a saved output): it renders as it did when recorded."
        r = cls(model)
        r.parts, r.reasoning_parts = [snap.get('answer', '')], [snap.get('reasoning', '')]
        r._grew, r.size = r.parts, len(r.parts[0]) + len(r.reasoning_parts[0])
        r.info, r.note, r.unclosed = dict(snap.get('info') or {}), snap.get('note', ''), snap.get('unclosed', False)
        r.chunks, r.reasoning_chunks = snap.get('chunks', 0), snap.get('reasoning_chunks', 0)
        r.fixed = {k: snap.get(k) for k in ('ttft', 'reasoning_s', 'tokens_per_s')}
        r.status, r.ended_at = snap.get('status', 'done'), monotonic()
        return r


def pump(
    events,              # Iterable of (kind, value) events from a client
    reply:Reply,         # Reply to feed
    update=None,         # Called as `update(reply)` on the first token, then at most every `interval` seconds
    interval:float=0.1,  # Seconds between updates (10 per second keeps Jupyter's rate limiter happy)
    limit:int=0,         # Most characters (answer and reasoning) to take; 0: no bound
)->Reply:
    "Feed every event into `reply`, throttling `update` calls; the caller sends the final update."
    next_at = 0.0
    add_content, add_thinking = reply.add_content, reply.add_thinking
    for kind,val in events:
        if kind == 'content': add_content(val)
        elif kind == 'thinking': add_thinking(val)
        else:
            reply.info.update(val)
            continue
        if limit and reply.size > limit:
            reply.cut(limit)
            raise ReplyTooLong(f'The reply grew past {limit:,} characters (`max_reply`), so boopiter stopped it; what '
                               'arrived is kept above. Ask for a shorter answer, or raise `max_reply` (settings.ini, '
                               'or `%config BoopMagics.max_reply = 2000000`).', limit=limit)
        if update is not None and (now := monotonic()) >= next_at:
            update(reply)
            next_at = now + max(interval, reply.size / _BYTES_PER_S)
    return reply


_JOIN = contextvars.ContextVar('boopiter_watching', default=None)   # join(watch): `watching`'s


@contextmanager
def watching(join):
    "In this block, every `StallWatch` a client makes is handed to `join(watch)` (a Stop can hang it up: `stop`)."
    token = _JOIN.set(join)
    try: yield
    finally: _JOIN.reset(token)


class StallWatch:
    """A deadline between tokens (and to the first one) for a streamed reply: every client wraps its events in it.

    A per-read socket timeout never fires while a server trickles bytes that complete no token, so a thread of
    its own waits for the deadline and then calls the `hang_up` the client `arm`s it with, which shuts the socket
    down: that wakes the read blocked in the kernel's thread, and the client raises `stalled(model)`. Time the
    consumer spends between tokens does not count, and the thread ends with the stream."""
    def __init__(self,
                 timeout:float):  # Seconds without a token before hanging up; 0 or None waits for ever
        self.timeout, self.fired, self.last, self._hang_up = timeout or None, False, None, None
        self._lock, self._done, self.stopped = threading.Lock(), threading.Event(), False
        if (join := _JOIN.get()) is not None: join(self)

    @property
    def backstop(self)->float|None:
        "A per-read socket timeout just past the deadline, for waits the watch cannot cut short (response headers)."
        return self.timeout and self.timeout + 1

    def follow(self, events):
        "Yield `events`, timing each wait for the next one; closing this generator closes `events`."
        self.last = monotonic()
        if self.timeout: threading.Thread(target=self._watch, name='boopiter-stall-watch', daemon=True).start()
        try:
            for ev in events:
                self.last = None   # the consumer's time is not the server's
                yield ev
                self.last = monotonic()
        finally:
            with self._lock: self._done.set()   # under the lock: no hang-up once the stream is let go
            events.close()

    def arm(self, hang_up)->bool:
        "Call `hang_up()` when the deadline passes; False if it already has (the caller raises `stalled`)."
        with self._lock:
            self._hang_up = hang_up
            return not self.expired()

    def expired(self)->bool:
        "Whether the deadline has passed: read by the clock, so a failure it caused is a stall even before the watch wakes."
        last = self.last
        return self.fired or self.stopped or bool(self.timeout) and last is not None and monotonic() - last >= self.timeout

    def stop(self):
        "Hang up now (the user's Stop, from any thread): the blocked read wakes; a stream not yet armed never starts."
        with self._lock:
            if self._done.is_set(): return
            self.stopped = True
            try:
                if self._hang_up is not None: self._hang_up()
            except (OSError, RuntimeError, ValueError): pass

    def stalled(self, model:str)->ReplyStalled:
        "The error for a stall, saying what to change if the model is only slow."
        return ReplyStalled(f'No token from {model} for {self.timeout:g} s, so boopiter stopped waiting. If the model is '
                            'just slow to load, raise `timeout` (settings.ini, or `%config BoopMagics.timeout = 600`).',
                            model=model, timeout=self.timeout)

    def _left(self):
        last = self.last
        return self.timeout if last is None else max(0.0, last + self.timeout - monotonic())

    def _watch(self):
        while not self._done.wait(self._left()):
            if not self.expired(): continue   # a token came (or the consumer has it) while we slept
            with self._lock:
                if self._done.is_set(): return
                self.fired = True
                try:
                    if self._hang_up is not None: self._hang_up()
                except (OSError, RuntimeError, ValueError): pass   # closed or released meanwhile: no read blocks
            return
