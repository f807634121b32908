"""A small synchronous MCP client: JSON-RPC over a server's stdin and stdout, or over streamable HTTP.

It speaks what tool sources need (mcp.py): the `initialize` handshake, `tools/list` (every page) and `tools/call`,
and it answers a server's `ping`. It runs in the kernel's own threads, with no event loop, so a tool call is a plain
blocking Python call like any other tool's. Every wait is bounded and every message is checked where it is read: a
server that does not start, hangs, dies or answers nonsense costs at most its timeout and raises `McpError`, one line
saying what to do next.

A stdio server runs in its own session (a kernel interrupt is not sent to it) with a small environment: the basic
variables (`PATH`, `HOME`, ...), the section's `env`, and the variables your own settings pass on (`pass_env`), never
the kernel's whole environment with its keys. It stops when its stdin closes (`close`), else it is terminated, then
killed. An HTTP server gets the token `token_env` names in `header`, read from the environment at each request.

    client = McpClient(spec)        # settings.McpSpec
    client.start(10)
    tools = client.list_tools(10)
    result = client.call_tool('add', {'a': 2, 'b': 3}, 60)
    client.close()
"""

__all__ = ['PROTOCOL', 'McpError', 'McpClient']

import collections, itertools, json, os, queue, shlex, shutil, signal, subprocess, sys, threading, time

PROTOCOL = '2025-06-18'   # the revision asked for; a server may answer any of KNOWN
KNOWN = ('2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25')
MAX_MESSAGE = 16 << 20    # bytes: a bigger message from a server is refused
_MAX_PAGES, _MAX_TOOLS = 20, 500
_SEND_S = 5.0             # seconds a message may take to be written to a server's stdin
_BASE_ENV = ('HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER', 'LANG', 'LC_ALL', 'TMPDIR', 'SYSTEMROOT', 'APPDATA')
_CLIENT = {'name': 'boopiter_ext', 'version': '1'}


class McpError(Exception):
    "An MCP server did not do what was asked: the message says what happened and what to do next."


def _checked(msg, method):
    "The `result` of response `msg` to `method`, or McpError with the server's own error."
    if not isinstance(msg, dict): raise McpError(f'{method}: the server answered something that is not JSON-RPC')
    if isinstance(err := msg.get('error'), dict):
        text = ' '.join(str(err.get('message') or 'no message').split())[:300]
        raise McpError(f'{method}: the server answered error {err.get("code")}: {text}')
    if not isinstance(res := msg.get('result'), dict): raise McpError(f'{method}: the server answered no result')
    return res


class _Stdio:
    """A server run as a child process, one JSON message a line each way. A reader thread takes its answers, a writer
    thread feeds its stdin (a server that stops reading cannot hold the kernel: a send waits `_SEND_S` at most)."""
    def __init__(self, spec):
        cmd, self.what = list(spec.command), f'`{shlex.join(spec.command)}`'
        if cmd[0] in ('python', 'python3'): cmd[0] = sys.executable   # the kernel's own Python, with its packages
        elif os.sep not in cmd[0] and (found := shutil.which(cmd[0])): cmd[0] = found   # on the kernel's PATH, not env's
        env = {k: os.environ[k] for k in _BASE_ENV + tuple(spec.pass_env) if k in os.environ} | dict(spec.env)
        try: self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          cwd=spec.folder or None, env=env, start_new_session=True)
        except OSError as e: raise McpError(f'{self.what} could not start: {e.strerror or e}; check `command`') from None
        self._pending, self._out, self._err = {}, queue.Queue(), collections.deque(maxlen=20)
        self._gone = self._broken = False
        for target in (self._read, self._write, self._drain):
            threading.Thread(target=target, daemon=True, name='boopiter-mcp').start()

    def _read(self):
        try:
            for line in iter(lambda: self.proc.stdout.readline(MAX_MESSAGE), b''):
                try: msg = json.loads(line)
                except ValueError: continue   # a line a server logged to stdout by mistake, or a cut one: not an answer
                if not isinstance(msg, dict) or not isinstance(msg.get('id'), (int, str)): continue
                if 'method' in msg: self._answer(msg)
                elif (q := self._pending.get(msg['id'])) is not None: q.put(msg)
        except Exception: pass   # whatever broke the stream, the server is gone for us: said below to whoever waits
        finally:
            self._gone = True
            self.proc.stdout.close()
            for q in list(self._pending.values()): q.put(None)

    def _write(self):
        "Feed the server's stdin, one message at a time, until `close` (None); a broken pipe marks it broken."
        while (item := self._out.get()) is not None:
            data, sent = item
            try:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except (OSError, ValueError): self._broken = True
            sent.set()
        try: self.proc.stdin.close()   # a server stops when its input ends
        except (OSError, ValueError): pass

    def _drain(self):
        "Keep the end of what the server writes to stderr (for the line that says why it stopped): a full pipe stalls it."
        for line in iter(lambda: self.proc.stderr.readline(4096), b''):
            self._err.append(line[:300].decode('utf-8', 'replace').strip())
        self.proc.stderr.close()

    def _answer(self, msg):
        "A request from the server: `ping` is answered; anything else (sampling, roots) is not offered here."
        reply = ({'result': {}} if msg['method'] == 'ping' else
                 {'error': {'code': -32601, 'message': f'{str(msg["method"])[:100]} is not offered by this client'}})
        self._send({'jsonrpc': '2.0', 'id': msg['id'], **reply}, wait=False)

    def _send(self, msg, wait=True):
        if self._gone or self._broken: raise McpError(f'{self.what} has stopped{self.why()}')
        self._out.put(((json.dumps(msg) + '\n').encode(), sent := threading.Event()))
        if wait and not sent.wait(_SEND_S):
            self.close()
            raise McpError(f'{self.what} stopped reading what it is sent; it was stopped')
        if self._broken: raise McpError(f'{self.what} has stopped{self.why()}')

    def why(self)->str:
        "How it ended, if it has: its exit code and the last line it wrote to stderr."
        code = self.proc.poll()
        said = f'; it last wrote: {self._err[-1]}' if self._err and self._err[-1] else ''
        return f' (exit code {code}{said})' if code is not None else ''

    def exchange(self, msg, timeout):
        "Send `msg`; its response, or None if it is a notification; McpError when the server stops or the time is up."
        if 'id' not in msg: return self._send(msg)
        q = self._pending[msg['id']] = queue.Queue()
        try:
            self._send(msg)
            try: got = q.get(timeout=timeout)
            except queue.Empty:
                self._send({'jsonrpc': '2.0', 'method': 'notifications/cancelled',
                            'params': {'requestId': msg['id'], 'reason': 'timed out'}}, wait=False)
                raise McpError(f'{msg["method"]}: {self.what} did not answer in {timeout:g} s') from None
        finally: self._pending.pop(msg['id'], None)
        if got is None:
            try: self.proc.wait(0.5)   # its exit code, and its last stderr line, are on their way
            except subprocess.TimeoutExpired: pass
            raise McpError(f'{self.what} stopped before answering{self.why()}')
        return got

    def alive(self)->bool: return self.proc.poll() is None and not (self._gone or self._broken)

    def close(self):
        "End its input (a server stops on that), then terminate its process group, then kill it."
        self._out.put(None)
        for how in (None, 'terminate', 'kill'):
            if how is not None and self.proc.poll() is None: _stop(self.proc, how)
            try: return self.proc.wait(0.5 if how is None else 1)
            except subprocess.TimeoutExpired: pass


def _stop(proc, how):
    "Terminate or kill `proc` and the programs it started (its session), where the system has process groups."
    if not hasattr(os, 'killpg'): return getattr(proc, how)()
    try: os.killpg(proc.pid, signal.SIGTERM if how == 'terminate' else signal.SIGKILL)
    except OSError: pass


class _Http:
    "A server at a URL (streamable HTTP): each message is a POST; the answer is JSON or an event stream."
    def __init__(self, spec):
        import requests   # only an HTTP server needs it: `%load_ext` stays cheap
        from ..settings import public_url
        self.spec, self.what, self.http = spec, public_url(spec.url).split('?')[0], requests.Session()
        self.session = self.version = None
        self.lost = False   # the server forgot our session (it restarted): start again

    def _headers(self):
        h = {'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream'}
        if self.session: h['Mcp-Session-Id'] = self.session
        if self.version: h['MCP-Protocol-Version'] = self.version
        if name := self.spec.token_env:
            if not (token := os.environ.get(name, '')): raise McpError(f'`{name}` is not set: set it to {self.what}\'s token')
            h[self.spec.header] = f'Bearer {token}' if self.spec.header.lower() == 'authorization' else token
        return h

    def exchange(self, msg, timeout):
        import requests, urllib3
        deadline = time.monotonic() + timeout
        try:
            r = self.http.post(self.spec.url, data=json.dumps(msg), headers=self._headers(), stream=True,
                               timeout=(min(5, timeout), timeout), allow_redirects=False)
        except requests.RequestException as e:
            raise McpError(f'{self.what} cannot be reached ({type(e).__name__}); is the server running?') from None
        with r:
            if r.status_code in (401, 403): raise McpError(f'{self.what} refused the request ({r.status_code}): check '
                                                           'its token (`token_env`)')
            if 300 <= r.status_code < 400: raise McpError(f'{self.what} redirects elsewhere ({r.status_code}); set `url` '
                                                          'to where it points')
            if r.status_code == 404 and self.session:   # a restarted server no longer knows our session
                self.lost = True
                raise McpError(f'{self.what} forgot this session (it restarted?); the next call starts a new one')
            if r.status_code >= 400: raise McpError(f'{msg.get("method")}: {self.what} answered HTTP {r.status_code}')
            if sid := r.headers.get('Mcp-Session-Id'): self.session = sid[:200]
            if 'id' not in msg: return None
            kind = r.headers.get('Content-Type', '').split(';')[0].strip().lower()
            lines = _lines(r.raw, deadline, self.what)
            try:
                if kind == 'text/event-stream': return self._events(lines, msg['id'])
                body = b''.join(lines)
            except (OSError, ValueError, urllib3.exceptions.HTTPError) as e:   # cut off, or silent past the timeout
                raise McpError(f'{self.what} stopped answering ({type(e).__name__})') from None
            try: return json.loads(body)
            except ValueError: raise McpError(f'{self.what} answered something that is not JSON') from None

    def _events(self, lines, want):
        "The response to request `want` in an event stream."
        data = []
        for line in lines:
            line = line.rstrip(b'\r\n')
            if line.startswith(b'data:'): data.append(line[5:].strip())
            elif not line and data:
                try: msg = json.loads(b'\n'.join(data))
                except ValueError: msg = None
                data = []
                if isinstance(msg, dict) and msg.get('id') == want and 'method' not in msg: return msg
        raise McpError(f'{self.what} ended its answer without one')

    def alive(self)->bool: return not self.lost

    def why(self)->str: return ''

    def close(self):
        "End the session (if the server keeps one) and its connections."
        if self.session:
            try: self.http.delete(self.spec.url, headers=self._headers(), timeout=2)
            except Exception: pass
        self.http.close()


def _lines(raw, deadline, what):
    "The lines of a response body as they arrive, until the deadline and at most MAX_MESSAGE bytes in all."
    seen, rest = 0, b''
    while chunk := raw.read1(65536, decode_content=True):   # what arrived, without waiting to fill a buffer: a trickle meets the deadline
        seen += len(chunk)
        if seen > MAX_MESSAGE or time.monotonic() > deadline:
            raise McpError(f'{what} sent no whole answer within {MAX_MESSAGE >> 20} MB or the time allowed')
        *done, rest = (rest + chunk).split(b'\n')
        yield from (d + b'\n' for d in done)
    if rest: yield rest


class McpClient:
    "One connection to one MCP server (`settings.McpSpec`): `start`, then `list_tools` and `call_tool`; `close`."
    def __init__(self, spec):
        self.spec, self._ids = spec, itertools.count(1)
        self.transport = _Http(spec) if spec.url else _Stdio(spec)
        self.server = {}   # its serverInfo, once started

    def request(self, method:str, params:dict, timeout:float)->dict:
        "The result of `method`, or McpError."
        return _checked(self.transport.exchange({'jsonrpc': '2.0', 'id': next(self._ids), 'method': method,
                                                 'params': params}, timeout), method)

    def start(self, timeout:float):
        "The handshake: `initialize`, then `notifications/initialized`."
        res = self.request('initialize', {'protocolVersion': PROTOCOL, 'capabilities': {}, 'clientInfo': _CLIENT}, timeout)
        if (v := res.get('protocolVersion')) not in KNOWN:
            raise McpError(f'{self.transport.what} speaks MCP {str(v)[:40]!r}; boopiter speaks {", ".join(KNOWN)}')
        if isinstance(self.transport, _Http): self.transport.version = v
        self.server = res.get('serverInfo') if isinstance(res.get('serverInfo'), dict) else {}
        self.transport.exchange({'jsonrpc': '2.0', 'method': 'notifications/initialized'}, timeout)

    def list_tools(self, timeout:float)->list:
        "Every tool the server lists (each a dict with a `name`), page after page; malformed ones left out."
        tools, cursor = [], None
        for _ in range(_MAX_PAGES):
            res = self.request('tools/list', {'cursor': cursor} if cursor else {}, timeout)
            page = res.get('tools') if isinstance(res.get('tools'), list) else []
            tools += [t for t in page if isinstance(t, dict) and isinstance(t.get('name'), str) and 0 < len(t['name']) <= 128]
            cursor = res.get('nextCursor')
            if not isinstance(cursor, str) or not cursor or len(tools) >= _MAX_TOOLS: break
        return tools[:_MAX_TOOLS]

    def call_tool(self, name:str, arguments:dict, timeout:float)->dict:
        "The server's result of calling its tool `name`."
        return self.request('tools/call', {'name': name, 'arguments': arguments}, timeout)

    def alive(self)->bool: return self.transport.alive()

    def close(self): self.transport.close()
