"""Where a tool or an image link may read: inside the notebook's folder, and never a hidden file.

    confine(Path('nbs'), 'data/x.csv')     # Path('/abs/nbs/data/x.csv')
    confine(Path('nbs'), '../secret')      # "error: `../secret` is outside the notebook's folder; ..."

Symlinks are followed before the check, so a link cannot lead out; `~`, absolute paths outside the folder and
dot-files (`.env`, `.git/config`, `.ssh`) are refused. Refusals are `error: ...` text, which a tool returns as is.
"""

__all__ = ['confine']

import os
from pathlib import Path


def _within(root, p): return p is not None and (p == root or root in p.parents)


def _resolve(p):
    "`p` with every symlink followed, or None for a symlink loop or a bad path."
    try: return p.resolve()
    except (OSError, RuntimeError, ValueError): return None


def confine(
    root:Path,  # The folder to stay inside
    path,       # A path relative to `root`, or absolute
)->Path|str:    # The path with every symlink followed, or an `error: ...` string saying why it is refused
    "Resolve `path` inside `root`: no leaving it (`../`, absolute paths, symlinks out, `~`), no dot-files."
    if not isinstance(path, (str, os.PathLike)): return f'error: path must be a string, not {type(path).__name__}'
    s = os.fspath(path).strip() or '.'
    if s.startswith('~'): return f"error: `{s}`: home-folder paths are not allowed; use one under the notebook's folder"
    p = _resolve(root/s)
    if p is None: return f'error: `{s}` cannot be resolved (a symlink loop?)'
    if not _within(root, p): return f"error: `{s}` is outside the notebook's folder; tools only see files under it"
    if any(part.startswith('.') for part in p.relative_to(root.resolve()).parts):   # .env, .git/config, .ssh: secrets
        return f'error: `{s}` is hidden (a dot-file or dot-folder); tools do not read those'
    return p
