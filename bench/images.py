"""What images cost when a prompt's context is built: a notebook of real figures, text-only against vision.

    python bench/images.py [--repeats N]

The notebook: 12 code cells, each showing a matplotlib figure as an `image/png` display output (Agg
backend, 1500×900 px, two of them 3000×2000), one cell showing a 4000×3000 photo-like JPEG (Pillow,
with noise), and a few cells of text output, as nbformat-style output dicts. Medians of N repeats of
`build_context(cells, 'What is odd?')`, in one process (the quick ones interleaved and repeated 4N times):

1. baseline: `vision=False`, every image a placeholder: the cost of a text-only context;
2. cold: `vision=True, max_images=8, max_side=1024`, the resize cache cleared before each repeat
   (the first prompt after the figures were drawn);
3. warm: the same without clearing (what every later prompt pays);
4. warm, re-read: warm again, but each repeat gets fresh copies of the same base64 strings, as the
   cells read from a saved notebook file are after each save (`notebook.saved_cells`): equal strings
   must be hashed and compared in full to hit the cache.

Cold and warm are printed as ratios to the baseline, with the base64 bytes of every image in the
notebook against the bytes sent (data URLs in the messages) and the sizes sent. Last, the memory the
cache keeps and the peak while fitting, by `tracemalloc` (Python allocations only: Pillow's own
pixel buffers are not traced).
"""

import argparse, base64, gc, io, statistics, sys, time, tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT/'tests')]
import matplotlib   # noqa: E402
matplotlib.use('Agg')
import matplotlib.pyplot as plt   # noqa: E402
import numpy as np   # noqa: E402
from boopiter_ext.context import images   # noqa: E402
from boopiter_ext.context.build import Cell, build_context   # noqa: E402
from boopiter_ext.context.messages import msg_images   # noqa: E402
import images_util   # noqa: E402

PROMPT = 'What is odd?'
MAX_IMAGES, MAX_SIDE = 8, 1024
FAST = 4   # the quick measurements are repeated FAST times as often as the cold one


def png_b64(fig, dpi):
    out = io.BytesIO()
    fig.savefig(out, format='png', dpi=dpi)   # no bbox_inches='tight': exact pixel sizes
    plt.close(fig)
    return base64.b64encode(out.getvalue()).decode()   # as IPython stores it: one line, no trailing newline


def figure(i, rng, big=False):
    "A figure of the kind notebooks are full of; 1500×900 px, or 3000×2000 if `big`."
    fig, ax = plt.subplots(figsize=(10, 6.667) if big else (10, 6))
    kind = i % 4
    if kind == 0:
        x = np.linspace(0, 20, 2000)
        for k in range(5): ax.plot(x, np.sin(x * (k + 1) / 3) + rng.normal(0, 0.1, x.size), label=f'run {k}')
        ax.legend()
    elif kind == 1:
        pts = rng.normal(size=(5000, 2))
        ax.scatter(pts[:, 0], pts[:, 1] * 0.5 + pts[:, 0], s=4, c=pts[:, 1], cmap='viridis', alpha=0.6)
    elif kind == 2:
        for k in range(3): ax.hist(rng.normal(k, 1 + k / 2, 20000), bins=80, alpha=0.5, label=f'group {k}')
        ax.legend()
    else:
        fig.colorbar(ax.imshow(np.cumsum(rng.normal(size=(120, 200)), axis=1), aspect='auto', cmap='magma'))
    ax.set_title(f'Figure {i}'); ax.grid(True, alpha=0.3)
    return png_b64(fig, 300 if big else 150), ('3000x2000' if big else '1500x900')


def photo_b64(rng, w=4000, h=3000):
    "A phone-camera-like JPEG (~4 MB): smooth shapes plus sensor-like noise (uniform, sd 12: quicker than Gaussian)."
    from PIL import Image, ImageChops
    s = 8   # the shapes are drawn at 1/8 scale and enlarged
    y, x = np.mgrid[0:h//s, 0:w//s].astype(np.float32) * s
    rgb = np.stack([128 + 90 * np.sin(x / 610) * np.cos(y / 470), 110 + 80 * np.cos((x + y) / 900),
                    140 + 70 * np.sin(np.hypot(x - w / 2, y - h / 2) / 300)], -1)
    img = Image.fromarray(rgb.clip(0, 255).astype(np.uint8)).resize((w, h), Image.BICUBIC)
    img = ImageChops.add(img, Image.fromarray(rng.integers(0, 42, (h, w, 3), dtype=np.uint8)), offset=-21)
    out = io.BytesIO()
    img.save(out, 'JPEG', quality=90)
    return base64.b64encode(out.getvalue()).decode()


def display(b64, size, mime='image/png'):
    return dict(output_type='display_data', data={mime: b64, 'text/plain': f'<Figure size {size} with 1 Axes>'},
                metadata={})


def notebook():
    "The cells, and the base64 of every image in them, oldest first."
    rng = np.random.default_rng(0)
    cells, imgs, n = [], [], 0
    def add(source, outputs):
        nonlocal n
        n += 1
        cells.append(Cell(source, 'code', outputs, exec_count=n))
    add('import numpy as np, pandas as pd\nimport matplotlib.pyplot as plt\ndf = pd.read_csv("runs.csv")', [])
    table = '\n'.join(f'{s:6} ' + '  '.join(f'{v:9.3f}' for v in rng.normal(size=6))
                      for s in ('count', 'mean', 'std', 'min', '25%', '50%', '75%', 'max'))
    add('df.describe()', [dict(output_type='execute_result', execution_count=2, metadata={}, data={'text/plain': table})])
    for i in range(12):
        if i == 9:   # the photo, among the newest: always within the budget of 8
            b64 = photo_b64(rng)
            add('from PIL import Image\nImage.open("sample.jpg")', [display(b64, '4000x3000', 'image/jpeg')])
            imgs.append(b64)
        big = i in (5, 8)   # two large figures (a scatter and a line plot), also among the newest 8
        b64, size = figure(i, rng, big)
        outputs = [display(b64, size)]
        if i % 3 == 0:
            outputs.insert(0, dict(output_type='stream', name='stdout', text=f'fitting model {i}…\nloss 0.{i:02d}31\n'))
        add(f'fig, ax = plt.subplots()\nplot_run(ax, df, {i})  # figure {i}', outputs)
        imgs.append(b64)
    return cells, imgs


def timed(fn):
    t = time.perf_counter()
    r = fn()
    return time.perf_counter() - t, r


def fresh(cells):
    "The cells with new but equal base64 strings, as `saved_cells` gives them after the notebook is saved again."
    def copy(o):
        if 'data' not in o: return o
        return {**o, 'data': {k: v[:1] + v[1:] if k.startswith('image/') else v for k,v in o['data'].items()}}
    return [Cell(c.source, c.kind, [copy(o) for o in c.outputs], exec_count=c.exec_count) for c in cells]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--repeats', type=int, default=5)
    reps = ap.parse_args().repeats
    t0 = time.perf_counter()
    cells, all_imgs = notebook()
    t_make = time.perf_counter() - t0

    base = lambda: build_context(cells, PROMPT, vision=False)
    vis = lambda cs=cells: build_context(cs, PROMPT, vision=True, max_images=MAX_IMAGES, max_side=MAX_SIDE)
    base()   # markdown-it imported out of the way
    images.fit_image(base64.b64encode(images_util.image_bytes(2048, 16)).decode())   # Pillow, and its resize path
    images._cache.clear()
    t_cold = []
    for _ in range(reps):
        images._cache.clear()
        t_cold.append(timed(vis)[0])
    newest = all_imgs[-MAX_IMAGES:]
    t_base, t_warm, t_reread = [], [], []
    for _ in range(FAST * reps):   # interleaved, so that other load on the machine hits all of them alike
        t_base.append(timed(base)[0])
        t, run = timed(vis)
        t_warm.append(t)
        copy = fresh(cells)   # made outside the timing: only the lookups are measured
        t_reread.append(timed(lambda copy=copy: vis(copy))[0])
        del copy
    (_, b_ledger), (v_msgs, v_ledger) = base(), run
    kept = len(images._cache)

    med = {k: statistics.median(v) * 1000
           for k,v in dict(base=t_base, cold=t_cold, warm=t_warm, reread=t_reread).items()}
    sent = [s for m in v_msgs for s in msg_images(m)]
    sent_records = [r for r in v_ledger['image_records'] if r['status'] == 'sent']
    kb = lambda n: f'{n / 1024:,.0f} KB'
    print(f'{len(cells)} cells, {len(all_imgs)} images ({kb(sum(map(len, all_imgs)))} of base64), drawn in {t_make:.1f} s; '
          f'max_images={MAX_IMAGES}, max_side={MAX_SIDE}; medians of {reps} (cold), {FAST * reps} (others)')
    print(f'baseline, vision=False        {med["base"]:8.2f} ms   (placeholders; ~{b_ledger["tokens"]:,} tokens)')
    print(f'cold, cache cleared            {med["cold"]:8.2f} ms   {med["cold"] / med["base"]:8.1f}x baseline')
    print(f'warm, cached                   {med["warm"]:8.2f} ms   {med["warm"] / med["base"]:8.2f}x baseline '
          f'({med["warm"] - med["base"]:+.2f} ms; {kept} fitted images cached)')
    print(f'warm, re-read strings          {med["reread"]:8.2f} ms   {med["reread"] / med["base"]:8.2f}x baseline '
          f'(equal base64 in new str objects, as after a save)')
    print(f'image data: {kb(sum(map(len, all_imgs)))} base64 in the notebook, {kb(sum(map(len, newest)))} in the newest '
          f'{MAX_IMAGES}; sent {len(sent)} images, {kb(sum(map(len, sent)))} base64 '
          f'({sum(map(len, sent)) / sum(map(len, newest)):.1%} of the newest {MAX_IMAGES}); ~{v_ledger["tokens"]:,} tokens')
    print('sent, in notebook order (pixels, base64 before → after):')   # the newest MAX_IMAGES, all readable
    for r, before, after in zip(sent_records, all_imgs[-len(sent):], sent):
        print(f'   {r["original"] or r["size"]:>9} → {r["size"]:<8} {kb(len(before)):>8} → {kb(len(after)):>7}  '
              f'{len(after) / len(before):6.2f}x  {r["where"]}')

    images._cache.clear(); gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    r = vis()
    peak = tracemalloc.get_traced_memory()[1] - before
    del r; gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    print(f'memory (tracemalloc, Python allocations): cache keeps {kb(kept)} after a cold build, peak {kb(peak)} during it')
    print(f'total {time.perf_counter() - t0:.1f} s')


if __name__ == '__main__': main()
