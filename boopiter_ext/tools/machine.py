"""The `machine` tool source: `gpu_free` says how much memory the GPUs (or the machine) have free and Ollama holds.

It only reads. It asks `nvidia-smi` and `rocm-smi` where they are on PATH (its absolute folders but the working one: a
notebook's folder cannot slip in a program of that name): each run directly (never through a shell),
with no input, for at most `_SECONDS` (the process group is killed after that), and only the first `_MAX_OUT` bytes of
its output read. Every number read from a tool is checked (not negative, not absurd); a line that does not parse is
skipped and counted. With no GPU read, the machine's memory is given instead (/proc/meminfo, else `os.sysconf`).
Ollama's loaded models come from `/api/ps` (`OllamaClient.ps`) within `_OLLAMA_SECONDS`; an Ollama that does not
answer is one line, never a failure.

    gpu_free, = machine_source(ctx)
    print(gpu_free())   # GPU 0 NVIDIA A100: 30.1 GiB free of 40.0 GiB\nOllama holds: qwen3:8b 5.2 GiB (4.9 GiB on GPU)
"""

__all__ = ['machine_tools', 'machine_source']

import json, math, os, re, shutil
from .kernel import _mark

_SECONDS = 3.0            # one GPU tool's run, at most
_OLLAMA_SECONDS = 2.0     # connecting to Ollama, and its answer
_MAX_OUT = 64_000         # bytes of a tool's output read
_MAX_GPUS, _MAX_MODELS = 64, 20
_MEMINFO = '/proc/meminfo'
_MAX_MIB = 2 ** 24        # 16 TiB in MiB: more on one GPU is a misread
_MAX_BYTES = 2 ** 50      # 1 PiB: more memory is a misread
_NVIDIA = ['--query-gpu=index,name,memory.total,memory.used,memory.free', '--format=csv,noheader,nounits']
_ROCM = ['--showmeminfo', 'vram', '--json']


def _gib(b): return f'{b / 2**30:.1f} GiB'
def _clean(s, n=60): return ''.join(c for c in ' '.join(str(s).split()) if c.isprintable())[:n]


def _amount(v, top):
    "A number read from a tool, as a float: finite, from 0 to `top`; else None."
    if isinstance(v, bool) or not isinstance(v, (str, int, float)): return None
    try: x = float(v)
    except (ValueError, OverflowError): return None
    return x if math.isfinite(x) and 0 <= x <= top else None


def _kill(p):
    "Stop `p` and whatever it started (its own process group), then reap it."
    import signal
    try: os.killpg(p.pid, signal.SIGKILL) if hasattr(os, 'killpg') else p.kill()
    except OSError: p.kill()
    p.wait()


def _run(path, args)->tuple:
    "(output, '') of running `path` with `args`; or (None, what went wrong). Never a shell, never past `_SECONDS`."
    import subprocess, tempfile
    with tempfile.TemporaryFile() as out:   # a file, not a pipe: a grandchild holding it open cannot keep us waiting
        try: p = subprocess.Popen([path, *args], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        except OSError as e: return None, f'cannot start ({e.strerror or e})'
        try: code = p.wait(_SECONDS)
        except subprocess.TimeoutExpired:
            _kill(p)
            return None, f'no answer within {_SECONDS:g} s'
        if code: return None, f'exited with status {code}'
        out.seek(0)
        return out.read(_MAX_OUT).decode('utf-8', 'replace'), ''


def _nvidia(text)->tuple:
    "([(index, name, free bytes, total bytes)], lines skipped) from nvidia-smi's CSV (MiB, no units)."
    gpus, bad = [], 0
    for line in filter(str.strip, text.splitlines()):
        f = [x.strip() for x in line.split(',')]
        if len(f) < 5 or not re.fullmatch(r'[0-9]{1,4}', f[0]) or int(f[0]) > 1023:
            bad += 1
            continue
        total, used, free = (_amount(x, _MAX_MIB) for x in f[-3:])
        if None in (total, used, free) or free > total or used > total:
            bad += 1
            continue
        gpus.append((int(f[0]), _clean(','.join(f[1:-3])) or 'NVIDIA GPU', free * 2**20, total * 2**20))
    return gpus, bad


def _rocm(text)->tuple:
    "([(index, name, free bytes, total bytes)], cards skipped) from rocm-smi's JSON: {'card0': {'VRAM Total ..': ..}}."
    try: data = json.loads(text)
    except (ValueError, RecursionError): return [], 1
    if not isinstance(data, dict): return [], 1
    gpus, bad = [], 0
    for k, v in data.items():
        if not (m := re.fullmatch(r'card([0-9]{1,4})', str(k))): continue   # 'system' and others: not a GPU
        v = v if isinstance(v, dict) else {}
        total, used = (_amount(v.get(f'VRAM Total {w}Memory (B)'), _MAX_BYTES) for w in ('', 'Used '))
        if total is None or used is None or used > total:
            bad += 1
            continue
        name = next((_clean(v[k]) for k in ('Card series', 'Card SKU') if isinstance(v.get(k), str)), '') or 'AMD GPU'
        gpus.append((int(m[1]), name, total - used, total))
    return gpus, bad


def _system_path()->str:
    "PATH without its relative entries (`.`, an empty one) and the working folder: a notebook's folder holds no GPU tool."
    here = os.path.realpath(os.getcwd())
    return os.pathsep.join(d for d in os.environ.get('PATH', '').split(os.pathsep)
                           if os.path.isabs(d) and os.path.realpath(d) != here)


def _gpu_lines()->list:
    "One line per GPU the tools on PATH report, and one per problem."
    lines = []
    for exe, args, parse in (('nvidia-smi', _NVIDIA, _nvidia), ('rocm-smi', _ROCM, _rocm)):
        if not (path := shutil.which(exe, path=_system_path())): continue
        text, problem = _run(path, args)
        if text is None:
            lines.append(f'{exe}: {problem}')
            continue
        gpus, bad = parse(text)
        lines += [f'GPU {i} {name}: {_gib(free)} free of {_gib(total)}' for i, name, free, total in gpus[:_MAX_GPUS]]
        if bad: lines.append(f'{exe}: {bad} entr{"y" if bad == 1 else "ies"} not understood, skipped')
        elif not gpus: lines.append(f'{exe}: no GPU reported')
    return lines


def _meminfo()->tuple:
    "(available, total) bytes from /proc/meminfo (Linux), else `os.sysconf`; (None, None) when neither says."
    try:
        with open(_MEMINFO, 'rb') as f: text = f.read(_MAX_OUT).decode('ascii', 'replace')
        kb = {k: _amount(v.split()[0], _MAX_BYTES / 1024) for k, _, v in (ln.partition(':') for ln in text.splitlines())
              if k in ('MemTotal', 'MemAvailable') and v.split()}
        total, avail = kb.get('MemTotal'), kb.get('MemAvailable')
        if total and avail is not None and avail <= total: return avail * 1024, total * 1024
    except OSError: pass
    try:
        page = os.sysconf('SC_PAGE_SIZE')
        total, avail = page * os.sysconf('SC_PHYS_PAGES'), page * os.sysconf('SC_AVPHYS_PAGES')
    except (AttributeError, ValueError, OSError): return None, None
    return (avail, total) if 0 <= avail <= total <= _MAX_BYTES else (None, None)


def _memory_line()->str:
    avail, total = _meminfo()
    return f'Memory: {_gib(avail)} available of {_gib(total)}' if total else 'Memory: unknown on this system'


def _model(m)->str|None:
    "'name 5.2 GiB (4.9 GiB on GPU)' for one `/api/ps` entry, or None when its fields are not what Ollama sends."
    name = next((_clean(m[k]) for k in ('name', 'model') if isinstance(m.get(k), str)), '')
    size, vram = _amount(m.get('size'), _MAX_BYTES), _amount(m.get('size_vram', 0), _MAX_BYTES)
    if not name or size is None or vram is None: return None
    return f'{name} {_gib(size)} ({_gib(min(vram, size))} on GPU)' if vram else f'{name} {_gib(size)} (on CPU)'


def _ollama_line(host)->str:
    "What the Ollama server at `host` (None: `OLLAMA_HOST`) holds in memory, in one line."
    from ..models.ollama import OllamaClient
    try: client = OllamaClient(host, timeout=_OLLAMA_SECONDS, connect_timeout=_OLLAMA_SECONDS)
    except Exception as e: return f'Ollama: its host setting is not usable ({_clean(type(e).__name__)})'
    with client:
        try: ps = client.ps()
        except Exception: return f'Ollama: not reachable at {client.where} (is `ollama serve` running?)'
        models = [t for m in ps[:_MAX_MODELS] if (t := _model(m))]
        if not models: return f'Ollama holds no models in memory ({client.where})'
        more = f', and {len(ps) - _MAX_MODELS} more' if len(ps) > _MAX_MODELS else ''
        return 'Ollama holds: ' + ', '.join(models) + more


def machine_tools(
    host:str=None,  # Ollama's `host:port` or URL; None: `OLLAMA_HOST` (else 127.0.0.1:11434)
)->list:            # [gpu_free]
    "The `machine` source's tools, asking the Ollama server at `host`."

    def gpu_free()->str:  # One line per GPU (or the machine's memory), then what Ollama holds
        "Say how much memory each GPU has free (else the machine's memory), and what the loaded Ollama models hold"
        gpus = _gpu_lines()
        mem = [] if any(ln.startswith('GPU ') for ln in gpus) else [_memory_line()]
        return '\n'.join(gpus + mem + [_ollama_line(host)])

    return [_mark(gpu_free)]


def machine_source(ctx=None)->list:
    "The `machine` tool source: `gpu_free`, asking Ollama at the `host` setting (`ctx.settings`), else `OLLAMA_HOST`."
    return machine_tools((getattr(ctx, 'settings', None) or {}).get('host') or None)
