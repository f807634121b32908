"""An Ollama-protocol test server (stdlib only) for boopiter_ext's tests and benchmarks.

It speaks enough of Ollama's native API (/api/tags, /api/show, /api/ps,
/api/chat, /api/generate, /api/version) and of its OpenAI-compatible API
(/v1/models, /v1/chat/completions) for the real clients (``ollama``,
``litellm``'s ``ollama_chat/`` provider, ``openai``) to work against it.
Replies are scripted, can carry faults (HTTP errors, dropped, stalled or
trickling streams, garbage or error lines), and every request is recorded.
A 'trickle' sends one byte every ``trickle_s`` seconds and never ends a
line, so no token ever completes while a per-read timeout never fires.

Usage::

    import ollama
    from ollama_server import OllamaTestServer

    with OllamaTestServer() as srv:
        srv.script('Hello\\n  world! ', thinking='Let me think. ')
        srv.script('partial answer', fault='drop', after=1)
        srv.script('one token, then bytes', fault='trickle', after=1, trickle_s=0.2)
        client = ollama.Client(host=srv.url)      # or OLLAMA_HOST=srv.host
        chunks = client.chat('qwen3:1.7b', messages=[{'role': 'user', 'content': 'hi'}], stream=True)
        assert ''.join(c.message.content for c in chunks) == 'Hello\\n  world! '
        assert srv.last_chat()['messages'][0]['content'] == 'hi'

From a shell (for benchmarks and manual poking)::

    python tests/ollama_server.py --port 11500 --chunks 20000
"""

import argparse
import base64
import binascii
import faulthandler
import hashlib
import itertools
import json
import re
import select
import signal
import socket
import socketserver
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERSION = '0.12.6'
DEFAULT_REPLY = 'Hello from the test server.'
DEFAULT_MODELS = [
    dict(name='qwen3:1.7b', capabilities=['completion', 'tools', 'thinking'], context_length=40960,
         family='qwen3', parameter_size='2.0B', size=1_359_000_000),
    dict(name='gemma3:4b', capabilities=['completion', 'vision'], context_length=131072,
         family='gemma3', parameter_size='4.3B', size=3_338_000_000),
    dict(name='smollm2:135m', capabilities=['completion'], context_length=8192,
         family='llama', parameter_size='134.52M', size=270_898_672),
]
# a fill-in-the-middle code model (`insert`), for ghost-text completion; not in DEFAULT_MODELS: a test adds it
CODER = dict(name='qwen2.5-coder:0.5b', capabilities=['completion', 'insert'], context_length=32768, family='qwen2',
             parameter_size='494M', size=397_000_000)
FAULTS = ('http_error', 'drop', 'stall', 'malformed', 'error_line', 'trickle')
CHAT_PATHS = ('/api/chat', '/v1/chat/completions')
MID_STREAM_ERROR = 'scripted mid-stream error'
GARBAGE = b'this is not json'
LOAD_NS = 1_500_000

_WORDS = re.compile(r'\s*\S+\s*|\s+')
_LAST_CHUNK = b'0\r\n\r\n'
_ids = itertools.count(1)


# ----------------------------------------------------------------- helpers

def free_port(host='127.0.0.1'):
    """A port with nothing listening on it (for connection-refused tests)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class Silent:
    """A port that accepts connections and never answers (a server hung before its first byte)."""
    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(('127.0.0.1', 0))
        self.sock.listen(128)
        self.conns, self.stop = [], threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try: self.conns.append(self.sock.accept()[0])
            except OSError: pass

    @property
    def host(self): return f'127.0.0.1:{self.sock.getsockname()[1]}'

    @property
    def url(self): return f'http://{self.host}'

    def close(self):
        self.stop.set()
        for c in [*self.conns, self.sock]: c.close()


def split_pieces(text):
    """Split a reply into stream pieces: each word with its following whitespace.

    ``''.join(split_pieces(s)) == s`` for every str; a list is taken as given.
    """
    if text is None:
        return []
    if isinstance(text, str):
        return _WORDS.findall(text)
    return list(text)


def _dumps(obj):
    return json.dumps(obj, ensure_ascii=False, separators=(',', ':')).encode()


def _frame(data):
    """One HTTP/1.1 chunked-encoding frame."""
    return b'%x\r\n%s\r\n' % (len(data), data)


def _now_iso(delta=0.0):
    t = datetime.now(timezone.utc) + timedelta(seconds=delta)
    return t.strftime('%Y-%m-%dT%H:%M:%S.%fZ')


def _is_zero(keep_alive):
    """keep_alive 0, '0', '0s', '0m' ... all mean 'unload now'."""
    if keep_alive is None:
        return False
    try:
        return float(str(keep_alive).strip().rstrip('hms') or 1) == 0
    except ValueError:
        return False


def _param_count(size):
    scale = {'K': 1e3, 'M': 1e6, 'B': 1e9, 'T': 1e12}
    try:
        return int(float(size[:-1]) * scale[size[-1].upper()])
    except (KeyError, ValueError, IndexError):
        return 0


def _text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI multi-part content
        return ''.join(p.get('text', '') for p in content if isinstance(p, dict))
    return ''


def _prompt_chars(body):
    msgs = body.get('messages') or []
    chars = sum(len(_text_of(m.get('content'))) for m in msgs if isinstance(m, dict))
    return chars + len(_text_of(body.get('prompt'))) + len(_text_of(body.get('system')))


# ------------------------------------------------------------------ models

def normalize_model(spec):
    """Fill in the fields a model spec leaves out."""
    m = dict(spec)
    name = m['name']
    m.setdefault('model', name)
    m.setdefault('family', name.split(':')[0].split('/')[-1])
    m.setdefault('families', [m['family']])
    m.setdefault('capabilities', ['completion'])
    m.setdefault('context_length', 4096)
    m.setdefault('parameter_size', '1B')
    m.setdefault('quantization_level', 'Q4_K_M')
    m.setdefault('format', 'gguf')
    m.setdefault('size', 1_000_000_000)
    m.setdefault('digest', 'sha256:' + hashlib.sha256(name.encode()).hexdigest())
    m.setdefault('modified_at', '2025-06-01T12:00:00.000000Z')
    return m


def _details(m):
    keys = ('format', 'family', 'families', 'parameter_size', 'quantization_level')
    return dict(parent_model='', **{k: m[k] for k in keys})


def _tag_entry(m):
    return dict(name=m['name'], model=m['model'], modified_at=m['modified_at'],
                size=m['size'], digest=m['digest'], details=_details(m))


def _ps_entry(m):
    return dict(name=m['name'], model=m['model'], size=m['size'], digest=m['digest'],
                details=_details(m), expires_at=_now_iso(300), size_vram=m['size'],
                context_length=m['context_length'])


def _show_entry(m):
    fam = m['family']
    info = {
        'general.architecture': fam,
        'general.basename': m['name'].split(':')[0],
        'general.file_type': 15,
        'general.parameter_count': _param_count(m['parameter_size']),
        'general.quantization_version': 2,
        f'{fam}.context_length': m['context_length'],
        f'{fam}.embedding_length': 2048,
        f'{fam}.block_count': 28,
    }
    return dict(
        license='',
        modelfile=f'# Modelfile generated by "ollama show"\nFROM {m["name"]}\n'
                  'TEMPLATE """{{ .Prompt }}"""\n',
        parameters='temperature                    0.6\nstop                           "<|im_end|>"',
        template='{{ .Prompt }}',
        details=_details(m),
        model_info=info,
        capabilities=list(m['capabilities']),
        modified_at=m['modified_at'],
    )


def _capability_problem(m, body):
    """Real Ollama refuses think/tools/suffix for models without the capability (400), and images for a model without
    vision (its runner's "missing data required for image input"); images must be base64, as Ollama decodes them."""
    caps = m['capabilities']
    if body.get('suffix') and 'insert' not in caps:
        return f'"{m["name"]}" does not support insert'
    if body.get('think') and 'thinking' not in caps:
        return f'"{m["name"]}" does not support thinking'
    if body.get('tools') and 'tools' not in caps:
        return f'registry.ollama.ai/library/{m["name"]} does not support tools'
    images = [i for msg in body.get('messages') or [] if isinstance(msg, dict) for i in msg.get('images') or []]
    if images and 'vision' not in caps:
        return 'this model is missing data required for image input'
    for i in images:
        try: base64.b64decode(i, validate=True)
        except (binascii.Error, TypeError, ValueError): return 'illegal base64 data in images'
    return None


# ------------------------------------------------------------- recordings

@dataclass
class Reply:
    """One scripted reply; see OllamaTestServer.script()."""
    content: list
    thinking: list = field(default_factory=list)
    fault: str = None
    after: int = 0
    delay: float = 0.0
    done_reason: str = 'stop'
    status: int = 500
    body: object = None
    stall_s: float = 60.0     # how long a 'stall' (or a 'trickle') lasts before the server hangs up
    trickle_s: float = 0.2    # seconds between the bytes of a 'trickle'
    tool_calls: list = None   # native tool calls, sent in one message chunk after the content (as Ollama does)

    def events(self):
        evs = [('thinking', t) for t in self.thinking] + [('content', c) for c in self.content]
        if self.tool_calls: evs.append(('tool_calls', self.tool_calls))
        if self.fault and self.fault != 'http_error':
            evs.insert(min(self.after, len(evs)), ('fault', None))
        return evs


@dataclass
class RecordedRequest:
    """One request as received; header names are lower-cased."""
    method: str
    path: str
    headers: dict
    json: object
    t: float
    client: tuple = None   # (host, port) of the connection it came on: one port means one reused session


@dataclass
class StreamRecord:
    """What happened to one chat/generate reply (streamed or not)."""
    path: str
    model: str
    stream: bool
    fault: str
    pieces: int = 0
    completed: bool = False
    trickled: int = 0         # bytes a 'trickle' fault sent
    disconnected: bool = False
    disconnect_t: float = None
    t_start: float = field(default_factory=time.monotonic)
    t_end: float = None       # when the reply was sent whole (None: it was not)


def _stats(body, reply, rec):
    elapsed = max(1, int((time.monotonic() - rec.t_start) * 1e9))
    return dict(total_duration=elapsed + LOAD_NS, load_duration=LOAD_NS,
                prompt_eval_count=_prompt_chars(body) // 4, prompt_eval_duration=LOAD_NS,
                eval_count=len(reply.thinking) + len(reply.content), eval_duration=elapsed)


# ----------------------------------------------------------- wire formats
# Each format turns reply pieces into the bytes of one protocol's body.

class _ChatFormat:
    content_type = 'application/x-ndjson'

    def __init__(self, body):
        self.model = body.get('model')
        self.stream = body.get('stream') is not False  # Ollama streams by default
        self.created = _now_iso()

    def _obj(self, content, thinking=None, done=False):
        msg = {'role': 'assistant', 'content': content}
        if thinking:
            msg['thinking'] = thinking
        return {'model': self.model, 'created_at': self.created, 'message': msg, 'done': done}

    def piece(self, kind, text):
        if kind == 'tool_calls':
            obj = self._obj('')
            obj['message']['tool_calls'] = text
            return _dumps(obj) + b'\n'
        obj = self._obj('', text) if kind == 'thinking' else self._obj(text)
        return _dumps(obj) + b'\n'

    def whole(self, reply, stats):
        obj = self._obj(''.join(reply.content), ''.join(reply.thinking), done=True)
        return dict(obj, done_reason=reply.done_reason, **stats)

    def final(self, reply, stats):
        return _dumps(dict(self._obj(''), done=True, done_reason=reply.done_reason, **stats)) + b'\n'

    def error_body(self, msg):
        return {'error': msg}

    def error(self, msg):
        return _dumps(self.error_body(msg)) + b'\n'

    def garbage(self):
        return GARBAGE + b'\n'


class _GenerateFormat(_ChatFormat):
    def _obj(self, content, thinking=None, done=False):
        obj = {'model': self.model, 'created_at': self.created, 'response': content, 'done': done}
        if thinking:
            obj['thinking'] = thinking
        return obj


class _OpenAIFormat(_ChatFormat):
    content_type = 'text/event-stream'

    def __init__(self, body):
        super().__init__(body)
        self.stream = bool(body.get('stream'))  # OpenAI does not stream by default
        self.usage = bool((body.get('stream_options') or {}).get('include_usage'))
        self.id = f'chatcmpl-{next(_ids)}'
        self.created = int(time.time())

    def _chunk(self, choices, **extra):
        return dict(id=self.id, object='chat.completion.chunk', created=self.created,
                    model=self.model, system_fingerprint='fp_ollama', choices=choices, **extra)

    @staticmethod
    def _event(obj):
        return b'data: ' + _dumps(obj) + b'\n\n'

    def piece(self, kind, text):
        delta = {'role': 'assistant', 'content': '' if kind == 'thinking' else text}
        if kind == 'thinking':
            delta['reasoning_content'] = text
        return self._event(self._chunk([{'index': 0, 'delta': delta, 'finish_reason': None}]))

    def final(self, reply, stats):
        delta = {'role': 'assistant', 'content': ''}
        out = self._event(self._chunk([{'index': 0, 'delta': delta, 'finish_reason': reply.done_reason}]))
        if self.usage:
            out += self._event(self._chunk([], usage=self._usage(stats, reply)))
        return out + b'data: [DONE]\n\n'

    def whole(self, reply, stats):
        msg = {'role': 'assistant', 'content': ''.join(reply.content)}
        if reply.thinking:
            msg['reasoning_content'] = ''.join(reply.thinking)
        choice = {'index': 0, 'message': msg, 'finish_reason': reply.done_reason}
        return dict(self._chunk([choice], usage=self._usage(stats, reply)), object='chat.completion')

    @staticmethod
    def _usage(stats, reply):
        p, c = stats['prompt_eval_count'], stats['eval_count']
        usage = {'prompt_tokens': p, 'completion_tokens': c, 'total_tokens': p + c}
        if reply.thinking:   # as OpenAI's reasoning models report it
            usage['completion_tokens_details'] = {'reasoning_tokens': len(reply.thinking)}
        return usage

    def error_body(self, msg):
        return {'error': {'message': msg, 'type': 'api_error', 'param': None, 'code': None}}

    def error(self, msg):
        return self._event(self.error_body(msg))

    def garbage(self):
        return b'data: ' + GARBAGE + b'\n\n'


# ------------------------------------------------------------------ handler

def _peer_closed(sock, timeout):
    """True if the peer closed the connection (readable and a peek returns b'')."""
    if not select.select([sock], [], [], timeout)[0]:
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK) == b''
    except OSError:
        return True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'  # keep-alive and chunked transfer encoding, like Go's net/http
    server_version, sys_version = 'OllamaTestServer', ''

    def setup(self):
        super().setup()
        # Go servers disable Nagle too; without it small stream pieces can sit in the kernel.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.owner = self.server.owner
        self.owner._track(self.connection, True)

    def finish(self):
        self.owner._track(self.connection, False)
        super().finish()

    def log_message(self, format, *args):
        pass

    # -- plumbing

    def do_GET(self):
        self._dispatch('GET')

    def do_POST(self):
        self._dispatch('POST')

    def do_HEAD(self):  # the ollama CLI's heartbeat
        found = self.path.split('?', 1)[0] == '/'
        self._send(200 if found else 404, 'text/plain; charset=utf-8',
                   b'Ollama is running' if found else b'404 page not found', head=True)

    def _read_json(self):
        raw = self.rfile.read(int(self.headers.get('Content-Length') or 0))
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def _dispatch(self, method):
        body = self._read_json()
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.owner._record(RecordedRequest(method, self.path, headers, body, time.monotonic(), self.client_address))
        route = _ROUTES.get((method, self.path.split('?', 1)[0]))
        try:
            if route is None:
                self._send(404, 'text/plain', b'404 page not found')
            elif method == 'POST' and not isinstance(body, dict):
                self._send_json(400, {'error': 'invalid request body'})
            else:
                route(self, body or {})
        except ConnectionError:
            self.close_connection = True

    def _send(self, status, ctype, data, head=False):
        self.send_response(status)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        if not head:
            self.wfile.write(data)

    def _send_json(self, status, obj):
        self._send(status, 'application/json; charset=utf-8', _dumps(obj))

    def _write(self, data, rec):
        try:
            self.wfile.write(data)  # unbuffered: exactly one sendall() per call
            return True
        except ConnectionError:
            self._disconnected(rec)
            return False

    def _disconnected(self, rec):
        rec.disconnected, rec.disconnect_t = True, time.monotonic()
        self.close_connection = True

    def _hang_up(self):
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _wait_closed(self, seconds):
        """Sleep up to `seconds`; True as soon as the client disconnects."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0 and not self.owner._stopping.is_set():
            if _peer_closed(self.connection, min(left, 0.05)):
                return True
            if select.select([self.connection], [], [], 0)[0]:
                time.sleep(min(left, 0.05))  # readable but not closed: pipelined bytes
        return False

    # -- endpoints

    def root(self, _):
        self._send(200, 'text/plain; charset=utf-8', b'Ollama is running')

    def version(self, _):
        self._send_json(200, {'version': VERSION})

    def tags(self, _):
        self._send_json(200, {'models': [_tag_entry(m) for m in self.owner._listing_order()]})

    def ps(self, _):
        loaded = self.owner._loaded_snapshot()
        self._send_json(200, {'models': [_ps_entry(m) for m in self.owner.models if m['name'] in loaded]})

    def show(self, body):
        if self.owner.show_delay:
            time.sleep(self.owner.show_delay)
        name = body.get('model') or body.get('name')  # litellm still sends the legacy 'name'
        m = self.owner.find_model(name)
        if m is None:
            return self._send_json(404, {'error': f"model '{name}' not found"})
        self._send_json(200, _show_entry(m))

    def generate(self, body):
        if body.get('prompt') or body.get('suffix'):  # a completion (fill-in-the-middle with a suffix)
            return self._answer(_GenerateFormat(body), body)
        m = self.owner.find_model(body.get('model'))
        if m is None:
            return self._send_json(404, {'error': f"model '{body.get('model')}' not found"})
        unload = _is_zero(body.get('keep_alive'))  # empty prompt: just load or unload
        self.owner._set_loaded(m['name'], not unload)
        self._send_json(200, {'model': body['model'], 'created_at': _now_iso(), 'response': '',
                              'done': True, 'done_reason': 'unload' if unload else 'load'})

    def chat(self, body):
        self._answer(_ChatFormat(body), body)

    def v1_models(self, _):
        data = [{'id': m['name'], 'object': 'model', 'created': 1748779200, 'owned_by': 'library'}
                for m in self.owner._listing_order()]
        self._send_json(200, {'object': 'list', 'data': data})

    def v1_chat(self, body):
        self._answer(_OpenAIFormat(body), body)

    # -- replies

    def _answer(self, fmt, body):
        name = body.get('model')
        m = self.owner.find_model(name)
        if not name:
            return self._send_json(400, fmt.error_body('model is required'))
        if m is None:
            return self._send_json(404, fmt.error_body(f"model '{name}' not found"))
        if problem := _capability_problem(m, body):
            return self._send_json(400, fmt.error_body(problem))
        reply = self.owner._next_reply(body)
        if reply.fault == 'http_error':
            return self._send_json(reply.status, reply.body)
        self.owner._set_loaded(m['name'], True)
        slots = self.owner.slots
        if slots is not None: slots.acquire()
        try:
            rec = self.owner._new_stream(StreamRecord(self.path, name, fmt.stream, reply.fault))
            if self.owner.answer_s: time.sleep(self.owner.answer_s)
            (self._stream if fmt.stream else self._whole)(fmt, reply, body, rec)
            rec.t_end = time.monotonic()
        finally:
            if slots is not None: slots.release()
        if _is_zero(body.get('keep_alive')):
            self.owner._set_loaded(m['name'], False)

    def _stream(self, fmt, reply, body, rec):
        self.send_response(200)
        self.send_header('Content-Type', fmt.content_type)
        self.send_header('Transfer-Encoding', 'chunked')
        self.end_headers()
        frames = {}  # identical pieces (benchmarks) are encoded once
        for kind, text in reply.events():
            if kind == 'fault':
                if not self._fault(fmt, reply, rec):
                    return
                continue
            frame = frames.get((kind, text)) if kind != 'tool_calls' else None
            if frame is None:
                frame = _frame(fmt.piece(kind, text))
                if kind != 'tool_calls': frames[kind, text] = frame
            if not self._write(frame, rec):
                return
            rec.pieces += 1
            if reply.delay and self._wait_closed(reply.delay):
                return self._disconnected(rec)
        rec.completed = self._write(_frame(fmt.final(reply, _stats(body, reply, rec))) + _LAST_CHUNK, rec)

    def _fault(self, fmt, reply, rec):
        """Apply a mid-stream fault; True if the stream goes on."""
        if reply.fault == 'malformed':
            return self._write(_frame(fmt.garbage()), rec)
        if reply.fault == 'error_line':
            self._write(_frame(fmt.error(MID_STREAM_ERROR)) + _LAST_CHUNK, rec)
            return False
        if reply.fault == 'trickle':
            return self._trickle(fmt, rec, reply)
        if reply.fault == 'stall' and self._wait_closed(reply.stall_s):
            self._disconnected(rec)
        self._hang_up()  # 'drop', or the end of a 'stall'
        return False

    def _trickle(self, fmt, rec, reply, line=None):
        """Send a line a byte at a time, then spaces, never its end, until `stall_s` or the client hangs up."""
        line = (line or fmt.piece('content', 'never finished')).rstrip(b'\n')
        deadline = time.monotonic() + reply.stall_s
        for i in itertools.count():
            if time.monotonic() >= deadline:
                break
            if not self._write(_frame(line[i:i + 1] or b' '), rec):
                return False
            rec.trickled += 1
            if self._wait_closed(reply.trickle_s):
                self._disconnected(rec)
                return False
        self._hang_up()
        return False

    def _whole(self, fmt, reply, body, rec):
        if reply.fault in ('drop', 'stall'):
            return self._fault(fmt, reply, rec)
        if reply.fault == 'trickle':  # the body, a byte at a time, never complete
            self.send_response(200)
            self.send_header('Content-Type', 'application/json; charset=utf-8')
            self.send_header('Transfer-Encoding', 'chunked')
            self.end_headers()
            return self._trickle(fmt, rec, reply, _dumps(fmt.whole(reply, _stats(body, reply, rec))))
        if reply.fault == 'malformed':
            return self._send(200, 'application/json; charset=utf-8', GARBAGE)
        if reply.fault == 'error_line':
            return self._send_json(500, fmt.error_body(MID_STREAM_ERROR))
        n = len(reply.thinking) + len(reply.content)
        if reply.delay and self._wait_closed(reply.delay * n):
            return self._disconnected(rec)
        self._send_json(200, fmt.whole(reply, _stats(body, reply, rec)))
        rec.pieces, rec.completed = n, True


_ROUTES = {
    ('GET', '/'): _Handler.root,
    ('GET', '/api/version'): _Handler.version,
    ('GET', '/api/tags'): _Handler.tags,
    ('GET', '/api/ps'): _Handler.ps,
    ('POST', '/api/show'): _Handler.show,
    ('POST', '/api/generate'): _Handler.generate,
    ('POST', '/api/chat'): _Handler.chat,
    ('GET', '/v1/models'): _Handler.v1_models,
    ('POST', '/v1/chat/completions'): _Handler.v1_chat,
}


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def server_bind(self):
        # HTTPServer.server_bind calls getfqdn(), which can wait on DNS; we only need the port.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):  # hang-ups are expected here
            super().handle_error(request, client_address)


# ------------------------------------------------------------------- server

class OllamaTestServer:
    """A scripted Ollama server on a background thread; see the module docstring."""

    def __init__(self, models=None, host='127.0.0.1', port=0, *, show_delay=0.0, parallel=None, answer_s=0.0,
                 responder=None):
        self.models = [normalize_model(m) for m in (DEFAULT_MODELS if models is None else models)]
        self.show_delay = show_delay
        # parallel: chat replies served at once (Ollama's OLLAMA_NUM_PARALLEL), others wait for a slot; answer_s: the
        # seconds each takes before its first byte; responder(body) -> the reply's text, when none is scripted
        self.slots = threading.BoundedSemaphore(parallel) if parallel else None
        self.answer_s, self.responder = answer_s, responder
        self.default_reply = DEFAULT_REPLY
        self.requests = []
        self.streams = []
        self._bind = (host, port)
        self._lock = threading.Lock()
        self._queue = []
        self._loaded = set()
        self._conns = set()
        self._stopping = threading.Event()
        self._httpd = self._thread = None

    # -- lifecycle

    def start(self):
        self._stopping.clear()
        self._httpd = _HTTPServer(self._bind, _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={'poll_interval': 0.05},
                                        name=f'OllamaTestServer:{self.port}', daemon=True)
        self._thread.start()
        return self

    def stop(self):
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:  # wake handlers blocked on idle keep-alive connections
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._httpd.server_close()
        self._thread.join(5)
        self._httpd = self._thread = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def port(self):
        return self._httpd.server_address[1] if self._httpd else self._bind[1]

    @property
    def host(self):
        return f'{self._bind[0]}:{self.port}'

    @property
    def url(self):
        return f'http://{self.host}'

    # -- scripting

    def script(self, reply='', *, thinking=None, fault=None, after=0, delay=0.0,
               done_reason='stop', status=500, body=None, stall_s=60.0, trickle_s=0.2, tool_calls=None):
        """Queue one reply (FIFO) for the next chat (or generate-with-prompt) request."""
        if fault is not None and fault not in FAULTS:
            raise ValueError(f'unknown fault {fault!r}; expected one of {FAULTS}')
        item = Reply(split_pieces(reply), split_pieces(thinking), fault, after, delay, done_reason,
                     status, {'error': 'boom: scripted failure'} if body is None else body, stall_s, trickle_s,
                     tool_calls)
        with self._lock:
            self._queue.append(item)
        return item

    def script_chunks(self, n, piece='tok '):
        """Queue a reply of `n` identical pieces (for throughput benchmarks)."""
        return self.script([piece] * n)

    def _next_reply(self, body=None):
        with self._lock:
            if self._queue:
                return self._queue.pop(0)
        if self.responder is not None and body is not None:
            return Reply(split_pieces(self.responder(body)))
        return Reply(split_pieces(self.default_reply))

    # -- state and recordings

    @property
    def loaded(self):
        return self._loaded

    @loaded.setter
    def loaded(self, names):
        with self._lock:
            self._loaded = set(names)

    def _set_loaded(self, name, on):
        with self._lock:
            (self._loaded.add if on else self._loaded.discard)(name)

    def _loaded_snapshot(self):
        with self._lock:
            return set(self._loaded)

    def find_model(self, name):
        if not name:
            return None
        wanted = {name} if ':' in name else {name, name + ':latest'}
        return next((m for m in self.models if m['name'] in wanted), None)

    def _listing_order(self):
        # Real Ollama's /api/tags order is unstable; never hand out a sorted list.
        ordered = sorted(self.models, key=lambda m: m['name'])
        return ordered[1:] + ordered[:1]

    def _record(self, req):
        with self._lock:
            self.requests.append(req)

    def _new_stream(self, rec):
        with self._lock:
            self.streams.append(rec)
        return rec

    def _track(self, conn, add):
        with self._lock:
            (self._conns.add if add else self._conns.discard)(conn)

    def chats(self):
        """Bodies of chat requests (native and OpenAI-compatible), oldest first."""
        with self._lock:
            reqs = list(self.requests)
        return [r.json for r in reqs if r.path.split('?', 1)[0] in CHAT_PATHS]

    def last_chat(self):
        chats = self.chats()
        return chats[-1] if chats else None

    def generations(self):
        """Bodies of /api/generate requests that asked for text (prompt, suffix, options), oldest first."""
        with self._lock:
            reqs = list(self.requests)
        return [r.json for r in reqs if r.path.split('?', 1)[0] == '/api/generate'
                and isinstance(r.json, dict) and (r.json.get('prompt') or r.json.get('suffix'))]

    def reset(self):
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.streams.clear()
            self._loaded.clear()


# --------------------------------------------------------- raw replies

class _RawHandler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, format, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get('Content-Length') or 0))
        srv = self.server.owner
        self.send_response(srv.status)
        self.send_header('Content-Type', srv.content_type)
        self.send_header('Transfer-Encoding', 'chunked')
        self.end_headers()
        raw, n = srv.raw, srv.split
        try:
            for i in range(0, len(raw), n):
                self.wfile.write(_frame(raw[i:i + n]))
            self.wfile.write(_LAST_CHUNK)
        except ConnectionError:
            self.close_connection = True


class RawReplyServer:
    """Answers every POST with ``raw`` bytes as they are, ``split`` bytes per chunk: for replies no scripted
    reply can produce (odd values, other line endings, many-line events, huge error bodies)::

        with RawReplyServer(b'data: [1, 2]\\n\\n') as raw:
            requests.post(raw.url + '/v1/chat/completions', json={}, stream=True)
    """

    def __init__(self, raw=b'', split=1 << 16, status=200, content_type='text/event-stream'):
        self.raw, self.split, self.status, self.content_type = raw, split, status, content_type
        self._httpd = None

    def __enter__(self):
        self._httpd = _HTTPServer(('127.0.0.1', 0), _RawHandler)
        self._httpd.owner = self
        threading.Thread(target=self._httpd.serve_forever, kwargs={'poll_interval': 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def url(self):
        return f'http://127.0.0.1:{self._httpd.server_address[1]}'

    @property
    def host(self):
        return f'127.0.0.1:{self._httpd.server_address[1]}'


def main(argv=None):
    parser = argparse.ArgumentParser(description='Serve the Ollama test server until Ctrl-C.')
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, default=0, help='0 picks a free port')
    parser.add_argument('--chunks', type=int, default=0, help="reply with N 'tok ' pieces")
    args = parser.parse_args(argv)
    # Ctrl-C stops it even when started with SIGINT ignored (a background job of a script, or a parent that ignores it:
    # the ignoring is inherited and Python keeps it); SIGUSR1 prints every thread's stack (a test that waits in vain)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    faulthandler.register(signal.SIGUSR1)
    srv = OllamaTestServer(host=args.host, port=args.port)
    if args.chunks:
        srv.default_reply = ['tok '] * args.chunks
    with srv:
        print(srv.url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == '__main__':
    main()
