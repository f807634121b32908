"""The `%%prompt` and `%boop` magics, and the kernel options behind them.

    %load_ext boopiter_ext
    %%prompt -m qwen3:1.7b
    Why does the loop above print the same value twice?

Options are traitlets on `BoopMagics`, so they can be set in `ipython_config.py`
(`c.BoopMagics.timeout = 600`, a default that a project's `settings.ini` overrides) or from a cell
(`%config BoopMagics.model = 'qwen3:1.7b'`, which overrides settings files); `settings.py` has the
whole precedence.

This module is the face: it owns display handles, the cell recorder and the warm-up thread. The
model clients, context building and stream handling it calls are plain Python.
"""

__all__ = ['BoopMagics']

import atexit, logging, threading
from IPython.core.error import UsageError
from IPython.core.magic import Magics, magics_class, cell_magic, line_magic
from IPython.core.magic_arguments import magic_arguments, argument, parse_argstring
from traitlets import Unicode, Integer, Float, Bool
from .capture import CellRecorder
from .context import prompt_text, SYSTEM_PROMPT
from .errors import BoopError, ReplyBroken, ReplyStalled, ReplyInterrupted
from .settings import SETTINGS, DEFAULTS, load_settings, public_url

log = logging.getLogger('boopiter_ext')


def _trait(key):
    typ, default, help = SETTINGS[key]
    return {str: Unicode, int: Integer, float: Float}[typ](default, help=help).tag(config=True)


def _warm_up(litellm=True):
    "Import what the first prompt needs off the main thread: the Markdown parser, and litellm (~4.5 s) unless unneeded."
    try:
        from . import render
        render._parser()
        if litellm:
            from . import litellm_client
            litellm_client.import_litellm()
    except Exception: log.warning('boopiter_ext: warming up failed; the first prompt will do the imports', exc_info=True)


@magics_class
class BoopMagics(Magics):
    """Prompt cells answered by local models, with the notebook as context.

    Configure with `%config BoopMagics.<name> = value` in a notebook, or `c.BoopMagics.<name> = value`
    in `ipython_config.py` (a default that a project `settings.ini`, section `[boopiter]`, overrides).
    """
    model, host, api_base, api_key_env = _trait('model'), _trait('host'), _trait('api_base'), _trait('api_key_env')
    timeout = _trait('timeout')
    context_size, keep_alive, max_tokens = _trait('context_size'), _trait('keep_alive'), _trait('max_tokens')
    think, clip, system_prompt = _trait('think'), _trait('clip'), _trait('system_prompt')
    warm_up = Bool(True, help="After loading, import on a background thread what the first prompt needs: the Markdown "
                              "parser, and litellm unless the configured model is served by Ollama directly (which "
                              "never needs litellm).").tag(config=True)

    def __init__(self, shell=None, **kw):
        super().__init__(shell=shell, **kw)
        self.recorder, self._router, self._warm = CellRecorder(shell), None, None
        self._at_load, self._set_since_load = {k: getattr(self, k) for k in SETTINGS}, set()
        self.observe(lambda change: self._set_since_load.add(change['name']), names=list(SETTINGS))

    def update_config(self, config):
        "Remember which settings a `%config` named, even one that sets the value a setting already had."
        if 'BoopMagics' in config: self._set_since_load.update(k for k in config.BoopMagics if k in SETTINGS)
        super().update_config(config)

    # -- lifecycle, mirrored by `stop`
    def start(self):
        "Begin recording cells and, if useful, warm up litellm."
        self.recorder.register()
        atexit.register(self.close_router)
        if self.warm_up:
            self._warm = threading.Thread(target=_warm_up, args=(not self._ollama_only(),), name='boopiter-warm-up',
                                          daemon=True)
            self._warm.start()

    def stop(self):
        "Undo `start`: stop recording, close HTTP sessions, stop the embedded model."
        self.recorder.unregister()
        atexit.unregister(self.close_router)
        self.close_router()

    def close_router(self):
        if self._router is not None: self._router.close()
        self._router = None

    @property
    def router(self):
        if self._router is None:
            from .models import Router
            self._router = Router()
        return self._router

    def _ollama_only(self):
        from .models import is_ollama_id
        model = self.settings(nb=self.notebook())['model']
        return bool(model) and is_ollama_id(model)

    # -- settings
    def notebook(self):
        "The open notebook's file, if known."
        from .notebook import notebook_path
        return notebook_path(self.shell.user_ns)

    def settings(self, cell:dict=None, nb=None):
        "Resolved settings for a cell (see `settings.load_settings` for the precedence); `nb` is the notebook file."
        runtime = {k: getattr(self, k) for k in self._set_since_load}   # `%config` since loading
        config = {k: v for k,v in self._at_load.items() if v != DEFAULTS[k]}
        return load_settings(cell=cell, binding=None, runtime=runtime, config=config, start=nb.parent if nb else None)

    # -- magics
    @magic_arguments()
    @argument('-m', '--model', help="Model for this cell only: an Ollama name, ollama_chat/NAME, local/smollm2-135m "
                                    "or any litellm id (openai/NAME with api_base, a cloud id with its key in the "
                                    "environment).")
    @argument('--think', choices=['l', 'm', 'h', 'off'], help="Reasoning effort for thinking models.")
    @argument('--no-context', action='store_true', help="Send only this prompt, not the notebook above it.")
    @cell_magic
    def prompt(self, line, cell):
        """Ask a model about the notebook so far; the reply streams into this cell's output.

        The model sees the cells above (code, outputs, errors, notes) in notebook order, and earlier
        prompts with their replies as a conversation. Re-running the cell replaces the reply.

        Example::

            %%prompt -m qwen3:1.7b
            Why does the loop above print the same value twice?
        """
        args = parse_argstring(self.prompt, line)
        question = prompt_text('%%prompt\n' + cell)
        if not question: raise UsageError('The prompt is empty: write your question on the lines below `%%prompt`.')
        nb = self.notebook()
        settings = self.settings(dict(model=args.model, think=args.think), nb)
        self._answer(question, settings, nb, with_context=not args.no_context)

    @line_magic
    def boop(self, line):
        """Show or change boopiter's state. `%boop status` prints the model, endpoint, tools and context size."""
        cmd, _, rest = line.strip().partition(' ')
        handler = getattr(self, f'_boop_{cmd or "status"}', None)
        if handler is None: raise UsageError(f'Unknown `%boop {cmd}`; try `%boop status`.')
        return handler(rest.strip())

    def _boop_status(self, _):
        nb = self.notebook()
        s = self.settings(nb=nb)
        try:
            model, note = self.router.resolve(s)
            route, info = self.router.describe(model, s), self.router.model_info(model, s)
            model_line = f'{model} ({note or "from " + s.source["model"]})'
            endpoint = f'{route["name"]} at {route["endpoint"]}' if route['endpoint'] else route['name']
        except BoopError as e: model_line, endpoint, info = f'none: {e}', '-', {}
        ctx = f'{s["context_size"]:,} tokens ({s.source["context_size"]})' if s['context_size'] else 'auto (sized to each prompt'
        if not s['context_size']: ctx += f', up to {info["context_length"]:,} tokens)' if info.get('context_length') else ')'
        rows = dict(model=model_line, endpoint=endpoint, tools='none (0 tools offered)', context=ctx,
                    notebook=str(nb) if nb else 'unknown (cells in execution order; set BOOPITER_NOTEBOOK for headless runs)',
                    cells=f'{len(self.recorder.cells())} recorded')
        rows.update({k: f'{public_url(str(s[k]))} ({s.source[k]})' for k in ('host', 'api_base', 'timeout', 'keep_alive', 'think')
                     if s.source[k] != 'default'})
        print('\n'.join(f'{k:<9} {v}' for k,v in rows.items()) + ''.join(f'\nwarning   {w}' for w in s.warnings))

    # -- answering
    def _answer(self, question, settings, nb, with_context=True):
        "Resolve the model, build the context, and stream the reply into this cell."
        router = self.router
        model, note = router.resolve(settings)
        info = router.model_info(model, settings)
        self._check_think(model, settings, info)
        cells = self._cells_above(nb) if with_context else []
        msgs, ledger = self._context(question, settings, info, cells)
        self._stream(model, msgs, settings, info, dict(router.describe(model, settings), note=note), ledger)

    def _cells_above(self, nb):
        "The recorded cells above this prompt, in the order of the saved notebook `nb` when there is one."
        from .context import order_cells
        from .notebook import saved_cells
        return order_cells(self.recorder.cells(), saved_cells(nb) if nb else None, self.recorder.current)

    def _context(self, question, settings, info, cells):
        "(messages, ledger): `cells` and the question, budgeted to the model's window, which goes in the ledger."
        from .context import build_context, context_window
        model_max, requested = info.get('context_length'), settings['context_size']
        cap = requested or model_max or 8192
        reserve = settings['max_tokens'] or min(1024, cap // 4)  # room left for the reply
        system = '\n\n'.join(p for p in (SYSTEM_PROMPT, settings['system_prompt']) if p)
        msgs, ledger = build_context(cells, question, limit=cap - reserve, system=system, clip_chars=settings['clip'],
                                     vision='vision' in info.get('capabilities', []))
        ledger['window'] = context_window(ledger['tokens'] + reserve, model_max, requested)
        return msgs, ledger

    def _stream(self, model, msgs, settings, info, route, ledger):
        "Stream the reply into one display; faults keep the partial reply and end as one-paragraph errors."
        from .stream import Reply, pump
        from .view import ReplyView
        current, view = self.recorder.current, ReplyView(self.shell, route, ledger)
        view.waiting(model, 'starting the embedded model' if model.startswith('local/') and not self.router.local.url else '')
        reply, events, err = Reply(model), None, None
        try:
            events = self.router.chat(model, msgs, settings, info, num_ctx=ledger['window'])
            route.update(self.router.describe(model, settings))   # the embedded model's address is known once started
            pump(events, reply, view.update, view.interval)
            reply.finish('done')
        except KeyboardInterrupt:
            reply.finish('interrupted')
            err = ReplyInterrupted(f'Interrupted after {reply.chunks:,} tokens; the partial reply is kept above.'
                                   if reply.chunks else 'Interrupted before the model answered.')
        except BoopError as e:
            reply.finish({ReplyBroken: 'broken', ReplyStalled: 'stalled'}.get(type(e), 'error'))
            err = e
        finally:
            if events is not None: events.close()   # hangs up if the stream is still open
            if reply.status == 'streaming': reply.finish('error')   # a bug escaped: keep what arrived anyway
            output = view.final(reply)
            if current is not None: current.outputs.append(output)
        if err is not None:
            if reply.chunks and not isinstance(err, ReplyInterrupted): err.args = (f'{err} The partial reply is kept above.',)
            raise err

    def _check_think(self, model, settings, info):
        caps = info.get('capabilities')
        if settings['think'] and caps and 'thinking' not in caps and settings.source['think'] == 'cell option':
            raise UsageError(f'{model} is not a thinking model (its capabilities: {", ".join(caps)}), so `--think` '
                             'cannot apply; drop it or pick a thinking model with `-m`.')

