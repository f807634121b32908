r"""How a reply looks: Markdown for notebooks, plain text for terminals, provenance for the metadata.

Pure functions of a `stream.Reply`; nothing here touches IPython. The Markdown output is, top to
bottom: a collapsed reasoning section (if any, its summary counting words while it streams), the
answer, and a collapsed details block (model, effort, images, tokens, timings, the context ledger).
`text/plain` holds the answer alone, exactly as streamed: it is what a terminal, `nbconvert --to
markdown`'s plain fallback and the next prompt's context read, so reasoning never travels back.

Math written as `\(...\)` or `\[...\]` becomes `$...$` and `$$...$$`, which JupyterLab, Notebook 7,
VS Code and GitHub all render; code blocks keep their language tags, so they are highlighted.

Model text is untrusted: Jupyter renders Markdown outputs of the running session as trusted HTML,
scripts included. So the answer goes through `sanitize.safe_blocks` (rebuilt from its tokens, each top-level
block vetted on its own by the nh3 allow-list sanitizer); while it streams, `sanitize.SafeStream` rebuilds only
the part that is new. The frontend's data carries those blocks (`blocks`), which it renders one by one as they
are; `text/markdown` has them joined. The rest of the Markdown is ours: fixed HTML around text escaped with
`html.escape`, and code in fences nothing inside can close. Tool calls and their output are untrusted too, and
are shown only inside such fences.
"""

__all__ = ['reply_markdown', 'reply_plain', 'reply_metadata', 'reply_data', 'reply_bundle', 'safe_answer',
           'details_html', 'detail_rows', 'reasoning_label', 'round_bundle', 'loop_bundle', 'preview_bundle',
           'summary_line', 'kept_line', 'previous_html', 'MIME_KEY', 'REPLY_MIME']

from html import escape
from textwrap import indent
from .sanitize import SafeStream, fence, inline_text, normalize, safe_blocks
from ..settings import EFFORTS
from ..models.stream import STATUS_NOTES

MIME_KEY = 'boopiter'
REPLY_MIME = 'application/vnd.boopiter.reply+json'   # rendered by the frontend extension; others show text/markdown


def _h(s)->str:
    "Text for our HTML blocks: escaped, and on one line (a blank line would end the block, and what follows is Markdown)."
    return escape(' '.join(normalize(str(s)).split()))


def _fmt_int(n): return f'{n:,}' if isinstance(n, int) else str(n)


def _plural(n, word): return f'{n:,} {word}{"" if n == 1 else "s"}'


def _ledger_head(ledger)->str:
    n = sum(i['status'] not in ('dropped', 'hidden') for i in ledger['items'])
    head = (f'Context: {_plural(n, "cell")}, '
            f'~{_fmt_int(ledger["tokens"])} tokens of a {_fmt_int(ledger["window"])}-token window')
    extra = [f'{ledger[k]} {k}' for k in ('clipped', 'dropped', 'hidden') if ledger.get(k)]
    return head + ('; ' + ', '.join(extra) if extra else '')


def _ledger_items(ledger)->list:
    "One line per cell of the context (and each note), as the details list them."
    return [f'{i["label"]} · ~{_fmt_int(i["tokens"])} tokens' + ''.join(f' · image {size}' for size in i.get('images', ()))
            + (f' · {i["status"]}' if i['status'] != 'sent' else '') for i in ledger.get('items', ())] + list(ledger.get('notes', []))


def _ledger_html(ledger):
    if not ledger: return ''
    return f'<li>{_h(_ledger_head(ledger))}<ul>{"".join(f"<li>{_h(i)}</li>" for i in _ledger_items(ledger))}</ul></li>'


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
    cached = f' ({_fmt_int(info["cached_tokens"])} from the server\'s cache)' if info.get('cached_tokens') else ''
    prompt = f'{_fmt_int(info["prompt_tokens"])} prompt{cached} + ' if info.get('prompt_tokens') else ''
    of = f' (of which {"" if exact else "~"}{_fmt_int(reasoning)} reasoning)' if reasoning else ''
    return f'{prompt}{_fmt_int(reply.completion_tokens)} completion{of}'


def _picked_by(route):
    by = route.get('picked_by')
    return '' if not by else ', picked automatically' if by == 'auto' else f', picked by {by}'


def detail_rows(
    reply,              # A finished or streaming `Reply`
    route:dict=None,    # Where it was answered: `name`, `endpoint`, optional `note`, `reused`
    ledger:dict=None,   # The context ledger from `build.build_context`
)->list:                # Lines of text: model, endpoint, finish reason, tokens, timings, then the context and its cells
    "What the collapsed details block lists, as plain lines (the frontend shows them; `details_html` makes HTML)."
    route, info = route or {}, reply.info
    answered = f'{info["answered_by"]} (dead drop)' if info.get('answered_by') else reply.model
    rows = [REUSED] if route.get('reused') else [kept_line(reply, route)] if route.get('kept') else []
    if route.get('stale'): rows.insert(0, route['stale'])
    rows += [f'Model: {answered}' + (f' ({route["name"]} at {route["endpoint"]})' if route.get('endpoint') else '')
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
    return rows


def details_html(reply, route:dict=None, ledger:dict=None)->str:
    "The collapsed details block (`detail_rows` and the context ledger), as HTML that holds nothing but escaped text."
    items = ''.join(f'<li>{_h(r)}</li>' for r in detail_rows(reply, route, ledger)) + _ledger_html(ledger)
    route = route or {}
    reused = ('stale · ' if route.get('stale') else 'reused · ' if route.get('reused') else
              'kept · ' if route.get('kept') else '')
    return (f'<details><summary>Reply details · {reused}{_h(summary_line(reply))}</summary>\n'
            f'<ul>{items}</ul>\n</details>')


def _marker(reply): return f'*({STATUS_NOTES[reply.status]})*' if reply.status in STATUS_NOTES else ''


def _thinking(reply)->bool: return reply.status == 'streaming' and not reply.answer.strip()


def reasoning_label(reply, text:str)->str:
    "The reasoning's summary: while it streams, it counts the words, so it visibly grows without opening it."
    words = _plural(len(text.split()), 'word')
    if _thinking(reply): return f'Reasoning · thinking… {words}'
    return f'Reasoning · {words}' + (f' · {reply.reasoning_s:.1f} s' if (reply.reasoning_s or 0) >= 0.05 else '')


def _reasoning_html(reply, text):
    "The reasoning, collapsed, under its label."
    return (f'<details class="boopiter-reasoning"><summary>{_h(reasoning_label(reply, text))}</summary>\n\n'
            f'<pre style="white-space: pre-wrap">{escape(normalize(text))}</pre>\n\n</details>\n\n')


def reply_markdown(
    reply,               # A `stream.Reply`
    route:dict=None,     # Where it was answered (see `detail_rows`)
    ledger:dict=None,    # The context ledger
    answer:list=None,    # The answer's safe blocks already made (`safe_answer`); None: made here
)->str:
    "The whole reply as Markdown: reasoning section, safe answer, details."
    out = [f'*↺ {inline_text(kept_line(reply, route))}*\n\n'] if (route or {}).get('kept') else []
    if (route or {}).get('stale'): out.insert(0, f'*↻ {inline_text(route["stale"])}*\n\n')
    if ledger and ledger.get('warning'): out.append(f'*⚠ {inline_text(ledger["warning"])}*\n\n')
    if (reasoning := reply.reasoning.strip()): out.append(_reasoning_html(reply, reasoning))
    out.append('\n\n'.join(safe_answer(reply) if answer is None else answer))
    if reply.status == 'done' and reasoning and not reply.answer.strip():
        out.append('*(the model only reasoned and gave no answer; its reasoning is above)*')
    if reply.note: out.append(f'\n\n*({inline_text(reply.note)})*')
    if (m := _marker(reply)): out.append(f'\n\n{m}')
    if reply.status != 'streaming': out.append('\n\n' + details_html(reply, route, ledger))
    if reply.status != 'streaming' and (prev := (route or {}).get('previous')): out.append('\n\n' + previous_html(prev))
    return ''.join(out)


def previous_html(prev:dict)->str:
    "The reply a fresh answer replaced, folded: its text in a fence nothing inside can close (it is model text)."
    by = f' · {prev["model"]}' if prev.get('model') else ''
    return (f'<details><summary>{_h("Previous answer" + by)}</summary>\n\n{fence(normalize(prev["answer"]))}\n\n'
            '</details>')


def safe_answer(reply, stream:SafeStream=None)->list:
    "The answer as safe Markdown blocks; while it streams, through `stream`, which rebuilds only what is new."
    answer = reply.answer.lstrip('\n')
    return stream.blocks(answer) if _streamed(reply, stream) else safe_blocks(answer)


def _streamed(reply, stream)->bool: return stream is not None and reply.status == 'streaming'


def reply_data(
    reply,               # A `stream.Reply`
    route:dict=None,     # Where it was answered (see `detail_rows`)
    ledger:dict=None,    # The context ledger
    answer:list=None,    # The answer's safe blocks already made (`safe_answer`); None: made here
    open_fence:bool=False,  # Whether the last block is a code fence the model has not closed yet (it streams)
)->dict:                 # The `REPLY_MIME` data: what the frontend's reply view shows (its `ReplyData`)
    """The reply as data for the frontend extension: the answer as the safe blocks it renders one by one, untrusted
    (`blocks`, each checked on its own; the whole is `text/markdown`'s), the rest as text."""
    route, reasoning = route or {}, reply.reasoning.strip()
    d = dict(version=1, kind='reply', model=reply.model, status=reply.status, blocks=safe_answer(reply) if answer is None
             else answer, reasoning=reasoning, reasoning_label=reasoning_label(reply, reasoning) if reasoning else '',
             reasoning_streaming=_thinking(reply), reused=bool(route.get('reused')), summary=summary_line(reply),
             details=[] if reply.status == 'streaming' else
                     detail_rows(reply, route, ledger) + ([_ledger_head(ledger), *[f'  {i}' for i in _ledger_items(ledger)]]
                                                          if ledger and 'window' in ledger else []))
    kept = kept_line(reply, route) if route.get('kept') else ''   # also in `note`, which every frontend shows
    extra = dict(open=open_fence and reply.status == 'streaming', finish_reason=reply.info.get('finish_reason'),
                 note='; '.join(filter(None, [kept, reply.note])),
                 warning=(ledger or {}).get('warning'), cell_id=route.get('cell_id'), kept=route.get('kept'),
                 stale=route.get('stale'),   # a saved reply kept although its context changed: what changed
                 previous=route.get('previous') if reply.status != 'streaming' else None,   # the reply this one replaced
                 ran_blocks=reply.info.get('ran_blocks'),   # the tool loop's: the frontend offers them no Run
                 fixes=route.get('fixes'))   # `%%prompt --fix`'s cell: the frontend offers to put a block in it
    return {**d, **{k: v for k,v in extra.items() if v}}


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
              cached_tokens=info.get('cached_tokens'), evaluated_tokens=info.get('evaluated_tokens'),
              prompt_ms=info.get('prompt_ms'),   # what the server reused of its cache, and what it processed (bench/prefix.py)
              ttft_s=None if reply.ttft is None else round(reply.ttft, 3),
              tokens_per_s=None if not reply.tokens_per_s else round(reply.tokens_per_s, 1),
              answered_by=info.get('answered_by'), session=info.get('session'), prompt_id=info.get('prompt_id'),
              effort=route.get('effort') or None, reasoning_model=reply.model if route.get('reasoning_model') else None,
              **{'reasoning_tokens' if reply.reasoning_tokens[1] else 'reasoning_chunks': reply.reasoning_tokens[0] or None},
              digest=route.get('digest'), model_info=route.get('model_info') or None,
              reasoning=reply.status != 'streaming' and reply.reasoning or None,   # for a reused reply to be drawn again
              note=reply.note or None, reused=route.get('reused'),
              kept=route.get('kept'),   # a saved reply kept: the model that would have answered now, and was not asked
              stale=route.get('stale'),   # kept although its context changed: what changed since, and how to ask again
              previous=route.get('previous'),   # the reply this one replaced ({model, answer}, bounded): recoverable
              tool_calls=info.get('tool_calls') or None,
              reasoning_s=None if reply.reasoning_s is None else round(reply.reasoning_s, 3))
    if (images := [r['size'] for r in (ledger or {}).get('image_records', []) if r['status'] == 'sent']): md['images'] = images
    # asked: the question as sent, its $`variables`' values included; later prompts send this turn as it was sent
    # cells: the fingerprint of the cells the context held (`replay.context_fingerprint`), for a rerun to say what changed
    if ledger: md['context'] = {k: ledger[k] for k in ('tokens', 'window', 'clipped', 'dropped', 'warning', 'asked', 'cells')
                                if k in ledger}
    return {MIME_KEY: {k: v for k,v in md.items() if v is not None}}


def reply_bundle(
    reply,                  # A `stream.Reply`
    route:dict=None,        # Where it was answered (see `detail_rows`)
    ledger:dict=None,       # The context ledger
    stream:SafeStream=None, # While the reply streams: rebuilds only what is new
    markdown:bool=True,     # Include `text/markdown`; a streaming update may leave it to the final one where the
                            # extension renders the reply (the notebook's table of contents parses every Markdown)
)->tuple:                   # (data, metadata)
    "(data, metadata) for a display: the frontend's data, Markdown and plain text, the answer made safe once."
    answer = safe_answer(reply, stream)
    data = {REPLY_MIME: reply_data(reply, route, ledger, answer, _streamed(reply, stream) and stream.open),
            'text/plain': reply_plain(reply)}
    if markdown or reply.status != 'streaming': data['text/markdown'] = reply_markdown(reply, route, ledger, answer)
    return data, reply_metadata(reply, route, ledger)


REUSED = ('Reused: the saved reply to this same conversation (same model, options and context), so no model was '
          'asked; `%%prompt --fresh` asks again')   # a cassette's replies are not marked: replayed must equal recorded


def kept_line(reply, route:dict)->str:
    "The mark of a kept reply: which model wrote it, which one answers now, and how to ask again."
    return (f'Kept: answered by {reply.model}; this notebook now answers with {route["kept"]}; ask again with '
            "`%%prompt --fresh` (or the menu's reuse switch)")


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
    data = dict(version=1, kind='tool_round', round=rnd, steps=[dict(status=s.status, source=s.source, result=s.result,
                                                                      flags=list(s.flags), recovered=s.recovered) for s in steps])
    return {REPLY_MIME: data, 'text/markdown': md, 'text/plain': plain}, {MIME_KEY: {'tool_round': rnd}}


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
    data = dict(version=1, kind='tool_loop', stop=result.stop, note=STOP_NOTES.get(result.stop, ''), rounds=result.rounds,
                steps=[dict(round=s.round, source=s.source, status=s.status) for s in result.steps])
    return {REPLY_MIME: data, 'text/markdown': md, 'text/plain': head}, {MIME_KEY: {'tool_loop': trace}}


_REUSE_NOTES = {   # what running the cell for real would do instead of asking (`Assistant.reusable`)
    'saved': '. Run for real, it shows its saved reply to exactly this request and asks no model (`--fresh` asks)',
    'kept': '. Run for real, it keeps its saved reply by {by}, marked, and asks no model (`-m` or `--fresh` asks)',
    'stale': '. Run for real, it keeps its saved reply, marked stale, and asks no model (`--fresh` asks). {why}',
    'ask': '. Run for real, it asks the model again ({why}); the saved reply it replaces stays, folded, as the previous '
           'answer',
    'replay': '. Run for real, the cassette answers: no model is asked'}


def preview_bundle(
    preview:dict,  # `Assistant.preview`: what a prompt would send
)->tuple:          # (data, metadata) for a display: Markdown and plain text
    "A dry run shown: the model and window, the token estimate, the tools, the ledger, the images, and every message."
    from ..context.messages import msg_images, msg_text
    from ..context.build import estimate_tokens
    route, ledger = preview['route'], preview['ledger']
    tools = ', '.join(preview['tools']) or 'none'
    head = (f'Dry run: nothing was sent. Model: {preview["model"]}' + (f' ({route["name"]})' if route.get('name') else '')
            + f'; ~{_fmt_int(preview["tokens"])} tokens of a {_fmt_int(preview["window"])}-token window, '
            f'{_fmt_int(preview["reserve"])} kept for the reply; tools: {tools}'
            + (' (auto-run)' if preview['auto'] and preview['tools'] else '')
            + (f'; note: {route["note"]}' if route.get('note') else '')
            + _REUSE_NOTES.get(preview.get('reuse'), '').format(by=preview.get('kept_from'), why=preview.get('why')))
    msgs = preview['messages']
    def one(m): return (f'{m["role"]} · ~{_fmt_int(estimate_tokens(msg_text(m)))} tokens'
                        + (f' · {len(msg_images(m))} image{"s" * (len(msg_images(m)) != 1)}' if msg_images(m) else ''))
    images = images_line(ledger)
    md = (f'*{inline_text(head)}*\n\n<details><summary>{_h(_ledger_head(ledger))}</summary>\n<ul>'
          + ''.join(f'<li>{_h(i)}</li>' for i in _ledger_items(ledger)) + '</ul>\n</details>\n\n'
          + (f'*{inline_text("Images: " + images)}*\n\n' if images else '')
          + '\n\n'.join(f'<details><summary>{_h(one(m))}</summary>\n\n{fence(normalize(msg_text(m)))}\n\n</details>'
                        for m in msgs))   # each message folded: a long context is a list of lines, not a wall
    ledger_text = '\n'.join([_ledger_head(ledger), *[f'  {i}' for i in _ledger_items(ledger)]])
    plain = '\n\n'.join([head, ledger_text, *[f'[{one(m)}]\n{msg_text(m)}' for m in msgs]])
    return {'text/markdown': md, 'text/plain': plain}, {MIME_KEY: {'preview': True}}
