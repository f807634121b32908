"""Optional tool sources, off by default: `web` reads a public web page as text, `pdf` reads a PDF under the notebook's
folder. `%boop tools web on pdf on`, the brain menu's tool sources or the `tools` setting turn them on.

`fetch_url` makes one GET: no other method, no body, no cookies kept, no credentials sent, nothing taken from the
environment (no proxy, no netrc). One fetch has `_SECONDS` in all, redirects and slow servers included, reads at most
`_MAX_BYTES`, follows at most `_MAX_REDIRECTS` redirects (each checked again), and only reads text: HTML, text, JSON,
XML, Markdown. It resolves the host once and refuses it if any address is loopback, private, link-local, multicast,
reserved or unspecified (`address_problem`; an IPv4 address inside an IPv6 one is judged as itself); then it connects
to the address it checked, the name going only into the Host header and TLS SNI, so DNS cannot answer differently in
between. Your `web_allow` setting (only your own settings may set it: `~/.config/boopiter/settings.ini` or
`%config BoopMagics.web_allow`) lets it reach private hosts by name, address or network. HTML becomes readable text
(`html_text`): headings, paragraphs, list items, table rows and links stay; scripts, styles and hidden elements go.
A page's text is untrusted data: in auto mode the tool loop screens and quarantines it like any tool's output, and
fetches unattended only a URL the model was given (in the prompt, a variable the prompt names, or an earlier result,
such as a page's link): a URL it composed could carry the notebook's data away, so the user confirms it first.

`read_pdf` reads a PDF inside the notebook's folder (`paths.confine`) with pypdf, from the optional extra
(`pip install pypdf`, or the `pdf` extra), in a child process capped in memory and killed at its deadline: a PDF bomb costs
at most `_PDF_SECONDS` and never the kernel.

    fetch_url, = web_tools(allow='127.0.0.1:8000')
    fetch_url('http://127.0.0.1:8000/guide.html')
    read_pdf, = pdf_tools(Path('.'))
    read_pdf('report.pdf', pages='1-3')
"""

__all__ = ['PDF_HINT', 'web_tools', 'web_source', 'pdf_tools', 'pdf_source', 'parse_allow', 'address_problem',
           'html_text', 'parse_pages']

import ipaddress, json, logging, os, re, stat, sys, threading, time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote, urljoin, urlsplit
from .guards import OUTBOUND_ATTR
from .paths import confine

log = logging.getLogger(__name__)

_MAX_BYTES = 2_000_000     # read from one page at most: the rest is cut
_SECONDS = 10.0            # one fetch in all, redirects included, however slowly the server sends
_CONNECT_SECONDS = 5.0     # one connection attempt
_MAX_REDIRECTS = 5
_MAX_URL = 2_000
_PAGE = 3_500              # characters one answer shows: with its header it fits the tool loop's 4,000
_CACHE_SECONDS, _CACHE_SIZE = 300, 8   # fetched pages kept, so reading on with `start` does not fetch again
_REDIRECTS = (301, 302, 303, 307, 308)
_HTML_SECONDS = 3.0        # turning one page's HTML into text (2 MB of `<` takes 5 s)


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


_NAME = re.compile(r'[a-z0-9_](?:[a-z0-9_.\-]*[a-z0-9_])?\.?', re.A)


def _port(p):
    if not p: return None
    if not p.isdigit() or not 0 < int(p) < 65536: raise ValueError(p)
    return int(p)


def _allow_item(s):
    "('name', host, port) or ('net', network, port) for one `web_allow` entry; ValueError if it is none."
    if (m := re.fullmatch(r'\[([0-9a-f:.]+)\](?::(\w*))?', s)): return 'net', ipaddress.ip_network(m[1]), _port(m[2])
    if '/' in s or s.count(':') > 1: return 'net', ipaddress.ip_network(s, strict=False), None   # 10.0.0.0/8, ::1
    host, _, port = s.partition(':')
    try: return 'net', ipaddress.ip_network(host), _port(port)
    except ValueError: pass
    host = host.encode('idna').decode('ascii')   # UnicodeError is a ValueError
    if not _NAME.fullmatch(host): raise ValueError(s)
    return 'name', host.rstrip('.'), _port(port)


def parse_allow(
    text:str,  # The `web_allow` setting: `127.0.0.1:8000, intranet.example.com, [::1]:8080, 10.0.0.0/8`
)->tuple:      # (entries, problems): ('name'|'net', host or network, port or None) each, and the entries not understood
    "The hosts, addresses and networks `fetch_url` may reach although they are not public, with their ports."
    entries, problems = [], []
    for item in str(text or '').split(','):
        if not (s := item.strip().lower()): continue
        try: entries.append(_allow_item(s))
        except ValueError: problems.append(item.strip())
    return entries, problems


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
    if not host or not (_NAME.fullmatch(host) or _ip_text(host)): return f'error: {url} has no valid host'
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


def _window(text, start, more, counted=True)->str:
    "`text` from character `start`, `_PAGE` characters of it, and how to read on when there is more."
    part = text[start:start + _PAGE]
    if (rest := len(text) - start - len(part)) <= 0: return part
    return part + f'\n… [{f"{rest:,} more characters" if counted else "more"}: {more(start + len(part))} reads on]'


def _start(start)->int|str:
    try: start = int(start)
    except (TypeError, ValueError): return f'error: start must be a whole number, not {start!r}'
    return start if start >= 0 else 'error: start must be 0 or more'


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


# ---- HTML as text

_VOID = frozenset('area base br col embed hr img input link meta param source track wbr'.split())
_DROP = frozenset('script style noscript template svg math iframe object canvas select datalist dialog'.split())
_PARA = frozenset('p blockquote dl figure pre table'.split())   # a blank line before and after
_BLOCK = frozenset('address article aside body caption center dd details div dt fieldset figcaption footer form '
                   'header hgroup html legend li main nav section summary tbody tfoot thead tr'.split())   # a line each
_HIDDEN_STYLE = re.compile(r'display\s*:\s*none|visibility\s*:\s*hidden', re.I)


class _Text(HTMLParser):
    "Collects what a reader sees of a page: text, headings, list items, table rows, links; not what is hidden."
    def __init__(self, base):
        super().__init__(convert_charrefs=True)
        self.base, self.out, self.title, self.links = base, [], [], []
        self.skip, self.depth, self.pre, self.lists, self.cells, self.in_title = None, 0, 0, 0, 0, False

    def _put(self, s):
        if s: self.out.append(s)

    def _line(self, n=1):
        "End the text so far with (at least) `n` line breaks."
        tail = ''.join(self.out[-3:])
        if self.out: self._put('\n' * (n - (len(tail) - len(tail.rstrip('\n')))))

    def handle_starttag(self, tag, attrs):
        if self.skip is not None:
            self.depth += tag == self.skip
            return
        a = dict(attrs)
        hidden = 'hidden' in a or a.get('aria-hidden') == 'true' or _HIDDEN_STYLE.search(a.get('style') or '')
        if (tag in _DROP or hidden) and tag not in _VOID:   # what a reader never sees: scripts, styles, hidden text
            self.skip, self.depth = tag, 1
            return
        if tag in ('ul', 'ol'):
            self.lists += 1
            self._line(1 if self.lists > 1 else 2)
        elif tag in _PARA or re.fullmatch(r'h[1-6]', tag): self._line(2)
        elif tag in _BLOCK: self._line()
        if tag == 'title': self.in_title = True
        elif tag[0] == 'h' and tag[1:] in ('1', '2', '3', '4', '5', '6'): self._put('#' * int(tag[1]) + ' ')
        elif tag == 'li': self._put('  ' * max(0, self.lists - 1) + '- ')
        elif tag == 'tr': self.cells = 0
        elif tag in ('td', 'th'):
            self._put(' | ' if self.cells else '')
            self.cells += 1
        elif tag == 'br': self._put('\n')
        elif tag == 'hr':
            self._line()
            self._put('---\n')
        elif tag == 'pre': self.pre += 1
        elif tag == 'img' and (alt := ' '.join((a.get('alt') or '').split())): self._put(f'[image: {alt}]')
        elif tag == 'a': self.links.append((len(self.out), a.get('href') or ''))

    def handle_endtag(self, tag):
        if self.skip is not None:
            self.depth -= tag == self.skip
            if self.depth == 0: self.skip = None
            return
        if tag == 'title': self.in_title = False
        elif tag == 'a' and self.links: self._link(*self.links.pop())
        elif tag in ('ul', 'ol'):
            self.lists = max(0, self.lists - 1)
            self._line(1 if self.lists else 2)
        elif tag in _PARA or re.fullmatch(r'h[1-6]', tag): self._line(2)
        elif tag in _BLOCK: self._line()
        if tag == 'pre': self.pre = max(0, self.pre - 1)

    def _link(self, at, href):
        "Write the link ending here as `[text](url)`, for a web link whose text is not the url itself."
        url = urljoin(self.base, href.strip()) if href.strip() else ''
        text = ''.join(self.out[at:]).strip()
        if not text or not url.startswith(('http://', 'https://')) or url == text or len(url) > 500: return
        if '#' in url and url.split('#')[0] == self.base.split('#')[0]: return   # a jump within this page
        self.out.insert(at, '[')
        self._put(f']({url})')

    def handle_data(self, data):
        if self.skip is not None: return
        if self.in_title: self.title.append(data)
        elif self.pre: self._put(data)
        else:
            s = re.sub(r'\s+', ' ', data)
            self._put(s.lstrip(' ') if not self.out or self.out[-1].endswith(('\n', ' ')) else s)


def html_text(
    html:str,      # A web page's HTML
    base:str='',   # The page's URL: relative links are resolved against it
)->str:            # Its title, then its text: `#` headings, `- ` list items, `a | b` table rows, links as [text](url)
    "A web page as text a model can read: no scripts, styles or hidden elements."
    p, end, piece = _Text(base), time.monotonic() + _HTML_SECONDS, 1 << 18
    for i in range(0, len(html), piece):   # in a few big pieces: an unclosed tag is rescanned once per piece
        if time.monotonic() > end: break
        p.feed(html[i:i + piece])
    else: i = len(html)
    p.close()
    text = re.sub(r'\n{3,}', '\n\n', re.sub(r'[ \t]+\n', '\n', ''.join(p.out))).strip()
    if i < len(html): text += f'\n\n[the rest of the page was not read: making it text took over {_HTML_SECONDS:g} s]'
    title = ' '.join(''.join(p.title).split())
    return '\n\n'.join(filter(None, [title and f'Title: {title}', text]))


# ---- PDF

PDF_HINT = "error: reading PDFs needs pypdf, which is not installed: pip install pypdf"
_MAX_PDF_BYTES = 50_000_000   # a bigger file is refused unread
_PDF_SECONDS = 10.0           # the child reading it is killed then; what it read by then is shown
_PDF_MEMORY = 1 << 30         # the child's address space: a PDF bomb fails there, not in the kernel
_PDF_STREAM = 30_000_000      # the most one stream may unpack to (pypdf's own limits are 75 MB)
_MAX_PAGES = 50               # pages one call reads at most
_PAGE_CHARS = 100_000         # characters kept from one page

# The child: no notebook-folder modules on its path; limits set before pypdf is imported; one JSON line per event.
_PDF_CHILD = r'''
import json, os, sys, warnings
warnings.simplefilter('ignore')
if sys.path and sys.path[0] in ('', os.getcwd()): del sys.path[0]
a = json.loads(sys.argv[1])
try:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (a['memory'], a['memory']))
    resource.setrlimit(resource.RLIMIT_CPU, (a['cpu'], a['cpu'] + 1))
except Exception: pass
def say(**kw):
    sys.stdout.write(json.dumps(kw) + '\n')
    sys.stdout.flush()
try:
    import io, logging
    logging.disable(logging.CRITICAL)
    import pypdf
    limits = ('maximum_declared_stream_length', 'array_based_stream_maximum_output_length',
              'zlib_maximum_output_length', 'lzw_maximum_output_length', 'run_length_maximum_output_length',
              'brotli_maximum_output_length', 'jbig2_maximum_output_length', 'image_maximum_buffer_size')
    if hasattr(pypdf, 'overwrite_configuration'):   # pypdf 7: one configuration object
        import dataclasses
        have = {f.name for f in dataclasses.fields(pypdf.Configuration)}
        pypdf.overwrite_configuration(jbig2dec_binary=None, **{k: a['stream'] for k in limits if k in have})
    else:                                           # pypdf 6: module constants
        import pypdf.filters as f
        for k in ('ZLIB_MAX_OUTPUT_LENGTH', 'LZW_MAX_OUTPUT_LENGTH', 'RUN_LENGTH_MAX_OUTPUT_LENGTH',
                  'JBIG2_MAX_OUTPUT_LENGTH', 'MAX_DECLARED_STREAM_LENGTH', 'MAX_ARRAY_BASED_STREAM_OUTPUT_LENGTH'):
            if isinstance(getattr(f, k, None), int): setattr(f, k, min(getattr(f, k), a['stream']))
        f.JBIG2DEC_BINARY = None
    r = pypdf.PdfReader(io.BytesIO(sys.stdin.buffer.read()))
    if r.is_encrypted and not r.decrypt(''): raise PermissionError('it is encrypted with a password')
    n = len(r.pages)
    say(pages=n)
    got, read = 0, 0
    for lo, hi in a['ranges']:
        for i in range(lo, min(hi or n, n) + 1):
            if read == a['max_pages'] or got > a['want']: raise SystemExit(say(stop=i))
            t = (r.pages[i - 1].extract_text() or '')[:a['page_chars']]
            say(page=i, text=t)
            got, read = got + len(t) + 40, read + 1
except SystemExit: pass
except ModuleNotFoundError: say(error='no pypdf')
except MemoryError: say(error='it needs more memory than a PDF is given')
except RecursionError: say(error='its objects are nested too deeply')
except BaseException as e: say(error=f'{type(e).__name__}: {e}'[:300])
'''


def parse_pages(
    pages,  # '3', '1-3', '2,5-7', '4-' (to the end); '' or None: from the first page; an int: that page
)->list|str:  # [(first, last or None)], 1-based; or an `error: ...` string
    "The page ranges `pages` asks for."
    if pages is None or pages == '': return [(1, None)]
    if isinstance(pages, int) and not isinstance(pages, bool): pages = str(pages)
    if not isinstance(pages, str): return f'error: pages must be text like \'1-3\', not {type(pages).__name__}'
    out = []
    for part in pages.replace(' ', '').split(','):
        m = re.fullmatch(r'(\d{1,7})(?:(-)(\d{1,7})?)?', part)
        if not m or int(m[1]) < 1 or m[3] and int(m[3]) < int(m[1]):
            return f"error: pages={pages!r}: give page numbers from 1, like '3', '1-3', '2,5-7' or '4-'"
        out.append((int(m[1]), int(m[3]) if m[3] else None if m[2] else int(m[1])))
    return out


def _pdf_bytes(p, path)->bytes|str:
    "The bytes of the PDF at `p` (a regular file under the size cap, starting like a PDF); or `error: ...`."
    big = f'error: {path} is over {_MAX_PDF_BYTES // 1_000_000} MB, too big to read'
    try:
        if not stat.S_ISREG(os.stat(p).st_mode): return f'error: {path} is not a regular file'
        with open(os.open(p, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0)), 'rb') as f:   # a FIFO swapped in: no wait
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode): return f'error: {path} is not a regular file'
            if st.st_size > _MAX_PDF_BYTES: return big
            data = f.read(st.st_size + 1)   # not the cap: read(n) allocates n bytes first
    except OSError as e: return f'error: cannot read {path}: {e.strerror or e}'
    if len(data) > _MAX_PDF_BYTES: return big   # it grew since
    return data if b'%PDF-' in data[:1024] else f'error: {path} is not a PDF'


def _run_child(data, args)->tuple:
    "(events, late): what the child reported, and whether it was killed at the deadline."
    import subprocess
    cmd = [sys.executable, '-c', _PDF_CHILD, json.dumps(args)]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try: out, late = p.communicate(data, timeout=_PDF_SECONDS)[0], False
    except subprocess.TimeoutExpired:
        p.kill()
        out, late = p.communicate()[0], True   # what it wrote before is kept
    except BaseException:   # an interrupt: the child goes too
        p.kill()
        p.communicate()
        raise
    events = []
    for line in out.decode('ascii', 'replace').splitlines():
        try: events.append(json.loads(line))
        except ValueError: pass   # the last line, cut by the kill
    return events, late or p.returncode not in (0, None) and not any('error' in e for e in events)


def _pages(n): return f'{n} page{"s" * (n != 1)}'


def _pdf_text(path, events, late)->str|tuple:
    "(header, text) from what the child reported; or `error: ...`."
    said = {k: e[k] for e in events for k in ('pages', 'stop', 'error') if k in e}
    got = [(e['page'], e['text']) for e in events if 'page' in e]
    n, err, stop = said.get('pages'), said.get('error'), said.get('stop')
    if err == 'no pypdf': return PDF_HINT
    if not got:
        if err: return f'error: cannot read {path}: {err}'
        if late or n is None: return f'error: reading {path} stopped after {_PDF_SECONDS:g} s; ask for fewer pages'
        return f'error: {path} has {_pages(n)}; ask for pages from 1 to {n}' if n else f'error: {path} has no pages'
    text = '\n'.join(f'--- page {i} ---\n{t.strip() or "(no text on this page: a scanned image?)"}' for i,t in got)
    note = (f'stopped after {_PDF_SECONDS:g} s: ask for fewer pages' if late else
            f'page {got[-1][0] + 1} could not be read: {err}' if err else
            f'stopped at page {stop}: ask for pages from {stop} on' if stop and len(got) == _MAX_PAGES else '')
    return f'{path}: {_pages(n)}' + (f' [{note}]' if note else ''), text


def pdf_tools(
    root:Path,  # The notebook's folder: read_pdf reads only files under it
)->list:        # [read_pdf]
    "The `pdf` source's tools: read_pdf, confined to `root`."
    root = Path(root).resolve()

    def read_pdf(
        path:str,      # PDF file, relative to the notebook's folder
        pages:str='',  # Pages to read, from 1: '3', '1-3', '2,5-7' or '4-'; empty: from the first
        start:int=0,   # Character to start from, to read on where the last answer stopped
    )->str:            # The page count on the first line, then each page's text under a `--- page N ---` line
        "Read the text of a PDF file, page by page"
        from importlib.util import find_spec
        if find_spec('pypdf') is None: return PDF_HINT
        if isinstance(start := _start(start), str): return start
        if isinstance(ranges := parse_pages(pages), str): return ranges
        if isinstance(p := confine(root, path), str): return p
        if not p.exists(): return f'error: no such file: {path}'
        if isinstance(data := _pdf_bytes(p, path), str): return data
        args = dict(ranges=ranges, want=start + _PAGE, max_pages=_MAX_PAGES, page_chars=_PAGE_CHARS,
                    memory=_PDF_MEMORY, stream=_PDF_STREAM, cpu=int(_PDF_SECONDS) + 2)
        if isinstance(res := _pdf_text(path, *_run_child(data, args)), str): return res
        head, text = res
        if start and start >= len(text): return f'error: those pages have {len(text):,} characters; start is past them'
        shown = pages if isinstance(pages, str) else str(pages)
        return f'{head}\n' + _window(text, start, lambda at: f'read_pdf({path!r}, pages={shown!r}, start={at})',
                                     counted=False)   # the child stops once it has enough text: the rest is not counted

    return [read_pdf]


def pdf_source(ctx)->list:
    "The `pdf` tool source: read_pdf under the notebook's folder (`ctx.root`)."
    return pdf_tools(ctx.root)
