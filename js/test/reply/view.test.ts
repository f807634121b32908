// @vitest-environment jsdom
import { describe, expect, it, vi } from 'vitest';
import { ReplyData } from '../../src/protocol/bundles';
import { parseReplyBundle } from '../../src/protocol/parse';
import { IReplyActions, ReplyView } from '../../src/reply/view';

/** A stand-in for Jupyter's renderMarkdown: headings, fences and paragraphs, as text (never innerHTML). */
async function fakeMarkdown(host: HTMLElement, source: string): Promise<void> {
  await Promise.resolve();
  const fence = /^```(\w*)\n([\s\S]*?)\n?```$/.exec(source);
  if (fence) {
    const pre = document.createElement('pre');
    const code = document.createElement('code');
    if (fence[1]) code.className = `language-${fence[1]}`;
    code.textContent = fence[2] + '\n';
    pre.append(code);
    host.append(pre);
    return;
  }
  const h = /^(#{1,6}) (.*)$/.exec(source);
  const e = document.createElement(h ? `h${h[1].length}` : 'p');
  e.textContent = h ? h[2] : source;
  if (h) {
    e.id = h[2];
    const a = document.createElement('a');
    a.className = 'jp-InternalAnchorLink';
    a.textContent = '¶';
    e.append(a);
  }
  host.append(e);
}

/** A reply as the kernel sends it: its answer as the blocks it made safe (a string: one block). */
function reply(blocks: string[] | string, extra: Partial<ReplyData> = {}): ReplyData {
  const data = { kind: 'reply', model: 'm', status: 'streaming', blocks: typeof blocks === 'string' ? [blocks] : blocks };
  return parseReplyBundle({ ...data, summary: 'm · 3 tokens', details: ['row'], ...extra }) as ReplyData;
}

function makeView(actions: IReplyActions | null = null) {
  const render = vi.fn(fakeMarkdown);
  const copy = vi.fn();
  const view = new ReplyView({ renderMarkdown: render, actions: () => actions, copy });
  const notebook = document.createElement('div');
  notebook.className = 'jp-Notebook'; // outside a notebook only Copy is offered
  notebook.append(view.node);
  document.body.append(notebook);
  return { view, render, copy };
}

describe('ReplyView', () => {
  it('renders the answer block by block and re-renders only what changed', async () => {
    const { view, render } = makeView();
    await view.update(reply(['# Title', 'First paragraph.', 'Second']));
    expect(render).toHaveBeenCalledTimes(3);
    const first = view.node.querySelector('.boop-Block')!;
    const firstContent = first.firstElementChild;
    await view.update(reply(['# Title', 'First paragraph.', 'Second, longer'], { status: 'done' }));
    expect(render).toHaveBeenCalledTimes(4);
    expect(render.mock.calls[3][1]).toBe('Second, longer');
    expect(view.node.querySelector('.boop-Block')!.firstElementChild).toBe(firstContent); // same DOM
    expect(view.node.querySelectorAll('.boop-Block').length).toBe(3);
  });

  it("renders each of the kernel's blocks as it is, and an older saved reply's whole Markdown as one block", async () => {
    const { view, render } = makeView();
    const block = '- ```\n  a\n  ```\n\n  ```\n\n  <b>x</b>\n  ```'; // blank lines inside: never cut
    await view.update(reply([block, 'After.'], { status: 'done' }));
    expect(render.mock.calls.map(c => c[1])).toEqual([block, 'After.']);
    const { view: old, render: oldRender } = makeView();
    await old.update(parseReplyBundle({ kind: 'reply', status: 'done', markdown: 'a\n\n```\n\nb\n```\n\nc' }) as ReplyData);
    expect(oldRender.mock.calls.map(c => c[1])).toEqual(['a\n\n```\n\nb\n```\n\nc']);
  });

  it('demotes model headings to styled lines without ids or anchors', async () => {
    const { view } = makeView();
    await view.update(reply('## Plan', { status: 'done' }));
    expect(view.node.querySelector('h1, h2, h3, h4, h5, h6')).toBeNull();
    const line = view.node.querySelector('.boop-Heading') as HTMLElement;
    expect(line.dataset.level).toBe('2');
    expect(line.textContent).toBe('Plan');
    expect(line.id).toBe('');
  });

  it('shows a fence the model has not closed yet as growing plain code, then renders it once closed', async () => {
    const { view, render } = makeView();
    await view.update(reply(['Intro', '```python\nx = 1\n```'], { open: true })); // the kernel closes every fence
    expect(render).toHaveBeenCalledTimes(1);
    const streaming = view.node.querySelector('.boop-Block-streamingCode')!;
    expect(streaming.textContent).toBe('x = 1');
    await view.update(reply(['Intro', '```python\nx = 1\ny = 2\n```'], { open: true }));
    expect(view.node.querySelector('.boop-Block-streamingCode')).toBe(streaming); // appended, not rebuilt
    expect(streaming.textContent).toBe('x = 1\ny = 2');
    expect(view.node.querySelector('.boop-CodeActions')).toBeNull(); // no actions on half-written code
    await view.update(reply(['Intro', '```python\nx = 1\ny = 2\n```']));
    expect(render).toHaveBeenCalledTimes(2);
    expect(view.node.querySelector('.boop-Block-streamingCode')).toBeNull();
  });

  it('gives code blocks Insert and Insert and run as the cell that runs them, and Copy; other languages Copy only', async () => {
    const insert = vi.fn(async () => undefined);
    const { view, copy } = makeView({ insert, stop: async () => undefined });
    const blocks = ['```python\nprint(1)\n```', '```bash\npython -c "print(2)"\n```', '```json\n{"a": 1}\n```'];
    await view.update(reply(blocks, { status: 'done' }));
    const bars = view.node.querySelectorAll('.boop-CodeActions');
    const actions = (i: number) => Array.from(bars[i].querySelectorAll('button')).map(b => b.dataset.boopAction);
    expect(actions(0)).toEqual(['insert', 'run', 'copy']);
    expect(actions(1)).toEqual(['insert', 'run', 'copy']);
    expect(actions(2)).toEqual(['copy']); // no cell of the kernel runs JSON
    (bars[0].querySelector('[data-boop-action=run]') as HTMLElement).click();
    expect(insert).toHaveBeenCalledWith('print(1)', true);
    (bars[1].querySelector('[data-boop-action=copy]') as HTMLElement).click();
    expect(copy).toHaveBeenCalledWith('python -c "print(2)"'); // Copy: the block as written
    (bars[1].querySelector('[data-boop-action=insert]') as HTMLElement).click();
    expect(insert).toHaveBeenLastCalledWith('%%bash\npython -c "print(2)"', false); // a cell that runs it, in bash
    (bars[1].querySelector('[data-boop-action=run]') as HTMLElement).click();
    expect(insert).toHaveBeenLastCalledWith('%%bash\npython -c "print(2)"', true);
    expect(insert).toHaveBeenCalledTimes(3);
  });

  it("a fix's python blocks offer Fix the cell first, which hands the code over and says what became of it", async () => {
    const replace = vi.fn(async () => 'Fixed ✓ · running');
    const { view } = makeView({ insert: async () => undefined, stop: async () => undefined, replace });
    const blocks = ['```python\nx = 1\n```', '```bash\nls\n```'];
    await view.update(reply(blocks, { status: 'done', fixes: 'c7' }));
    const bars = view.node.querySelectorAll('.boop-CodeActions');
    const actions = (i: number) => Array.from(bars[i].querySelectorAll('button')).map(b => b.dataset.boopAction);
    expect(actions(0)).toEqual(['replace', 'insert', 'run', 'copy']);
    expect(actions(1)).toEqual(['insert', 'run', 'copy']); // a shell block fixes no python cell
    (bars[0].querySelector('[data-boop-action=replace]') as HTMLElement).click();
    expect(replace).toHaveBeenCalledWith('x = 1');
    await Promise.resolve();
    await Promise.resolve();
    expect(bars[0].querySelector('[data-boop-action=replace]')!.textContent).toContain('Fixed ✓ · running');
    const plain = makeView({ insert: async () => undefined, stop: async () => undefined });
    await plain.view.update(reply(blocks, { status: 'done' })); // not a fix: no such button
    expect(plain.view.node.querySelector('[data-boop-action=replace]')).toBeNull();
  });

  it("runs a block inserted while its reply streams only once the reply has ended, and says so", async () => {
    const insert = vi.fn(async (_code: string, _run: boolean, after?: Promise<void>) => { await after; });
    const { view } = makeView({ insert, stop: async () => undefined });
    const blocks = ['```python\nprint(1)\n```', 'More is coming'];
    await view.update(reply(blocks));   // streaming
    const run = view.node.querySelector('[data-boop-action=run]') as HTMLElement;
    run.click();
    expect(run.textContent).toContain('it runs when the reply ends');
    const after = (insert.mock.calls[0] as unknown[])[2] as Promise<void>;
    expect(insert.mock.calls[0].slice(0, 2)).toEqual(['print(1)', true]);
    let ended = false;
    void after.then(() => { ended = true; });
    await view.update(reply(blocks));   // still streaming
    await Promise.resolve();
    expect(ended).toBe(false);
    await view.update(reply(blocks, { status: 'interrupted' }));   // ended (stopped, too)
    await after;
    expect(ended).toBe(true);
    await view.update(reply(blocks, { status: 'done' }));
    (view.node.querySelector('[data-boop-action=run]') as HTMLElement).click();
    expect(insert).toHaveBeenLastCalledWith('print(1)', true);   // an ended reply's block runs at once
  });

  it('offers no Insert and run for the blocks the tool loop ran (listed once the round ran)', async () => {
    const { view } = makeView({ insert: async () => undefined, stop: async () => undefined });
    const md = ['Let me look.', '```python\nread_cell("c1")\n```', '```python\nprint(2)\n```'];
    const actions = () =>
      Array.from(view.node.querySelectorAll('.boop-CodeActions'), bar =>
        Array.from(bar.querySelectorAll('button'), b => b.dataset.boopAction)
      );
    await view.update(reply(md, { status: 'done' }));
    expect(actions()).toEqual([['insert', 'run', 'copy'], ['insert', 'run', 'copy']]);
    await view.update(reply(md, { status: 'done', ran_blocks: ['read_cell("c1")\n'] })); // the same blocks, not re-rendered
    expect(actions()).toEqual([['insert', 'copy'], ['insert', 'run', 'copy']]);
    expect(view.node.querySelector('.boop-Code')!.classList.contains('boop-mod-ran')).toBe(true);
    const { view: later } = makeView({ insert: async () => undefined, stop: async () => undefined });
    await later.update(reply(md, { status: 'done', ran_blocks: ['read_cell("c1")'] })); // known before rendering
    expect(Array.from(later.node.querySelectorAll('.boop-CodeActions'), b => b.querySelectorAll('button').length)).toEqual([2, 3]);
  });

  it('keeps the reasoning and details sections open or closed across updates', async () => {
    const { view } = makeView();
    await view.update(reply('', { reasoning: 'Let me think', reasoning_label: 'Reasoning · 3 words', reasoning_streaming: true }));
    const details = view.node.querySelector('.boop-Reply-reasoning') as HTMLDetailsElement;
    details.open = true;
    (view.node.querySelector('.boop-Reply-details') as HTMLDetailsElement).open = true;
    const text = view.node.querySelector('.boop-Reply-reasoningText')!;
    const node = text.firstChild;
    await view.update(reply('Answer', { reasoning: 'Let me think about it', reasoning_label: 'Reasoning · 5 words' }));
    expect(view.node.querySelector('.boop-Reply-reasoning')).toBe(details);
    expect(details.open).toBe(true);
    expect((view.node.querySelector('.boop-Reply-details') as HTMLDetailsElement).open).toBe(true);
    expect(text.firstChild).toBe(node); // appended to the same text node
    expect(text.textContent).toBe('Let me think about it');
    expect(details.querySelector('summary')!.textContent).toBe('Reasoning · 5 words');
  });

  it('treats reasoning, details and tool output as text, never HTML', async () => {
    const { view } = makeView();
    const evil = '<img src=x onerror="window.__pwned=1"><b>bold</b>';
    await view.update(reply('ok', { status: 'done', reasoning: evil, details: [evil], note: evil, warning: evil }));
    expect(view.node.querySelector('img, b')).toBeNull();
    expect(view.node.querySelector('.boop-Reply-reasoningText')!.textContent).toBe(evil);
    const tools = makeView().view;
    await tools.update(parseReplyBundle({ kind: 'tool_round', round: 1, steps: [{ status: 'ok', source: evil, result: evil }] })!);
    expect(tools.node.querySelector('img, b')).toBeNull();
  });

  it('shows status badges, a live line with a stop button, and hides them when done', async () => {
    const stop = vi.fn(async () => undefined);
    const { view } = makeView({ insert: async () => undefined, stop });
    await view.update(reply('', { status: 'waiting', note: 'loading model' }));
    const live = view.node.querySelector('.boop-Reply-live') as HTMLElement;
    expect(live.hidden).toBe(false);
    expect(live.textContent).toContain('Waiting for m · loading model');
    (live.querySelector('[data-boop-action=stop]') as HTMLButtonElement).click();
    expect(stop).toHaveBeenCalled();
    await view.update(reply('partial', { status: 'interrupted', finish_reason: 'length', reused: true }));
    expect(live.hidden).toBe(true);
    const labels = Array.from(view.node.querySelectorAll('.boop-Badge-label')).map(b => b.textContent);
    expect(labels).toEqual(['reused', 'interrupted', 'cut off']);
    expect(view.node.dataset.boopStatus).toBe('interrupted');
  });

  it('renders tool rounds one collapsible line per call, keeping each open state', async () => {
    const { view } = makeView();
    const round = (statuses: string[]) =>
      parseReplyBundle({ kind: 'tool_round', round: 1, steps: statuses.map((status, i) => ({ status, source: `f(${i})\nmore`, result: 'r', flags: status === 'flagged' ? ['injection'] : [] })) })!;
    await view.update(round(['ok', 'flagged', 'refused', 'not run']));
    const items = view.node.querySelectorAll('.boop-Tool');
    expect(Array.from(items).map(i => i.querySelector('.boop-Tool-icon')!.textContent)).toEqual(['✓', '⚠', '✗', '○']);
    expect(items[0].querySelector('.boop-Tool-call')!.textContent).toBe('f(0) …');
    expect(items[1].textContent).toContain('flagged: injection');
    (items[0].querySelector('details') as HTMLDetailsElement).open = true;
    await view.update(round(['ok', 'flagged', 'refused', 'ok']));
    expect((view.node.querySelectorAll('.boop-Tool details')[0] as HTMLDetailsElement).open).toBe(true);
    expect(view.node.querySelectorAll('.boop-Tool')[3].className).toContain('boop-mod-success');
  });

  it('offers only Copy outside a notebook', async () => {
    const render = vi.fn(fakeMarkdown);
    const view = new ReplyView({ renderMarkdown: render, actions: () => null, copy: () => undefined });
    document.body.append(view.node);
    await view.update(reply('```python\nx\n```', { status: 'done' }));
    expect(Array.from(view.node.querySelectorAll('.boop-CodeActions button')).map(b => (b as HTMLElement).dataset.boopAction)).toEqual(['copy']);
  });

  it('draws an interim update that carries no Markdown yet, then the final one', async () => {
    const { view, render } = makeView();
    // a streaming update may come without text/markdown (only the final one has it): the view reads only its own data
    await view.update(parseReplyBundle({ kind: 'reply', model: 'm', status: 'streaming', reasoning: 'thinking', reasoning_streaming: true, cell_id: 'c7' })!);
    expect(render).not.toHaveBeenCalled();
    expect(view.node.querySelectorAll('.boop-Block').length).toBe(0);
    await view.update(reply('Done.', { status: 'done', cell_id: 'c7' }));
    expect(render).toHaveBeenCalledTimes(1);
    expect(view.node.querySelector('.boop-Reply-body')!.textContent).toBe('Done.');
  });

  it('summarises a tool loop in one collapsed line', async () => {
    const { view } = makeView();
    await view.update(parseReplyBundle({ kind: 'tool_loop', stop: 'answered', note: 'done', rounds: 2, steps: [{ round: 1, source: 'f()', status: 'ok' }, { round: 2, source: 'g()', status: 'refused' }] })!);
    expect(view.node.querySelector('summary')!.textContent).toBe('Tool loop · stopped: answered · 2 rounds · 2 calls');
    expect((view.node.querySelector('details') as HTMLDetailsElement).open).toBe(false);
  });

  it('says it has work pending from the moment an update arrives during a render until that update is drawn', async () => {
    let release = () => {};
    const render = vi.fn(async (host: HTMLElement, source: string) => {
      if (source === 'a') await new Promise<void>(r => (release = r)); // the first render waits (marked loading)
      host.textContent = source;
    });
    const view = new ReplyView({ renderMarkdown: render, actions: () => null, copy: () => undefined });
    document.body.append(view.node);
    const first = view.update(reply('a'));
    const final = view.update(reply(['a', 'b'], { status: 'done' }));   // the final update, while 'a' still renders
    expect([view.node.dataset.boopStatus, view.node.dataset.boopPending]).toEqual(['done', '1']);
    release();
    await Promise.all([first, final, view.idle()]);
    expect(view.node.dataset.boopPending).toBe('0');
    expect(view.node.querySelector('.boop-Reply-body')!.textContent).toBe('ab');
  });

  it('renders a growing last block at most as often as its cost allows, and always at the end', async () => {
    let now = 0;
    const render = vi.fn(async (host: HTMLElement, source: string) => {
      now += 100; // every render "costs" 100 ms
      host.textContent = source;
    });
    const view = new ReplyView({ renderMarkdown: render, actions: () => null, copy: () => undefined, now: () => now });
    await view.update(reply('a'));
    expect(render).toHaveBeenCalledTimes(1);
    now += 10;
    void view.update(reply('ab')); // 110 ms after the start of a 100 ms render: too soon
    expect(render).toHaveBeenCalledTimes(1);
    await view.update(reply('abc', { status: 'done' })); // the final text renders at once
    expect(render).toHaveBeenCalledTimes(2);
    expect(view.node.querySelector('.boop-Reply-body')!.textContent).toBe('abc');
    view.dispose();
  });
});
