"""What recognising a repeated request costs a prompt: digest and lookup against building the context.

    python bench/replay.py [--repeats N]

A notebook of 40 code cells (text outputs, six 1024×768 figures) and 10 earlier prompts with replies,
as a prompt below them sees it. Medians of N repeats, in one process:

1. baseline: `build_context` for a vision model (what every prompt pays anyway);
2. digest: `request_digest` of the messages it built (SHA-256 over the model, options and messages,
   with execution counts and addresses normalised; each image by its own SHA-256, remembered), cold
   (the first prompt after the figures appeared) and warm (every later one, with freshly built messages);
3. lookup: `find_saved_reply` through the cells' outputs (this kernel's and the saved notebook's), a
   miss, so every output is looked at;
4. fingerprint: `context_fingerprint` of the cells the context sent (what a reply's metadata keeps, for a rerun
   to say which cells changed), and `context_changes` against a saved one where one cell changed.
"""

import argparse, base64, io, statistics, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]
from boopiter_ext.context.build import Cell, build_context   # noqa: E402
from boopiter_ext.core import replay   # noqa: E402
from boopiter_ext.core.replay import context_changes, context_fingerprint, find_saved_reply, request_digest   # noqa: E402


def noise(w, h):
    "A PNG that compresses like a busy figure (solid colours would make the digest look free)."
    from PIL import Image
    out = io.BytesIO()
    Image.effect_noise((w, h), 40).convert('RGB').save(out, 'PNG')
    return out.getvalue()


def notebook():
    "40 code cells (six with figures) and 10 answered prompts, each reply carrying a digest."
    cells = []
    for i in range(40):
        outs = [dict(output_type='stream', name='stdout', text=f'row {i}: ' + 'value ' * 60 + '\n')]
        if i % 7 == 0:
            png = base64.b64encode(noise(1024, 768)).decode()
            outs.append(dict(output_type='display_data', data={'image/png': png, 'text/plain': '<Figure>'}, metadata={}))
        cells.append(Cell(f'result_{i} = compute({i})\nprint(result_{i})', 'code', outs, exec_count=i + 1))
        if i % 4 == 3:
            md = {'boopiter': dict(reply=True, status='done', digest=f'sha256:{i:064x}', model='qwen3:1.7b')}
            cells.append(Cell(f'%%prompt\nWhat does result_{i} mean?', 'prompt',
                              [dict(output_type='display_data', data={'text/plain': 'It means ' + 'this ' * 80},
                                    metadata=md)], exec_count=i + 100))
    return cells


def median_ms(f, n):
    times = []
    for _ in range(n):
        t = time.perf_counter(); f(); times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--repeats', type=int, default=15)
    n = p.parse_args().repeats
    cells = notebook()
    build = lambda: build_context(cells, 'And the last one?', vision=True)
    msgs, ledger = build()
    opts = dict(think='', max_tokens=200, num_ctx=16384)
    digest = request_digest('qwen3:1.7b', msgs, opts)
    t_build = median_ms(build, n)
    def cold():
        replay._image_digests.clear()
        request_digest('qwen3:1.7b', msgs, opts)
    t_cold = median_ms(cold, n)
    warm = []
    for _ in range(n):   # a later prompt builds new messages (new data-URL strings); their images were hashed before
        fresh = build()[0]
        t = time.perf_counter(); request_digest('qwen3:1.7b', fresh, opts); warm.append(time.perf_counter() - t)
    t_digest = statistics.median(warm) * 1000
    t_lookup = median_ms(lambda: find_saved_reply(digest, cells, cells), n)   # a miss: every output looked at, twice
    t_fp = median_ms(lambda: context_fingerprint(build()[1]['sent']), n) - t_build   # on freshly built cells' texts
    saved = context_fingerprint(ledger['sent'])
    saved[3] = [saved[3][0], '0' * 12]
    t_changes = median_ms(lambda: context_changes(saved, ledger['sent']), n)
    size = sum(len(str(m['content'])) for m in msgs)
    print(f'{len(cells)} cells, {ledger["images"]} images sent, {size / 1e6:.1f} MB of messages; medians of {n}')
    print(f'baseline: build_context        {t_build:7.2f} ms')
    print(f'request_digest, cold           {t_cold:7.2f} ms   {t_cold / t_build:5.2f}x baseline (images hashed)')
    print(f'request_digest, warm           {t_digest:7.2f} ms   {t_digest / t_build:5.2f}x baseline')
    print(f'find_saved_reply (a miss)      {t_lookup:7.2f} ms   {t_lookup / t_build:5.2f}x baseline')
    print(f'context_fingerprint            {t_fp:7.2f} ms   {t_fp / t_build:5.2f}x baseline')
    print(f'context_changes (one changed)  {t_changes:7.2f} ms   {t_changes / t_build:5.2f}x baseline')
    print(f'recognising a repeat costs {t_digest + t_lookup:.1f} ms a prompt; a reused reply saves the whole model call')


if __name__ == '__main__': main()
