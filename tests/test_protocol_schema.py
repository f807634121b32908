"""One schema of the comm protocol and the mime bundles, both halves tested against it (issue 23.1).

`boopiter_ext/faces/protocol.schema.json` describes every message the kernel and the page exchange on the `boopiter`
comm and every mime bundle the page renders. Here, without a kernel (an in-process shell with boopiter loaded, its real
`Channel` on comms that record what they carry):
- every kernel message and bundle, made by the real code (`KERNEL_BUILDERS`, kept complete against the schema),
  validates against the schema;
- the page's readers take each of them whole (js/test/protocol/wire.test.ts, run here on a dump of them: parsed equals
  sent, no field dropped or renamed);
- every message the page's channel builds (the same vitest file drives `BoopChannel` and dumps them) validates, and the
  kernel's handler uses every field of it (asserted on what the handler did).
"""

import contextvars, json, os, shutil, subprocess, threading, time
from datetime import datetime, timezone
import pytest
from jsonschema import Draft202012Validator
from comm.base_comm import BaseComm
from conftest import ROOT

SCHEMA_PATH = ROOT/'boopiter_ext'/'faces'/'protocol.schema.json'
SCHEMA = json.loads(SCHEMA_PATH.read_text())
DEFS = SCHEMA['$defs']
JS = ROOT/'js'
MODEL = 'qwen3:1.7b'


def of(prefix)->list: return sorted(k for k in DEFS if k.startswith(prefix + '.'))


def problems(name, instance)->list:
    "What is wrong with `instance` as a `name` (a definition of the schema): [] when it is one."
    v = Draft202012Validator({'$defs': DEFS, '$ref': f'#/$defs/{name}'})
    return [f'{"/".join(map(str, e.absolute_path))}: {e.message}' for e in v.iter_errors(instance)]


def kind(msg, direction)->str:
    "The definition a message is (its `type`, and for an edit its `op`)."
    t = msg['type']
    return f'{direction}.{t}_{msg["op"]}' if t == 'edit' else f'{direction}.{t}'


# ---- the schema itself

KEYWORDS = {'$schema', '$id', '$defs', '$ref', 'title', 'description', 'examples', 'type', 'const', 'enum', 'properties',
            'required', 'additionalProperties', 'items', 'prefixItems', 'minItems', 'maxItems', 'minLength', 'minimum',
            'minProperties', 'oneOf', 'x-mime', 'x-page-ignores'}


def keywords(node, path=''):
    "(path, keyword) of every schema keyword used, under `node`."
    if isinstance(node, list):
        for i, n in enumerate(node): yield from keywords(n, f'{path}/{i}')
        return
    if not isinstance(node, dict): return
    for k, v in node.items():
        yield path, k
        if k in ('properties', '$defs'):
            for name, sub in v.items(): yield from keywords(sub, f'{path}/{k}/{name}')
        elif k in ('items', 'additionalProperties', 'prefixItems', 'oneOf'): yield from keywords(v, f'{path}/{k}')


def test_the_schema_is_valid_closed_and_uses_only_what_the_pages_checker_reads():
    Draft202012Validator.check_schema(SCHEMA)
    assert {(p, k) for p, k in keywords(SCHEMA) if k not in KEYWORDS} == set()   # js/test/protocol/schema.ts reads these
    for name in of('kernel') + of('frontend') + of('bundle'):
        assert DEFS[name]['additionalProperties'] is False and set(DEFS[name]['required']) <= set(DEFS[name]['properties'])
    # each union lists every definition of its direction
    for union in ('kernel', 'frontend', 'bundle'):
        assert sorted(r['$ref'].rpartition('/')[2] for r in DEFS[union]['oneOf']) == of(union)
    assert {DEFS[n]['x-mime'] for n in of('bundle')} == {'application/vnd.boopiter.reply+json',
                                                         'application/vnd.boopiter.settings+json',
                                                         'application/vnd.boopiter.widget+json',
                                                         'application/vnd.boopiter.preview+json'}
    from boopiter_ext.core.binding import BINDING_KEYS
    assert list(DEFS['binding']['properties']) == [*BINDING_KEYS, 'picked_at'] == list(DEFS['bundle.settings']['properties'])[1:]
    assert list(DEFS['binding_changes']['properties']) == list(BINDING_KEYS)


def test_a_renamed_or_missing_field_fails():
    good = dict(type='preview', id='p1', markdown='*Dry run*', text='Dry run')
    assert problems('kernel.preview', good) == []
    renamed = dict(type='preview', id='p1', md='*Dry run*', text='Dry run')
    assert len(problems('kernel.preview', renamed)) == 2   # `markdown` missing, `md` not allowed
    assert problems('kernel', renamed) and problems('frontend.stop', dict(type='stop', cellId='c1'))
    assert problems('kernel.edit_edit', dict(type='edit', id='e', op='edit', cell='c1', source='x'))   # no `expect`


# ---- the kernel's half, driven for real

class Recorder(BaseComm):
    "A comm as the kernel holds it, recording what it sends; the page's answer to an `edit` comes from `answer_edit`."
    def __init__(self, wire=None, **kw):
        self.out, self.wire = [], wire
        super().__init__(**kw)

    def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        self.out.append((msg_type, data))
        if self.wire and isinstance(data, dict) and data.get('type') == 'edit':
            if (answer := self.wire.answer_edit(data)) is not None: self.wire.channel._handle(self, answer)


class Wire:
    "boopiter loaded in an in-process shell, its `Channel` registered, and a page's comm to it."
    def __init__(self, shell):
        from boopiter_ext.faces.channel import Channel
        self.magics = shell.magics_manager.registry['BoopMagics']
        self.assistant = self.magics.assistant
        self.channel = Channel(self.assistant, preview=self.magics.preview_cell)
        self.edits = []
        self.answer_edit = lambda data: dict(type='edit_result', id=data['id'], ok=True, message='done: changed')
        import comm
        made, create = [], comm.create_comm
        comm.create_comm = lambda **kw: made.append(Recorder(**kw)) or made[-1]
        try: self.channel.register()
        finally: comm.create_comm = create
        self.announced = made[0]
        self.comm = Recorder(self, target_name='boopiter', primary=False)
        self.comms = [self.announced, self.comm]

    def answered(self, data)->list:
        "Hand `data` to the kernel as the page's comm does; what the kernel sent back."
        before = {id(c): len(c.out) for c in self.comms}
        if data.get('type') == 'hello' and self.channel._last is None:
            self.channel._opened(self.comm, {'content': {'data': data}})
        else: self.channel._handle(self.comm, data)
        return [d for c in self.comms for _, d in c.out[before[id(c)]:]]

    def answered_later(self, data, kind, timeout=15)->list:
        "Hand `data` to the kernel; what it sent back once its answer of type `kind` came (from a thread of its own)."
        before = len(self.comm.out)
        self.channel._handle(self.comm, data)
        deadline = time.monotonic() + timeout
        while not any(d.get('type') == kind for _, d in self.comm.out[before:]) and time.monotonic() < deadline:
            time.sleep(0.01)
        return [d for _, d in self.comm.out[before:]]

    def close(self): self.channel.unregister()


@pytest.fixture
def wire(shell, srv, monkeypatch, tmp_path):
    monkeypatch.setenv('OLLAMA_HOST', srv.host)
    # the project proposes auto-run and the web tool: the menu's consent line, and something for `allow` to accept
    (tmp_path/'settings.ini').write_text('[boopiter]\nauto = on\ntools = kernel, files, web\n')
    shell.run_line_magic('load_ext', 'boopiter_ext')
    w = Wire(shell)
    yield w
    w.close()


NOW = lambda: datetime.now(timezone.utc).isoformat(timespec='milliseconds')
CELLS = [dict(id='c1', cell_type='code', source='total = 1234 * 2', tags=['boop-pin']),
         dict(id='m1', cell_type='markdown', source='# Notes\nThe total is wrong.', tags=[]),
         dict(id='p1', cell_type='code', source='%%prompt\nFix the total', tags=[])]


def comm_messages(w)->dict:
    "Every kind of message the kernel sends on the comm, made by the channel's own code."
    got = [w.announced.out[0][1]]   # the open data of the comm the kernel opened
    got += w.answered(dict(type='hello', version=1, binding=dict(model=MODEL, think='h', keep_alive='-1',
                                                                              context_size=8192, picked_at=NOW()),
                                       cells=CELLS))
    got += w.answered(dict(type='preview', id='dry-1', source='%%prompt\nWhat is the total?'))
    got += w.answered_later(dict(type='complete', id='g1', cell_id='c1', prefix='total = ', suffix=''), 'completion')
    got += w.answered_later(dict(type='rewrite', id='r1', cell_id='c1', instruction='triple it', source='total = 1'), 'rewrite')
    got += w.answered(dict(type='pick', changes=dict(host='http://elsewhere')))   # an error line
    from boopiter_ext.tools.notebook import notebook_source
    list_cells, read_cell, _, add_cell, edit_cell, delete_cell = notebook_source(lambda: w.assistant.notebook_cells(None),
                                                                                 w.channel.edit)
    read_cell('c1'), read_cell('m1')
    assert edit_cell('c1', 'total = 1234 * 3') == 'done: changed'
    assert add_cell('c1', 'print(total)') == add_cell('m1', '## More', 'markdown') == 'done: changed'
    w.answer_edit = lambda data: None   # the user never decides: the kernel gives up, and withdraws the review
    def asked_by_p1():   # as prompt cell p1's reply asks (the page's Undo bar is that cell's)
        w.assistant.here(type('Running', (), {'cell_id': 'p1'})())
        return w.channel.edit(dict(op='delete', cell='m1', expect='# Notes\nThe total is wrong.'), timeout=0.05)
    told = contextvars.copy_context().run(asked_by_p1)
    assert told == (False, 'the user did not accept the change within 0.05 s, so it was not made')
    w.answer_edit = lambda data: dict(type='edit_result', id=data['id'], ok=True, message='done: ran', status='ran', cell='c9')
    ran = w.channel.step(dict(op='run', source='x = 1', agent='a1', attend=False, reason=''), threading.Event())
    assert ran == dict(status='ran', cell='c9')   # agent mode's step: what became of the cell
    w.answer_edit = lambda data: dict(type='edit_result', id=data['id'], ok=True, message='?', status='exploded', cell='x' * 999)
    assert w.channel.step(dict(op='run', source='y', agent='a1', attend=True, reason='it calls eval'), threading.Event()) == \
        dict(status='stopped', cell='')   # the page's word, kept only as the protocol has it
    w.answer_edit = lambda data: None   # no click yet; then Stop (or a prompt that must hold the kernel) ends the wait
    halt = threading.Event()
    threading.Timer(0.3, halt.set).start()
    assert w.channel.step(dict(op='run', source='z', agent='a1', attend=False, reason=''), halt) is None
    assert w.comm.out[-1][1] == dict(type='edit_cancel', id=w.comm.out[-2][1]['id'])   # the question withdrawn
    got += [d for _, d in w.comm.out if d.get('type') in ('edit', 'edit_cancel')]
    assert [d['op'] for d in got if d['type'] == 'edit'] == ['edit', 'add', 'add', 'delete', 'run', 'run', 'run']
    assert [d.get('prompt') for d in got if d['type'] == 'edit'][3] == 'p1'
    return got


def kernel_messages(w)->dict:
    "name -> the instances of it the real code made: comm messages and mime bundles."
    out = {}
    for m in comm_messages(w): out.setdefault(kind(m, 'kernel'), []).append(m)
    for name, make in BUNDLE_BUILDERS.items(): out[name] = make(w)
    return out


def reply_bundles(w):
    from boopiter_ext.context.build import Cell, build_context
    from boopiter_ext.models.stream import Reply
    from boopiter_ext.render.reply import REPLY_MIME, reply_bundle, reply_data
    _, ledger = build_context([Cell('x = 1', outputs=[dict(output_type='stream', name='stdout', text='1\n')])], 'Why?', 4096)
    ledger = {**ledger, 'window': 4096, 'warning': 'the context was clipped'}
    streaming = Reply(MODEL)
    streaming.add_content('Here:\n\n```python\nprint(1)\n')
    done = Reply(MODEL)
    done.add_content('<think>It is simple.</think>The total is **2468**.\n\n```python\nprint(2468)\n```\n')
    done.finish('done', dict(finish_reason='stop', ran_blocks=['print(2468)']))
    done.note = 'kept from an earlier run'
    route = dict(name='ollama', picked_by='notebook binding', cell_id='p1', kept='gemma3:4b', reused=True,
                 stale='Stale: since this reply, In [3] `x = 2` changed. Kept as it was; run `%%prompt --fresh` to ask again.',
                 previous=dict(model='gemma3:4b', answer='The total was 2467.'))
    stopped = Reply(MODEL)
    stopped.add_content('one two')
    stopped.finish('interrupted')
    from types import SimpleNamespace
    from boopiter_ext.faces.view import KernelView
    shown = []   # a reply's waiting line; a queued prompt's view, waiting behind the reply above, then taken back unsent
    view = KernelView(SimpleNamespace(display_pub=SimpleNamespace(publish=lambda data, md, **kw: shown.append(data[REPLY_MIME]))))
    view.waiting(MODEL, note='loading the model')   # every reply's first line, until its first token
    view._waiting.stop()
    view.queued('waiting for the reply above to end')
    view.queued('stopped before it was sent', 'interrupted')
    return [reply_data(streaming, route, ledger, open_fence=True), reply_bundle(done, route, ledger)[0][REPLY_MIME],
            reply_bundle(stopped)[0][REPLY_MIME], *shown]


def round_bundles(w):
    from boopiter_ext.render.reply import REPLY_MIME, round_bundle
    from boopiter_ext.tools.loop import Step
    steps = [Step(1, 'add(1, 2)', 'ok', '3', name='add'), Step(1, 'read(1)', 'flagged', 'y', flags=['instructions'],
                                                               recovered=True)]
    return [round_bundle(1, steps)[0][REPLY_MIME]]


def loop_bundles(w):
    from boopiter_ext.render.reply import REPLY_MIME, loop_bundle
    from boopiter_ext.tools.loop import LoopResult, Step
    return [loop_bundle(LoopResult('max rounds', [Step(1, 'f(1)', 'ok'), Step(2, 'g(2)', 'not run')], 2))[0][REPLY_MIME]]


def settings_bundles(w):
    from boopiter_ext.core.binding import BINDING_MIME, binding_bundle
    full = dict(model=MODEL, reasoning_model='qwen3:1.7b', reasoning=True, think='m', keep_alive='-1', context_size=8192,
                tools='kernel, files', auto=False, reuse=True, picked_at=NOW())
    return [binding_bundle(full)[0][BINDING_MIME], binding_bundle({})[0][BINDING_MIME]]


def widget_bundles(w):
    import IPython.display
    from boopiter_ext.faces import magics
    shown = []
    class Widget:
        def _repr_mimebundle_(self): return {'application/vnd.jupyter.widget-view+json': {'model_id': 'm'}}
    real = IPython.display.display
    IPython.display.display = lambda obj, raw=False, **kw: shown.append(obj)
    try:
        for k in ('menu', 'code_actions'): magics._display_widget(Widget(), k, 'a widget')
    finally: IPython.display.display = real
    return [b[magics.WIDGET_MIME] for b in shown]


def preview_bundles(w):
    from boopiter_ext.faces.magics import PREVIEW_MIME, _preview_output
    return [_preview_output(*w.magics.preview_cell('%%prompt\nWhat is the total?'))[0][PREVIEW_MIME]]


BUNDLE_BUILDERS = {'bundle.reply': reply_bundles, 'bundle.tool_round': round_bundles, 'bundle.tool_loop': loop_bundles,
                   'bundle.settings': settings_bundles, 'bundle.widget': widget_bundles, 'bundle.preview': preview_bundles}


def test_every_message_and_bundle_the_kernel_builds_is_in_the_schema(wire):
    made = kernel_messages(wire)
    assert sorted(made) == sorted(of('kernel') + of('bundle'))   # a builder for every definition, and nothing else made
    bad = {n: p for n, ms in made.items() for m in ms if (p := problems(n, m))}
    assert bad == {}, json.dumps(bad, indent=1)[:4000]
    state = made['kernel.state'][-1]['state']
    assert state['consent']['proposed'] == ['auto', 'web'] and state['consent']['text']   # the consent line went too
    edit = next(m for m in made['kernel.edit_edit'])
    assert edit['expect'] == 'total = 1234 * 2'   # what the model read


# ---- the page's half: the same messages through its readers, and what its channel builds

def vitest(tmp_path, name='wire'):
    "Run js/test/protocol/wire.test.ts with `tmp_path` as its exchange folder; its JSON report."
    if not shutil.which('node') or not (JS/'node_modules'/'.bin'/'vitest').exists():
        if os.environ.get('CI'): pytest.fail('node and js/node_modules are needed: `pip install -e .` builds them')
        pytest.skip('node and js/node_modules are missing: `pip install -e .` builds them')
    report = tmp_path/'report.json'
    r = subprocess.run([str(JS/'node_modules'/'.bin'/'vitest'), 'run', f'test/protocol/{name}.test.ts', '--reporter=json',
                        f'--outputFile={report}'], cwd=JS, capture_output=True, text=True, timeout=300,
                       env={**os.environ, 'NO_COLOR': '1', 'BOOPITER_WIRE': str(tmp_path)})
    assert report.exists(), (r.stdout + r.stderr)[-4000:]
    result = json.loads(report.read_text())
    tests = {t['title']: t for f in result['testResults'] for t in f['assertionResults']}
    failed = {k: t.get('failureMessages') for k, t in tests.items() if t['status'] != 'passed'}
    assert r.returncode == 0 and not failed, (json.dumps(failed)[:6000], r.stderr[-2000:])
    return tests


def frontend_effects(w, name, msg):
    "Hand `msg` (made by the page) to the kernel and check the handler used every field of it."
    a = w.assistant
    def cells(): return [dict(id=c.cell_id, cell_type='markdown' if c.kind == 'markdown' else 'code', source=c.source,
                              tags=list(c.tags)) for c in a.layout(None)]
    if name == 'frontend.hello':
        w.channel._last = None
        back = w.answered(msg)
        assert cells() == msg['cells']
        assert a.binding() == msg['binding']                             # adopted: every pick and its stamp
        assert [m['type'] for m in back if m['type'] in ('state', 'binding')][-2:] == ['state', 'binding']
    elif name == 'frontend.notebook':
        assert w.answered(msg) == [] and cells() == msg['cells']
    elif name == 'frontend.refresh':
        w.srv.reset()
        back = w.answered(msg)
        assert any(r.path == '/api/tags' for r in w.srv.requests) and [m['type'] for m in back] == ['state', 'state']
    elif name == 'frontend.pick':
        w.answered(msg)
        b = a.binding()
        assert all(b.get(k) == v for k, v in msg['changes'].items() if v is not None), (b, msg)
        assert all(k not in b for k, v in msg['changes'].items() if v is None)
    elif name == 'frontend.allow':
        assert a.consent.granted == set()
        w.answered(msg)
        assert a.consent.granted == set(msg['items']) == {'auto', 'web'}
    elif name == 'frontend.preview':
        [back] = w.answered(msg)
        question = msg['source'].partition('\n')[2]
        assert back['type'] == 'preview' and back['id'] == msg['id'] and question in back['text']
    elif name == 'frontend.complete':   # with a model that fills in the middle: the cell around the cursor reaches it
        from ollama_server import CODER, normalize_model
        w.srv.models.append(normalize_model(CODER))
        a.catalog.refresh(a.settings())
        try:
            w.srv.script(' * 2')
            [back] = w.answered_later(msg, 'completion')
            sent = w.srv.generations()[-1]
            assert (back['id'], back['text'].strip(), back['reason']) == (msg['id'], '* 2', ''), back
            assert sent['prompt'].endswith(msg['prefix']) and sent['suffix'].strip() == msg['suffix'].strip()
        finally:
            w.srv.models.pop()
            a.catalog.refresh(a.settings())
    elif name == 'frontend.rewrite':
        w.srv.script('```python\ntotal = 1234 * 4\n```')
        [back] = w.answered_later(msg, 'rewrite')
        assert back == dict(type='rewrite', id=msg['id'], source='total = 1234 * 4', reason='')
        asked = json.dumps(w.srv.last_chat()['messages'])
        assert msg['instruction'] in asked and json.dumps(msg['source'])[1:-1] in asked
    elif name == 'frontend.stop':
        other, mine = a._replying('another-cell'), None
        assert w.answered(msg) == [] and not other.stopped                # not that cell's reply
        mine = a._replying(msg['cell_id'])
        w.answered(msg)
        assert mine.stopped
    elif name == 'frontend.fresh':
        from boopiter_ext.context.build import Cell
        a.cells.current = Cell('%%prompt\nWhy?', 'prompt', cell_id=msg['cell_id'])
        assert a.asks_again(a.settings()) == ''
        assert w.answered(msg) == [] and a.asks_again(a.settings()) == 'Ask again'   # this cell's next run asks
        a.cells.current = Cell('%%prompt\nWhy?', 'prompt', cell_id='another-cell')
        assert a.asks_again(a.settings()) == ''
        a.cells.current = None
    elif name == 'frontend.edit_result':
        results = []
        w.answer_edit = lambda data: dict(msg, id=data['id'])           # the page's answer, to this edit's id
        t = threading.Thread(target=lambda: results.append(w.channel.edit(dict(op='add', after='c1', source='x',
                                                                               cell_type='code'), timeout=5)))
        t.start(); t.join(10)
        assert results == [(msg['ok'], msg['message'])]
    else: raise AssertionError(f'no check for {name}')


def test_the_page_reads_every_kernel_message_whole_and_the_kernel_uses_every_field_the_page_sends(wire, srv, tmp_path):
    wire.srv = srv
    made = kernel_messages(wire)
    (tmp_path/'kernel.json').write_text(json.dumps(made))
    tests = vitest(tmp_path)
    assert tests['reads every message and bundle the kernel made, whole']['status'] == 'passed'
    built = json.loads((tmp_path/'frontend.json').read_text())
    assert sorted(built) == of('frontend'), sorted(built)              # the page built every kind of message
    bad = {n: p for n, ms in built.items() for m in ms if (p := problems(n, m))}
    assert bad == {}, bad
    order = ['frontend.hello', 'frontend.notebook', 'frontend.pick', 'frontend.refresh', 'frontend.allow',
             'frontend.preview', 'frontend.complete', 'frontend.rewrite', 'frontend.stop', 'frontend.fresh',
             'frontend.edit_result']
    assert sorted(order) == of('frontend')
    for name in order:
        for msg in built[name]: frontend_effects(wire, name, msg)


# ---- the menu's options: each value as the state offers it, as a pick sends it, as the request to the model applies it
# (the page's half, js/test/menu/values.test.ts: choosing each option sends its value, by label)

KEEP_S = {'default': None, 'unload after each reply': 0, '1 min': 60, '5 min': 300, '15 min': 900, '1 hour': 3600,
          'forever': 'forever'}


def keep_seconds(v):
    "Ollama's `keep_alive` as it reads it: a number is seconds (below zero: forever), a string a duration; None: unset."
    import re
    if v is None: return None
    if not isinstance(v, str): n = v
    else:
        m = re.fullmatch(r'(-?\d+(?:\.\d+)?)(ms|s|m|h)', v)
        assert m, f'Ollama cannot read keep_alive {v!r}'
        n = float(m[1]) * {'ms': .001, 's': 1, 'm': 60, 'h': 3600}[m[2]]
    return 'forever' if n < 0 else n


def test_each_keep_alive_option_keeps_the_model_as_long_as_its_label_says(wire, srv, shell):
    from conftest import run
    state = wire.answered(dict(type='hello', version=1, binding=None, cells=[]))[0]['state']
    options = state['options']['keep_alive']
    assert [label for label, _ in options] == list(KEEP_S)
    for label, value in options:
        back = wire.answered(dict(type='pick', changes=dict(keep_alive=value or None)))   # as the menu sends it
        assert [m['state']['settings']['keep_alive'] for m in back if m['type'] == 'state'][-1] == value
        srv.script('Kept.')
        assert run(shell, f'%%prompt -m {MODEL}\nHow long?').success
        assert keep_seconds(srv.last_chat().get('keep_alive')) == KEEP_S[label], (label, srv.last_chat().get('keep_alive'))


def test_each_context_size_is_the_window_the_request_asks_for(wire, srv, shell):
    from conftest import run
    wire.answered(dict(type='hello', version=1, binding=None, cells=[]))
    wire.answered(dict(type='pick', changes=dict(model='gemma3:4b')))   # takes 131,072 tokens: every size applies
    sizes = wire.channel.state()['options']['context_sizes']
    assert sizes == [2048, 4096, 8192, 16384, 32768, 65536, 131072]
    for n in [*sizes, 0]:
        back = wire.answered(dict(type='pick', changes=dict(context_size=n or None)))
        shown = [m['state'] for m in back if m['type'] == 'state'][-1]
        assert shown['settings']['context_size'] == n
        srv.script('Sized.')
        assert run(shell, '%%prompt\nHow big?').success
        asked = srv.last_chat()['options']['num_ctx']
        assert asked == shown['answering']['window'] == (n or 4096), (n, asked)   # auto: the smallest step that fits


def test_each_effort_is_the_level_the_reasoning_models_request_asks_for(wire, srv, shell):
    from conftest import run
    shell.run_line_magic('config', f'BoopMagics.api_base = "{srv.url}/v1"')
    state = wire.answered(dict(type='hello', version=1, binding=None, cells=[]))[0]['state']
    efforts = state['options']['efforts']
    assert efforts == [['auto', ''], ['L', 'l'], ['M', 'm'], ['H', 'h']]
    # the menu's effort is the reasoning model's: a server that takes levels, and Ollama, which takes thinking on or off
    for model, field, sent in ((f'openai/{MODEL}', 'reasoning_effort', {'auto': None, 'L': 'low', 'M': 'medium', 'H': 'high'}),
                               (MODEL, 'think', {'auto': None, 'L': True, 'M': True, 'H': True})):
        wire.answered(dict(type='pick', changes=dict(model=model, reasoning_model=model, reasoning=True)))
        for label, value in efforts:
            back = wire.answered(dict(type='pick', changes=dict(think=value or None)))
            assert [m['state']['settings']['think'] for m in back if m['type'] == 'state'][-1] == value
            srv.script('Thought.')
            assert run(shell, '%%prompt\nHow hard?').success
            assert srv.last_chat().get(field) == sent[label], (model, label, srv.last_chat().get(field))
