"""The `%%prompt` and `%boop` magics, and the kernel options behind them: the IPython face of `assistant.Assistant`.

    %load_ext boopiter_ext
    %%prompt -m qwen3:1.7b
    Why does the loop above print the same value twice?

Options are traitlets on `BoopMagics`, so they can be set in `ipython_config.py`
(`c.BoopMagics.timeout = 600`, a default that a project's `settings.ini` overrides) or from a cell
(`%config BoopMagics.model = 'qwen3:1.7b'`, which overrides settings files); `settings.py` has the
whole precedence.

This module owns what IPython needs: the magics and their options, displays (the reply's view, the binding's
display, tool rounds), the cell recorder, the warm-up thread, and the faces around the assistant: the frontend's
channel when the JupyterLab / Notebook 7 extension is there, the ipywidgets menu and Run buttons when it is not.
Everything a prompt decides is the assistant's.
"""

__all__ = ['BoopMagics']

import atexit, importlib.util, logging, sys, threading, uuid
from pathlib import Path
from IPython.core.error import UsageError
from IPython.core.magic import Magics, magics_class, cell_magic, line_magic
from IPython.core.magic_arguments import magic_arguments, argument, parse_argstring
from traitlets import Unicode, Integer, Float, Bool
from ..core.assistant import Assistant, folder
from ..core.binding import binding_bundle
from .capture import CellRecorder
from ..context.build import Cell, prompt_text
from ..redact import masked
from ..settings import SETTINGS, RULES, THINK_LEVELS, check_setting

log = logging.getLogger('boopiter_ext')
_WIDGET_TEXT = 'boopiter {} (a live widget: it needs a running kernel; `%boop status` prints the same as text)'
WIDGET_MIME = 'application/vnd.boopiter.widget+json'   # the extension draws this instead of the widget, live or not
PREVIEW_MIME = 'application/vnd.boopiter.preview+json'   # a dry run in a cell: the extension draws it as its dialog


def _trait(key):
    typ, default, help = SETTINGS[key]
    return {str: Unicode, int: Integer, float: Float, bool: Bool}[typ](default, help=help).tag(config=True)


def _warm_up(cloud_model=lambda: ''):
    """Import what the first prompt needs off the main thread: the Markdown parser and sanitizer; then, if the notebook
    names a cloud id (`cloud_model()`, which reads the settings and the saved notebook: no work for `%load_ext`),
    litellm and what its first request loads (`_warm_litellm`)."""
    try:
        from ..render.sanitize import safe_markdown
        safe_markdown('*warm*')
    except Exception: log.warning('boopiter_ext: warming up failed; the first prompt will do the imports', exc_info=True)
    _warm_litellm(cloud_model)


def _warm_litellm(cloud_model)->bool:
    """Import litellm, and load what its first request for `cloud_model()` would (a mock reply: nothing is sent), if
    that names a cloud id and the `cloud` extra is installed; whether it named one."""
    try:
        if not (model := cloud_model()): return False
        if importlib.util.find_spec('litellm') is None: return True   # the prompt will say how to install it
        from ..models import litellm_client
        litellm_client.warm_up(model)
    except Exception: log.warning('boopiter_ext: warming litellm up failed; the first cloud prompt will do it', exc_info=True)
    return True


def _display_widget(widget, kind:str, what:str):
    """Show an ipywidget as a bundle every frontend can read: the widget where widgets are drawn (VS Code, JupyterLab
    without the extension), `WIDGET_MIME` that the extension draws instead (its toolbar menu, its reply actions: so a
    notebook reopened without a kernel never shows "Error displaying widget"), and readable text, not `VBox(...)`."""
    from IPython.display import display
    bundle = widget._repr_mimebundle_()
    bundle.update({WIDGET_MIME: dict(version=1, kind=kind), 'text/plain': _WIDGET_TEXT.format(what)})
    display(bundle, raw=True)


def _preview_output(data, md)->tuple:
    """A dry run as a cell shows it: the extension draws `PREVIEW_MIME` as its dialog does (messages folded, text that
    wraps at word boundaries); elsewhere the Markdown (messages folded too) and the plain text."""
    return {PREVIEW_MIME: dict(version=1, markdown=data.get('text/markdown', ''), text=data.get('text/plain', '')),
            **data}, md


def _one_cell(python:list, shell:list)->str:
    "The one cell `--insert` makes: the python blocks; without any, the shell blocks as one `%%bash` script."
    if python: return '\n\n'.join(b.rstrip() for b in python)
    return '%%bash\n' + '\n\n'.join(c.removeprefix('%%bash\n').rstrip() for c in shell)


def _cell_options(args)->dict:
    "The settings a `%%prompt` line's options set for its cell (None: not set there)."
    return dict(model=args.model, think=args.think, auto=args.auto or None, lenient=args.lenient or None,
                reuse=False if args.fresh else None)


@magics_class
class BoopMagics(Magics):
    """Prompt cells answered by local models, with the notebook as context.

    Configure with `%config BoopMagics.<name> = value` in a notebook, or `c.BoopMagics.<name> = value`
    in `ipython_config.py` (a default that a project `settings.ini`, section `[boopiter]`, overrides).
    """
    model, reasoning_model, reasoning = _trait('model'), _trait('reasoning_model'), _trait('reasoning')
    host, api_base, api_key_env, models = _trait('host'), _trait('api_base'), _trait('api_key_env'), _trait('models')
    timeout = _trait('timeout')
    completion_model, completions = _trait('completion_model'), _trait('completions')
    context_size, keep_alive, max_tokens = _trait('context_size'), _trait('keep_alive'), _trait('max_tokens')
    max_reply, seed = _trait('max_reply'), _trait('seed')
    think, clip, system_prompt = _trait('think'), _trait('clip'), _trait('system_prompt')
    max_images, image_size, vision_models = _trait('max_images'), _trait('image_size'), _trait('vision_models')
    reuse, cache_dir, cassette, cassette_file = _trait('reuse'), _trait('cache_dir'), _trait('cassette'), _trait('cassette_file')
    tools, auto, lenient, max_rounds = _trait('tools'), _trait('auto'), _trait('lenient'), _trait('max_rounds')
    background = _trait('background')
    parallel = _trait('parallel')
    web_allow = _trait('web_allow')
    unload_others, deaddrop_dir, deaddrop_timeout = _trait('unload_others'), _trait('deaddrop_dir'), _trait('deaddrop_timeout')
    warm_up = Bool(True, help="After loading, import on a background thread what the first prompt needs: the Markdown "
                              "parser; and litellm (with what its first request loads) once a cloud id is picked or "
                              "named: the model, the reasoning model, the `models` setting, `-m` in a prompt cell. "
                              "Ollama, the embedded model and OpenAI-compatible servers never need litellm.").tag(config=True)
    get_ready = Bool(True, help="Get the answering model ready while the kernel is idle: start the embedded model and "
                                "read the notebook so far into its prompt cache, or load a picked Ollama model "
                                "(readiness.py).").tag(config=True)

    def __init__(self, shell=None, **kw):
        super().__init__(shell=shell, **kw)
        self.recorder = CellRecorder(shell)
        self.assistant = Assistant(self.recorder, shell.user_ns, notebook=self.notebook, config=self._config)
        self.assistant.listeners.append(self._binding_changed)
        self._warm, self._toolbar, self.channel, self.readiness, self._interrupt = None, None, None, None, None
        self._cloud_warm = False   # litellm warmed up, or on its way: once a kernel
        self._failed_before = None   # the last failure before loading (`start`)
        self._binding_id = f'boopiter-binding-{uuid.uuid4().hex}'   # every binding display shown is kept current
        self._at_load, self._set_since_load = {k: getattr(self, k) for k in SETTINGS}, set()
        self.observe(lambda change: self._set_since_load.add(change['name']), names=list(SETTINGS))

    def update_config(self, config):
        "Remember which settings a `%config` named, even one that sets the value a setting already had."
        if 'BoopMagics' in config: self._set_since_load.update(k for k in config.BoopMagics if k in SETTINGS)
        super().update_config(config)
        if self.channel is not None: self.channel.refresh_state()
        self._warm_cloud()   # `%config BoopMagics.model = 'anthropic/...'` names a cloud id

    # -- warming litellm up, once a cloud id is picked or named (`_warm_litellm`)
    def _cloud_model(self)->str:
        "The cloud id to warm litellm up for ('' for none, or when it is warm or warming already); claims the warm-up."
        if self._cloud_warm or not (model := self.assistant.cloud_model()): return ''
        self._cloud_warm = True
        return model

    def _warm_cloud(self):
        "Warm litellm up on a thread of its own if a cloud id is now picked or named (once a kernel)."
        if getattr(self, 'assistant', None) is None or not self.warm_up or self._cloud_warm: return   # (not yet built)
        threading.Thread(target=_warm_litellm, args=(self._cloud_model,), name='boopiter-warm-litellm', daemon=True).start()

    def _config(self)->tuple:
        "(values set with `%config` since loading, values configured when the extension loaded)."
        return {k: getattr(self, k) for k in list(self._set_since_load)}, self._at_load

    # -- lifecycle, mirrored by `stop`
    @property
    def kernel(self)->bool: return hasattr(self.shell, 'kernel')   # a terminal or bare shell has no frontend

    def start(self):
        """Begin recording cells, put `ask`, `ask_all` and `stream` in the namespace, open the frontend's channel (in a
        kernel) and, if useful, warm up."""
        self.recorder.register()
        self._failed_before = None   # the last failure before loading: its cell was not recorded (`%%prompt --fix`)
        if isinstance(err := getattr(sys, 'last_value', None), Exception):
            from .capture import error_output
            from ..core.fixing import failed_source
            self._failed_before = Cell(failed_source(err), 'code', outputs=[error_output(err)], origin='history')
        from . import api
        ns = self.shell.user_ns
        self._api = {name: getattr(api, name) for name in api.NAMESPACE if name not in ns}   # never over a name of yours
        ns.update(self._api)
        if self.kernel:
            from .channel import Channel
            self.channel = Channel(self.assistant, on_pick=self._show_toolbar, preview=self.preview_cell)
            self.channel.register()
            self.assistant.edit = self.channel.edit
            from .streaming import IdleInterrupt
            self._interrupt = IdleInterrupt(self.shell.kernel, self.assistant.stop)   # stops a reply streaming on
            self._interrupt.install()
        atexit.register(self.assistant.close)
        if self.warm_up:
            self._warm = threading.Thread(target=_warm_up, args=(self._cloud_model,), name='boopiter-warm-up', daemon=True)
            self._warm.start()
        if self.get_ready:
            from ..core.readiness import Readiness
            self.readiness = Readiness(self.assistant, self.shell)
            self.readiness.start()
            atexit.register(self.readiness.stop)   # runs before `assistant.close`: no engine is started after it

    def stop(self):
        "Undo `start`: stop recording, close the channel and the brain menu, the HTTP sessions and the embedded model."
        self.recorder.unregister()
        ns = self.shell.user_ns
        for name, fn in getattr(self, '_api', {}).items():
            if ns.get(name) is fn: del ns[name]   # a name you reassigned since stays yours
        self._api = {}
        if self.readiness is not None:
            atexit.unregister(self.readiness.stop)
            self.readiness.stop()
        if self.channel is not None: self.channel.unregister()
        if self._interrupt is not None: self._interrupt.uninstall()
        self.assistant.edit, self._interrupt = None, None
        if self._toolbar is not None: self._toolbar.close()
        self._toolbar = self.channel = self.readiness = None
        atexit.unregister(self.assistant.close)
        self.assistant.close()

    # -- what other faces use (the widget menu, tests)
    @property
    def router(self): return self.assistant.router
    @property
    def catalog(self): return self.assistant.catalog
    def settings(self, cell:dict=None, nb=None): return self.assistant.settings(cell, nb)
    def binding(self, nb=None)->dict: return self.assistant.binding(nb)
    def set_binding(self, **changes)->dict: return self.assistant.set_binding(**changes)

    def notebook(self):
        "The open notebook's file, if known."
        from ..context.nbfile import notebook_path
        return notebook_path(self.shell.user_ns)

    @property
    def frontend(self)->bool:
        "Whether the JupyterLab / Notebook 7 extension shows this kernel's menu and replies (it said hello)."
        return self.channel is not None and self.channel.connected

    # -- the binding's display: an output of its own, saved with the notebook
    def show_binding(self):
        "Show the binding as an output of its own (every one shown is kept current); saving the notebook keeps it."
        self._display_binding(*binding_bundle(self.binding(self.notebook())))

    def _display_binding(self, data, md, update=False):
        from IPython.display import display
        display(data, raw=True, metadata=md, display_id=self._binding_id, update=update)

    def _binding_changed(self, binding):
        "A pick, from any face: keep the binding displays current, and the widget menu; a cloud id picked: warm litellm."
        if self.kernel: self._display_binding(*binding_bundle(binding), update=True)   # a terminal cannot update
        self._show_toolbar()
        self._warm_cloud()

    def _show_toolbar(self):
        if self._toolbar is not None: self._toolbar.show()

    # -- magics
    @magic_arguments(name='%prompt')   # the usage line puts one `%` before it: a cell magic's `%%prompt`
    @argument('-m', '--model', help="Model for this cell only: an Ollama name, ollama_chat/NAME, local/smollm2-135m "
                                    "or any litellm id (openai/NAME with api_base, a cloud id with its key in the "
                                    "environment).")
    @argument('--think', choices=THINK_LEVELS, help="Reasoning effort for thinking models.")
    @argument('--no-context', action='store_true', help="Send only this prompt, not the notebook above it.")
    @argument('--auto', action='store_true', help="Run the model's tool calls by themselves, after the guards, and "
                                                 "hand it the results until it answers (the `auto` setting).")
    @argument('--lenient', action='store_true', help="In auto mode, also take tool calls written as JSON or tags.")
    @argument('--must-call', nargs='?', const='*', metavar='TOOL', help="In auto mode, the model's first reply must "
                                                                      "call a tool (the one named, if given).")
    @argument('--insert', action='store_true', help="Put the reply's python blocks into a new cell below (a reply "
                                                   "with shell blocks only: them, in a `%%%%bash` cell).")
    @argument('--fresh', action='store_true', help="Ask the model even if this cell has a saved reply to the same "
                                                  "question and context, from this model or another (the `reuse` "
                                                  "setting, for this cell).")
    @argument('--dry-run', action='store_true', help="Show exactly what would be sent (messages, context ledger, "
                                                    "tokens, images, tools) and send nothing.")
    @argument('--agent', action='store_true', help="Run the reply's python blocks as cells below this one, each on "
                                                  "your click (Run, Skip, Stop, or the rest of this reply), and hand "
                                                  "their outputs back to the model until it answers (JupyterLab, "
                                                  "Notebook 7).")
    @argument('--fix', nargs='?', const='above', metavar='N', help="Ask why a cell failed and how to fix it: the cell "
                                                                  "above if it failed, else the last that failed, or "
                                                                  "the one that ran as [N]; the lines below ask it.")
    @cell_magic
    def prompt(self, line, cell):
        """Ask a model about the notebook so far; the reply streams into this cell's output.

        The model sees the cells above (code, outputs, errors, notes) in notebook order, and earlier
        prompts with their replies as a conversation. Re-running the cell shows its saved reply again while
        nothing it sends has changed; if the model that answers or the cells above it changed, the saved reply is
        kept and marked (stale: which cells changed); `--fresh` asks again, keeping the old reply as the previous. In the question, $`name` shows the model a variable's value (summarised), &`name`
        offers a function as a tool for this prompt; cells tagged `boop-hide` are never sent, `boop-pin` never
        dropped.

        Example::

            %%prompt -m qwen3:1.7b
            Why does the loop above print the same value twice?
        """
        from ..tools.guards import confirm_by_input
        from .streaming import queue_prompt, show_fault, streams_on, wait_for_reply
        from .view import ReplyView
        args = parse_argstring(self.prompt, line)
        if args.model and not check_setting('model', args.model):
            raise UsageError(f'`-m` needs {RULES["model"][1]}; `%boop models` lists the ids in reach.')
        question, fixes = prompt_text('%%prompt\n' + cell), None
        if args.fix:
            if (asked := self._fix_question(args.fix, question)) is None: return
            question, fixes = asked
        if not question: raise UsageError('The prompt is empty: write your question on the lines below `%%prompt`.')
        if args.dry_run: return self._show_raw(*_preview_output(*self.preview_cell(f'%%prompt {line}\n{cell}')))
        settings = self.settings(_cell_options(args), self.notebook())
        if args.lenient and not settings['auto']: raise UsageError('`--lenient` applies to auto mode: add `--auto`.')
        if args.must_call and not settings['auto']: raise UsageError('`--must-call` applies to auto mode: add `--auto`.')
        view = lambda route, ledger: ReplyView(self.shell, route, ledger, extension=self.frontend)
        later = self.kernel and streams_on(self, settings)[0] and not args.insert   # the cell ends before the reply
        fault, bg = lambda e: show_fault(self.shell, e), self.assistant.background
        cell_id = getattr(self.recorder.current, 'cell_id', None)
        if cell_id and bg.holds(cell_id): self.assistant.stop(cell_id)   # run again: its earlier reply ends first
        if later and bg.running and not args.agent: return queue_prompt(self, question, settings, not args.no_context, fault)
        if self.kernel and self.assistant.halt_agents():   # its cells could not run while this cell waits for it
            print('The agent prompt above was waiting for your click; it stops here, so that this prompt can run.')
        if self.kernel: wait_for_reply(self.assistant)   # the cell ends with its reply: after those streaming
        # agent mode: the page runs the model's cells, so this cell ends at once; without a page the code is offered
        self.assistant.step = self.channel.step if args.agent and self.channel is not None and self.channel.connected else None
        if args.agent and self.assistant.step is None:
            print('Agent mode needs the boopiter extension in JupyterLab or Notebook 7 to run cells: the code is offered below.')
        got = self.assistant.answer(question, settings, view=view, show=self._show_raw,
                                    with_context=not args.no_context, confirm=confirm_by_input, background=later,
                                    fault=fault, must_call=args.must_call, fixes=fixes, agent=args.agent)
        if got.reply.status == 'streaming' and args.agent: return   # its loop runs on; the cells come below
        self._offer_code(got, args.insert)

    def preview_cell(self, source:str)->tuple:
        "(data, metadata): the dry run of a prompt cell's source, options included, as `%%prompt --dry-run` shows it."
        from ..render.reply import preview_bundle
        first, _, body = source.lstrip().partition('\n')
        args = parse_argstring(self.prompt, first.partition('%%prompt')[2])
        if args.model and not check_setting('model', args.model): raise UsageError(f'`-m` needs {RULES["model"][1]}.')
        settings = self.settings(_cell_options(args), self.notebook())
        return masked(preview_bundle(self.assistant.preview(prompt_text('%%prompt\n' + body), settings, not args.no_context)))

    @staticmethod
    def _show_raw(data, md):
        from IPython.display import display
        display(masked(data), raw=True, metadata=masked(md))   # a tool round, the loop's summary: no key in them

    def _offer_code(self, got, insert):
        """A reply's python blocks (those no tool loop ran) and shell blocks (as `%%bash` cells): into a new cell, or
        under Run buttons where no extension is. Another language is never offered as a cell: it would not run."""
        from ..tools.blocks import shell_cells
        shell = shell_cells(got.reply.answer)
        blocks = got.blocks + shell
        if not blocks: return
        if insert: self.shell.set_next_input(_one_cell(got.blocks, shell))
        elif self.kernel and not self.frontend:   # the extension's reply has its own actions, which make real cells
            from .code_actions import CodeActions, clickable
            if not clickable(self.shell): return   # a headless run: nobody could click them, and they would be saved
            _display_widget(CodeActions(self.shell, blocks).widget, 'code_actions', 'Run and Copy-to-cell buttons')

    @line_magic
    def boop(self, line):
        """The brain menu, and the same choices from code.

        %boop                          the menu: model, reasoning model and effort, keep-alive, context size
        %boop model NAME               bind this notebook to NAME (saved with it); `--clear` removes the pick
        %boop reasoning NAME [l|m|h]   the reasoning model (and effort), switched on; `on`/`off` switch back and forth
        %boop models                   every model in reach, with capabilities
        %boop tools [SOURCE on|off]    the tools offered to the model; `%boop tools auto on` runs guarded calls
        %boop allow [off]              accept what this notebook proposes (auto-run, web, notebook) on this machine
        %boop record | replay          save every model turn to the notebook's cassette, or answer from it offline
        %boop cassette [off]           the cassette in use, and how many turns it holds; `off` stops both
        %boop bench --models A,B       score models on a task set: right tools, valid calls, speed (table and chart)
        %boop status                   model, endpoint and settings, each with where it came from
        %boop fix [N]                  ask why the last cell that failed (or cell [N]) failed, and how to fix it
        """
        cmd, _, rest = line.strip().partition(' ')
        handler = getattr(self, f'_boop_{cmd or "menu"}', None)
        if handler is None: raise UsageError(f'Unknown `%boop {cmd}`: try `%boop`, `%boop model NAME`, '
                                             '`%boop reasoning NAME`, `%boop models`, `%boop tools`, `%boop allow`, `%boop record`, '
                                             '`%boop replay`, `%boop cassette`, `%boop bench`, `%boop status` or '
                                             '`%boop fix`.')
        try: return handler(rest.strip())
        finally:
            if self.channel is not None: self.channel.refresh_state()

    def _fix_question(self, which:str, more:str)->tuple|None:
        """(question, the failed cell's id or None): the question of `%%prompt --fix [N]` (and `%boop fix`), why the
        cell failed and how to fix it, then the lines below; None, said why, when there is no failure to ask about."""
        from ..core.fixing import fix_question, failed_cell
        if which != 'above' and not which.isdigit():
            raise UsageError(f'`--fix` takes a cell number, as in `[3]`, not {which!r}.')
        nb = self.notebook()
        above = [c for c in self.assistant.cells_above(nb) if c.kind != 'markdown'][-1:]
        cell = failed_cell(above) or failed_cell(self.recorder.cells()) or self._failed_before if which == 'above' else \
            failed_cell(self.recorder.cells(), int(which))
        if cell is None:
            print(f'Cell [{which}] did not fail: nothing to fix.' if which != 'above' else 'No cell above failed: nothing to fix.')
            return None
        from ..core.fixing import cell_holding
        return fix_question(cell, more), cell.cell_id or cell_holding(cell.source, self.assistant.layout(nb) or [])

    def _boop_fix(self, arg):
        """Ask the model why the cell above (else the last that failed, or the one that ran as [N]) failed, and how to
        fix it: a prompt run here, so the failing cell and its traceback are in the context above it."""
        self.prompt(f'--fix {arg}' if arg else '--fix', '')

    def _boop_menu(self, _):
        if not self.kernel:   # a terminal shows no widgets: list the models instead
            self._boop_models('')
            return self.show_binding()
        if self.frontend:
            from ..core.menu import answering
            s = self.settings(nb=self.notebook())
            a = answering(s, self.catalog.current(s))
            who = f'auto → {a["model"]} ({a["why"].removeprefix("auto: ")})' if a['auto'] and a['model'] else \
                  f'{a["model"] or "none"} ({a["why"]})'
            print(f'The brain menu is in the notebook toolbar. Answering: {who}.')
            if s.consent: print(f'{s.consent}: the menu\'s Allow, or `%boop allow`, accepts it for this notebook.')
            return self.show_binding()
        from .toolbar import Toolbar
        if self._toolbar is None: self._toolbar = Toolbar(self.assistant)
        self._toolbar.refresh()
        _display_widget(self._toolbar.widget, 'menu', 'brain menu')
        self.show_binding()

    def _boop_model(self, arg):
        if len(arg.split()) > 1: raise UsageError('Usage: `%boop model NAME` (one model id), or `%boop model --clear`.')
        if arg == '--clear': self.set_binding(model=None)
        elif arg:
            said = self._check_model(arg)
            self.set_binding(model=arg)
            if said: print(said)
        self.show_binding()

    def _check_model(self, name, thinking=False)->str:
        "What to tell about `name` (Ollama not reachable now), or a `UsageError` if it cannot be bound."
        from ..errors import BoopError
        try: return self.assistant.check_model(name, thinking)
        except BoopError as e: raise UsageError(str(e)) from None

    def _boop_reasoning(self, arg):
        parts = arg.split()
        if parts in (['on'], ['off']):
            if parts == ['on'] and not self.settings(nb=self.notebook())['reasoning_model']:
                raise UsageError('No reasoning model is picked yet: `%boop reasoning NAME` picks one and switches it on.')
            self.set_binding(reasoning=parts == ['on'])
        elif parts:
            name, *effort = parts
            if len(effort) > 1 or effort and effort[0] not in THINK_LEVELS:
                raise UsageError('Usage: `%boop reasoning NAME [l|m|h]`, `%boop reasoning on` or `%boop reasoning off`.')
            said = self._check_model(name, thinking=True)
            self.set_binding(reasoning_model=name, reasoning=True, **dict(think=effort[0]) if effort else {})
            if said: print(said)
        self.show_binding()

    def _boop_tools(self, arg):
        """`%boop tools`: the sources, on or off, and their tools; `%boop tools files off kernel on`, `%boop tools auto on`
        change the selection (saved with the binding)."""
        from ..tools.registry import SOURCES, DEFAULT_SELECTION, notebook_tools, parse_selection, selection_setting
        words = arg.split()
        if len(words) % 2 or any(w not in ('on', 'off') for w in words[1::2]):
            raise UsageError('Usage: `%boop tools`, `%boop tools SOURCE on|off ...` or `%boop tools auto on|off`.')
        s = self.settings(nb=self.notebook())
        chosen = parse_selection(s['tools']) or dict(DEFAULT_SELECTION)
        changes = {}
        for name,state in zip(words[::2], words[1::2]):
            if name == 'auto': changes['auto'] = state == 'on'
            elif name in SOURCES: chosen[name] = state == 'on'
            else: raise UsageError(f'Unknown tool source `{name}`; the sources are: {", ".join(SOURCES)}.')
        if any(w != 'auto' for w in words[::2]):
            changes['tools'] = selection_setting(chosen)
        if changes:
            self.assistant.consent.picked(changes, self.notebook())   # code you ran: yours while this kernel runs
            self.set_binding(**changes)
        s = self.settings(nb=self.notebook())
        offered = self.assistant.offer_tools(s, self.notebook())
        chosen = parse_selection(s['tools']) or dict(DEFAULT_SELECTION)
        for name,(_, _, doc) in SOURCES.items():
            print(f'{"on " if chosen.get(name) else "off"}  {name:<8} {doc}')
        if notebook_tools(): print(f'on   {"yours":<8} added with add_tool: {", ".join(f.__name__ for f in notebook_tools())}')
        print(f'offered: {", ".join(offered) or "none"}')
        print('auto: ' + ('on: guarded calls run by themselves' if s['auto'] else 'off: each python block waits for your Run click'))
        if s.consent: print(f'{s.consent}: `%boop allow` accepts it for this notebook on this machine')

    def _boop_record(self, arg): self._boop_cassette(arg or 'record')
    def _boop_replay(self, arg): self._boop_cassette(arg or 'replay')

    def _boop_cassette(self, arg):
        "`%boop record` / `%boop replay` / `%boop cassette off` set the `cassette` setting for this kernel; bare: say."
        from ..errors import CassetteDrift
        if arg not in ('', 'record', 'replay', 'off'):
            raise UsageError('Usage: `%boop record`, `%boop replay`, or `%boop cassette [off]`.')
        if arg: self.cassette = arg
        s = self.settings(nb=self.notebook())
        if s['cassette'] not in ('record', 'replay'): return print('No cassette in use; `%boop record` or `%boop replay`.')
        try: cassette = self.assistant.cassette(s, recording=s['cassette'] == 'record')
        except CassetteDrift as e: return print(e)
        for w in cassette.warnings: print(f'warning   {w}')
        models = ', '.join(sorted({t['model'] for t in cassette.turns.values()})) or 'none yet'
        held = f'{self._shown_path(cassette.path)} ({len(cassette)} turn{"s" * (len(cassette) != 1)}; models: {models})'
        print(f'Recording every model turn to {held}. Every prompt asks the model; `%boop cassette off` stops.'
              if s['cassette'] == 'record' else
              f'Replaying from {held}: no model is asked, and a conversation the cassette has no turn for is refused '
              '(re-record it).')

    def _shown_path(self, path)->str:
        "`path` as an output may show it: relative to the notebook's folder when inside it (no home folder in a saved file)."
        root = folder(self.notebook()) or Path.cwd()
        try: return str(Path(path).resolve().relative_to(root.resolve()))
        except ValueError: return Path(path).name

    def _boop_bench(self, arg):
        """`%boop bench --models A,B [--tasks FILE] [--out PREFIX] [--lenient] [--example] [--think L]`: the scorecard as a table and a chart,
        and a JSON result file (`PREFIX.json`, `PREFIX.png`; by default `bench-<time>` next to the notebook)."""
        import argparse, shlex, time
        from ..context.build import SYSTEM_PROMPT
        from ..tools.scorecard import ollama_version, router_clients, run_bench
        p = argparse.ArgumentParser(prog='%boop bench', add_help=False, exit_on_error=False)
        p.add_argument('--models', default='')
        p.add_argument('--tasks')
        p.add_argument('--out')
        p.add_argument('--lenient', nargs='?', const='on', choices=['on', 'both'])
        p.add_argument('--example', nargs='?', const='on', choices=['on', 'both'])
        p.add_argument('--think', choices=THINK_LEVELS)
        usage = ('usage: `%boop bench --models A,B [--tasks FILE] [--out PREFIX] [--lenient [both]] [--example [both]] '
                 '[--think l|m|h|off]`.')
        try: args, extra = p.parse_known_args(shlex.split(arg))
        except (argparse.ArgumentError, ValueError) as e: raise UsageError(f'{e}; {usage}') from None
        if extra: raise UsageError(f'unknown `{" ".join(extra)}`; {usage}')
        nb = self.notebook()
        s = self.settings(dict(think=args.think) if args.think else None, nb)   # every model asked with that effort
        models = [m.strip() for m in args.models.split(',') if m.strip()] or [self.assistant.answering_model(s)[0]]
        out = Path(args.out or (folder(nb) or Path.cwd())/f'bench-{time.strftime("%Y%m%d-%H%M%S")}')
        def progress(row): print(f'{row.model:<24} {row.task:<4} {"ok" if row.right else "XX"}  {row.seconds:5.1f} s'
                                 + (f'  {row.error}' if row.error else ''), flush=True)
        res = run_bench(models, **router_clients(self.router, s), tasks=args.tasks, namespace=self.shell.user_ns,
                        max_rounds=s['max_rounds'], on_progress=progress,
                        lenient='both' if args.lenient == 'both' else bool(args.lenient or s['lenient']),
                        system='\n\n'.join(p for p in (SYSTEM_PROMPT, s['system_prompt']) if p),
                        ollama=ollama_version(self.router, s), think=args.think,
                        example='both' if args.example == 'both' else bool(args.example))
        if self.kernel:
            from IPython.display import Image, Markdown, display
            from ..render.sanitize import safe_markdown
            display(Markdown(safe_markdown(res.markdown())))   # a failed row quotes its server
        else: print(res.table())
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            saved = [res.save(out.with_suffix('.json'))]
            try: saved.append(res.chart(out.with_suffix('.png')))
            except ImportError: print('no chart: matplotlib is not installed (`pip install matplotlib`)')
        except OSError as e: raise UsageError(f'The scorecard was not saved to {out}: {e.strerror or e}.') from None
        if self.kernel and len(saved) > 1: display(Image(filename=str(saved[1])))
        print('saved: ' + ', '.join(map(self._shown_path, saved)) + ('  (interrupted: the tasks that ran)' if res.cancelled else ''))

    def _boop_models(self, _):
        listing = self.catalog.refresh(self.settings(nb=self.notebook()))
        from ..models.catalog import human_size
        rows = [(e.id, ', '.join(c for c in e.capabilities if c != 'completion') or '-',
                 f'{e.context_length:,}' if e.context_length else '-', human_size(e.size) or '-',
                 ' · '.join(filter(None, [e.note, e.offline and f'offline: {e.offline}']))) for e in listing.entries]
        head = ('model', 'capabilities', 'context', 'size', '')
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
        lines = ['  '.join(c.ljust(w) for c,w in zip(r, widths)) + '  ' + r[4] for r in [head, *rows]]
        lines += [f'{src} (not listed now): {why}' for src,why in listing.problems.items()]
        print('\n'.join(l.rstrip() for l in lines) if rows or listing.problems else 'No models in reach.')

    def _boop_status(self, _):
        from .streaming import streams_on
        nb = self.notebook()
        rows, warnings, s = *self.assistant.status(nb), self.settings(nb=nb)
        if self.kernel: rows['streaming'] = streams_on(self, s)[1]
        if (asks := s.consent):
            rows['proposed'] = f'{asks}: `%boop allow` (or the brain menu\'s Allow) accepts it for this notebook'
        print('\n'.join(f'{k:<9} {v}' for k,v in rows.items()) + ''.join(f'\nwarning   {w}' for w in warnings))

    def _boop_allow(self, arg):
        """`%boop allow`: accept what this notebook (or its project's settings.ini) proposes of auto-run and the tools
        that act or reach out, after a typed yes, for this notebook on this machine; `%boop allow off` takes back every
        acceptance (this kernel's, and the notebook's)."""
        from ..core.consent import describe
        if arg not in ('', 'off'): raise UsageError('Usage: `%boop allow` or `%boop allow off`.')
        nb, consent = self.notebook(), self.assistant.consent
        if arg == 'off':
            was = consent.forget(nb)
            return print(f'Taken back: {describe(was)}; what this notebook proposes waits for your yes again.' if was else
                         'Nothing was allowed beyond your own settings.')
        s = self.settings(nb=nb)
        if not s.proposed: return print('Nothing to allow: this notebook proposes nothing beyond what you allowed.')
        where = f'for {nb.name} on this machine' if nb else 'in this kernel (the notebook file is not known)'
        try: yes = input(f'{s.consent}. Allow {describe(s.proposed)} {where}? [y/N] ').strip().lower() in ('y', 'yes')
        except Exception:   # no one to ask (a headless run): a saved `%boop allow` never grants by itself
            raise UsageError('`%boop allow` asks for your yes, and this run cannot ask: click Allow in the brain menu, '
                             'or turn them on in your own settings.ini.') from None
        if not yes: return print('Not allowed; nothing changed.')
        print(f'Allowed {where}: {describe(consent.accept(s.proposed, nb))}.')
        self._show_toolbar()   # and the extension's menu: `boop` tells it after every subcommand
