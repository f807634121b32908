"""The brain menu that `%boop` shows: core ipywidgets, so it works in JupyterLab, Notebook 7 and VS Code
with no extension and no CDN.

    model [qwen3:1.7b 🔧🧠 · 1.4 GB ▾]  (reasoning)  [qwen3:8b 🔧🧠 · 5.2 GB ▾]  auto L M H
    keep [default ▾]  context [auto ▾]  ⟳  (reuse replies)
    🔧 tools  [x] kernel  [x] files  (auto-run)
    ⚠ This notebook asks for auto-run and the web tool; allowed here: kernel, files  [Allow for this notebook]
    answering: qwen3:1.7b (notebook binding) · 4,096-token context · 1.4 GB · models: 3 ollama, 1 local

It is the fallback where the JupyterLab / Notebook 7 extension is absent (VS Code, JupyterLab without it): what it
shows comes from `menu.py`, as the extension's menu does. Each control writes the notebook's binding
(`Assistant.set_binding`), which keeps the saved binding display current; the widgets themselves hold no state
that matters after the kernel goes away. A click is yours: what it turns on of auto-run and the tools that act or
reach out is remembered for the notebook (`consent.py`); what the notebook only proposes shows off, with a line that
says so and a button that accepts it. Callbacks never print: output from a widget callback lands in
JupyterLab's log console, not the cell.
"""

__all__ = ['Toolbar']

import threading
from collections import Counter
from html import escape
import ipywidgets as W
from ..models.catalog import human_size
from ..core.menu import CONTEXT_SIZES, EFFORTS, KEEP_ALIVE, answering, size_label
from ..models.routes import picked_model
from ..tools.registry import DEFAULT_SELECTION, SOURCES, parse_selection, selection_setting


def _unlisted(value, options, label=lambda v: f'{v} · not listed'):
    "Keep a value that is not among `options` visible (a pick whose model is gone), instead of silently replacing it."
    return options if value in [v for _,v in options] else [*options, (label(value), value)]


class Toolbar:
    "The brain menu for one kernel: shown by every `%boop`, all views stay in sync."
    def __init__(self, magics):   # the `assistant.Assistant` it shows and steers
        # the lock keeps a callback on a comm subshell's thread from interleaving with `show` on the main thread
        self.magics, self._quiet, self._lock = magics, False, threading.RLock()
        wide, narrow = W.Layout(width='310px'), W.Layout(width='185px')
        self.model = W.Dropdown(description='model', layout=wide, style=dict(description_width='42px'))
        self.use_reasoning = W.ToggleButton(description='reasoning', icon='lightbulb-o', layout=W.Layout(width='110px'),
                                            tooltip='Answer with the reasoning model instead of the standard one')
        self.reasoning_model = W.Dropdown(layout=W.Layout(width='230px'))
        self.effort = W.ToggleButtons(options=EFFORTS, value='', style=dict(button_width='44px'),
                                      tooltips=["the model's default effort", 'low effort', 'medium effort', 'high effort'])
        self.keep_alive = W.Dropdown(description='keep', layout=narrow, style=dict(description_width='36px'),
                                     tooltip='How long Ollama keeps the model in memory after a reply')
        self.context = W.Dropdown(description='context', layout=W.Layout(width='150px'), style=dict(description_width='52px'),
                                  tooltip='Context window (num_ctx); auto sizes it to each prompt')
        self.refresh_button = W.Button(icon='refresh', tooltip='List the models again', layout=W.Layout(width='36px'))
        self.reuse = W.ToggleButton(description='reuse replies', icon='recycle', layout=W.Layout(width='130px'),
                                    tooltip='Show the saved reply again when a prompt asks exactly what it asked before '
                                            '(off: every prompt asks the model)')
        # the wrench menu: which tool sources the model is offered, and whether guarded calls run by themselves
        self.sources = {name: W.Checkbox(description=name, indent=False, tooltip=doc, layout=W.Layout(width='auto'))
                        for name,(_, _, doc) in SOURCES.items()}
        self.auto = W.ToggleButton(description='auto-run', icon='bolt', layout=W.Layout(width='100px'),
                                   tooltip='Run guarded tool calls by themselves (off: each python block waits for Run)')
        tools_row = W.HBox([W.HTML('<span title="Tools offered to the model">🔧 tools</span>',
                                   layout=W.Layout(width='60px')), *self.sources.values(), self.auto])
        # what the notebook proposes beyond what you allowed, and the click that accepts it (hidden when nothing is)
        self.proposal = W.HTML()
        self.allow = W.Button(description='Allow for this notebook', icon='check', button_style='warning',
                              layout=W.Layout(width='190px'),
                              tooltip='Accept what this notebook proposes, for this notebook on this machine')
        self.consent_row = W.HBox([self.proposal, self.allow], layout=W.Layout(display='none'))
        self._proposed = []   # what the line shows: what Allow accepts
        self.status = W.HTML()
        self.status.add_class('boopiter-status')
        self.widget = W.VBox([W.HBox([self.model, self.use_reasoning, self.reasoning_model, self.effort]),
                              W.HBox([self.keep_alive, self.context, self.refresh_button, self.reuse]), tools_row,
                              self.consent_row, self.status])
        self.widget.add_class('boopiter-toolbar')
        self._widgets = [self.widget, *self.widget.children, *[c for b in self.widget.children[:4] for c in b.children]]
        for w,key in ((self.model, 'model'), (self.reasoning_model, 'reasoning_model'), (self.use_reasoning, 'reasoning'),
                      (self.effort, 'think'), (self.keep_alive, 'keep_alive'), (self.context, 'context_size')):
            w.observe(lambda change, key=key: self._picked(key, change['new']), names='value')
        self.auto.observe(lambda change: self._picked('auto', change['new']), names='value')
        self.reuse.observe(lambda change: self._picked('reuse', change['new']), names='value')
        for box in self.sources.values(): box.observe(lambda change: self._picked_sources(), names='value')
        self.refresh_button.on_click(lambda _: self.refresh())
        self.allow.on_click(lambda _: self._allowed())

    def close(self):
        "Close every widget, with its layout and style models (the extension is unloading)."
        for w in self._widgets:
            for model in (w, w.layout, getattr(w, 'style', None)):
                if model is not None: model.close()

    # -- from the widgets to the binding
    def _picked(self, key, value):
        with self._lock:
            if not self._quiet: self._pick(**{key: None if value in ('', None) else value})

    def _picked_sources(self):
        with self._lock:
            if not self._quiet: self._pick(tools=selection_setting({n: b.value for n,b in self.sources.items()}))

    def _pick(self, **changes):
        "A click: what it turns on is yours for this notebook, remembered on this machine (`consent.py`)."
        a = self.magics
        a.consent.picked(changes, a.notebook(), remember=True)
        a.set_binding(**changes)

    def _allowed(self):
        "The Allow button: accept what the line showed, as far as the notebook still proposes it, then redraw."
        with self._lock:
            a = self.magics
            nb = a.notebook()
            a.consent.accept([i for i in self._proposed if i in a.settings(nb=nb).proposed], nb)
            self._show()

    # -- from the binding and the listing to the widgets
    def refresh(self):
        "List the models again and update the controls; nothing is redrawn when nothing changed."
        with self._lock:
            self.magics.catalog.refresh(self.magics.settings(nb=self.magics.notebook()))
            self.show()

    def _set(self, widget, options=None, value=None):
        "Set options (only if they changed, so a refresh with nothing new redraws nothing) and value, quietly."
        self._quiet = True
        try:
            if options is not None and widget.options != options: widget.options = options
            if widget.value != value: widget.value = value
        finally: self._quiet = False

    def show(self):
        "Bring every control in line with the current settings and listing."
        with self._lock: self._show()

    def _show(self):
        nb = self.magics.notebook()
        s, binding, listing = self.magics.settings(nb=nb), self.magics.binding(nb), self.magics.catalog.last
        entries = listing.entries
        def listed(model): return listing.get(model).id if listing.get(model) else model   # `ollama_chat/x` is x
        model, thinker = listed(s['model']), listed(s['reasoning_model'])
        models = _unlisted(model, [("default: settings, else Ollama's best chat model", ''),
                                   *[(e.label, e.id) for e in entries]])
        thinkers = _unlisted(thinker, [('no reasoning model', ''), *[(e.label, e.id) for e in entries if e.thinking]])
        entry = listing.get(picked_model(s)[0])
        cap = entry.context_length if entry else None
        sizes = [(size_label(n), n) for n in [0, *CONTEXT_SIZES] if not cap or n <= cap]
        effort = binding.get('think') or s['think']   # the effort picked here, even while the standard model answers
        self._set(self.model, tuple(models), model)
        self._set(self.reasoning_model, tuple(thinkers), thinker)
        self._set(self.use_reasoning, value=bool(s['reasoning']))
        self._set(self.effort, value=effort if effort in ('l', 'm', 'h') else '')
        self._set(self.keep_alive, tuple(_unlisted(str(s['keep_alive']), KEEP_ALIVE)), str(s['keep_alive']))
        self._set(self.context, tuple(_unlisted(s['context_size'], sizes, size_label)), s['context_size'])
        chosen = parse_selection(s['tools']) or DEFAULT_SELECTION
        for name,box in self.sources.items(): self._set(box, value=bool(chosen.get(name)))
        self._set(self.auto, value=bool(s['auto']))
        self.auto.button_style = 'warning' if s['auto'] else ''
        self._set(self.reuse, value=bool(s['reuse']))
        self.use_reasoning.button_style = 'info' if s['reasoning'] else ''
        self.reasoning_model.disabled = len(thinkers) == 1 and not s['reasoning_model']
        self.effort.disabled = self.reasoning_model.disabled or not s['reasoning']   # the effort is the reasoning model's
        self.effort.tooltip = ('Reasoning effort (the reasoning model\'s)' if not self.effort.disabled else
                               'Effort applies while reasoning is on: switch it on to pick one')
        html = self._status_html(s, listing)
        if self.status.value != html: self.status.value = html
        self._proposed = list(s.proposed)
        line = f'<span title="{escape(s.consent)}">⚠ {escape(s.consent)}</span>' if s.proposed else ''
        if self.proposal.value != line: self.proposal.value = line
        self.consent_row.layout.display = 'flex' if s.proposed else 'none'

    def _status_html(self, s, listing):
        a = answering(s, listing, lambda model: self.magics.menu_window(model, s, listing))
        auto, why = a['auto'] and a['model'] and a['why'].startswith('auto: '), a['why']
        if auto: why = why.removeprefix('auto: ')
        line = f'answering: {"auto → " if auto else ""}<b>{escape(a["model"] or "none available")}</b> ({escape(why)})'
        if a.get('window'): line += f' · {a["window"]:,}-token context'   # what the request asks for, as its details say
        if a.get('size') and human_size(a['size']) not in why: line += f' · {human_size(a["size"])}'   # once
        found = ', '.join(f'{n} {src}' for src,n in Counter(e.source for e in listing.entries).items())
        rows = [f'{line} · models: {escape(found) or "none"}']
        rows += [f'<span style="opacity:.6">{escape(src)}: {escape(why)}'
                 f'{" (showing the last list, marked offline)" if any(e.source == src for e in listing.entries) else ""}'
                 f'</span>' for src,why in listing.problems.items()]
        return '<div style="font-size:12px; line-height:1.5">' + '<br>'.join(rows) + '</div>'
