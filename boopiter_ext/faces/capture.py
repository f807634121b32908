"""Recording what each executed cell showed, for the context: source, streams, displays, results, errors.

`CellRecorder` listens to IPython's `pre_run_cell`/`post_run_cell` events, tees `sys.stdout` and
`sys.stderr` while a cell runs (ipykernel's stream hooks fire on the IOPub thread, too late and on
the wrong thread), and sees displays and results through ipykernel's display hooks, or by wrapping
`display_pub.publish` in a plain IPython shell. Outputs are stored as nbformat-style dicts, the
shape the saved notebook has, so the context builder reads both the same way.

A re-run cell (same cell id) replaces its earlier record. Callbacks never raise: a failure is
logged and the cell runs on.
"""

__all__ = ['CellRecorder', 'error_output']

import logging, sys, traceback
from ..context.build import Cell, cell_tags, is_prompt

log = logging.getLogger('boopiter_ext')
_OWN = 'boopiter'  # metadata key of our own reply outputs, recorded by the prompt magic itself
_KEEP = 500_000    # characters of a cell's stream kept from its start, and from its end


def error_output(e:BaseException, frames:int=3)->dict:
    "An nbformat error output with a short traceback: the last few frames of user code, no IPython internals."
    tb = [f for f in traceback.extract_tb(e.__traceback__) if '/IPython/core/' not in f.filename][-frames:]
    lines = ['Traceback (most recent call last):'] + [ln.rstrip('\n') for ln in traceback.format_list(tb)] if tb else []
    return dict(output_type='error', ename=type(e).__name__, evalue=str(e),
                traceback=lines + [ln.rstrip('\n') for ln in traceback.format_exception_only(type(e), e)])


def _quiet(f):
    "Event callbacks must not raise (IPython would print a traceback under every cell)."
    def wrapper(self, *args):
        try: return f(self, *args)
        except Exception: log.exception('boopiter_ext: %s failed', f.__name__)
        return args[0] if args and isinstance(args[0], dict) else None
    wrapper.__name__ = f.__name__
    return wrapper


class CellRecorder:
    "Records every executed cell of `shell`; `cells()` lists them in execution order, one per cell."
    def __init__(self, shell):
        self.shell, self.current, self._cells, self._teed, self._publish = shell, None, {}, [], None
        self._result_unhooked, self._active, self._publishing = False, True, False
        self._displays = {}   # display id -> the outputs that showed it

    def register(self):
        "Start recording: event callbacks, display hooks, and the cells that ran before loading."
        self.import_history()
        self.shell.events.register('pre_run_cell', self.pre_run_cell)
        self.shell.events.register('post_run_cell', self.post_run_cell)
        pub, hook = self.shell.display_pub, getattr(self.shell, 'displayhook', None)
        if hasattr(pub, 'register_hook'): pub.register_hook(self.on_display_msg)
        else:
            self._publish = pub.publish
            pub.publish = self._wrapped_publish
        self._result_unhooked = not hasattr(hook, 'register_hook')
        if not self._result_unhooked: hook.register_hook(self.on_result_msg)

    def unregister(self):
        "Undo everything `register` did."
        self._untee()
        for ev,cb in (('pre_run_cell', self.pre_run_cell), ('post_run_cell', self.post_run_cell)):
            try: self.shell.events.unregister(ev, cb)
            except ValueError: pass
        pub, hook = self.shell.display_pub, getattr(self.shell, 'displayhook', None)
        self._active = False
        if self._publish is not None:
            # if something wrapped us since, we stay in its chain, passing displays through untouched
            if pub.__dict__.get('publish') == self._wrapped_publish: del pub.publish
        elif hasattr(pub, 'unregister_hook'): pub.unregister_hook(self.on_display_msg)
        if hasattr(hook, 'unregister_hook'): hook.unregister_hook(self.on_result_msg)

    def cells(self)->list:
        "Recorded cells in execution order (a re-run cell appears once, at its latest run)."
        return list(self._cells.values())

    def import_history(self):
        "Cells that ran before the extension loaded: sources from the input history, results from `Out`."
        raw, outs = self.shell.history_manager.input_hist_raw, self.shell.user_ns.get('Out', {})
        for n in range(1, min(self.shell.execution_count, len(raw))):
            src = raw[n]
            if not src.strip(): continue
            cell = Cell(src, 'prompt' if is_prompt(src) else 'code', exec_count=n, origin='history')
            if n in outs: self._add_result(cell, outs[n])
            self._cells[f'#{n}'] = cell

    def _add_result(self, cell, value):
        "Record a cell's result value (where no display hook shows it to us)."
        try: data, md = self.shell.display_formatter.format(value)
        except Exception: data, md = {'text/plain': repr(value)}, {}
        cell.outputs.append(dict(output_type='execute_result', data=data, metadata=md, execution_count=cell.exec_count))

    @_quiet
    def pre_run_cell(self, info):
        if info.silent or not info.store_history:
            self.current = None
            return
        src = info.raw_cell or ''
        self.current = Cell(src, 'prompt' if is_prompt(src) else 'code', cell_id=info.cell_id,
                            exec_count=self.shell.execution_count, tags=cell_tags(info.cell_meta))
        if self.current.kind == 'code': self._tee()

    @_quiet
    def post_run_cell(self, result):
        self._untee()
        info, cell = result.info, self.current
        self.current = None
        if cell is None:  # the cell that loaded us: pre_run_cell fired before we listened
            if info.silent or not info.store_history: return
            src = info.raw_cell or ''
            cell = Cell(src, 'prompt' if is_prompt(src) else 'code', cell_id=info.cell_id,
                        exec_count=result.execution_count)
        if self._result_unhooked and result.result is not None: self._add_result(cell, result.result)
        cell.exec_count = result.execution_count or cell.exec_count
        err = result.error_before_exec or result.error_in_exec
        if err is not None and not (cell.kind == 'prompt' and hasattr(err, '_render_traceback_')):
            cell.outputs.append(error_output(err))
        key = cell.cell_id or f'#{cell.exec_count}'
        self._cells.pop(key, None)
        self._cells[key] = cell

    def _tee(self):
        "While a code cell runs, copy what it writes to stdout/stderr into its record."
        for name in ('stdout', 'stderr'):
            stream = getattr(sys, name)
            prev = stream.write   # IPython's own tee of the cell (`InteractiveShell._tee`), which puts back its own
            def tee(s, write=prev, name=name):
                n = write(s)
                if self.current is not None and not self._publishing and isinstance(s, str): self._add_stream(name, s)
                return n
            stream.write = tee
            self._teed.append((stream, tee, prev))

    def _untee(self):
        "Put back exactly what `_tee` replaced."
        for stream,tee,prev in self._teed:
            if stream.__dict__.get('write') is not tee: continue   # someone wrapped us meanwhile: leave theirs
            stream.write = prev
        self._teed = []

    def _add_stream(self, name, text):
        "Append to the cell's stream output: a list of chunks (no quadratic string growth), middle dropped past a bound."
        outs = self.current.outputs
        if not (outs and outs[-1].get('output_type') == 'stream' and outs[-1]['name'] == name):
            outs.append(dict(output_type='stream', name=name, text=[], _chars=0))
        o = outs[-1]
        o['text'].append(text)
        o['_chars'] += len(text)
        if o['_chars'] > 3 * _KEEP:  # far beyond anything `clip` sends: keep head and tail, amortised O(1)
            if '_dropped' in o: head, rest = o['text'][0], ''.join(o['text'][2:])   # cut before: the head stays
            else: s = ''.join(o['text']); head, rest = s[:_KEEP], s[_KEEP:]
            o['_dropped'] = o.get('_dropped', 0) + len(rest) - _KEEP
            marker = f'\n… [{o["_dropped"]:,} characters not kept] …\n'
            o['text'], o['_chars'] = [head, marker, rest[-_KEEP:]], 2*_KEEP + len(marker)

    def _record(self, kind, content):
        "Apply one display message (`display_data`, `update_display_data`, `clear_output`) to the records."
        md = content.get('metadata') or {}
        if _OWN in md: return
        display_id = (content.get('transient') or {}).get('display_id')
        if kind == 'update_display_data':   # in whichever cell showed it, as the frontends do
            for o in self._displays.get(display_id, []): o.update(data=content.get('data', {}), metadata=md)
            return
        if self.current is None: return
        if kind == 'clear_output': self.current.outputs.clear()
        elif kind in ('display_data', 'execute_result'):
            o = dict(output_type=kind, data=content.get('data', {}), metadata=md)
            if display_id: self._displays.setdefault(display_id, []).append(o)
            self.current.outputs.append(o)

    @_quiet
    def on_display_msg(self, msg):
        self._record(msg['msg_type'], msg['content'])
        return msg

    @_quiet
    def on_result_msg(self, msg):
        if msg.get('msg_type') == 'execute_result': self._record('execute_result', msg['content'])
        return msg

    def _wrapped_publish(self, data, metadata=None, *args, **kw):
        if not self._active: return self._publish(data, metadata, *args, **kw)
        try: self._record('update_display_data' if kw.get('update') else 'display_data',
                          dict(data=data, metadata=metadata, transient=kw.get('transient')))
        except Exception: log.exception('boopiter_ext: recording a display failed')
        self._publishing = True   # a terminal prints the display: that text is the display, not a stream
        try: return self._publish(data, metadata, *args, **kw)
        finally: self._publishing = False
