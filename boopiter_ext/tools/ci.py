"""The `ci` tool source: `check_ci` reads the latest GitHub Actions runs of a repository.

One GET to `{api}/repos/{owner}/{name}/actions/runs` (`api`: https://api.github.com, or `BOOPITER_GITHUB_API`), with
the token from `GITHUB_TOKEN` or `GH_TOKEN` as a Bearer header when one is set; `repo`, `branch` and `limit` are checked
before anything is sent. It waits `_SECONDS` at most, reads at most `_MAX_BYTES`, follows no redirect (it says where
one led) and takes nothing from the environment but the proxy variables (no netrc). Every field read is checked; a
run that is not what GitHub sends is skipped and counted. Problems (no such repository, a bad token, the rate limit
and when it resets, the network) come back as one `error: ...` line that says what to do; the token never appears in
an answer.
The repository and branch leave the machine: in auto mode the model may only pass ones it was given (`OUTBOUND_ATTR`).

    check_ci, = ci_source(ctx)
    print(check_ci('psf/requests', branch='main', limit=3))
"""

__all__ = ['ci_tools', 'ci_source', 'REPO', 'BRANCH']

import json, os, re, time
from typing import Annotated
from urllib.parse import urlsplit
from .guards import OUTBOUND_ATTR
from .kernel import _mark
from ..redact import mask, register

_SECONDS = 10.0
_MAX_BYTES = 2_000_000   # GitHub sends ~10 kB a run: 20 runs fit many times over
_API = 'https://api.github.com'
REPO = re.compile(r'[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}')   # owner/name in GitHub's letters ('.', '..' not)
BRANCH = re.compile(r'(?![-./])(?!.*(?:\.\.|//|@\{|\.lock$|[./]$))[A-Za-z0-9._/+@-]{1,200}')   # a plain git ref name
_TIME = re.compile(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ', re.ASCII)


def _clean(s, n=80): return ''.join(c for c in ' '.join(s.split()) if c.isprintable())[:n]


def _field(run, key, n=80)->str:
    "A run's text field on one line, or '?' when it is missing or not text."
    v = run.get(key)
    return (_clean(v, n) or '?') if isinstance(v, str) else '?'


def _url(v)->str|None:
    "A run's `html_url` if it is a plain http(s) URL, else None."
    ok = isinstance(v, str) and len(v) <= 300 and re.fullmatch(r'https?://[^\s<>"\'`]+', v) and v.isprintable()
    return v if ok else None


def _run_line(run)->str|None:
    "One line for a run: workflow, branch, event, status/conclusion, created, URL; None for a malformed run."
    if not isinstance(run, dict) or not isinstance(run.get('status'), str): return None
    if not (url := _url(run.get('html_url'))): return None
    done = run.get('conclusion')
    state = _field(run, 'status', 30) + (f'/{_clean(done, 30)}' if isinstance(done, str) and done.strip() else '')
    made = run.get('created_at')
    made = made if isinstance(made, str) and _TIME.fullmatch(made) else '?'
    fields = (_field(run, 'name'), _field(run, 'head_branch', 100), _field(run, 'event', 30), state, made, url)
    return ' | '.join(fields)


def _runs_lines(data, limit:int)->tuple:
    "([one line per run, at most `limit`], runs skipped as malformed) from the runs endpoint's JSON answer."
    runs = data.get('workflow_runs') if isinstance(data, dict) else None
    if not isinstance(runs, list): return [], 0
    lines = [ln for r in runs[:limit] if (ln := _run_line(r))]
    return lines, min(len(runs), limit) - len(lines)


def _answer(data, repo:str, branch, limit:int)->str:
    "The text `check_ci` answers for the endpoint's JSON `data`: run lines, a note on skipped runs, or what was found."
    if not isinstance(data, dict) or not isinstance(data.get('workflow_runs'), list):
        return 'error: GitHub answered without a list of runs; is BOOPITER_GITHUB_API a GitHub API?'
    lines, bad = _runs_lines(data, limit)
    note = [f'({bad} malformed run{"s" if bad > 1 else ""} skipped)'] if bad else []
    return '\n'.join(lines + note) or f'(no workflow runs for {repo}{f" on {branch}" if branch else ""})'


def _token()->str:
    t = (os.environ.get('GITHUB_TOKEN') or os.environ.get('GH_TOKEN') or '').strip()
    register(t)   # never shown: anything that quotes it is masked
    return t


def _safe(text:str, token:str)->str: return mask(text.replace(token, '[token]') if token else text)


def _message(r)->str:
    "GitHub's `message` in an error answer, on one line."
    try: msg = json.loads(r.content[:_MAX_BYTES]).get('message')
    except (ValueError, AttributeError, RecursionError): msg = None
    return _clean(msg, 200) if isinstance(msg, str) else ''


def _minutes(at:int)->str: return f'in {max(0, at - int(time.time())) // 60 + 1} min'


def _http_error(r, repo:str, token:str)->str:
    "The `error: ...` line for a response that is not 200: what happened and what to do next."
    h, msg = r.headers, _message(r)
    if r.status_code in (403, 429) and (h.get('X-RateLimit-Remaining') == '0' or 'rate limit' in msg.lower()):
        try: reset = int(h.get('X-RateLimit-Reset', ''))
        except ValueError: reset = None
        when = f' until {time.strftime("%H:%M:%S UTC", time.gmtime(reset))} ({_minutes(reset)})' \
               if reset and 0 < reset < 2**33 else ''
        return f'error: GitHub rate limit reached{when}; ' + ('wait' if token else 'set GITHUB_TOKEN to raise it')
    if r.status_code in (403, 429) and (wait := h.get('Retry-After', '')).isdigit():
        return f'error: GitHub asks to slow down; wait {int(wait)} s before asking again'
    if r.status_code == 401: return 'error: GitHub refused the token (401); set GITHUB_TOKEN to a valid token'
    if r.status_code == 404:
        hint = '' if token else ', or set GITHUB_TOKEN for a private one'
        return f'error: no repository {repo} visible (404); check the name{hint}'
    if r.status_code == 403:
        return f'error: GitHub refused (403: {msg or "forbidden"}); the token needs read access to Actions'
    return f'error: GitHub answered HTTP {r.status_code}{f": {msg}" if msg else ""}'


def _body(r)->bytes|None:
    "The response body, or None when it is over `_MAX_BYTES`."
    if (n := r.headers.get('Content-Length', '')).isdigit() and int(n) > _MAX_BYTES: return None
    data = b''
    for chunk in r.iter_content(65536):
        if len(data := data + chunk) > _MAX_BYTES: return None
    return data


def _fetch(url:str, params:dict, token:str, repo:str)->bytes|str:
    "The runs endpoint's body on 200; else an `error: ...` line (the token not in it)."
    import requests
    headers = {'Accept': 'application/vnd.github+json', 'X-GitHub-Api-Version': '2022-11-28',
               'User-Agent': 'boopiter-ext check_ci', **({'Authorization': f'Bearer {token}'} if token else {})}
    with requests.Session() as s:
        s.trust_env = False   # no netrc, no settings from the environment but its proxies:
        proxies = requests.utils.get_environ_proxies(url)
        try:
            with s.get(url, params=params, headers=headers, timeout=_SECONDS, allow_redirects=False, stream=True,
                       proxies=proxies) as r:
                if r.is_redirect or 300 <= r.status_code < 400:
                    to = urlsplit(r.headers.get('Location', '')).netloc or 'the same host'
                    return (f'error: GitHub redirected to {to} (HTTP {r.status_code}), not followed; '
                            'a renamed repository? use its new name')
                if r.status_code != 200: return _http_error(r, repo, token)
                body = _body(r)
                return f'error: GitHub sent over {_MAX_BYTES // 1_000_000} MB; ask for fewer runs' if body is None \
                    else body
        except requests.Timeout: return f'error: GitHub did not answer within {_SECONDS:g} s; try again later'
        except requests.RequestException as e:
            return f'error: cannot reach GitHub ({type(e).__name__}); check the network or BOOPITER_GITHUB_API'


def _problem(repo, branch, limit)->str:
    "Why these arguments are refused before anything is sent; '' when they are fine."
    if not isinstance(repo, str) or not REPO.fullmatch(repo) or repo.endswith(('/.', '/..')):
        return "error: repo must be 'owner/name', e.g. 'psf/requests'"
    if branch is not None and (not isinstance(branch, str) or not BRANCH.fullmatch(branch)):
        return 'error: branch must be a plain branch name, e.g. main or release/1.2'
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 20:
        return 'error: limit must be from 1 to 20'
    return ''


def ci_tools()->list:  # [check_ci]
    "The `ci` source's tools."

    def check_ci(
        repo:Annotated[str, REPO],  # The GitHub repository, 'owner/name'
        branch:str=None,            # Only runs on this branch; None: every branch
        limit:Annotated[int, range(1, 21)]=5,  # How many of the newest runs
    )->str:  # One line per run: workflow | branch | event | status/conclusion | created | URL
        "Show the newest GitHub Actions runs of a repository, with their status"
        if (why := _problem(repo, branch, limit)): return why
        token = _token()
        api = (os.environ.get('BOOPITER_GITHUB_API') or _API).rstrip('/')
        params = {'per_page': limit, **({'branch': branch} if branch else {})}
        got = _fetch(f'{api}/repos/{repo}/actions/runs', params, token, repo)
        if isinstance(got, str): return _safe(got, token)
        try: data = json.loads(got)
        except (ValueError, RecursionError): return 'error: GitHub answered with something not JSON; try again later'
        return _safe(_answer(data, repo, branch, limit), token)

    setattr(check_ci, OUTBOUND_ATTR, ('repo', 'branch'))   # they leave the machine: only ones the model was given
    return [_mark(check_ci)]


def ci_source(ctx=None)->list:
    "The `ci` tool source: `check_ci` (it needs nothing from `ctx`)."
    return ci_tools()
