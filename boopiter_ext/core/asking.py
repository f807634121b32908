"""Asking from code: one question, a stream of one, or a batch over many items, through the prompt cells' own pipeline
(settings and binding, routes, think levels, the cassette, reply reuse, the tool loop) without a cell to show it in.

    q = Question.of(assistant, model='qwen3:1.7b', schema=Invoice)   # checked before any request: model, schema, options
    q.ask('Extract the invoice: ...')       # an `Invoice`; AnswerInvalid once the retries are spent
    for kind, text in q.stream('Why?'): ... # ('reasoning'|'answer', new text) as it comes, then ('details', Details)
    q.ask_many(prompts, progress=...)       # values or `batch.Failed`, in input order, each server at its own limit

A question asked from code reads no notebook unless `context=True` (then the notebook above the running cell), and
expands no `$name` or `&tool` in its text: a batch's prompts carry data, and data must not reach your variables. A
finished reply is kept by its request digest (`Assistant.memory`, beside the notebook's saved replies, `cache_dir` and
the cassette), so asking again asks nothing.
"""

__all__ = ['Question', 'Details', 'Sink']

import threading
from dataclasses import dataclass, field
from ..context.build import Cell
from ..errors import AnswerInvalid, BoopError, ReplyInterrupted, SettingsError
from .assistant import _HERE, _Stopper, folder

_OPTIONS = ('model', 'think', 'max_tokens', 'context_size', 'seed', 'timeout', 'system_prompt', 'max_rounds', 'parallel',
            'cassette', 'cassette_file', 'cache_dir', 'reuse')   # settings a call may set for itself


@dataclass
class Details:
    "What a reply asked from code was: its model, how it ended, where it came from, its text, and its tokens and timings."
    model: str
    status: str            # 'done', 'interrupted', 'stalled', 'broken', 'too long' or 'error'
    via: str               # 'asked', 'saved' (reused: this kernel's memory, the notebook, `cache_dir`) or 'cassette'
    answer: str = ''
    reasoning: str = ''
    info: dict = field(default_factory=dict)   # the server's counts: prompt_tokens, completion_tokens, ...
    tries: int = 1         # requests made for a structured answer that validated (retries included)
    route: dict = field(default_factory=dict, repr=False)    # where it was answered, as a prompt's details say it
    ledger: dict = field(default_factory=dict, repr=False)   # what was sent
    reply: object = field(default=None, repr=False)          # the `stream.Reply`, with its timings

    @classmethod
    def of(cls, reply, r:dict, tries=1):
        return cls(reply.model, reply.status, getattr(reply, 'via', 'asked'), reply.answer, reply.reasoning,
                   dict(reply.info), tries, r['route'], r['ledger'], reply)

    @property
    def html(self)->str:
        "The reply's details as a prompt cell folds them (model, tokens, timings, context), as safe HTML."
        from ..render.reply import details_html
        return details_html(self.reply, self.route, self.ledger)


class Sink:
    "The view of a reply asked from code: nothing is shown; `on_update(reply)` hears it grow; `final` gives its output."
    interval = 0.05

    def __init__(self, route:dict, ledger:dict, on_update=None):
        self.route, self.ledger, self.on_update = route, ledger, on_update

    def waiting(self, model, note='', progress=None): pass
    def refresh(self, reply): pass

    def update(self, reply):
        if self.on_update is not None: self.on_update(reply)

    def show(self, data:dict, md:dict)->dict:
        from ..redact import masked
        return dict(output_type='display_data', data=masked(data), metadata=masked(md))

    @staticmethod
    def bundle(reply, route, ledger)->tuple:
        "(data, metadata) of a reply nobody sees: its text and provenance, what reuse reads back; no Markdown made."
        from ..render.reply import reply_metadata, reply_plain
        return {'text/plain': reply_plain(reply)}, reply_metadata(reply, route, ledger)

    def final(self, reply)->dict:
        self.update(reply)
        return self.show(*self.bundle(reply, self.route, self.ledger))


def _checked(options:dict)->dict:
    "The call's own settings, each checked as a settings file's are: `SettingsError` naming the first that cannot work."
    from ..settings import RULES, check_setting
    for k,v in options.items():
        if v is not None and not check_setting(k, v):
            raise SettingsError(f'{k}={v!r} cannot work: give {RULES[k][1]}.', setting=k)
    return {k: v for k,v in options.items() if v is not None}


def _images(images, info, model, max_side)->list:
    "Content parts for `images` (bytes, a file path, or base64), fitted; `SettingsError` for a model that cannot see."
    if not images: return []
    if not info.get('vision'):
        caps = ', '.join(info.get('capabilities') or ()) or 'not known'
        raise SettingsError(f'{model} cannot see images (its capabilities: {caps}); pick a vision model with `model=`, '
                            'or leave `images` out.', setting='model')
    from ..context.images import fit_image
    from ..context.messages import image_part
    from pathlib import Path
    parts = []
    for n, src in enumerate(images):
        try: im = fit_image(Path(src) if isinstance(src, Path) else src, max_side)
        except ValueError as e: raise SettingsError(f'images[{n}] cannot be sent: {e}.', setting='images') from None
        parts.append(image_part(im.data, im.mime))
    return parts


def _bare(model_id:str)->str:
    "A model's name whoever serves it: `@lab/qwen3` and `qwen3:latest` are both `qwen3:latest`."
    from ..models.routes import ollama_tag, split_endpoint
    return ollama_tag((split_endpoint(model_id) or (None, model_id))[1])


def _servers_of(a, settings, model:str)->list:
    "Every id in reach that serves `model` by name (Ollama's, each named endpoint's), as the catalog lists them now."
    want = _bare(model)
    return [e.id for e in a.catalog.refresh(settings, follow=False).entries if not e.offline and _bare(e.id) == want]


class Question:
    "What every question of one call shares: the assistant, its settings and plan, the schema, tools and options."
    def __init__(self, assistant, settings, plan, schema=None, context=False, images=(), retries=2, tools=None,
                 must_call=None):
        self.a, self.settings, self.plan, self.schema = assistant, settings, plan, schema
        self.context, self.retries, self.tools = context, retries, tools or {}
        self.others = []   # the same question on other models: the lanes a batch spreads over
        self.must_call = must_call   # the tool loop's first reply must call a tool ('*') or this one
        self.images = _images(images, plan['info'], plan['model'], settings['image_size'])

    @classmethod
    def of(cls,
           assistant,           # The `Assistant` (a kernel's, or a script's own)
           model=None,          # A model id; default: the notebook's pick, else the automatic choice. A list of ids:
                                # a batch spreads over them (the same model on several servers), the first answers `ask`
           think:str=None,      # Reasoning effort: 'l', 'm', 'h' or 'off'
           tools=None,          # None: none; True: the selected tool sources; a list of functions: those
           schema=None,         # A JSON Schema, a dataclass, a TypedDict or a pydantic model: the answer is a value of it
           context:bool=False,  # Send the notebook above the running cell too
           images=(),           # Images for a vision model: bytes, file paths, or base64
           retries:int=2,       # Requests again when a structured answer does not validate
           must_call:str=None,  # With tools, the first reply must call one: '*' any, or the tool of that name
           spread:bool=False,   # A batch spreads over every server in reach that serves the model (Ollama's, the named
                                # endpoints', as listed now), each at its own limit
           **options,           # Other settings for this call: max_tokens, seed, timeout, system_prompt, parallel, ...
          )->'Question':
        "Everything checked before any request: the options, the schema, the model (it must exist) and the images."
        from .structured import Schema
        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown: raise SettingsError(f'ask takes no option {", ".join(unknown)}; it takes model, think, tools, schema, '
                                        f'context, images, retries and {", ".join(o for o in _OPTIONS if o not in ("model", "think"))}.')
        if not isinstance(retries, int) or isinstance(retries, bool) or not 0 <= retries <= 10:
            raise SettingsError(f'retries={retries!r}: give a whole number from 0 to 10.', setting='retries')
        spec = Schema.of(schema) if schema is not None else None
        models = list(model) if isinstance(model, (list, tuple)) else [model]
        if not models or len(set(models)) != len(models) or len(models) > 32:
            raise SettingsError(f'model={model!r}: give one model id, or a list of up to 32 different ones.', setting='model')
        cell = _checked(dict(model=models[0], think=think, **options))
        for m in models[1:]: _checked(dict(model=m))
        own = {}
        if tools is None or tools is False: cell['tools'] = 'none'
        elif tools is not True:
            from ..tools.registry import unofferable
            for fn in (tools if isinstance(tools, (list, tuple)) else [tools]):
                if (why := unofferable(fn)): raise SettingsError(f'tools: {getattr(fn, "__name__", fn)!r} is {why}.',
                                                                 setting='tools')
                own[fn.__name__] = fn
            cell['tools'] = 'none'
        if tools is not None and tools is not False: cell['auto'] = True   # asked for by the caller: the guarded loop runs
        a = assistant
        settings = a.settings(cell, a.notebook())
        plan = a.plan(settings, offer=tools is True, strict=True)   # an unknown model fails here, before any request
        tools = {**plan['tools'], **own}
        if must_call is not None and not tools: raise SettingsError('must_call needs tools=.', setting='tools')
        q = cls(a, settings, plan, spec, context, images, retries, tools, must_call)
        if spread: models += [m for m in _servers_of(a, settings, plan['model']) if m not in models]
        for m in models[1:]:
            s = a.settings({**cell, 'model': m}, a.notebook())
            q.others.append(cls(a, s, a.plan(s, offer=False, strict=True), spec, context, images, retries, tools,
                                must_call))
        return q

    # -- one question
    def _request(self, prompt:str)->dict:
        "The messages and ledger of `prompt`: alone, or below the notebook above the running cell (`context`)."
        a, p, s = self.a, self.plan, self.settings
        nb = a.notebook()
        cells = a.cells_above(nb) if self.context else []
        asked = prompt + ('\n\n' + self.schema.instruction if self.schema is not None else '')
        msgs, ledger = a.context(asked, s, p['info'], cells, self.tools, folder(nb), model=p['model'])
        if self.images: msgs[-1] = {**msgs[-1], 'content': [*self.images, {'type': 'text', 'text': msgs[-1]['content']}]
                                    if isinstance(msgs[-1]['content'], str) else [*self.images, *msgs[-1]['content']]}
        by = 'the call' if p['route'].get('picked_by') == 'cell option' else p['route'].get('picked_by')   # `model=`
        route = dict(p['route'], note='', cell_id=None, picked_by=by)
        return dict(msgs=msgs, ledger=ledger, route=route)

    def _reply(self, msgs, ledger, route, stopper, on_update=None, user_text=None):
        "One reply to `msgs`: replayed, reused or asked (the tool loop's when tools are given); faults raise."
        a, p, s = self.a, self.plan, self.settings
        def view(route, ledger): return Sink(route, ledger, on_update)
        token = _HERE.set(Cell(user_text or '', 'code', origin='code'))   # its own record: no cell's outputs touched
        try:
            if self.tools:
                return a._tool_loop(user_text, p['model'], msgs, s, p['info'], route, ledger, self.tools, view, None, None,
                                    self.must_call)
            fmt = self.schema.json if self.schema is not None else None
            return a._stream(p['model'], msgs, s, p['info'], route, ledger, view, first=False, fmt=fmt, stopper=stopper)
        finally: _HERE.reset(token)

    def answer(self,
               prompt:str,           # The question
               stopper=None,         # A `_Stopper` that hangs the request up (a batch's interrupt); default: its own
               on_update=None,       # on_update(reply) as the reply grows
               user_text:str=None,   # The user's own words, the only text that may ask a tool for a side effect
              )->tuple:              # (value, Details): the answer text, or the schema's value
        "Ask `prompt` once, and for a structured answer again (up to `retries`) while it does not validate."
        from .structured import Invalid
        from ..context.messages import mk_msg
        if not isinstance(prompt, str) or not prompt.strip():
            raise SettingsError(f'The prompt is {"empty" if isinstance(prompt, str) else type(prompt).__name__}: ask a '
                                'question in words.', setting='prompt')
        stopper = stopper or _Stopper(None)
        r = self._request(prompt)
        msgs = r['msgs']
        for n in range(self.retries + 1):
            reply = self._reply(msgs, r['ledger'], r['route'], stopper, on_update, user_text or prompt)
            if reply.status == 'interrupted': raise ReplyInterrupted('Interrupted: ' + (
                f'the partial answer had {len(reply.answer):,} characters.' if reply.answer else 'no answer yet.'))
            if self.schema is None: return reply.answer, Details.of(reply, r)
            try: return self.schema.parse(reply.answer), Details.of(reply, r, n + 1)
            except Invalid as e: why = str(e)
            msgs = [*msgs, mk_msg(reply.answer[:4000], 'assistant'),
                    mk_msg(f'That answer does not follow the schema: {why}. Answer again with the JSON value only.')]
        raise AnswerInvalid(f'{self.plan["model"]} gave no answer that follows the schema {self.schema.name} in '
                            f'{self.retries + 1} tr{"y" if not self.retries else "ies"}; the last one: {why}. Describe the '
                            'fields in the prompt, or try a larger model.')

    def stream(self,
               prompt:str,   # The question
              ):             # Yields ('reasoning'|'answer', new text) as the reply grows, then ('details', Details)
        "The reply to `prompt` as it comes; closing the generator early hangs the request up."
        import queue
        q, stopper, sent = queue.Queue(), _Stopper(None), [0, 0]
        def grew(reply):
            r, a = reply.reasoning, reply.answer
            if len(r) > sent[0]: q.put(('reasoning', r[sent[0]:]))
            if len(a) > sent[1]: q.put(('answer', a[sent[1]:]))
            sent[:] = len(r), len(a)
        def run():
            try: q.put(('details', self.answer(prompt, stopper, grew)[1]))
            except BaseException as e: q.put(('fault', e))
        t = threading.Thread(target=run, name='boopiter-stream', daemon=True)
        t.start()
        try:
            while True:
                kind, value = q.get()
                if kind == 'fault': raise value
                yield kind, value
                if kind == 'details': return
        finally:
            stopper.stop()   # a consumer that stopped reading: the request is hung up, not left running
            t.join(5)

    # -- many
    def lanes(self, parallel:int=None)->list:
        "One lane per model asked (a list of models spreads a batch), each at its limit: set, the server's slots, or measured."
        from .batch import Lane, Ramp
        set_to, out = parallel or self.settings['parallel'], []
        for q in [self, *self.others]:
            m = q.plan['model']
            if set_to: out.append(Lane(m, set_to, 'set'))
            elif (n := q._slots()): out.append(Lane(m, n, "the server's slots"))
            else: out.append(Lane(m, Ramp(), 'measured'))
        return out

    def _slots(self):
        try: return self.a.router.slots(self.plan['model'], self.settings)
        except BoopError: return None   # not known: measured instead

    def ask_many(self,
                 prompts:list,          # One prompt per item
                 progress=None,         # progress(batch.Progress) as items finish
                 parallel:int=None,     # Requests at once on each server; default: the `parallel` setting, else chosen
                 user_text:str=None,    # The user's own words (the template), for the tool guards
                )->list:                # Values or `batch.Failed`s, in input order
        "Ask every prompt, each server at its own limit; a failure stays in its item's place; an interrupt keeps what ended."
        from .batch import run_batch
        if parallel is not None and not (isinstance(parallel, int) and not isinstance(parallel, bool) and 1 <= parallel <= 64):
            raise SettingsError(f'parallel={parallel!r}: give a whole number from 1 to 64, or leave it out.', setting='parallel')
        by_model = {q.plan['model']: q for q in [self, *self.others]}
        def one(i, lane, stop):
            value, d = by_model[lane.model].answer(prompts[i], stop, None, user_text)
            return value, 'asked' if d.via == 'asked' else 'reused'
        return run_batch(len(prompts), one, self.lanes(parallel), progress, stopper=lambda: _Stopper(None))
