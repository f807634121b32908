"""What a prompt to the embedded model waits for before its first token: the model's start, then how far llama.cpp has
read the prompt (its `/slots` endpoint: tokens read, and those taken from its cache). A headless run prints it
(`boopiter-run`), a notebook shows it on the reply's waiting line, a terminal on its own.

    view.waiting(model, progress=PromptProgress(router.local, tokens=1099))   # 'reading the prompt: 384 of ~1,099 tokens read'

Without it a reader sees only "starting the embedded model" for the minute a busy CPU can take to read a notebook.
"""

__all__ = ['PromptProgress', 'slot_progress']

import threading
from time import monotonic


def _count(v)->int|None: return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 40 else None


class PromptProgress:
    """progress() for a prompt to the embedded model: the step of its start while it starts, then how far llama.cpp has
    read the prompt, from `/slots`. The server answers `/slots` only between two batches of the prompt (seconds apart on
    a busy machine), so it is asked on a thread of its own and the caller gets the last answer at once."""
    interval = 1.0   # seconds between two questions to `/slots`

    def __init__(self,
                 local,         # The `LocalModel`
                 tokens:int=0): # The prompt's estimated tokens (the ledger's), 0 if not known
        self.local, self.tokens = local, tokens
        self.read = self.cached = None   # the prompt's tokens read so far, and those taken from the cache
        self._asking, self._asked = False, 0.0
        self._lock = threading.Lock()

    def __call__(self)->str:
        if (step := self.local.status()): return step   # starting the engine, loading the weights
        self._ask()
        return self.text()

    def text(self)->str:
        """The step as the user reads it, once the server has said: `reading the prompt: 384 of ~856 tokens read`, or with
        a cache `reading the prompt: 12 of ~40 new tokens read, 1,046 from the cache`; '' before (the view then says
        `reading ~856 prompt tokens`)."""
        read, cached = self.read or 0, self.cached or 0
        if not read and not cached: return ''
        new = self.tokens - cached   # the estimate, less what the server found in its cache
        of = f' of ~{new:,}' if new > read else ''
        return (f'reading the prompt: {read:,}{of} {"new " if cached else ""}tokens read'
                + (f', {cached:,} from the cache' if cached else ''))

    def _ask(self):
        with self._lock:
            if self._asking or monotonic() - self._asked < self.interval or not (url := self.local.url): return
            self._asking, self._asked = True, monotonic()
        threading.Thread(target=self._poll, args=(url,), name='boopiter-prompt-progress', daemon=True).start()

    def _poll(self, url):
        "Ask `/slots` once and keep what it says of the prompt being read."
        import requests
        try:
            if (got := slot_progress(requests.get(url + '/slots', timeout=(2, 60)).json())) is not None:
                self.read, self.cached = got
        except (requests.RequestException, ValueError): pass   # no progress to tell: the step stays as it was
        finally:
            with self._lock: self._asking = False


def slot_progress(
    slots,  # llama.cpp's `/slots` answer, as parsed JSON: a list of slots (the embedded model has one)
)->tuple|None: # (tokens read, tokens from the cache) of the slot reading a prompt; None if none is, or it makes no sense
    "What `/slots` says of the prompt under way, validated: a server may send anything."
    slot = slots[0] if isinstance(slots, list) and slots and isinstance(slots[0], dict) else {}
    if slot.get('is_processing') is not True or (read := _count(slot.get('n_prompt_tokens_processed'))) is None: return None
    return read, _count(slot.get('n_prompt_tokens_cache')) or 0
