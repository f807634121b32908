"""Consent: auto-run and the tool sources that act or reach outside are yours to turn on, never a file's.

A notebook (its binding output, and its metadata, which JupyterLab never shows) and a project's settings.ini (found up
from the notebook) are files anyone can write: a cloned repository could otherwise turn on auto-run with the `web` and
`notebook` tools, and a plain `%%prompt` would then let the model send the notebook out. So they may *propose* the
consent items (`auto`, and each tool source `tools.registry.needs_consent` names: `web`, `notebook`, and any source
registered as acting or reaching out), never *grant* them. An item a notebook or project wants applies only when:

- your own layers want it too (`Settings.yours`): a `%%prompt --auto`, `%config BoopMagics.auto` or `.tools`, your
  settings.ini, the system-wide file, `c.BoopMagics` in ipython_config.py;
- code run in this kernel turned it on (`%boop tools web on`, `%boop tools auto on`): for this kernel's life;
- you clicked it on in the brain menu (the extension's or the widget one): remembered for that notebook on this
  machine, from the moment of the click, so your own picks still apply when you reopen it;
- you accepted the notebook's proposal: the menu's *Allow* button, or `%boop allow` answered with a typed yes.

The rule for code: a cell you run is code you run. A `%boop tools web on` in a notebook you Run All grants no more than
the Python in its other cells could take without boopiter (a socket, a file), which is Jupyter's own line (what runs
is trusted, what a file merely holds is not); but it lasts only while this kernel does. What outlives the kernel takes
a click or a typed yes, which no saved notebook can replay.

Acceptances live in `~/.config/boopiter/consent.json` (`$XDG_CONFIG_HOME` honoured), by the notebook's real path:

    {"version": 1, "notebooks": {"/home/me/work/nb.ipynb": {"accepted": ["auto", "web"], "at": "2026-05-01T..."}}}

The file is untrusted input, read where it is used: what does not fit (not JSON, another shape, wrong types, unknown
items) is ignored with one line, and an entry applies only to the notebook whose real path it names. An acceptance
covers the items it names: a proposal that asks for more needs a new click.
"""

__all__ = ['AUTO', 'VERSION', 'consent_file', 'wanted', 'describe', 'screen', 'read_accepted', 'write_accepted', 'Consent']

import json, os, threading
from datetime import datetime, timezone
from pathlib import Path
from ..settings import user_ini

AUTO = 'auto'
VERSION = 1
MAX_BYTES, MAX_NOTEBOOKS = 1 << 20, 1000   # a bigger file is not one boopiter wrote; the oldest entries go first


def consent_file(environ=None)->Path:
    "The acceptances file: `consent.json` beside your settings.ini (`$XDG_CONFIG_HOME/boopiter`, by default ~/.config)."
    return user_ini(environ).with_name('consent.json')


def _consent_sources()->list:
    from ..tools.registry import SOURCES, needs_consent
    return [n for n in SOURCES if needs_consent(n)]


def wanted(
    auto,   # The `auto` setting's value
    tools,  # The `tools` setting's value (source names, comma-separated; `none`; empty: the default selection)
)->list:    # The consent items they turn on: `auto` first, then the tool sources that need consent, in menu order
    "The consent items a value of `auto` and one of `tools` turn on."
    from ..tools.registry import DEFAULT_SELECTION, needs_consent, parse_selection
    chosen = (parse_selection(tools) if isinstance(tools, str) else None) or DEFAULT_SELECTION
    return [AUTO] * (auto is True) + [n for n,on in chosen.items() if on and needs_consent(n)]


def _join(words): return words[0] if len(words) == 1 else ', '.join(words[:-1]) + ' and ' + words[-1]


def describe(items)->str:
    "Consent items in words: 'auto-run and the web tool', 'the web and notebook tools'."
    tools = [i for i in items if i != AUTO]
    words = ['auto-run'] * (AUTO in items) + ([f'the {_join(tools)} tool' + 's' * (len(tools) > 1)] if tools else [])
    return _join(words) if words else 'nothing'


def _who(settings, refused)->str:
    "Who proposed `refused`: this notebook (its binding), the project's settings.ini, or both."
    keys = ['auto'] * (AUTO in refused) + ['tools'] * any(i != AUTO for i in refused)
    by = {settings.source.get(k) for k in keys}
    names = ['this notebook'] * ('notebook binding' in by) + ["the project's settings.ini"] * bool(by - {'notebook binding'})
    text = _join(names or ['this notebook'])
    return text[0].upper() + text[1:]


def screen(
    settings,   # Resolved settings (`settings.load_settings`): changed in place
    allowed,    # Consent items you allowed here beyond your own layers (this kernel's grants, remembered acceptances)
)->list:        # What a notebook or project wanted that was turned off (also `settings.proposed`)
    """Turn off in `settings` the consent items a notebook's binding or a project's settings.ini wants that neither your
    own layers (`settings.yours`) nor `allowed` grant; `settings.consent` then says so in one line."""
    from ..tools.registry import DEFAULT_SELECTION, parse_selection, selection_setting
    yours = getattr(settings, 'yours', {})
    mine = set(wanted(yours.get('auto'), yours.get('tools'))) | set(allowed)
    refused = [i for i in wanted(settings['auto'], settings['tools']) if i not in mine]
    settings.proposed, settings.consent = refused, ''
    if not refused: return refused
    who = _who(settings, refused)
    if AUTO in refused:
        settings['auto'], settings.source['auto'] = False, getattr(yours, 'source', {}).get('auto', 'default')
    if any(i != AUTO for i in refused):
        chosen = dict(parse_selection(settings['tools']) or DEFAULT_SELECTION)
        chosen.update({i: False for i in refused if i in chosen})
        settings['tools'] = selection_setting(chosen)
    on = [n for n,v in (parse_selection(settings['tools']) or DEFAULT_SELECTION).items() if v]
    here = ', '.join(on) or 'no tools'
    settings.consent = f'{who} asks for {describe(refused)}; allowed here: {here}' + ', auto-run' * settings['auto']
    return refused


# -- the acceptances file
def _key(nb)->str: return str(Path(nb).resolve())
def _shown(path)->str:
    try: return str(Path('~')/Path(path).relative_to(Path.home()))
    except (ValueError, RuntimeError): return str(path)


def _notebooks(path)->tuple:
    "(entries by notebook path, warnings): the file's `notebooks` object, if the file is one boopiter could have written."
    try:
        if path.stat().st_size > MAX_BYTES: return {}, [f'{_shown(path)}: larger than {MAX_BYTES:,} bytes; ignored']
        data = json.loads(path.read_text(encoding='utf-8'))   # small, and read when settings are: no stale copy kept
    except FileNotFoundError: return {}, []
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        return {}, [f'{_shown(path)}: unreadable ({type(e).__name__}); ignored (a click in the brain menu writes it anew)']
    if not isinstance(data, dict) or type(data.get('version')) is not int or data['version'] != VERSION \
            or not isinstance(data.get('notebooks'), dict):
        return {}, [f'{_shown(path)}: not a boopiter consent file (version {VERSION}, `notebooks`); ignored']
    return data['notebooks'], []


def _entry(value, where)->tuple:
    "(items, warnings) of one notebook's entry: the known consent items it accepted."
    if not isinstance(value, dict) or not isinstance(value.get('accepted'), list):
        return set(), [f'{where}: not {{"accepted": [...]}}; ignored']
    known, items = _consent_sources() + [AUTO], value['accepted']
    good = {i for i in items if isinstance(i, str) and i in known}
    bad = [i for i in items if not (isinstance(i, str) and i in known)]
    shown = ', '.join(repr(i)[:40] for i in bad[:3]) + (', ...' if len(bad) > 3 else '')
    return good, [f'{where}: {shown} ignored: not {", ".join(known)}'] if bad else []


def read_accepted(
    path:Path,  # The acceptances file (`consent_file`)
    nb,         # The notebook's file; None: no notebook, nothing remembered
)->tuple:       # (items accepted for `nb`, warnings)
    "What you accepted for the notebook `nb` on this machine: its entry in `path`, checked (see the module docstring)."
    if nb is None: return set(), []
    notebooks, warnings = _notebooks(Path(path))
    if (key := _key(nb)) not in notebooks: return set(), warnings
    items, w = _entry(notebooks[key], f'{_shown(path)}, {Path(key).name}')
    return items, warnings + w


def write_accepted(
    path:Path,  # The acceptances file (`consent_file`)
    nb,         # The notebook's file
    items,      # The consent items accepted for it now (empty: its entry is removed)
):
    "Remember `items` as accepted for `nb` (replacing what was), keeping every other notebook's entry that fits."
    path, key = Path(path), _key(nb)
    notebooks, _ = _notebooks(path)
    keep = {k: v for k,v in notebooks.items() if isinstance(k, str) and k != key and not _entry(v, '')[1]}
    if items: keep[key] = dict(accepted=sorted(items), at=datetime.now(timezone.utc).isoformat(timespec='seconds'))
    if len(keep) > MAX_NOTEBOOKS:   # the oldest acceptances go
        keep = dict(sorted(keep.items(), key=lambda kv: str(kv[1].get('at', '')))[-MAX_NOTEBOOKS:])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f'.{path.name}.{os.getpid()}.{threading.get_ident()}')
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w', encoding='utf-8') as f: json.dump(dict(version=VERSION, notebooks=keep), f, indent=1)
    os.replace(tmp, path)


class Consent:
    "What you allowed beyond your own settings: in this kernel (code you ran, clicks), and remembered on this machine."
    def __init__(self, path=None):   # The acceptances file; default `consent_file()`, looked up on each use
        self._path, self.granted, self._lock = path, set(), threading.RLock()

    @property
    def path(self)->Path: return Path(self._path) if self._path else consent_file()

    def remembered(self, nb)->tuple:
        "(items accepted for `nb` on this machine, warnings about the file)."
        return read_accepted(self.path, nb)

    def screen(self, settings, nb)->list:
        "`screen` with what you allowed for `nb`; a problem with the acceptances file becomes a warning and a note."
        remembered, warnings = self.remembered(nb)
        with self._lock: allowed = self.granted | remembered
        refused = screen(settings, allowed)
        settings.warnings += warnings
        settings.notes += warnings + ([f'{settings.consent} (the brain menu\'s Allow, or `%boop allow`, accepts it '
                                       'for this notebook on this machine)'] if refused else [])
        return refused

    def picked(self,
               changes:dict,        # A pick: binding keys and their new values (None removes one)
               nb=None,             # The notebook, for `remember`
               remember:bool=False):# A click in a menu: remembered for `nb` on this machine; code you ran: this kernel only
        """Record what a pick of yours turns on (allowed from now on) and off (no longer allowed): for this kernel, and
        with `remember`, for the notebook on this machine. Call it before the pick changes the binding."""
        on = {AUTO} if changes.get('auto') is True else set()
        off = {AUTO} if 'auto' in changes and changes['auto'] is not True else set()
        if 'tools' in changes:
            now = set(wanted(False, changes['tools'])) if isinstance(changes['tools'], str) and changes['tools'] else set()
            on, off = on | now, off | (set(_consent_sources()) - now)
        if not (on or off): return
        with self._lock:
            self.granted = (self.granted | on) - off
            if remember and nb is not None:
                before, _ = self.remembered(nb)
                if (after := (before | on) - off) != before: write_accepted(self.path, nb, after)

    def accept(self,
               items,     # The consent items to accept (those a notebook proposes, as the user saw them)
               nb=None,   # The notebook: remembered for it on this machine (None: for this kernel only)
              )->list:    # What is accepted now
        "Accept `items` (a click on Allow, or `%boop allow` answered yes): for this kernel, and remembered for `nb`."
        known = set(_consent_sources()) | {AUTO}
        items = {i for i in items if isinstance(i, str) and i in known}
        with self._lock:
            self.granted |= items
            if nb is not None and items:
                before, _ = self.remembered(nb)
                if not items <= before: write_accepted(self.path, nb, before | items)
        return sorted(items)

    def forget(self, nb=None)->list:
        "Take back every acceptance: this kernel's, and the one remembered for `nb`; return what was allowed."
        with self._lock:
            before = self.granted | (self.remembered(nb)[0] if nb is not None else set())
            self.granted = set()
            if nb is not None and self.remembered(nb)[0]: write_accepted(self.path, nb, set())
        return sorted(before)
