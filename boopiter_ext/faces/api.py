"""Ask from code: the same answers as a prompt cell, one call away, in a notebook or a script.

    from boopiter_ext import ask, ask_all, stream
    ask('Name three prime numbers.')                              # the answer's text
    ask('Extract: ' + text, schema=Invoice)                       # an `Invoice`, validated (retried, then AnswerInvalid)
    df['label'] = ask_all('Label as spam or ham: {text}', df, schema=Label)   # rows answered at once, in order
    ask_all('Summarise: {text}', 'notes/')                        # a folder of text files: {name: answer}
    for kind, text in stream('Why is the sky blue?'): ...         # ('reasoning'|'answer', text), then ('details', ...)

With the extension loaded, a call answers as the notebook's prompt cells do (its binding, settings and cassette); in
a script or a kernel without it, with your settings files and the automatic choice. `prompt_llm`, `stream_llm_reply`
and `get_tool_list` are the names boopiter's own docs give. A batch shows a progress bar in Jupyter and a line on a
terminal; an item that failed is a falsy `Failed` in its place; Interrupt keeps what finished, and the same call again
asks only for the rest.
"""

__all__ = ['ask', 'stream', 'ask_all', 'prompt_llm', 'stream_llm_reply', 'get_tool_list', 'Failed', 'NAMESPACE']

import atexit, html, sys, threading
from ..core.batch import Failed

NAMESPACE = ('ask', 'ask_all', 'stream')   # put in the kernel's namespace when the extension loads, never over yours
_own = None   # a script's assistant (no kernel with the extension loaded)
_lock = threading.Lock()


class _NoCells:
    "What ran, for an assistant outside a kernel: nothing."
    current = None
    def cells(self): return []


def _shell():
    ip = sys.modules.get('IPython')
    return ip.get_ipython() if ip is not None else None


def _assistant():
    "The loaded extension's assistant (the notebook's binding, settings and cassette); else this process's own."
    global _own
    ip = _shell()
    magics = ip.magics_manager.registry.get('BoopMagics') if ip is not None else None
    if magics is not None: return magics.assistant
    with _lock:
        if _own is None:
            import os
            from pathlib import Path
            from ..core.assistant import Assistant
            nb = os.environ.get('BOOPITER_NOTEBOOK')
            _own = Assistant(_NoCells(), {}, notebook=lambda: Path(nb) if nb else None)
            atexit.register(_own.close)
        return _own


def ask(prompt:str,          # The question
        model=None,          # A model id; default: the notebook's pick, else the automatic choice
        *,
        schema=None,         # A JSON Schema, a dataclass, a TypedDict or a pydantic model: returns a validated value of it
        context:bool=False,  # Send the notebook above the running cell too
        tools=None,          # True: the selected tool sources; a list of functions: those (the guarded tool loop runs)
        think:str=None,      # Reasoning effort: 'l', 'm', 'h' or 'off'
        images=(),           # Images for a vision model: bytes, file paths or base64
        retries:int=2,       # Requests again when a structured answer does not validate
        must_call:str=None,  # With tools, the first reply must call one: '*' any, or the tool of that name
        **options):          # Other settings for this call: max_tokens, seed, timeout, system_prompt, reuse, cassette
    "The model's answer to `prompt`: its text, or with `schema` a value of it. Errors say what to do next."
    from ..core.asking import Question
    q = Question.of(_assistant(), model, think, tools, schema, context, images, retries, must_call=must_call, **options)
    return q.answer(prompt)[0]


def stream(prompt:str, model=None, **kw):
    "`ask`'s reply as it comes: ('reasoning'|'answer', new text) pairs, then ('details', Details). Same options as `ask`."
    from ..core.asking import Question
    q = Question.of(_assistant(), model, kw.pop('think', None), kw.pop('tools', None), kw.pop('schema', None),
                    kw.pop('context', False), kw.pop('images', ()), kw.pop('retries', 2), **kw)
    return q.stream(prompt)


def ask_all(prompt,               # A template with {field} for each item's fields ({} or {item}: the item); or the prompts
            items=None,           # A list, a dict, a pandas Series or DataFrame (its rows), or a folder or glob of text files
            model=None,           # A model id, or a list of them: the batch spreads over them (one model, several servers)
            *,
            parallel:int=None,    # Requests at once on each server; default: the `parallel` setting, else chosen for you
            spread:bool=False,    # Spread over every server in reach that serves the model (Ollama's, named endpoints')
            progress:bool=True,   # A progress bar in Jupyter, a line on a terminal
            schema=None, context:bool=False, tools=None, think:str=None, retries:int=2,
            **options):           # As `ask`'s
    """An answer for every item, in the input's order and shape (a list; a dict by key or file; a Series with the input's
    index). A failed item is a falsy `Failed` in its place; Interrupt keeps what finished, and the same call again asks
    only for what is missing. Every prompt is made, and checked, before the first request."""
    from ..core.asking import Question
    from ..core.batch import fill, items_of
    if items is None:
        if isinstance(prompt, str): raise TypeError('ask_all takes a template and the items, or a list of prompts: '
                                                    "ask_all('Label: {text}', df), ask_all(['Q1', 'Q2']).")
        rows, index, shape = items_of(prompt)
        prompts, template = [p if isinstance(p, str) else str(p) for p in rows], None
    else:
        rows, index, shape = items_of(items)
        prompts, template = fill(prompt, rows, index), prompt
    q = Question.of(_assistant(), model, think, tools, schema, context, (), retries, spread=spread, **options)
    return shape(q.ask_many(prompts, _progress() if progress else None, parallel, template))


def _progress():
    "A batch's progress as this place shows it: a bar updated in place in Jupyter, a line on a terminal."
    from ..core.batch import TextProgress
    ip = _shell()
    return _JupyterProgress() if ip is not None and hasattr(ip, 'kernel') else TextProgress()


class _JupyterProgress:
    "A progress bar with count, speed and time left, updated in place (from the calling thread: its output is its cell's)."
    every = 0.25

    def __init__(self):
        self.handle, self.last = None, 0.0

    def __call__(self, p):
        from time import monotonic
        if threading.current_thread() is not threading.main_thread() and not p.finished: return   # the caller's loop tells
        if not p.finished and monotonic() - self.last < self.every: return
        self.last = monotonic()
        from IPython.display import display
        line = p.summary() if p.finished else p.line()
        bar = '' if p.finished else f'<progress value="{p.done + p.failed}" max="{max(p.total, 1)}"></progress> '
        out = {'text/html': f'<div class="boopiter-batch">{bar}<code>{html.escape(line)}</code></div>', 'text/plain': line}
        if self.handle is None: self.handle = display(out, raw=True, display_id=True)
        else: self.handle.update(out, raw=True)


def prompt_llm(context:str,             # The prompt
               model:str=None,          # A model id; default: the notebook's pick, else the automatic choice
               tools:list=None,         # Functions the model may call (the guarded tool loop)
               think:str=None,          # Reasoning effort: 'l', 'm' or 'h'
               keep_alive_min:int=None, # Minutes Ollama keeps the model loaded
               num_ctx:int=None,        # Context window in tokens
              )->tuple:                 # (content, details_html)
    "boopiter's `prompt_llm`: the reply's text, and its details (model, tokens, timings) as HTML to keep beside it."
    from ..core.asking import Question
    q = Question.of(_assistant(), model, think, list(tools) if tools else None, **_seed_options(keep_alive_min, num_ctx))
    answer, details = q.answer(context)
    return answer, details.html


def stream_llm_reply(context:str, model:str=None, tools:list=None, think:str=None, images:list=None,
                     keep_alive_min:int=None, num_ctx:int=None):
    "boopiter's `stream_llm_reply`: ('delta', text) as the answer grows, then ('final', content, details_html)."
    from ..core.asking import Question
    q = Question.of(_assistant(), model, think, list(tools) if tools else None, images=images or (),
                    **_seed_options(keep_alive_min, num_ctx))
    for kind, value in q.stream(context):
        if kind == 'answer': yield 'delta', value
        elif kind == 'details': yield 'final', value.answer, value.html


def _seed_options(keep_alive_min, num_ctx)->dict:
    return {k: v for k,v in dict(keep_alive=None if keep_alive_min is None else str(keep_alive_min),
                                 context_size=num_ctx).items() if v is not None}


def get_tool_list(selection:dict=None,   # Source name -> selected (`%boop tools` lists them); None: the default selection
                  ctx=None,              # A `ToolContext`; default: this kernel's variables and cells, the working folder
                 )->list:
    "The tools a prompt would offer: callables, described to the model as Python. Outside a prompt too."
    from ..tools.registry import DEFAULT_SELECTION, get_tool_list as tools_of, selection_setting
    if ctx is not None: return tools_of(selection, ctx)
    a = _assistant()
    cell = None if selection is None else dict(tools=selection_setting({**DEFAULT_SELECTION, **selection}))
    s = a.settings(cell, a.notebook())
    return list(a.tool_list(s, a.notebook()).values())
