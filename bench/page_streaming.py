"""What a long stream costs the page, in JupyterLab 4 and Notebook 7 (Debian's chromium, the real built frontend,
a real kernel, the Ollama-protocol test server). Targets, each against a baseline measured in the same run:

1. 5,000 tokens streamed as a model streams them: no task of the page's main thread takes 50 ms of CPU (the trace's
   `tdur`; the render loop yields every 12 ms), and none 1.5 s of wall time.
2. A 1 MB reply: every update the kernel sent, replayed one per frame, is done within twice one render of the final
   text (the view renders each block once, not the whole reply on every update), in one view updated in place; live,
   the page is done at most one full render after the last update arrives.

    python bench/page_streaming.py [lab] [notebook]

It was a browser test until 2026-12-05: 150 s per app, and its ratio read 2.1 on a loaded 2-core machine (the suite's
other worker streaming beside it). Exit status 1 if a target is missed.
"""

import json, shutil, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT/'tests')]
from ollama_server import OllamaTestServer   # noqa: E402
from browser import (PANEL, REPLY_MIME, Servers, browsing, execute_silently, load_boopiter, long_markdown,   # noqa: E402
                     open_notebook, reply_done, run_cell, until, write_notebook)

LONGTASKS = """() => { window.__long = []; window.__loaf = [];
    new PerformanceObserver(l => l.getEntries().forEach(e => window.__long.push(e.duration))).observe({type: 'longtask'});
    new PerformanceObserver(l => l.getEntries().forEach(e => window.__loaf.push({duration: e.duration,
        scripts: e.scripts.map(s => ({url: s.sourceURL, invoker: s.invoker, duration: s.duration}))})))
        .observe({type: 'long-animation-frame'}); }"""
# the extension's scripts: its bundle is served from .../labextensions/boopiter-ext/static/ (lab/extensions/... in URLs)
OURS = 'boopiter-ext'
# in the page: when the cell's first reply update was drawn, when its last update arrived, when its final render
# ended; and every update of the reply as it arrived (to stream it again with nothing else running)
TIMES = """(cell) => { const t = window.__t = {}, c = window.jupyterapp.shell.currentWidget.content.widgets[cell];
    const updates = window.__updates = [];
    window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.iopubMessage.connect((_, m) => {
        const reply = m.content.data?.['application/vnd.boopiter.reply+json'];
        if (reply?.kind !== 'reply' || !m.header.msg_type.endsWith('display_data')) return;
        t.last = performance.now();
        // kept as the JSON text it came in, read back when replayed: thousands of block strings per update, held
        // as objects for the whole test, would make the page's garbage collector, not the reply view, the cost
        updates.push(JSON.stringify({output_type: 'display_data', data: m.content.data, metadata: m.content.metadata})); });
    new MutationObserver(() => { const r = c.node.querySelector('.boop-Reply');
        if (r && t.first === undefined) t.first = performance.now();
        if (r && r.dataset.boopStatus === 'done' && r.dataset.boopPending === '0' && t.done === undefined) t.done = performance.now();
    }).observe(c.node, {subtree: true, childList: true, attributes: true}); }"""
RENDERED = """(c) => new Promise(done => { const check = () => { const r = c.node.querySelector('.boop-Reply');
    if (r && r.dataset.boopStatus === 'done' && r.dataset.boopPending === '0') done(); else requestAnimationFrame(check); };
    check(); })"""
# the final bundle displayed once, in the cleared output area: ms until it is rendered
ONCE = f"""async (cell) => {{ const c = window.jupyterapp.shell.currentWidget.content.widgets[cell], ups = window.__updates;
    const frame = () => new Promise(r => requestAnimationFrame(r));
    c.model.outputs.clear(); await frame(); await frame();
    const t0 = performance.now();
    c.model.outputs.add(JSON.parse(ups[ups.length - 1]));
    await ({RENDERED})(c);
    return performance.now() - t0; }}"""
# the same updates again, one per animation frame (as fast as the page takes them), as Jupyter applies
# update_display_data (the same renderer's renderModel), each parsed from its JSON as a message from the kernel is:
# ms from the first update to the final render
REPLAY = f"""async (cell) => {{ const c = window.jupyterapp.shell.currentWidget.content.widgets[cell], ups = window.__updates;
    const frame = () => new Promise(r => requestAnimationFrame(r));
    c.model.outputs.clear(); await frame(); await frame();
    const t0 = performance.now();
    c.model.outputs.add(JSON.parse(ups[0]));
    for (const u of ups.slice(1)) {{ await frame(); c.model.outputs.set(0, JSON.parse(u)); }}
    await ({RENDERED})(c);
    return [performance.now() - t0, c.node.querySelectorAll('.boop-Reply').length]; }}"""
MB_WORDS = 180_000   # long_markdown: ~1.02 MB of Markdown


def main_thread_tasks(raw)->list:
    "[(wall ms, CPU ms)] of every task of the page's main thread in a Chromium trace (its `dur` and `tdur`)."
    trace = json.loads(raw)
    events = trace['traceEvents'] if isinstance(trace, dict) else trace
    main = {(e['pid'], e['tid']) for e in events if e.get('ph') == 'M' and e.get('name') == 'thread_name'
            and e['args'].get('name') == 'CrRendererMain'}
    tasks = [(e.get('dur', 0) / 1000, e.get('tdur', 0) / 1000) for e in events
             if e.get('name') == 'RunTask' and e.get('ph') == 'X' and (e['pid'], e['tid']) in main]
    assert len(main) == 1 and len(tasks) > 100, (main, len(tasks))
    return tasks


def measure(app, page, srv)->tuple:
    "(5,000-token task figures, 1 MB figures, [targets missed]) in `app` (a `browser.Jupyter`)."
    path = write_notebook(app.root/'cost.ipynb', ['%%prompt --fresh -m qwen3:1.7b\nWrite 5,000 tokens.',
                                                  '%%prompt --fresh -m qwen3:1.7b\nWrite a megabyte.'])
    open_notebook(page, app, path.name)
    load_boopiter(page, app)
    execute_silently(page, '%config BoopMagics.max_reply = 2_000_000')   # the default keeps 400,000 characters

    page.evaluate(LONGTASKS)                                             # 5,000 tokens, as a model streams them
    srv.script(long_markdown(5000, seed=5), delay=0.001)
    page.context.browser.start_tracing(page=page, categories=['toplevel', 'disabled-by-default-devtools.timeline'])
    run_cell(page, 0)
    until(page, app, reply_done(0), 'the 5,000-token reply', 120)
    trace = main_thread_tasks(page.context.browser.stop_tracing())
    assert srv.streams[-1].pieces >= 5000 and srv.streams[-1].completed
    long, loaf = page.evaluate('() => [window.__long, window.__loaf]')
    ours = [s['duration'] for f in loaf for s in f['scripts'] if OURS in (s['url'] or '')]
    tasks = dict(tasks=len(trace), longest_task_cpu_ms=round(max(c for _,c in trace), 1),
                 over_50ms_cpu=sum(c > 50 for _,c in trace), longest_task_wall_ms=round(max(w for w,_ in trace), 1),
                 long_tasks_wall=len(long), longest_long_task_wall_ms=round(max(long, default=0)),
                 longest_extension_script_wall_ms=round(max(ours, default=0)))
    print(f'\n[{app.app}] 5,000 tokens: {json.dumps(tasks)}')
    # The long-task API counts wall time: on the shared 2-core machine the kernel, the Jupyter server and the test
    # server stream the reply on the same cores (and other jobs run), and a task descheduled for a while shows as
    # long with little work in it. The page's own cost is each task's main-thread CPU time (the trace's `tdur`):
    # none may reach 50 ms (the render loop yields every 12 ms). Wall time is reported, and bounded loosely.
    missed = [f'{k}: {tasks[k]} (target {v})' for k,v,ok in (('over_50ms_cpu', 0, tasks['over_50ms_cpu'] == 0),
              ('longest_task_wall_ms', '<= 1500', tasks['longest_task_wall_ms'] <= 1500)) if not ok]

    srv.script(long_markdown(MB_WORDS, seed=6))                       # a 1 MB reply, streamed as fast as it comes
    page.evaluate(TIMES, 1)
    run_cell(page, 1)
    until(page, app, reply_done(1), 'the 1 MB reply', 300)
    t, updates = page.evaluate('() => [window.__t, window.__updates.length]')
    final = page.evaluate(f'() => {PANEL}.content.widgets[1].model.outputs.get(0).toJSON().data[{json.dumps(REPLY_MIME)}]')
    chars = len('\n\n'.join(final['blocks']))
    assert final['status'] == 'done' and chars > 1_000_000 and updates >= 10, (chars, updates)
    once = min(page.evaluate(ONCE, 1) for _ in range(2))                # the better of two: a fair yardstick
    replay, views = min(page.evaluate(REPLAY, 1) for _ in range(2))     # the better of two too: the same yardstick
    assert views == 1                                                    # updated in place, as from the kernel
    figures = dict(chars=chars, updates=updates, live_stream_ms=round(t['done'] - t['first']),
                   live_render_after_last_update_ms=round(t['done'] - t['last']), replay_ms=round(replay),
                   once_ms=round(once), ratio=round(replay / once, 2))
    print(f'[{app.app}] 1 MB reply: {json.dumps(figures)}')
    # streamed (every update the kernel sent, one per frame) it finishes within twice one render of the final text:
    # the view renders each block once, not the whole reply on every update; live, the kernel's own pace sets the
    # stream's length, and the page is done at most one full render after the last update arrives
    if figures['ratio'] > 2: missed.append(f"ratio: {figures['ratio']} (target <= 2)")
    if figures['live_render_after_last_update_ms'] > once:
        missed.append(f"live_render_after_last_update_ms: {figures['live_render_after_last_update_ms']} (target <= {round(once)})")
    return tasks, figures, missed


class _Folders:
    "What `browser.Servers` asks of pytest's tmp_path_factory: a new folder per name."
    def __init__(self): self.root = Path(tempfile.mkdtemp(prefix='boop-bench-'))
    def mktemp(self, name):
        (p := self.root/name).mkdir()
        return p


def main(apps):
    missed, folders = [], _Folders()
    try:
        with OllamaTestServer() as srv, Servers(folders, srv.host) as servers, browsing() as context:
            for name in apps:
                app, page = servers.get(name), context.new_page()
                srv.reset()
                try: *_, miss = measure(app, page, srv)
                finally:
                    page.close()
                    app.shutdown_kernels()
                missed += [f'[{name}] {m}' for m in miss]
    finally: shutil.rmtree(folders.root, ignore_errors=True)
    print('\n'.join(missed) or 'every target met')
    return 1 if missed else 0


if __name__ == '__main__': sys.exit(main(sys.argv[1:] or ['lab', 'notebook']))
