"""The optional `web` tool source, off by default: `fetch_url` reads a public web page as text. `%boop tools web on`,
the brain menu's tool sources or the `tools` setting turn it on.

`fetch_url` makes one GET: no other method, no body, no cookies kept, no credentials sent, nothing taken from the
environment (no proxy, no netrc). One fetch has `_SECONDS` in all, redirects and slow servers included, reads at most
`_MAX_BYTES`, follows at most `_MAX_REDIRECTS` redirects (each checked again), and only reads text: HTML, text, JSON,
XML, Markdown. It resolves the host once and refuses it if any address is loopback, private, link-local, multicast,
reserved or unspecified (`address_problem`; an IPv4 address inside an IPv6 one is judged as itself); then it connects
to the address it checked, the name going only into the Host header and TLS SNI, so DNS cannot answer differently in
between. Your `web_allow` setting (only your own settings may set it: `~/.config/boopiter/settings.ini` or
`%config BoopMagics.web_allow`; `settings.parse_allow` reads it) lets it reach private hosts by name, address or
network. HTML becomes readable text (`readable.html_text`): headings, paragraphs, list items, table rows and links
stay; scripts, styles and hidden elements go.
A page's text is untrusted data: in auto mode the tool loop screens and quarantines it like any tool's output, and
fetches unattended only a URL the model was given (in the prompt, a variable the prompt names, or an earlier result,
such as a page's link): a URL it composed could carry the notebook's data away, so the user confirms it first.

    fetch_url, = web_tools(allow='127.0.0.1:8000')
    fetch_url('http://127.0.0.1:8000/guide.html')
"""

__all__ = ['web_tools', 'web_source', 'address_problem']

import ipaddress, json, logging, re, threading, time
from urllib.parse import quote, urljoin, urlsplit
from .guards import OUTBOUND_ATTR
from ..settings import _HOST_NAME, parse_allow
from .readable import _start, _window, html_text

log = logging.getLogger(__name__)

_MAX_BYTES = 2_000_000     # read from one page at most: the rest is cut
_SECONDS = 10.0            # one fetch in all, redirects included, however slowly the server sends
_CONNECT_SECONDS = 5.0     # one connection attempt
_MAX_REDIRECTS = 5
_MAX_URL = 2_000
_CACHE_SECONDS, _CACHE_SIZE = 300, 8   # fetched pages kept, so reading on with `start` does not fetch again
_REDIRECTS = (301, 302, 303, 307, 308)


# ---- which addresses a fetch may reach

_NAT64 = ipaddress.ip_network('64:ff9b::/96')   # the IPv4 address in its last 32 bits is the one reached
_SPECIAL = [(label, ipaddress.ip_network(n)) for label, nets in (   # what `ipaddress` does not flag on every Python
    ('private', '100.64.0.0/10 192.0.0.0/24 64:ff9b:1::/48 fec0::/10'),
    ('reserved', '0.0.0.0/8 192.0.2.0/24 192.88.99.0/24 198.18.0.0/15 198.51.100.0/24 203.0.113.0/24 240.0.0.0/4 '
                 '2001:db8::/32 3fff::/20 5f00::/16')) for n in nets.split()]


def _ip(a):
    if isinstance(a, (ipaddress.IPv4Address, ipaddress.IPv6Address)): return a
    return ipaddress.ip_address(str(a).split('%')[0])   # a link-local address may carry its zone: fe80::1%eth0


def _inner_v4(a):
    "The IPv4 address an IPv6 address stands for (mapped, 6to4, NAT64), else None."
    if a.version == 4: return None
    if a.ipv4_mapped or a.sixtofour: return a.ipv4_mapped or a.sixtofour
    return ipaddress.IPv4Address(int(a) & 0xFFFF_FFFF) if a in _NAT64 else None


def address_problem(
    ip,  # An IPv4 or IPv6 address, as text or an `ipaddress` object (what the resolver answered)
)->str:  # '' for a public address, else what it is: unspecified, loopback, link-local, multicast, private or reserved
    "What keeps `fetch_url` from reaching `ip` unless the user allows it; '' when it is public."
    a = _ip(ip)
    if (inner := _inner_v4(a)) is not None: return address_problem(inner)
    for label, yes in (('unspecified', a.is_unspecified), ('loopback', a.is_loopback), ('link-local', a.is_link_local),
                       ('multicast', a.is_multicast), ('reserved', a.is_reserved), ('private', a.is_private)):
        if yes: return label
    for label, net in _SPECIAL:
        if a.version == net.version and a in net: return label
    return '' if a.is_global else 'reserved'


def _allowed(entries, host, ip, port)->bool:
    "Whether the user's `web_allow` entries cover `host` (as the URL names it) at address `ip` and `port`."
    ips = [ip] + [a for a in [_inner_v4(ip)] if a is not None]
    return any((p is None or p == port) and (v == host if k == 'name' else any(a.version == v.version and a in v
               for a in ips)) for k,v,p in entries)


# ---- one GET, pinned to the address that was checked

class _Deadline:
    "The time one fetch has; when it is up, the socket in use is shut down, so no read waits past it."
    def __init__(self, seconds):
        self.seconds, self.end, self.sock, self.fired = seconds, time.monotonic() + seconds, None, False
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def left(self)->float: return max(0.001, self.end - time.monotonic())   # never 0: a 0 timeout means non-blocking

    def _fire(self):
        import socket
        self.fired = True
        if (s := self.sock) is None: return
        try: socket.socket.shutdown(s, socket.SHUT_RDWR)   # the plain socket's: an SSLSocket's would unwrap it first
        except OSError: pass

    def watch(self, sock):
        self.sock = sock
        if self.fired: self._fire()   # it fired between making the socket and handing it over

    def stop(self): self._timer.cancel()


def _resolve(host, port, dl)->list|str:
    "[(family, sockaddr)] that `host` resolves to, resolved once and within the deadline; or an `error: ...` string."
    import socket
    box = []
    def run():
        try: box.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except (OSError, UnicodeError) as e: box.append(e)
    t = threading.Thread(target=run, name='boopiter-resolve', daemon=True)   # the resolver has no timeout of its own
    t.start()
    t.join(dl.left())
    if not box: return f'error: {host} did not resolve within {dl.seconds:g} s'
    if isinstance(box[0], Exception):
        return f'error: {host} cannot be resolved ({getattr(box[0], "strerror", None) or box[0]})'
    return list(dict.fromkeys((family, addr) for family,_,_,_,addr in box[0]))


def _article(w): return f'an {w}' if w[0] in 'aeiou' else f'a {w}'


def _refusal(host, port, addrs, allow)->str:
    "'' if every address of `host` may be reached, else why not: one address refused refuses the host."
    for _, sockaddr in addrs:
        ip = _ip(sockaddr[0])
        if not (why := address_problem(ip)) or _allowed(allow, host, ip, port): continue
        what = f'{host} is {_article(why)} address' if _ip_text(host) == str(ip) else \
               f'{host} resolves to {_article(why)} address ({ip})'
        return (f'error: {what}: fetch_url only reaches public addresses, unless the user allows this one in their '
                '`web_allow` setting')
    return ''


def _ip_text(host):
    try: return str(ipaddress.ip_address(host))
    except ValueError: return None


_TLS = None

def _tls():
    "The TLS context: certificates checked against certifi's roots when it is installed (as requests does)."
    global _TLS
    if _TLS is None:
        import ssl
        try:
            import certifi
            _TLS = ssl.create_default_context(cafile=certifi.where())
        except ImportError: _TLS = ssl.create_default_context()
    return _TLS


def _connect(addrs, tls, host, dl):
    "A socket connected to the first of `addrs` that answers (TLS for `host` if `tls`); OSError if none does."
    import socket
    last = OSError('no address to connect to')
    for family, sockaddr in addrs:
        s = socket.socket(family, socket.SOCK_STREAM)
        dl.watch(s)
        try:
            s.settimeout(min(_CONNECT_SECONDS, dl.left()))
            s.connect(sockaddr)
            s.settimeout(dl.left() + 1)   # past the deadline: the watchdog stops a read first, and says so
            if tls:   # checked against the name, not the address; the handshake is watched too
                s = _tls().wrap_socket(s, server_hostname=host, do_handshake_on_connect=False)
                dl.watch(s)
                s.do_handshake()
            return s
        except OSError as e:
            s.close()
            last = e
            if dl.fired: break
    raise last


_SAFE = "/%:@!$&'()*+,;=-._~"   # what stays as it is in a request's path and query; the rest is %-escaped


def _target(url)->tuple|str:
    "(scheme, host, port, path and query, Host header) of an http(s) URL; or an `error: ...` string."
    try: p = urlsplit(url)
    except ValueError as e: return f'error: {url} is not a valid URL ({e})'
    if p.scheme not in ('http', 'https'): return f'error: {url}: fetch_url reads only http and https URLs'
    if p.username is not None or p.password is not None:
        return f'error: {url} names a user or password: fetch_url never sends credentials'
    try: port = p.port or (443 if p.scheme == 'https' else 80)
    except ValueError: return f'error: {url} has a bad port'
    host = p.hostname or ''
    if not _ip_text(host): host = host.rstrip('.')   # `localhost.` is `localhost`, for the allow-list too
    try: host = host.encode('idna').decode('ascii') if host else ''
    except UnicodeError: return f'error: {url} has a host name that cannot be encoded'
    if not host or not (_HOST_NAME.fullmatch(host) or _ip_text(host)): return f'error: {url} has no valid host'
    path = quote(p.path or '/', safe=_SAFE) + ('?' + quote(p.query, safe=_SAFE + '?') if p.query else '')   # no CR, LF
    shown = f'[{host}]' if ':' in host else host
    default = port == (443 if p.scheme == 'https' else 80)
    return p.scheme, host, port, path, shown if default else f'{shown}:{port}'


_HEADERS = {'User-Agent': 'Mozilla/5.0 (compatible; boopiter-ext fetch_url)',
            'Accept': 'text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,application/json;q=0.9,'
                      'application/xml;q=0.8,text/*;q=0.7,*/*;q=0.1',
            'Accept-Encoding': 'identity', 'Connection': 'close'}   # identity: nothing to unpack, no zip bomb


def _request(sock, path, host_header):
    "Send the GET over `sock` and return the connection and its response (headers read, body not yet)."
    import http.client
    conn = http.client.HTTPConnection('0.0.0.0')   # never connects: it talks over the socket it is given
    conn.sock = sock
    try:
        conn.putrequest('GET', path, skip_host=True, skip_accept_encoding=True)
        for k,v in {'Host': host_header, **_HEADERS}.items(): conn.putheader(k, v)
        conn.endheaders()
        return conn, conn.getresponse()
    except BaseException:
        conn.close()
        raise


def _read(resp, dl)->tuple:
    "(body, cut, late): at most `_MAX_BYTES` of the body, whether more was sent, whether the deadline stopped it."
    import http.client
    chunks, n = [], 0
    try:
        while n <= _MAX_BYTES and (b := resp.read1(65536)):   # read1: what arrived, without waiting to fill a buffer
            chunks.append(b)
            n += len(b)
    except (OSError, http.client.HTTPException, ValueError):
        if not dl.fired and not chunks: raise
    data = b''.join(chunks)
    return data[:_MAX_BYTES], n > _MAX_BYTES, dl.fired


def _hop(url, allow, dl)->tuple|str:
    "One request: (conn, response) with the connection open; or an `error: ...` string."
    if isinstance(t := _target(url), str): return t
    scheme, host, port, path, host_header = t
    if isinstance(addrs := _resolve(host, port, dl), str): return addrs
    if (why := _refusal(host, port, addrs, allow)): return why
    try: sock = _connect(addrs, scheme == 'https', host, dl)
    except OSError as e:
        if dl.fired: return f'error: {url}: no answer within {dl.seconds:g} s'
        return f'error: cannot connect to {url}: {getattr(e, "strerror", None) or getattr(e, "reason", None) or e}'
    try: conn, resp = _request(sock, path, host_header)
    except Exception as e:
        sock.close()
        if dl.fired: return f'error: {url}: no answer within {dl.seconds:g} s'
        return f'error: {url}: {type(e).__name__}: {e}'[:300]
    if not dl.fired: return conn, resp
    resp.close()   # the headers were cut short by the deadline
    conn.close()
    return f'error: {url}: no answer within {dl.seconds:g} s'


def _get(url, allow)->dict|str:
    "Follow `url`'s redirects to a page and read it (a dict: url, status, type, body, ...); or `error: ...`."
    dl, seen = _Deadline(_SECONDS), [url]
    try:
        for _ in range(_MAX_REDIRECTS + 1):
            if isinstance(hop := _hop(url, allow, dl), str): return hop
            conn, resp = hop
            try:
                if resp.status in _REDIRECTS and (loc := resp.getheader('Location')):
                    nxt = urljoin(url, loc.strip())
                    if nxt in seen: return f'error: redirect loop: {" -> ".join(seen + [nxt])}'
                    seen.append(nxt)
                    url = nxt
                    continue
                return _page(url, resp, dl, seen)
            finally:
                resp.close()
                conn.close()
        return f'error: more than {_MAX_REDIRECTS} redirects: {" -> ".join(seen)}'
    finally: dl.stop()


_TEXTISH = {'application/javascript', 'application/x-javascript', 'application/ecmascript', 'application/yaml',
            'application/x-yaml', 'application/toml', 'application/x-ndjson', 'application/markdown'}


def _kind(ctype)->str|None:
    "'html', 'json', 'xml' or 'text' for a content type fetch_url reads; None for any other (a binary)."
    if ctype in ('text/html', 'application/xhtml+xml'): return 'html'
    if ctype == 'application/json' or ctype.endswith('+json'): return 'json'
    if ctype in ('application/xml', 'text/xml') or ctype.endswith('+xml'): return 'xml'
    return 'text' if ctype.startswith('text/') or ctype in _TEXTISH else None


def _page(url, resp, dl, seen)->dict|str:
    "The page a final (non-redirect) response holds, or `error: ...` for an HTTP error or a binary."
    if resp.status >= 400: return f'error: {url} answered {resp.status} {resp.reason}'.rstrip()
    given = resp.getheader('Content-Type')
    ctype = resp.headers.get_content_type() if given else ''
    if given and _kind(ctype) is None:
        hint = "; to read a PDF, save it under the notebook's folder and use read_pdf" if 'pdf' in ctype else ''
        return f'error: {url} is {ctype}, not text: fetch_url reads HTML, text, JSON, XML and Markdown{hint}'
    try: body, cut, late = _read(resp, dl)
    except Exception as e: return f'error: {url}: the page broke off ({type(e).__name__})'
    if b'\0' in body[:8192]: return f'error: {url} is binary, not text'
    if not given: ctype = 'text/html' if re.match(rb'\s*<(!doctype html|html)', body[:512], re.I) else 'text/plain'
    return dict(url=url, first=seen[0], status=resp.status, type=ctype, kind=_kind(ctype), body=body, cut=cut,
                late=late, charset=resp.headers.get_content_charset())


def _decode(body, charset, kind)->str:
    import codecs
    if body.startswith(codecs.BOM_UTF8): charset = 'utf-8-sig'
    if not charset and kind == 'html':
        m = re.search(rb'<meta[^>]{0,200}?charset\s*=\s*["\']?([\w.:\-]{1,40})', body[:4096], re.I)
        charset = m and m[1].decode('ascii')
    try: codecs.lookup(charset or 'utf-8')
    except LookupError: charset = None
    return body.decode(charset or 'utf-8', 'replace')


def _readable(page)->str:
    "The page's text as the model reads it: HTML as text, JSON indented, the rest as it is."
    text = _decode(page['body'], page['charset'], page['kind'])
    if page['kind'] == 'html': return html_text(text, page['url'])
    if page['kind'] == 'json':
        try: return json.dumps(json.loads(text), indent=1, ensure_ascii=False)
        except (ValueError, RecursionError): return text
    return text


def _head(page)->str:
    moved = f', redirected from {page["first"]}' if page['url'] != page['first'] else ''
    notes = [n for n,yes in ((f'cut at {_MAX_BYTES // 1_000_000} MB', page['cut']),
                             (f'stopped after {_SECONDS:g} s: the server was still sending', page['late'])) if yes]
    return f'{page["url"]} ({page["status"]}, {page["type"]}{moved})' + ''.join(f' [{n}]' for n in notes)

def web_tools(
    allow:str='',  # What fetch_url may reach although not public: the `web_allow` setting, e.g. '127.0.0.1:8000'
)->list:           # [fetch_url]
    "The `web` source's tools; `allow` lets them reach the private hosts, addresses and networks it names."
    entries, problems = parse_allow(allow)
    if problems: log.warning('web_allow: ignored what is not a host, address or network: %s', ', '.join(problems))
    cache = {}   # url: (time, head, text)

    def fetch_url(
        url:str,      # An http:// or https:// URL; only public addresses, unless the user allowed others
        start:int=0,  # Character to start from, to read on where the last answer stopped
    )->str:           # The URL, status and type on the first line, then the page as text
        "Fetch a web page (GET) and read it as text"
        if not isinstance(url, str) or not url.strip(): return 'error: give the URL to fetch, as text'
        if isinstance(start := _start(start), str): return start
        url = url.strip()
        if len(url) > _MAX_URL: return f'error: the URL is over {_MAX_URL:,} characters'
        if '://' not in url: url = 'https://' + url
        if (hit := cache.get(url)) and time.monotonic() - hit[0] < _CACHE_SECONDS: head, text = hit[1:]
        else:
            if isinstance(page := _get(url, entries), str): return page
            head, text = _head(page), _readable(page).strip()
            cache[url] = (time.monotonic(), head, text)
            while len(cache) > _CACHE_SIZE: del cache[next(iter(cache))]
        if start and start >= len(text): return f'error: the page has {len(text):,} characters; start is past its end'
        body = _window(text, start, lambda at: f'fetch_url({url!r}, start={at})') if text else '(the page has no text)'
        return f'{head}\n\n{body}'

    setattr(fetch_url, OUTBOUND_ATTR, ('url',))   # a URL the model composed needs the user's consent in auto mode
    return [fetch_url]


def _user_allow(settings)->str:
    "The `web_allow` setting, if the user's own settings gave it: never a project's settings.ini or a notebook."
    allow = (settings or {}).get('web_allow') or ''
    source = getattr(settings, 'source', {}).get('web_allow', '')
    if allow and source in ('notebook binding', 'cell option', getattr(settings, 'project', None)):
        log.warning('web_allow from %s ignored: only your own settings may set it', source)
        return ''
    return allow


def web_source(ctx)->list:
    "The `web` tool source: `fetch_url`, reaching what the user's `web_allow` setting allows (`ctx.settings`)."
    return web_tools(_user_allow(getattr(ctx, 'settings', None)))

