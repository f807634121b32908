"""Real IPython kernels for the tests, driven through jupyter_client.

`KernelSession` starts a kernel (its own working folder and environment), runs code as a frontend
would, optionally with a JupyterLab-style `cellId`, and collects the outputs the way nbclient does:
streams merged, `update_display_data` applied to every output with that display id, and the raw
iopub messages kept with their arrival times for tests that count updates.

    with KernelSession(tmp_path, env={'OLLAMA_HOST': srv.host}) as k:
        k.run('%load_ext boopiter_ext')
        res = k.run('%%prompt\\nhi', cell_id='c3')
        res.outputs, res.status, res.messages

Widgets are followed as a frontend follows them (`comm_open`, then `update` messages), so a test can
find one by its state and act on it the way a browser would (`set_widget`, `click`).
"""

import os, queue, tempfile, threading, time, uuid
from dataclasses import dataclass, field
from jupyter_client.manager import KernelManager


@dataclass
class Result:
    status: str = 'ok'
    outputs: list = field(default_factory=list)
    messages: list = field(default_factory=list)  # (monotonic time, msg_type, content)
    error: dict = None
    payload: list = field(default_factory=list)   # execute_reply payloads (set_next_input)

    @property
    def reply(self):
        "The boopiter reply output, if any."
        return next((o for o in self.outputs if 'boopiter' in o.get('metadata', {})), None)

    @property
    def text(self):
        "All stream and error text of the cell."
        return ''.join(o.get('text', '') if o['output_type'] == 'stream' else
                       f"{o.get('ename')}: {o.get('evalue')}\n" if o['output_type'] == 'error' else ''
                       for o in self.outputs)

    def count(self, msg_type): return sum(m[1] == msg_type for m in self.messages)


def _apply(res, by_display, kind, c):
    "Apply one iopub message to `res`'s outputs as nbclient does (an update goes to every output with its display id)."
    if kind == 'stream':
        if res.outputs and res.outputs[-1]['output_type'] == 'stream' and res.outputs[-1]['name'] == c['name']:
            res.outputs[-1]['text'] += c['text']
        else: res.outputs.append(dict(output_type='stream', name=c['name'], text=c['text']))
    elif kind in ('display_data', 'execute_result'):
        o = dict(output_type=kind, data=c['data'], metadata=c['metadata'])
        res.outputs.append(o)
        if (did := c.get('transient', {}).get('display_id')): by_display.setdefault(did, []).append(o)
    elif kind == 'update_display_data':
        for o in by_display.get(c['transient']['display_id'], []): o.update(data=c['data'], metadata=c['metadata'])
    elif kind == 'clear_output': res.outputs.clear()
    elif kind == 'error':
        res.outputs.append(dict(output_type='error', **{k: c[k] for k in ('ename', 'evalue', 'traceback')}))
        res.error = c


class KernelSession:
    "One real kernel; `run` executes code and returns a `Result`."
    def __init__(self, cwd, env=None, startup_timeout=60):
        # local sockets (ipc), not TCP: no port that another process could take between its choice and the kernel's bind
        self.km = KernelManager(kernel_name='python3', transport='ipc', ip=f'{tempfile.gettempdir()}/boop-k-{uuid.uuid4().hex[:12]}')
        full_env = {**os.environ, **(env or {})}
        self.km.start_kernel(cwd=str(cwd), env={k: v for k,v in full_env.items() if v is not None})
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=startup_timeout)
        self.widgets = {}   # comm id -> widget state, as a frontend would hold it
        self.prompts = []   # the input prompts the kernel showed (and `send(answers=...)` answered)
        self.seen, self._displays = {}, {}   # `follow`'s: msg id -> Result; display id -> the outputs that showed it

    def __enter__(self): return self
    def __exit__(self, *exc): self.shutdown()

    def shutdown(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=False)

    def send(self, code, cell_id=None, answers=None, lab=False):
        """Send an execute_request (JupyterLab puts the cell id in the request metadata); return its msg id. With
        `answers`, the kernel may ask for input (a side effect's confirmation): each prompt gets the next answer. `lab`:
        as JupyterLab sends it, answering input (`allow_stdin`), where nbclient does not."""
        content = dict(code=code, silent=False, store_history=True, user_expressions={},
                       allow_stdin=answers is not None or lab, stop_on_error=True)
        if answers is not None: threading.Thread(target=self._answer_input, args=(list(answers),), daemon=True).start()
        msg = self.kc.session.msg('execute_request', content, metadata={'cellId': cell_id} if cell_id else {})
        self.kc.shell_channel.send(msg)
        return msg['header']['msg_id']

    def _answer_input(self, answers):
        "Type `answers` at the kernel's input prompts, one each, as a user would."
        while answers:
            try: msg = self.kc.get_stdin_msg(timeout=60)
            except queue.Empty: return
            if msg['msg_type'] == 'input_request':
                self.prompts.append(msg['content']['prompt'])
                self.kc.input(answers.pop(0))

    def _follow_widget(self, kind, c):
        if kind == 'comm_open' and c.get('target_name') == 'jupyter.widget':
            self.widgets[c['comm_id']] = dict(c['data'].get('state', {}))
        elif kind == 'comm_msg' and c['data'].get('method') in ('update', 'echo_update'):
            self.widgets.setdefault(c['comm_id'], {}).update(c['data'].get('state', {}))
        elif kind == 'comm_close': self.widgets.pop(c['comm_id'], None)

    def widget(self, **match)->tuple:
        "(comm id, state) of the one widget whose state has every `match` item, e.g. `_model_name='DropdownModel'`."
        found = [(cid, st) for cid,st in self.widgets.items() if all(st.get(k) == v for k,v in match.items())]
        if len(found) != 1: raise AssertionError(f'{len(found)} widgets match {match}')
        return found[0]

    def comm(self, comm_id, data, timeout=30)->Result:
        "Send a frontend's comm message to a widget and collect what the kernel does in reply."
        msg = self.kc.session.msg('comm_msg', dict(comm_id=comm_id, data=data))
        self.kc.shell_channel.send(msg)
        return self.collect(msg['header']['msg_id'], timeout, shell_reply=False)

    def set_widget(self, comm_id, **state)->Result:
        "Change a widget's state as a user would in the browser (e.g. `index=2` picks a dropdown's third option)."
        return self.comm(comm_id, dict(method='update', state=state, buffer_paths=[]))

    def click(self, comm_id)->Result: return self.comm(comm_id, dict(method='custom', content=dict(event='click')))

    def collect(self, msg_id, timeout=60, on_message=None, shell_reply=True):
        "Gather the iopub output of request `msg_id` until the kernel is idle again."
        res, by_display, deadline = Result(), {}, time.monotonic() + timeout
        while True:
            try: msg = self.kc.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty: raise TimeoutError(f'no idle after {timeout} s; got {[m[1] for m in res.messages]}')
            kind, c = msg['msg_type'], msg['content']
            self._follow_widget(kind, c)
            if msg['parent_header'].get('msg_id') != msg_id: continue
            res.messages.append((time.monotonic(), kind, c))
            if on_message: on_message(kind, c)
            if kind == 'status' and c['execution_state'] == 'idle': break
            _apply(res, by_display, kind, c)
        if shell_reply:
            while (reply := self.kc.get_shell_msg(timeout=timeout))['parent_header'].get('msg_id') != msg_id:
                pass   # a reply to an earlier request: `wait_for_ready` may leave a kernel_info_reply unread
            res.status, res.payload = reply['content']['status'], reply['content'].get('payload', [])
        return res

    def follow(self,
               until,        # until(seen) -> bool: seen maps each request's msg id to its `Result` so far
               timeout=60,
              )->dict:       # `seen`
        """Read iopub as JupyterLab's output areas do, for replies that stream on after their cell ended: every
        message goes to the `Result` of the request it answers (`self.seen`, kept across calls; `status` messages
        too), an update to every output that showed its display id, whichever request it answers."""
        deadline = time.monotonic() + timeout
        while not until(self.seen):
            try: msg = self.kc.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f'not there after {timeout} s; seen: {[[m[1] for m in r.messages] for r in self.seen.values()]}')
            kind, c, parent = msg['msg_type'], msg['content'], msg['parent_header'].get('msg_id')
            self._follow_widget(kind, c)
            res = self.seen.setdefault(parent, Result())
            res.messages.append((time.monotonic(), kind, c))
            _apply(res, self._displays, kind, c)
        return self.seen

    def run(self, code, cell_id=None, timeout=60, on_message=None, answers=None)->Result:
        "Execute `code` and return its outputs (`answers`: what to type at its input prompts)."
        return self.collect(self.send(code, cell_id, answers), timeout, on_message)

    def value(self, expr):
        "The text/plain repr of `expr` evaluated in the kernel."
        res = self.run(expr)
        out = next((o for o in res.outputs if o['output_type'] == 'execute_result'), None)
        if out is None: raise AssertionError(f'{expr!r} gave no result: {res.outputs}')
        return out['data']['text/plain']
