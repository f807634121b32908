r"""How a reply looks: Markdown for notebooks, plain text for terminals, provenance for the metadata.

Pure functions of a `stream.Reply`; nothing here touches IPython. The Markdown output is, top to
bottom: a collapsed reasoning section (if any, its summary counting words while it streams), the
answer, and a collapsed details block (model, effort, images, tokens, timings, the context ledger).
`text/plain` holds the answer alone, exactly as streamed: it is what a terminal, `nbconvert --to
markdown`'s plain fallback and the next prompt's context read, so reasoning never travels back.

Math written as `\(...\)` or `\[...\]` becomes `$...$` and `$$...$$`, which JupyterLab, Notebook 7,
VS Code and GitHub all render; code blocks keep their language tags, so they are highlighted.

Model text is untrusted: Jupyter renders Markdown outputs of the running session as trusted HTML,
scripts included. So the answer goes through `sanitize.safe_markdown` (rebuilt from its tokens, vetted by the
nh3 allow-list sanitizer); while it streams, `sanitize.SafeStream` rebuilds only the part that is new. The rest
of the Markdown is ours: fixed HTML around text escaped with `html.escape`, and code in fences nothing inside can
close. Tool calls and their output are untrusted too, and are shown only inside such fences.
"""

__all__ = ['safe_markdown', 'reply_markdown', 'reply_plain', 'reply_metadata', 'reply_bundle', 'details_html',
           'summary_line', 'MIME_KEY']

from html import escape
from textwrap import indent
from .sanitize import SafeStream, fence, inline_text, normalize, safe_markdown
from .settings import EFFORTS
from .stream import STATUS_NOTES

MIME_KEY = 'boopiter'


def _h(s)->str:
    "Text for our HTML blocks: escaped, and on one line (a blank line would end the block, and what follows is Markdown)."
    return escape(' '.join(normalize(str(s)).split()))


def _fmt_int(n): return f'{n:,}' if isinstance(n, int) else str(n)


def _plural(n, word): return f'{n:,} {word}{"" if n == 1 else "s"}'


def _ledger_html(ledger):
    if not ledger: return ''
    n = sum(i['status'] != 'dropped' for i in ledger['items'])
    head = (f'Context: {_plural(n, "cell")}, '
            f'~{_fmt_int(ledger["tokens"])} tokens of a {_fmt_int(ledger["window"])}-token window')
    extra = [f'{ledger[k]} {k}' for k in ('clipped', 'dropped') if ledger.get(k)]
    rows = ''.join(f'<li>{_h(i["label"])} · ~{_fmt_int(i["tokens"])} tokens'
                   + ''.join(f' · image {_h(size)}' for size in i.get('images', ()))
                   + f'{" · " + _h(i["status"]) if i["status"] != "sent" else ""}</li>' for i in ledger['items'])
    notes = ''.join(f'<li>{_h(n)}</li>' for n in ledger.get('notes', []))
    return f'<li>{_h(head)}{"; " + _h(", ".join(extra)) if extra else ""}<ul>{rows}{notes}</ul></li>'


def summary_line(reply, route:dict=None)->str:
    "One line about the reply: model, tokens, speed."
    bits = [reply.model, f'{_fmt_int(reply.completion_tokens)} tokens']
    if reply.tokens_per_s: bits.append(f'{reply.tokens_per_s:.1f} tok/s')
    if reply.status not in ('done', 'streaming'): bits.append(STATUS_NOTES.get(reply.status, reply.status))
    return ' · '.join(bits)


def images_line(ledger:dict=None)->str:
    "The images of the context in a line: how many went to the model, their sizes, and why the others did not."
    records = (ledger or {}).get('image_records') or []
    if not records: return ''
    sent = [r for r in records if r['status'] == 'sent']
    sizes = [r['size'] + (f' (scaled from {r["original"]})' if r.get('original') else '') for r in sent]
    bits = [f'{len(sent)} sent ({", ".join(sizes)})'] if sent else []
    why = {}
    for r in records:
        if r['status'] != 'sent': why.setdefault(r['why'], []).append(r['what'])
    bits += [f'{len(whats)} not sent: {reason}' for reason, whats in why.items()]
    return '; '.join(bits)


def _effort_line(route):
    effort = route.get('effort')
    level = 'off' if effort == 'off' else EFFORTS.get(effort[:1], effort) if effort else ''
    who = 'the reasoning model' if route.get('reasoning_model') else ''
    return ', '.join(filter(None, [who, level and f'effort {level}']))


def _tokens_line(reply):
    info, (reasoning, exact) = reply.info, reply.reasoning_tokens
    prompt = f'{_fmt_int(info["prompt_tokens"])} prompt + ' if info.get('prompt_tokens') else ''
    of = f' (of which {"" if exact else "~"}{_fmt_int(reasoning)} reasoning)' if reasoning else ''
    return f'{prompt}{_fmt_int(reply.completion_tokens)} completion{of}'


def _picked_by(route):
    by = route.get('picked_by')
    return '' if not by else ', picked automatically' if by == 'auto' else f', picked by {by}'


def details_html(
    reply,              # A finished or streaming `Reply`
    route:dict=None,    # Where it was answered: `name`, `endpoint`, optional `note`
    ledger:dict=None,   # The context ledger from `context.build_context`
)->str:
    "The collapsed details block: model, endpoint, finish reason, tokens, timings and the context ledger."
    route, info = route or {}, reply.info
    reused = [REUSED] if route.get('reused') else []
    answered = f'{info["answered_by"]} (dead drop)' if info.get('answered_by') else reply.model
    rows = [f'Model: {answered}' + (f' ({route["name"]} at {route["endpoint"]})' if route.get('endpoint') else '')
            + _picked_by(route),
            *[f'{label}: {info[k]}' for k,label in (('session', 'Session'), ('prompt_id', 'Prompt id')) if info.get(k)],
            f'Finish: {info.get("finish_reason") or reply.status}']
    if reply.status not in ('done', 'streaming'): rows.append(f'Status: {STATUS_NOTES.get(reply.status, reply.status)}')
    if (effort := _effort_line(route)): rows.append(f'Reasoning: {effort}')
    if (images := images_line(ledger)): rows.append(f'Images: {images}')
    rows.append(f'Tokens: {_tokens_line(reply)}')
    timing = [f'time to first token {reply.ttft:.2f} s'] if reply.ttft is not None else []
    if reply.reasoning_s is not None: timing.append(f'reasoning {reply.reasoning_s:.1f} s')
    if reply.tokens_per_s: timing.append(f'{reply.tokens_per_s:.1f} tokens/s')
    if timing: rows.append('Speed: ' + ', '.join(timing))
    rows += [f'Note: {n}' for n in (route.get('note'),) if n]
    items = ''.join(f'<li>{_h(r)}</li>' for r in reused + rows) + _ledger_html(ledger)
    return (f'<details><summary>Reply details · {"reused · " * bool(reused)}{_h(summary_line(reply))}</summary>\n'
            f'<ul>{items}</ul>\n</details>')


def _marker(reply): return f'*({STATUS_NOTES[reply.status]})*' if reply.status in STATUS_NOTES else ''


def _reasoning_html(reply, text):
    "The reasoning, collapsed; while it streams, its summary counts the words, so it visibly grows without opening it."
    words = _plural(len(text.split()), 'word')
    summary = f'Reasoning · thinking… {words}' if reply.status == 'streaming' and not reply.answer.strip() else \
              f'Reasoning · {words}' + (f' · {reply.reasoning_s:.1f} s' if (reply.reasoning_s or 0) >= 0.05 else '')
    return (f'<details class="boopiter-reasoning"><summary>{_h(summary)}</summary>\n\n'
            f'<pre style="white-space: pre-wrap">{escape(normalize(text))}</pre>\n\n</details>\n\n')


def reply_markdown(
    reply,               # A `stream.Reply`
    route:dict=None,     # Where it was answered (see `details_html`)
    ledger:dict=None,    # The context ledger
    stream:SafeStream=None, # While the reply streams: rebuilds only what is new (None: the whole answer, once)
)->str:
    "The whole reply as Markdown: reasoning section, safe answer, details."
    out = [f'*⚠ {inline_text(ledger["warning"])}*\n\n'] if ledger and ledger.get('warning') else []
    if (reasoning := reply.reasoning.strip()): out.append(_reasoning_html(reply, reasoning))
    answer = reply.answer.lstrip('\n')
    out.append(stream(answer) if stream is not None and reply.status == 'streaming' else safe_markdown(answer))
    if reply.status == 'done' and reasoning and not reply.answer.strip():
        out.append('*(the model only reasoned and gave no answer; its reasoning is above)*')
    if reply.note: out.append(f'\n\n*({inline_text(reply.note)})*')
    if (m := _marker(reply)): out.append(f'\n\n{m}')
    if reply.status != 'streaming': out.append('\n\n' + details_html(reply, route, ledger))
    return ''.join(out)


def reply_plain(reply)->str:
    "The answer exactly as streamed, plus a status marker if it did not finish."
    return reply.answer + (f'\n\n{_marker(reply)}' if _marker(reply) else '')


def reply_metadata(reply, route:dict=None, ledger:dict=None)->dict:
    "Provenance for the output's metadata, under the `boopiter` key."
    route, info = route or {}, reply.info
    md = dict(reply=True, model=reply.model, model_source=route.get('picked_by'), route=route.get('name'),
              endpoint=route.get('endpoint'),
              status=reply.status, finish_reason=info.get('finish_reason'),
              prompt_tokens=info.get('prompt_tokens'), completion_tokens=reply.completion_tokens,
              ttft_s=None if reply.ttft is None else round(reply.ttft, 3),
              tokens_per_s=None if not reply.tokens_per_s else round(reply.tokens_per_s, 1),
              answered_by=info.get('answered_by'), session=info.get('session'), prompt_id=info.get('prompt_id'),
              effort=route.get('effort') or None, reasoning_model=reply.model if route.get('reasoning_model') else None,
              **{'reasoning_tokens' if reply.reasoning_tokens[1] else 'reasoning_chunks': reply.reasoning_tokens[0] or None},
              digest=route.get('digest'), model_info=route.get('model_info') or None,
              reasoning=reply.status != 'streaming' and reply.reasoning or None,   # for a reused reply to be drawn again
              note=reply.note or None, reused=route.get('reused'),
              tool_calls=info.get('tool_calls') or None,
              reasoning_s=None if reply.reasoning_s is None else round(reply.reasoning_s, 3))
    if (images := [r['size'] for r in (ledger or {}).get('image_records', []) if r['status'] == 'sent']): md['images'] = images
    if ledger: md['context'] = {k: ledger[k] for k in ('tokens', 'window', 'clipped', 'dropped', 'warning') if k in ledger}
    return {MIME_KEY: {k: v for k,v in md.items() if v is not None}}


def reply_bundle(reply, route:dict=None, ledger:dict=None, stream:SafeStream=None)->tuple:
    "(data, metadata) for a display: the same two mime types on every update."
    return ({'text/markdown': reply_markdown(reply, route, ledger, stream), 'text/plain': reply_plain(reply)},
            reply_metadata(reply, route, ledger))


REUSED = ('Reused: the saved reply to this same conversation (same model, options and context), so no model was '
          'asked; `%%prompt --fresh` asks again')   # a cassette's replies are not marked: replayed must equal recorded


_STEP_MARK = {'ok': '✓', 'flagged': '⚠'}


def _step_md(step)->str:
    "A call and its result, both in fences no text inside can close (model code and tool output are untrusted)."
    result = step.result if len(step.result) <= 600 else step.result[:600] + ' …'
    head = f'{_STEP_MARK.get(step.status, "✗")} {inline_text(step.status)}' + (' (recovered from text)' if step.recovered else '')
    return f'- {head}\n\n{indent(fence(normalize(step.source), "python"), "  ")}\n\n{indent(fence(normalize(result)), "  ")}'


def _one_line(source):
    lines = source.strip().splitlines() or ['']
    return lines[0][:80] + (' …' if len(lines) > 1 or len(lines[0]) > 80 else '')


def round_bundle(rnd:int, steps:list)->tuple:
    "(data, metadata) for the calls of one round of the tool loop, as they ran."
    md = f'**Tool calls, round {rnd}**\n\n' + '\n'.join(map(_step_md, steps))
    plain = '\n'.join(f'[{s.status}] {s.source}\n{s.result}' for s in steps)
    return {'text/markdown': md, 'text/plain': plain}, {MIME_KEY: {'tool_round': rnd}}


STOP_NOTES = {'answered': 'the model answered', 'max rounds': 'it reached the most rounds allowed (`max_rounds`); '
                                                                 'the last round\'s calls were not run',
              'repeating itself': 'the model repeated a call it had already made',
              'truncated': 'the reply was cut off (by `max_tokens` or the context window), so its code did not run',
              'context exceeded': 'the conversation no longer fits the context window',
              'cancelled': 'you interrupted it; tools that ran keep their effects',
              'failed': 'the model could not be asked again (see the error below)'}


def loop_bundle(result)->tuple:
    "(data, metadata) for how the tool loop ended: the stop reason and every proposed call, with the trace kept."
    n = len(result.steps)
    head = (f'Tool loop · stopped: {result.stop} · {result.rounds} round{"s" * (result.rounds != 1)} · '
            f'{n} call{"s" * (n != 1)}')
    rows = ''.join(f'<li>round {s.round}: <code>{_h(_one_line(s.source))}</code> · {_h(s.status)}</li>'
                   for s in result.steps)
    md = (f'<details><summary>{_h(head)}</summary>\n<ul><li>Stop: {_h(result.stop)}: '
          f'{_h(STOP_NOTES.get(result.stop, ""))}</li>{rows}</ul>\n</details>')
    trace = dict(stop=result.stop, rounds=result.rounds, steps=[s.as_dict() for s in result.steps])
    return {'text/markdown': md, 'text/plain': head}, {MIME_KEY: {'tool_loop': trace}}
