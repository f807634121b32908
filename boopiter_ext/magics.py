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

import atexit, logging, threading, uuid
from pathlib import Path
from IPython.core.error import UsageError
from IPython.core.magic import Magics, magics_class, cell_magic, line_magic
from IPython.core.magic_arguments import magic_arguments, argument, parse_argstring
from traitlets import Unicode, Integer, Float, Bool
from .binding import binding_bundle, binding_text, clean_binding, may_choose, saved_binding, screen_binding, stamp
from .capture import CellRecorder
from .context import prompt_text, SYSTEM_PROMPT
from .errors import BoopError, ReplyBroken, ReplyStalled, ReplyInterrupted, ReplyTooLong
from .models import LOCAL_ID, is_ollama_id, ollama_name, picked_model
from .settings import SETTINGS, DEFAULTS, RULES, THINK_LEVELS, check_setting, load_settings, public_url, short_source

log = logging.getLogger('boopiter_ext')


def _trait(key):
    typ, default, help = SETTINGS[key]
    return {str: Unicode, int: Integer, float: Float, bool: Bool}[typ](default, help=help).tag(config=True)


def _warm_up(needs_litellm=lambda: True):
    """Import what the first prompt needs off the main thread: the Markdown parser and sanitizer, and litellm (~4.5 s)
    unless `needs_litellm()` says no (it reads the settings and the saved notebook, which is no work for `%load_ext`)."""
    try:
        from .sanitize import safe_markdown
        safe_markdown('*warm*')
        if needs_litellm():
            from . import litellm_client
            litellm_client.import_litellm()
    except Exception: log.warning('boopiter_ext: warming up failed; the first prompt will do the imports', exc_info=True)


@magics_class
class BoopMagics(Magics):
    """Prompt cells answered by local models, with the notebook as context.

    Configure with `%config BoopMagics.<name> = value` in a notebook, or `c.BoopMagics.<name> = value`
    in `ipython_config.py` (a default that a project `settings.ini`, section `[boopiter]`, overrides).
    """
    model, reasoning_model, reasoning = _trait('model'), _trait('reasoning_model'), _trait('reasoning')
    host, api_base, api_key_env, models = _trait('host'), _trait('api_base'), _trait('api_key_env'), _trait('models')
    timeout = _trait('timeout')
    context_size, keep_alive, max_tokens = _trait('context_size'), _trait('keep_alive'), _trait('max_tokens')
    max_reply = _trait('max_reply')
    think, clip, system_prompt = _trait('think'), _trait('clip'), _trait('system_prompt')
    max_images, image_size, vision_models = _trait('max_images'), _trait('image_size'), _trait('vision_models')
    reuse, cache_dir, cassette, cassette_file = _trait('reuse'), _trait('cache_dir'), _trait('cassette'), _trait('cassette_file')
    tools, auto, lenient, max_rounds = _trait('tools'), _trait('auto'), _trait('lenient'), _trait('max_rounds')
    unload_others, deaddrop_dir, deaddrop_timeout = _trait('unload_others'), _trait('deaddrop_dir'), _trait('deaddrop_timeout')
    warm_up = Bool(True, help="After loading, import on a background thread what the first prompt needs: the Markdown "
                              "parser, and litellm unless the configured model is served by Ollama directly (which "
                              "never needs litellm).").tag(config=True)

    def __init__(self, shell=None, **kw):
        super().__init__(shell=shell, **kw)
        self.recorder, self._router, self._warm, self._catalog, self._toolbar = CellRecorder(shell), None, None, None, None
        # picks made in this kernel; until there are some, the binding saved in the notebook file applies
        self._binding, self._binding_id = None, f'boopiter-binding-{uuid.uuid4().hex}'
        self._lock = threading.Lock()   # widget callbacks may run on a comm subshell's thread
        self._tidier, self._stopped, self._tape = None, False, None   # _tape: (file stat, the cassette replayed)
        self._pushed = {}   # tools put into the user namespace: name -> function
        self._told = set()   # settings notes a prompt has shown already: each is said once
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
            self._warm = threading.Thread(target=_warm_up, args=(lambda: not self._ollama_only(),),
                                          name='boopiter-warm-up', daemon=True)
            self._warm.start()

    def stop(self):
        "Undo `start`: stop recording, close the brain menu and HTTP sessions, stop the embedded model."
        self.recorder.unregister()
        with self._lock: self._stopped, tidier = True, self._tidier
        if tidier is not None: tidier.stop()
        if self._toolbar is not None: self._toolbar.close()
        self._toolbar = self._tidier = self._catalog = None
        self._withdraw()
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

    @property
    def catalog(self):
        if self._catalog is None:
            from .catalog import Catalog
            self._catalog = Catalog(self.router)
        return self._catalog

    def _ollama_only(self):
        "Whether no model this notebook is set to use goes through litellm (only cloud ids do)."
        from .models import uses_litellm
        s = self.settings(nb=self.notebook())
        models = [m for m in (s['model'], s['reasoning_model']) if m]
        return bool(s['model']) and not any(uses_litellm(m, s) for m in models)

    # -- settings
    def notebook(self):
        "The open notebook's file, if known."
        from .notebook import notebook_path
        return notebook_path(self.shell.user_ns)

    def _resolve(self, cell, nb, binding):
        runtime = {k: getattr(self, k) for k in list(self._set_since_load)}   # `%config` since loading
        config = {k: v for k,v in self._at_load.items() if v != DEFAULTS[k]}
        return load_settings(cell=cell, binding=binding, runtime=runtime, config=config, start=nb.parent if nb else None)

    def settings(self, cell:dict=None, nb=None):
        "Resolved settings for a cell (see `settings.load_settings` for the precedence); `nb` is the notebook file."
        binding, screened = (self._binding, []) if self._binding is not None else self._saved_binding(nb)
        s = self._resolve(cell, nb, binding)
        reasoning_answers = s['reasoning'] and s['reasoning_model'] and picked_model(s)[0] == s['reasoning_model']
        if s.source['think'] == 'notebook binding' and not reasoning_answers:   # the menu's effort is the reasoning model's
            s = self._resolve(cell, nb, {k: v for k,v in binding.items() if k != 'think'})
        s.screened = screened
        s.warnings += screened
        return s

    # -- the binding (binding.py): picks saved in this notebook's outputs
    def _saved_binding(self, nb)->tuple:
        "(binding, warnings): the binding saved in the notebook file `nb`, without ids a notebook may not choose."
        saved = saved_binding(nb) if nb else None
        return screen_binding(saved, self._resolve(None, nb, None)) if saved else ({}, [])

    def binding(self, nb=None)->dict:
        "The notebook's binding: the picks made in this kernel, else those saved in the notebook file `nb`."
        return self._binding if self._binding is not None else self._saved_binding(nb)[0]

    def set_binding(self, **changes):
        "Change the binding (None removes a pick), update every binding display, then tidy Ollama's memory."
        with self._lock:   # two picks at once (a comm thread and the main one) publish in the order they were made
            old = self.binding(self.notebook())
            new = clean_binding({**old, **changes})
            if new != old: new = stamp(new)   # an unchanged pick keeps its time: re-running a cell makes no diff
            self._binding = new
            self._display_binding(*binding_bundle(new), update=True)
            picks_changed = any(old.get(k) != new.get(k) for k in ('model', 'reasoning_model'))
            if picks_changed and not self._stopped and self.settings(nb=self.notebook())['unload_others']:
                if self._tidier is None:
                    from .ollama import MemoryTidier
                    self._tidier = MemoryTidier(self._memory_picks)
                self._tidier.ask()
        if self._toolbar is not None: self._toolbar.show()

    def show_binding(self):
        "Show the binding as an output of its own (every one shown is kept current); saving the notebook keeps it."
        self._display_binding(*binding_bundle(self.binding(self.notebook())))

    def _display_binding(self, data, md, update=False):
        from IPython.display import display
        if update and not hasattr(self.shell, 'kernel'): return   # a terminal cannot update what it printed
        display(data, raw=True, metadata=md, display_id=self._binding_id, update=update)

    def _memory_picks(self)->tuple|None:
        "(Ollama client, models to keep in memory): the standard and reasoning picks; None if Ollama is out of reach."
        from .errors import OllamaError
        s = self.settings(nb=self.notebook())
        client = self.router.ollama(s)
        try: return client, [s['model'] or next(iter(client.tags_names()), None), s['reasoning_model']]
        except OllamaError: return None

    # -- magics
    @magic_arguments()
    @argument('-m', '--model', help="Model for this cell only: an Ollama name, ollama_chat/NAME, local/smollm2-135m "
                                    "or any litellm id (openai/NAME with api_base, a cloud id with its key in the "
                                    "environment).")
    @argument('--think', choices=THINK_LEVELS, help="Reasoning effort for thinking models.")
    @argument('--no-context', action='store_true', help="Send only this prompt, not the notebook above it.")
    @argument('--auto', action='store_true', help="Run the model's tool calls by themselves, after the guards, and "
                                                 "hand it the results until it answers (the `auto` setting).")
    @argument('--lenient', action='store_true', help="In auto mode, also take tool calls written as JSON or tags.")
    @argument('--insert', action='store_true', help="Put the reply's python blocks into a new cell below.")
    @argument('--fresh', action='store_true', help="Ask the model even if this exact question has a saved reply "
                                                  "(the `reuse` setting, for this cell).")
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
        if args.model and not check_setting('model', args.model):
            raise UsageError(f'`-m` needs {RULES["model"][1]}; `%boop models` lists the ids in reach.')
        question = prompt_text('%%prompt\n' + cell)
        if not question: raise UsageError('The prompt is empty: write your question on the lines below `%%prompt`.')
        nb = self.notebook()
        cell = dict(model=args.model, think=args.think, auto=args.auto or None, lenient=args.lenient or None,
                    reuse=False if args.fresh else None)
        settings = self.settings(cell, nb)
        if args.lenient and not settings['auto']: raise UsageError('`--lenient` applies to auto mode: add `--auto`.')
        self._answer(question, settings, nb, with_context=not args.no_context, insert=args.insert)

    @line_magic
    def boop(self, line):
        """The brain menu, and the same choices from code.

        %boop                          the menu: model, reasoning model and effort, keep-alive, context size
        %boop model NAME               bind this notebook to NAME (saved with it); `--clear` removes the pick
        %boop reasoning NAME [l|m|h]   the reasoning model (and effort), switched on; `on`/`off` switch back and forth
        %boop models                   every model in reach, with capabilities
        %boop tools [SOURCE on|off]    the tools offered to the model; `%boop tools auto on` runs guarded calls
        %boop record | replay          save every model turn to the notebook's cassette, or answer from it offline
        %boop cassette [off]           the cassette in use, and how many turns it holds; `off` stops both
        %boop bench --models A,B       score models on a task set: right tools, valid calls, speed (table and chart)
        %boop status                   model, endpoint and settings, each with where it came from
        """
        cmd, _, rest = line.strip().partition(' ')
        handler = getattr(self, f'_boop_{cmd or "menu"}', None)
        if handler is None: raise UsageError(f'Unknown `%boop {cmd}`: try `%boop`, `%boop model NAME`, '
                                             '`%boop reasoning NAME`, `%boop models`, `%boop tools`, `%boop record`, '
                                             '`%boop replay`, `%boop cassette`, `%boop bench` or `%boop status`.')
        return handler(rest.strip())

    def _boop_menu(self, _):
        if not hasattr(self.shell, 'kernel'):   # a terminal shows no widgets: list the models instead
            self._boop_models('')
            return self.show_binding()
        from IPython.display import display
        from .toolbar import Toolbar
        if self._toolbar is None: self._toolbar = Toolbar(self)
        self._toolbar.refresh()
        display(self._toolbar.widget)
        self.show_binding()

    def _boop_model(self, arg):
        if len(arg.split()) > 1: raise UsageError('Usage: `%boop model NAME` (one model id), or `%boop model --clear`.')
        if arg == '--clear': self.set_binding(model=None)
        elif arg:
            self._check_model(arg)
            self.set_binding(model=arg)
        self.show_binding()

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
            self._check_model(name, thinking=True)
            self.set_binding(reasoning_model=name, reasoning=True, **dict(think=effort[0]) if effort else {})
        self.show_binding()

    def _boop_tools(self, arg):
        """`%boop tools`: the sources, on or off, and their tools; `%boop tools files off kernel on`, `%boop tools auto on`
        change the selection (saved with the binding)."""
        from .tools import SOURCES, DEFAULT_SELECTION, notebook_tools, parse_selection, selection_setting
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
        if changes: self.set_binding(**changes)
        s = self.settings(nb=self.notebook())
        offered = self._offer_tools(s, self.notebook())
        chosen = parse_selection(s['tools']) or dict(DEFAULT_SELECTION)
        for name,(_, _, doc) in SOURCES.items():
            print(f'{"on " if chosen.get(name) else "off"}  {name:<8} {doc}')
        if notebook_tools(): print(f'on   {"notebook":<8} added with add_tool: {", ".join(f.__name__ for f in notebook_tools())}')
        print(f'offered: {", ".join(offered) or "none"}')
        print('auto: ' + ('on: guarded calls run by themselves' if s['auto'] else 'off: each python block waits for your Run click'))

    def _boop_record(self, arg): self._boop_cassette(arg or 'record')
    def _boop_replay(self, arg): self._boop_cassette(arg or 'replay')

    def _boop_cassette(self, arg):
        "`%boop record` / `%boop replay` / `%boop cassette off` set the `cassette` setting for this kernel; bare: say."
        from .errors import CassetteDrift
        if arg not in ('', 'record', 'replay', 'off'):
            raise UsageError('Usage: `%boop record`, `%boop replay`, or `%boop cassette [off]`.')
        if arg: self.cassette = arg
        s = self.settings(nb=self.notebook())
        if s['cassette'] not in ('record', 'replay'): return print('No cassette in use; `%boop record` or `%boop replay`.')
        try: cassette = self._cassette(s, recording=s['cassette'] == 'record')
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
        root = self._folder(self.notebook()) or Path.cwd()
        try: return str(Path(path).resolve().relative_to(root.resolve()))
        except ValueError: return Path(path).name

    def _boop_bench(self, arg):
        """`%boop bench --models A,B [--tasks FILE] [--out PREFIX] [--lenient]`: the scorecard as a table and a chart,
        and a JSON result file (`PREFIX.json`, `PREFIX.png`; by default `bench-<time>` next to the notebook)."""
        import argparse, shlex, time
        from .context import SYSTEM_PROMPT
        from .scorecard import ollama_version, router_clients, run_bench
        p = argparse.ArgumentParser(prog='%boop bench', add_help=False, exit_on_error=False)
        p.add_argument('--models', default='')
        p.add_argument('--tasks')
        p.add_argument('--out')
        p.add_argument('--lenient', action='store_true')
        usage = 'usage: `%boop bench --models A,B [--tasks FILE] [--out PREFIX] [--lenient]`.'
        try: args, extra = p.parse_known_args(shlex.split(arg))
        except (argparse.ArgumentError, ValueError) as e: raise UsageError(f'{e}; {usage}') from None
        if extra: raise UsageError(f'unknown `{" ".join(extra)}`; {usage}')
        nb, s = self.notebook(), self.settings(nb=self.notebook())
        models = [m.strip() for m in args.models.split(',') if m.strip()] or [self._answering_model(s)[0]]
        out = Path(args.out or (self._folder(nb) or Path.cwd())/f'bench-{time.strftime("%Y%m%d-%H%M%S")}')
        def progress(row): print(f'{row.model:<24} {row.task:<4} {"ok" if row.right else "XX"}  {row.seconds:5.1f} s'
                                 + (f'  {row.error}' if row.error else ''), flush=True)
        res = run_bench(models, **router_clients(self.router, s), tasks=args.tasks, namespace=self.shell.user_ns,
                        max_rounds=s['max_rounds'], lenient=args.lenient or s['lenient'], on_progress=progress,
                        system='\n\n'.join(p for p in (SYSTEM_PROMPT, s['system_prompt']) if p),
                        ollama=ollama_version(self.router, s))
        kernel = hasattr(self.shell, 'kernel')
        if kernel:
            from IPython.display import Image, Markdown, display
            from .render import safe_markdown
            display(Markdown(safe_markdown(res.markdown())))   # a failed row quotes its server
        else: print(res.table())
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            saved = [res.save(out.with_suffix('.json'))]
            try: saved.append(res.chart(out.with_suffix('.png')))
            except ImportError: print('no chart: matplotlib is not installed (`pip install matplotlib`)')
        except OSError as e: raise UsageError(f'The scorecard was not saved to {out}: {e.strerror or e}.') from None
        if kernel and len(saved) > 1: display(Image(filename=str(saved[1])))
        print('saved: ' + ', '.join(map(self._shown_path, saved)) + ('  (interrupted: the tasks that ran)' if res.cancelled else ''))

    def _boop_models(self, _):
        listing = self.catalog.refresh(self.settings(nb=self.notebook()))
        from .catalog import human_size
        rows = [(e.id, ', '.join(c for c in e.capabilities if c != 'completion') or '-',
                 f'{e.context_length:,}' if e.context_length else '-', human_size(e.size) or '-',
                 ' · '.join(filter(None, [e.note, e.offline and f'offline: {e.offline}']))) for e in listing.entries]
        head = ('model', 'capabilities', 'context', 'size', '')
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
        lines = ['  '.join(c.ljust(w) for c,w in zip(r, widths)) + '  ' + r[4] for r in [head, *rows]]
        lines += [f'{src} (not listed now): {why}' for src,why in listing.problems.items()]
        print('\n'.join(l.rstrip() for l in lines) if rows or listing.problems else 'No models in reach.')

    def _check_model(self, name, thinking=False):
        "Refuse a model Ollama says it does not have (or, for reasoning, one that cannot think); other ids are trusted."
        from .errors import OllamaError, OllamaModelNotFound
        if not is_ollama_id(name): return
        try: caps = self.router.ollama(self.settings(nb=self.notebook())).model_info(ollama_name(name))['capabilities']
        except OllamaModelNotFound as e: raise UsageError(str(e)) from None
        except OllamaError: return   # not reachable now: bind anyway; a prompt will say what is wrong
        if thinking and caps and 'thinking' not in caps:
            raise UsageError(f'{name} is not a thinking model (its capabilities: {", ".join(caps)}); pick one that lists '
                             '`thinking` (`%boop models` shows them).')

    def _boop_status(self, _):
        nb = self.notebook()
        s = self.settings(nb=nb)
        try:
            model, note = self.router.resolve(s)
            route, info = self.router.describe(model, s), self.router.model_info(model, s)
            model_line = f'{model} ({note or "from " + picked_model(s)[1]})'
            if s['reasoning'] and s['reasoning_model'] == model: model_line += ', the reasoning model'
            endpoint = f'{route["name"]} at {route["endpoint"]}' if route['endpoint'] else route['name']
        except BoopError as e: model_line, endpoint, info = f'none: {e}', '-', {}
        ctx = f'{s["context_size"]:,} tokens ({s.source["context_size"]})' if s['context_size'] else 'auto (sized to each prompt'
        if not s['context_size']: ctx += f', up to {info["context_length"]:,} tokens)' if info.get('context_length') else ')'
        tools = self._tool_list(s, nb)
        tools = f'{", ".join(tools) or "none"} ({"auto-run" if s["auto"] else "run on your click"})'
        rows = dict(model=model_line, endpoint=endpoint, tools=tools, context=ctx,
                    binding=binding_text(self.binding(nb)).partition(' · ')[2]
                            + (' (from the saved notebook)' if self._binding is None and nb else ''),
                    notebook=str(nb) if nb else 'unknown (cells in execution order; set BOOPITER_NOTEBOOK for headless runs)',
                    cells=f'{len(self.recorder.cells())} recorded')
        rows.update({k: f'{public_url(str(s[k]))} ({s.source[k]})' for k in ('host', 'api_base', 'timeout', 'keep_alive', 'think')
                     if s.source[k] != 'default'})
        warnings = s.warnings + [f'`%config BoopMagics.{k}` is outranked by the notebook\'s binding ({k} = {s[k]}); '
                                 f'`%boop model --clear` or the menu changes it' for k in sorted(self._set_since_load)
                                 if s.source[k] == 'notebook binding' and getattr(self, k) != s[k]]
        print('\n'.join(f'{k:<9} {v}' for k,v in rows.items()) + ''.join(f'\nwarning   {w}' for w in warnings))

    # -- answering
    def _answer(self, question, settings, nb, with_context=True, insert=False):
        "Resolve the model, offer the tools, build the context, and stream the reply (or the tool loop) into this cell."
        router = self.router
        model, note = self._answering_model(settings)
        info = self._model_info(model, settings, nb)
        effort, effort_note = router.effort(model, settings, info)
        if effort_note and settings.source['think'] == 'cell option':   # asked for in this cell: a mistake worth a word
            raise UsageError(f'{model} is not a thinking model (its capabilities: {", ".join(info.get("capabilities") or ())}'
                             '), so `--think` cannot apply; drop it or pick a thinking model with `-m`.')
        tools = self._offer_tools(settings, nb)
        auto = settings['auto'] and bool(tools)
        cells = self._cells_above(nb) if with_context else []
        msgs, ledger = self._context(question, settings, info, cells, tools, auto, self._folder(nb))
        told = [n for n in settings.notes if n not in self._told]   # a refused setting: said in the first prompt only
        self._told.update(told)
        note = '; '.join(filter(None, [note, effort_note, *settings.screened, *told]))
        source = picked_model(settings)[1]
        route = dict(router.describe(model, settings), note=note, picked_by=short_source(source), effort=effort,
                     reasoning_model=bool(settings['reasoning'] and settings['reasoning_model'] and source != 'cell option'),
                     model_info={k: info[k] for k in ('capabilities', 'context_length', 'vision') if info.get(k) is not None})
        if auto: reply = self._tool_loop(question, model, msgs, settings, info, route, ledger, tools)
        else: reply = self._stream(model, msgs, settings, info, route, ledger)
        self._offer_code(reply, tools, insert)

    def _offer_code(self, reply, tools, insert):
        "The reply's python blocks (those the tool loop did not run): into a new cell, or under Run buttons."
        from .guards import python_blocks
        from .toolloop import tool_blocks
        ran = {b for b,_ in tool_blocks(reply, tools)} if reply.info.get('tool_loop') else set()
        if not (blocks := [b for b in python_blocks(reply.answer) if b not in ran]): return
        if insert: self.shell.set_next_input('\n\n'.join(b.rstrip() for b in blocks))
        elif hasattr(self.shell, 'kernel'):
            from IPython.display import display
            from .code_actions import CodeActions
            display(CodeActions(self.shell, blocks).widget)

    # -- tools (tools.py, guards.py, toolloop.py)
    @staticmethod
    def _folder(nb)->Path|None:
        "The folder files are read from (file tools, image links): the notebook's, else the working one, but never / or ~."
        root = nb.parent if nb else Path.cwd()
        return None if root.resolve() in (Path('/'), Path.home().resolve()) else root

    def _tool_list(self, settings, nb)->dict:
        "The selected tools by name; the file tools only where there is a folder to confine them to."
        from .tools import DEFAULT_SELECTION, ToolContext, get_tool_list, parse_selection
        root, selection = self._folder(nb), parse_selection(settings['tools'])
        if root is None: selection = {**(selection or DEFAULT_SELECTION), 'files': False}   # never the whole disk
        ctx = ToolContext(root=root or Path.cwd(), namespace=self.shell.user_ns, cells=lambda: self._cells_above(nb))
        return {fn.__name__: fn for fn in get_tool_list(selection, ctx)}

    def _withdraw(self, keep=()):
        "Take the tools this extension pushed out of the user namespace (but `keep`, and any name the user reassigned)."
        ns = self.shell.user_ns
        for name,fn in self._pushed.items():
            if name not in keep and ns.get(name) is fn: del ns[name]
        self._pushed = {}

    def _offer_tools(self, settings, nb)->dict:
        "The selected tools by name, pushed into the user namespace (and deselected ones taken out)."
        from .tools import is_tool
        ns, offered = self.shell.user_ns, {}
        for name,fn in self._tool_list(settings, nb).items():
            if name not in ns or ns[name] is fn or is_tool(ns[name]): offered[name] = fn
            else: log.warning('boopiter_ext: tool %s not offered: your variable of that name stays', name)
        self._withdraw(keep=offered)
        ns.update(offered)
        self._pushed = offered
        return offered

    def _tool_loop(self, question, model, msgs, settings, info, route, ledger, tools):
        """Auto mode: each reply streams into its own display, each round's calls are shown, then how the loop ended.
        Returns the last reply."""
        from IPython.display import display
        from .context import context_window, estimate_tokens
        from .guards import confirm_by_input
        from .messages import msg_text
        from .render import loop_bundle, round_bundle
        from .toolloop import run_tool_loop
        from .tools import user_variables
        if settings['max_rounds'] < 1: raise UsageError('`max_rounds` must be at least 1.')
        def tokens(messages): return sum(estimate_tokens(msg_text(m)) for m in messages)
        def fits(messages): return tokens(messages) + ledger['reserve'] <= ledger['cap']
        def ask(messages):   # each round sized to its conversation, which grows with the tools' results
            window = context_window(tokens(messages) + ledger['reserve'], info.get('context_length'), settings['context_size'])
            return self._stream(model, messages, settings, info, route, {**ledger, 'window': window}, raise_interrupt=False)
        def show_round(rnd, steps):
            data, md = round_bundle(rnd, steps)
            display(data, raw=True, metadata=md)
        result = run_tool_loop(ask, msgs, tools, question, namespace=user_variables(self.shell.user_ns),
                               max_rounds=settings['max_rounds'], lenient=settings['lenient'], confirm=confirm_by_input,
                               fits=fits, on_round=show_round)
        data, md = loop_bundle(result)
        display(data, raw=True, metadata=md)
        if result.error is not None: raise result.error
        if result.stop == 'cancelled':
            ran = [s.source for s in result.steps if s.status in ('ok', 'flagged') or s.status.startswith('crashed')]
            raise ReplyInterrupted('Interrupted: the tool loop stopped' + (f'; these calls had already run and keep '
                                   f'their effects: {", ".join(ran)}.' if ran else '; no tool had run.'))
        result.reply.info['tool_loop'] = result.stop
        return result.reply

    def _cells_above(self, nb):
        "The recorded cells above this prompt, in the order of the saved notebook `nb` when there is one."
        from .context import order_cells
        from .notebook import saved_cells
        return order_cells(self.recorder.cells(), saved_cells(nb) if nb else None, self.recorder.current)

    def _context(self, question, settings, info, cells, tools=None, auto=False, root=None):
        "(messages, ledger): `cells` and the question, budgeted to the model's window, which goes in the ledger."
        from .context import build_context, context_window
        model_max, requested = info.get('context_length'), settings['context_size']
        cap = min(filter(None, (requested, model_max))) if requested or model_max else 8192
        reserve = settings['max_tokens'] or min(1024, cap // 4)  # room left for the reply
        from .tools import tools_system_prompt
        system = '\n\n'.join(p for p in (SYSTEM_PROMPT, settings['system_prompt'], tools_system_prompt(list((tools or {}).values()), auto))
                               if p)
        msgs, ledger = build_context(cells, question, limit=cap - reserve, system=system, clip_chars=settings['clip'],
                                     vision=bool(info.get('vision')), root=root and root.resolve(),
                                     max_images=settings['max_images'], max_side=settings['image_size'])
        ledger['window'] = window = context_window(ledger['tokens'] + reserve, model_max, requested)
        ledger['cap'], ledger['reserve'] = cap, reserve
        if ledger['tokens'] > window:   # Ollama would cut the start of the prompt without a word
            ledger['warning'] = (f'The prompt (~{ledger["tokens"]:,} tokens) is longer than the {window:,}-token context '
                                 'window, so the model sees only part of it. Shorten the question, or raise `context_size`'
                                 + (f' (this model takes up to {model_max:,}).' if model_max and model_max > window else '.'))
        return msgs, ledger

    def _stream(self, model, msgs, settings, info, route, ledger, raise_interrupt=True):
        """Show the reply to `msgs` in one display and return it: replayed from the cassette, reused from a saved reply
        to the same request, or streamed from the model (recorded when recording). Faults keep the partial reply
        and end as one-paragraph errors; with `raise_interrupt=False` an interrupted reply is returned (marked)."""
        from .replay import request_digest
        from .stream import Reply
        from .view import ReplyView
        options = dict(think=route.get('effort'), max_tokens=settings['max_tokens'], num_ctx=ledger['window'])
        digest, mode = request_digest(model, msgs, options), settings['cassette']
        route = {**route, 'digest': digest}
        view = ReplyView(self.shell, route, ledger)
        if mode == 'replay':
            reply = Reply.restore(model, self._cassette(settings).reply(digest, model))
            self._shown(view.final(reply))
            return reply
        if settings['reuse'] and mode != 'record' and (saved := self._saved_reply(digest, settings)) is not None:
            from .render import reply_bundle
            from .replay import saved_snapshot
            reply = Reply.restore(model, saved_snapshot(saved))   # drawn again by the renderer: a file's HTML never is
            self._shown(view.show(*reply_bundle(reply, {**route, 'reused': True}, ledger)))
            return reply
        reply, output = self._ask(model, msgs, settings, info, view, raise_interrupt)
        if reply.status == 'done':
            if mode == 'record':
                self._cassette(settings, recording=True).add(digest, model, options, reply.snapshot(), route.get('model_info'))
            if settings['cache_dir']:
                from .replay import DiskCache
                DiskCache(settings['cache_dir']).put(digest, output)
        return reply

    def _shown(self, output):
        "Record a reply output shown in this cell (the next prompt's context reads it); return it."
        if self.recorder.current is not None: self.recorder.current.outputs.append(output)
        return output

    def _ask(self, model, msgs, settings, info, view, raise_interrupt=True)->tuple:
        "(reply, output): the model's reply streamed into `view`; faults keep the partial reply and raise one paragraph."
        from .stream import Reply, pump
        current = self.recorder.current
        view.waiting(model, 'starting the embedded model' if model.startswith('local/') and not self.router.local.url else '')
        reply, events, err = Reply(model), None, None
        try:
            meta = dict(notebook=str(self.notebook() or ''), cell_id=getattr(current, 'cell_id', None))
            events = self.router.chat(model, msgs, settings, info, num_ctx=view.ledger['window'], meta=meta)
            view.route.update(self.router.describe(model, settings))   # the embedded model's address is known once started
            pump(events, reply, view.update, view.interval, limit=settings['max_reply'])
            reply.finish('done')
        except KeyboardInterrupt:
            reply.finish('interrupted')
            err = ReplyInterrupted(f'Interrupted after {reply.chunks:,} tokens; the partial reply is kept above.'
                                   if reply.chunks else 'Interrupted before the model answered.')
        except BoopError as e:
            reply.finish({ReplyBroken: 'broken', ReplyStalled: 'stalled', ReplyTooLong: 'too long'}.get(type(e), 'error'))
            err = e
        finally:
            if events is not None: events.close()   # hangs up if the stream is still open
            if reply.status == 'streaming': reply.finish('error')   # a bug escaped: keep what arrived anyway
            output = self._shown(view.final(reply))
        if err is not None and (raise_interrupt or not isinstance(err, ReplyInterrupted)):
            if reply.chunks and not isinstance(err, (ReplyInterrupted, ReplyTooLong)):
                err.args = (f'{err} The partial reply is kept above.',)
            raise err
        return reply, output

    # -- reproducible replies (replay.py): the reply cache and cassettes
    def _saved_reply(self, digest, settings)->dict|None:
        "A finished reply to this exact request: shown in this kernel, saved in the notebook, or in `cache_dir`."
        from .notebook import saved_cells
        from .replay import DiskCache, find_saved_reply
        nb = self.notebook()
        found = find_saved_reply(digest, self.recorder.cells(), saved_cells(nb) if nb else None,
                                 cell_id=getattr(self.recorder.current, 'cell_id', None))
        if found is None and settings['cache_dir']: found = DiskCache(settings['cache_dir']).get(digest)
        return found

    def _cassette(self, settings, recording=False):
        "The cassette; one being replayed is read once, and again only when its file changes."
        from .replay import Cassette, cassette_path
        path = cassette_path(self.notebook(), settings['cassette_file'])
        if recording: return Cassette(path, recording)   # `add` reloads it under its lock anyway
        try: key = path, path.stat().st_mtime_ns, path.stat().st_size
        except OSError: key = None
        if key is None or self._tape is None or self._tape[0] != key: self._tape = key, Cassette(path)
        return self._tape[1]

    def _answering_model(self, settings):
        "(model, note): the picked model, else `Router.resolve`'s; replaying with none picked, the one that was recorded."
        if settings['cassette'] == 'replay' and not picked_model(settings)[0]:
            if (auto := self._cassette(settings).auto_model): return auto, 'the model that answered when recording'
        model, note = self.router.resolve(settings)
        if model == LOCAL_ID and note:   # Ollama is out of reach: the model that answered before keeps its saved replies
            from .notebook import saved_cells
            from .replay import saved_auto_model
            nb = self.notebook()
            before = saved_auto_model(self.recorder.cells(), saved_cells(nb) if nb else None)
            if before not in (None, LOCAL_ID) and may_choose(before, settings):   # a notebook may not pick a provider
                return before, (f'{note.partition(",")[0]}; {before} answered these prompts before, so its saved replies '
                                'are shown again (a changed prompt needs it running)')
        if note and settings['cassette'] == 'record':
            cassette = self._cassette(settings, recording=True)
            cassette.auto_model = model
            cassette.save()
        return model, note

    def _model_info(self, model, settings, nb)->dict:
        "What the model says of itself; replaying, what it said when recorded; offline, what a saved reply noted."
        from .notebook import saved_cells
        from .replay import saved_model_info
        if settings['cassette'] == 'replay' and (info := self._cassette(settings).models.get(model)) is not None: return info
        try: return self.router.model_info(model, settings)
        except BoopError:
            if (info := saved_model_info(model, self.recorder.cells(), saved_cells(nb) if nb else None)) is None: raise
            return info
