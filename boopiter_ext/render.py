"""How a reply looks: Markdown for notebooks, plain text for terminals, provenance for the metadata.

Pure functions of a `stream.Reply`; nothing here touches IPython. The Markdown output is, top to
bottom: a collapsed reasoning section (if any), the answer, and a collapsed details block (model,
tokens, timings, the context ledger). `text/plain` holds the answer alone, exactly as streamed.

Model text is untrusted: raw HTML in it is escaped (Jupyter runs scripts in trusted Markdown
outputs), remote images become links (no silent fetch that could leak context), and links with
schemes other than http(s)/mailto are disarmed. Code blocks and inline code are left untouched.
"""

__all__ = ['safe_markdown', 'close_fences', 'reply_markdown', 'reply_plain', 'reply_metadata', 'reply_bundle',
           'details_html', 'summary_line', 'MIME_KEY']

import re
from html import escape
from .stream import STATUS_NOTES

MIME_KEY = 'boopiter'
_FENCE = re.compile(r'^ {0,3}(`{3,}|~{3,})')
_INLINE = re.compile(r'(`+)(.+?)\1', re.S)
_REMOTE_IMG = re.compile(r'!\[([^\]]*)\]\(\s*<?((?:https?:)?//[^)\s>]+)>?(\s+"[^"]*")?\s*\)', re.I)
_LINK_SCHEME = re.compile(r'\]\(\s*<?([a-zA-Z][a-zA-Z0-9+.\-]*):')
_SAFE_SCHEMES = {'http', 'https', 'mailto'}


def _code_regions(text):
    "Split `text` into ('text'|'code'|'open', str) runs by fenced code blocks; 'open' is a fence not yet closed."
    runs, fence, buf = [], None, []
    for line in text.splitlines(keepends=True):
        m = _FENCE.match(line)
        if fence is None and m:
            runs.append(('text', buf))
            buf, fence = [line], m[1]
        elif fence is not None and m and m[1][0] == fence[0] and len(m[1]) >= len(fence) and not line.strip()[len(m[1]):]:
            buf.append(line)
            runs.append(('code', buf))
            buf, fence = [], None
        else: buf.append(line)
    runs.append(('open' if fence else 'text', buf))
    return [(kind, ''.join(b)) for kind,b in runs if b]


def safe_markdown(
    text:str,  # Markdown written by a model
)->str:        # The same Markdown with raw HTML escaped outside code, remote images as links
    "Make untrusted Markdown safe to render in a trusted Jupyter output."
    return ''.join(_safe_text(s) if kind == 'text' else s for kind,s in _code_regions(text))


def _safe_text(s):
    parts = _INLINE.split(s)
    out = []
    for i in range(0, len(parts), 3):
        prose = parts[i].replace('<', '&lt;')
        prose = _REMOTE_IMG.sub(lambda m: f'[🖼 {m[1] or "image"}]({m[2]})', prose)
        out.append(_LINK_SCHEME.sub(lambda m: m[0] if m[1].lower() in _SAFE_SCHEMES else '](#', prose))
        if i + 2 < len(parts): out.append(parts[i+1] + parts[i+2] + parts[i+1])
    return ''.join(out)


def close_fences(text:str)->str:
    "Close a code fence left open mid-stream, so a half-written block renders as code."
    runs = _code_regions(text)
    if not runs or runs[-1][0] != 'open': return text
    return text + ('' if text.endswith('\n') else '\n') + _FENCE.match(runs[-1][1])[1]


def _fmt_int(n): return f'{n:,}' if isinstance(n, int) else str(n)


def _ledger_html(ledger):
    if not ledger: return ''
    head = (f'Context: {len([i for i in ledger["items"] if i["status"] != "dropped"])} cells, '
            f'~{_fmt_int(ledger["tokens"])} tokens of a {_fmt_int(ledger["window"])}-token window')
    extra = [f'{ledger[k]} {k}' for k in ('clipped', 'dropped') if ledger.get(k)]
    rows = ''.join(f'<li>{escape(i["label"])} · ~{_fmt_int(i["tokens"])} tokens'
                   f'{" · " + escape(i["status"]) if i["status"] != "sent" else ""}</li>' for i in ledger['items'])
    notes = ''.join(f'<li>{escape(n)}</li>' for n in ledger.get('notes', []))
    return f'<li>{escape(head)}{"; " + escape(", ".join(extra)) if extra else ""}<ul>{rows}{notes}</ul></li>'


def summary_line(reply, route:dict=None)->str:
    "One line about the reply: model, tokens, speed."
    bits = [reply.model, f'{_fmt_int(reply.completion_tokens)} tokens']
    if reply.tokens_per_s: bits.append(f'{reply.tokens_per_s:.1f} tok/s')
    if reply.status not in ('done', 'streaming'): bits.append(STATUS_NOTES.get(reply.status, reply.status))
    return ' · '.join(bits)


def details_html(
    reply,              # A finished or streaming `Reply`
    route:dict=None,    # Where it was answered: `name`, `endpoint`, optional `note`
    ledger:dict=None,   # The context ledger from `context.build_context`
)->str:
    "The collapsed details block: model, endpoint, finish reason, tokens, timings and the context ledger."
    route, info = route or {}, reply.info
    rows = [f'Model: {reply.model}' + (f' ({route["name"]} at {route["endpoint"]})' if route.get('endpoint') else ''),
            f'Finish: {info.get("finish_reason") or reply.status}']
    if reply.status not in ('done', 'streaming'): rows.append(f'Status: {STATUS_NOTES.get(reply.status, reply.status)}')
    toks = f'{_fmt_int(info["prompt_tokens"])} prompt + ' if info.get('prompt_tokens') else ''
    rows.append(f'Tokens: {toks}{_fmt_int(reply.completion_tokens)} completion')
    timing = [f'time to first token {reply.ttft:.2f} s'] if reply.ttft is not None else []
    if reply.tokens_per_s: timing.append(f'{reply.tokens_per_s:.1f} tokens/s')
    if timing: rows.append('Speed: ' + ', '.join(timing))
    rows += [f'Note: {n}' for n in (route.get('note'), reply.note) if n]
    items = ''.join(f'<li>{escape(r)}</li>' for r in rows) + _ledger_html(ledger)
    return (f'<details><summary>Reply details · {escape(summary_line(reply))}</summary>\n'
            f'<ul>{items}</ul>\n</details>')


def _marker(reply): return f'*({STATUS_NOTES[reply.status]})*' if reply.status in STATUS_NOTES else ''


def reply_markdown(reply, route:dict=None, ledger:dict=None)->str:
    "The whole reply as Markdown: reasoning section, safe answer (fences closed while streaming), details."
    out = []
    if reply.reasoning.strip():
        out.append(f'<details><summary>Reasoning</summary>\n\n<pre style="white-space: pre-wrap">'
                   f'{escape(reply.reasoning.strip())}</pre>\n\n</details>\n\n')
    answer = safe_markdown(reply.answer.lstrip('\n'))
    out.append(close_fences(answer) if reply.status == 'streaming' else answer)
    if (m := _marker(reply)): out.append(f'\n\n{m}')
    if reply.status != 'streaming': out.append('\n\n' + details_html(reply, route, ledger))
    return ''.join(out)


def reply_plain(reply)->str:
    "The answer exactly as streamed, plus a status marker if it did not finish."
    return reply.answer + (f'\n\n{_marker(reply)}' if _marker(reply) else '')


def reply_metadata(reply, route:dict=None, ledger:dict=None)->dict:
    "Provenance for the output's metadata, under the `boopiter` key."
    route, info = route or {}, reply.info
    md = dict(reply=True, model=reply.model, route=route.get('name'), endpoint=route.get('endpoint'),
              status=reply.status, finish_reason=info.get('finish_reason'),
              prompt_tokens=info.get('prompt_tokens'), completion_tokens=reply.completion_tokens,
              ttft_s=None if reply.ttft is None else round(reply.ttft, 3),
              tokens_per_s=None if not reply.tokens_per_s else round(reply.tokens_per_s, 1))
    if ledger: md['context'] = {k: ledger[k] for k in ('tokens', 'window', 'clipped', 'dropped') if k in ledger}
    return {MIME_KEY: {k: v for k,v in md.items() if v is not None}}


def reply_bundle(reply, route:dict=None, ledger:dict=None)->tuple:
    "(data, metadata) for a display: the same two mime types on every update."
    return ({'text/markdown': reply_markdown(reply, route, ledger), 'text/plain': reply_plain(reply)},
            reply_metadata(reply, route, ledger))
