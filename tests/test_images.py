"""Images for vision models, without a kernel: fitting, the budget, Markdown attachments and links, the ledger."""

import base64, os
import pytest
from boopiter_ext.context.build import Cell, build_context, cell_text
from boopiter_ext.context.images import ImagePicker, fit_image, image_mime, image_tokens, markdown_images
from boopiter_ext.context.messages import mk_msg, msg_images, msg_text
from images_util import decoded, image_bytes, png_b64

RED, GREEN, BLUE = (200, 30, 30), (30, 200, 30), (30, 30, 200)


def b64(data): return base64.b64encode(data).decode()
def figure(b64data, mime='image/png'):
    return dict(output_type='display_data', data={mime: b64data, 'text/plain': '<Figure size 640x480 with 1 Axes>'},
                metadata={})
def code(src, *outputs, n=None): return Cell(src, 'code', list(outputs), exec_count=n)


def test_large_images_are_scaled_to_the_longest_side_keeping_their_shape():
    img = fit_image(png_b64(3000, 1500, RED), max_side=1024)
    assert (img.width, img.height, img.original, img.resized) == (1024, 512, (3000, 1500), True)
    assert decoded(img.data) == ((1024, 512), 'PNG', RED)
    tall = fit_image(b64(image_bytes(600, 2400, 'JPEG', GREEN)), max_side=800)
    assert (tall.mime, tall.size) == ('image/jpeg', '200×800') and decoded(tall.data)[1] == 'JPEG'


def test_small_png_and_jpeg_go_as_they_are_other_formats_become_png():
    small = png_b64(300, 200)
    assert fit_image(small).data == small and not fit_image(small).resized    # not even re-encoded
    jpeg = b64(image_bytes(300, 200, 'JPEG'))
    assert fit_image(jpeg).mime == 'image/jpeg' and fit_image(jpeg).data == jpeg
    gif = fit_image(b64(image_bytes(40, 30, 'GIF', mode='P', color=3)))
    assert gif.mime == 'image/png' and decoded(gif.data)[:2] == ((40, 30), 'PNG')
    alpha = fit_image(b64(image_bytes(2048, 2048, 'PNG', (1, 2, 3, 0), mode='RGBA')), max_side=512)
    from PIL import Image
    import io
    assert Image.open(io.BytesIO(base64.b64decode(alpha.data))).mode == 'RGBA'   # transparency survives


def test_a_mislabelled_image_is_sent_under_its_real_type_and_garbage_is_refused():
    jpeg = b64(image_bytes(50, 50, 'JPEG'))
    assert fit_image(jpeg).mime == 'image/jpeg'    # whatever mime the output claimed
    for bad in (b64(b'\x89PNG\r\n\x1a\n' + b'\0' * 32), 'not base64 at all!', b64(b'hello')):
        with pytest.raises(ValueError, match='not a readable image'): fit_image(bad)


def test_image_tokens_grow_with_the_pixels():
    assert image_tokens(1024, 768) == 768 and image_tokens(10, 10) == 1 and image_tokens(2048, 1536) == 4 * 768


def test_the_newest_images_are_kept_within_the_budget_in_notebook_order():
    cells = [code(f'plot({i})', figure(png_b64(100 + i, 50, c)), n=i + 1) for i,c in enumerate([RED, GREEN, BLUE])]
    msgs, ledger = build_context(cells, 'What changed?', vision=True, max_images=2)
    sent = msg_images(msgs[-1])
    assert [decoded(s)[0] for s in sent] == [(101, 50), (102, 50)]                 # the newest two, oldest first
    assert '[image/png output omitted: too many images]' in msg_text(msgs[-1])
    assert [r['status'] for r in ledger['image_records']] == ['not sent', 'sent', 'sent']
    assert ledger['image_records'][0]['why'] == 'over the budget of 2 images (`max_images`)' and ledger['images'] == 2
    assert [i['images'] for i in ledger['items']] == [[], ['101×50'], ['102×50']]
    assert build_context(cells, 'q', vision=True, max_images=0)[1]['images'] == 0


def test_a_model_without_vision_gets_placeholders_and_no_image():
    msgs, ledger = build_context([code('plot()', figure(png_b64(64, 64)))], 'What is odd?', vision=False)
    assert msg_images(msgs[-1]) == [] and '[image/png output omitted]' in msg_text(msgs[-1])
    assert ledger['image_records'] == [dict(where='In [ ]', what='image/png output', status='not sent',
                                            why='the model takes no images')]


@pytest.mark.heavy
def test_images_are_scaled_and_cost_their_size_in_the_budget():
    big = [code('plot()', figure(png_b64(4000, 2000)), n=1)]
    msgs, ledger = build_context(big, 'q', vision=True, max_side=512)
    assert decoded(msg_images(msgs[-1])[0])[0] == (512, 256)
    assert ledger['items'][0]['tokens'] >= image_tokens(512, 256)
    assert ledger['image_records'][0]['original'] == '4000×2000'
    msgs, ledger = build_context(big, 'q', vision=True, limit=100)   # too big for the window: dropped, and said so
    assert msg_images(msgs[-1]) == [] and ledger['image_records'][0]['status'] == 'dropped'


def test_markdown_attachments_data_urls_and_local_links(tmp_path):
    (tmp_path/'figs').mkdir()
    (tmp_path/'figs'/'plot one.png').write_bytes(image_bytes(80, 40, color=GREEN))
    src = ('See ![a](attachment:shot.png), ![b](figs/plot%20one.png), ![c](<figs/plot one.png>),\n'
           f'![d](data:image/png;base64,{png_b64(10, 10)}) and ![e](https://example.com/x.png) and `![f](code.png)`')
    found = markdown_images(src, {'shot.png': {'image/png': png_b64(20, 20, BLUE)}}, tmp_path.resolve())
    assert [(name, bool(img), why) for name, img, why in found] == [   # the parser normalises links: %20 for a space
        ('attachment:shot.png', True, ''), ('figs/plot%20one.png', True, ''), ('figs/plot%20one.png', True, ''),
        ('data: URL', True, ''), ('https://example.com/x.png', False, 'remote images are never fetched')]
    note = Cell(src, 'markdown', attachments={'shot.png': {'image/png': png_b64(20, 20, BLUE)}})
    text, imgs, _ = cell_text(note, pick=ImagePicker(vision=True), root=tmp_path.resolve())
    assert [i.size for i in imgs] == ['20×20', '80×40', '80×40', '10×10']
    assert '[image: figs/plot%20one.png, image/png, 80×40]' in text


def test_image_links_stay_inside_the_notebooks_folder(tmp_path):
    root, outside = tmp_path/'project', tmp_path/'secret.png'
    root.mkdir()
    outside.write_bytes(image_bytes(10, 10))
    (root/'.hidden.png').write_bytes(image_bytes(10, 10))
    (root/'notes.txt').write_text('not an image')
    (root/'fake.png').write_text('not an image either')
    os.symlink(outside, root/'link.png')
    src = ' '.join(f'![]({p})' for p in ('../secret.png', str(outside), 'link.png', '.hidden.png', '~/x.png',
                                         'notes.txt', 'missing.png', 'fake.png'))
    found = {name: why for name, img, why in markdown_images(src, None, root.resolve()) if img is None}
    assert set(found) == {'../secret.png', str(outside), 'link.png', '.hidden.png', '~/x.png', 'notes.txt', 'missing.png'}
    assert "outside the notebook's folder" in found['../secret.png'] and 'hidden' in found['.hidden.png']
    msgs, ledger = build_context([Cell(src, 'markdown')], 'q', vision=True, root=root.resolve())
    assert msg_images(msgs[-1]) == []                  # fake.png was read, is no image, and is not sent
    assert {r['what']: r['status'] for r in ledger['image_records']}['fake.png'] == 'not sent'
    assert markdown_images('![](plot.png)', None, None)[0][2] == "the notebook's folder is unknown"


def test_images_linked_in_the_prompt_itself_are_sent_first_in_the_budget(tmp_path):
    (tmp_path/'now.png').write_bytes(image_bytes(30, 30, color=BLUE))
    cells = [code('plot()', figure(png_b64(60, 60, RED)), n=1)]
    msgs, ledger = build_context(cells, 'Compare with ![](now.png)', vision=True, root=tmp_path.resolve(), max_images=1)
    assert [decoded(s)[0] for s in msg_images(msgs[-1])] == [(30, 30)]
    assert [(r['where'], r['status']) for r in ledger['image_records']] == [('In [1]', 'not sent'), ('the prompt', 'sent')]


def test_only_png_jpeg_gif_and_webp_are_opened_never_postscript():
    webp = fit_image(b64(image_bytes(64, 32, 'WEBP', GREEN)))
    assert webp.mime == 'image/png' and webp.size == '64×32'
    eps = b'%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\nnewpath 0 0 moveto 10 10 lineto stroke\nshowpage\n'
    bmp, tiff = image_bytes(10, 10, 'BMP'), image_bytes(10, 10, 'TIFF')
    for data in (eps, bmp, tiff):   # Pillow would hand EPS to Ghostscript
        with pytest.raises(ValueError, match='not a readable image'): fit_image(b64(data))


def bomb(w, h):
    "A PNG whose header claims w×h pixels, in a few kilobytes."
    import zlib, struct
    def chunk(kind, data): return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))
    rows = zlib.compress(b''.join(b'\0' + b'\0' * w for _ in range(10)))
    return b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 0, 0, 0, 0)) + chunk(b'IDAT', rows) \
           + chunk(b'IEND', b'')


def test_decompression_bombs_are_refused_before_decoding():
    with pytest.raises(ValueError, match='too large to decode \\(10000×5000 pixels\\)'): fit_image(b64(bomb(10000, 5000)))
    with pytest.raises(ValueError, match='too large to decode'): fit_image(b64(bomb(14000, 14000)))   # Pillow's own limit
    msgs, ledger = build_context([code('x', figure(b64(bomb(10000, 5000))))], 'q', vision=True)   # the prompt still goes
    assert ledger['image_records'][0]['why'] == 'too large to decode (10000×5000 pixels)' and msg_images(msgs[-1]) == []
    with pytest.raises(ValueError, match='larger than 20 MB'): fit_image(base64.b64encode(b'\0' * 20_000_001).decode())


def test_16_bit_greyscale_and_exif_rotation_survive_scaling():
    from PIL import Image
    import io
    grad = Image.linear_gradient('L').resize((2000, 1000)).convert('I;16')
    grad = grad.point(lambda v: v * 257)
    out = io.BytesIO(); grad.save(out, 'PNG')
    img = fit_image(b64(out.getvalue()), max_side=500)
    lo, hi = Image.open(io.BytesIO(base64.b64decode(img.data))).convert('L').getextrema()
    assert lo < 20 and hi > 235                           # a full range, not clipped to white
    photo = Image.new('RGB', (1200, 800), RED)
    exif = photo.getexif(); exif[0x0112] = 6             # "rotate 90° clockwise to display"
    out = io.BytesIO(); photo.save(out, 'JPEG', exif=exif)
    assert fit_image(b64(out.getvalue()), max_side=600).size == '400×600'   # upright, as the phone showed it


def test_truncated_and_cmyk_images_are_checked_before_they_go():
    whole = image_bytes(200, 100, 'PNG')
    with pytest.raises(ValueError, match='not a readable image'): fit_image(b64(whole[:len(whole) // 2]))
    cmyk = fit_image(b64(image_bytes(50, 40, 'JPEG', (0, 0, 0, 0), mode='CMYK')))
    assert cmyk.mime == 'image/jpeg' and decoded(cmyk.data)[1] == 'JPEG'
    from PIL import Image
    import io
    assert Image.open(io.BytesIO(base64.b64decode(cmyk.data))).mode == 'RGB'


def test_inline_data_urls_cost_no_text_tokens_and_encoded_attachment_names_resolve(tmp_path):
    url = f'data:image/png;base64,{png_b64(300, 300)}'
    note = Cell(f'Here: ![]({url}) and ![](attachment:my%20plot.png)', 'markdown',
                attachments={'my plot.png': {'image/png': [png_b64(20, 10)[:10], png_b64(20, 10)[10:]]}})
    msgs, ledger = build_context([note], f'And ![]({url})?', vision=True)
    assert ledger['tokens'] < 1500 and len(msg_images(msgs[-1])) == 3     # not ~90k tokens of base64 text
    assert 'base64,…' in msg_text(msgs[-1]) and url not in msg_text(msgs[-1])
    assert [r['size'] for r in ledger['image_records']] == ['300×300', '20×10', '300×300']


def test_images_an_earlier_prompt_linked_go_with_its_turn(tmp_path):
    (tmp_path/'sketch.png').write_bytes(image_bytes(40, 40, color=BLUE))
    turn = Cell('%%prompt\nWhat does ![](sketch.png) show?', 'prompt',
                [dict(output_type='display_data', data={'text/plain': 'A blue square.'},
                      metadata={'boopiter': {'reply': True}})])
    msgs, ledger = build_context([turn], 'Why blue?', vision=True, root=tmp_path.resolve())
    assert [m['role'] for m in msgs] == ['system', 'user', 'assistant', 'user']
    assert [decoded(i)[0] for i in msg_images(msgs[1])] == [(40, 40)] and ledger['images'] == 1


def test_a_riff_file_is_an_image_only_when_it_is_webp():
    "A WAV file starts with RIFF too: it once went to the model as `image/webp` (issue 17)."
    import io, wave
    out = io.BytesIO()
    with wave.open(out, 'wb') as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b'\x00\x01' * 800)
    wav = out.getvalue()
    assert wav[:4] == b'RIFF' and wav[8:12] == b'WAVE' and image_mime(wav) is None
    with pytest.raises(ValueError, match='not a supported image'): mk_msg(['What is this?', wav])
    webp = image_bytes(20, 10, 'WEBP')
    assert image_mime(webp) == 'image/webp' and image_mime(webp[:12]) == 'image/webp'
    assert mk_msg(['See', webp])['content'][1]['image_url'].startswith('data:image/webp;base64,')
    gif = image_bytes(4, 4, 'GIF', mode='P', color=3)
    assert [image_mime(image_bytes(4, 4, f)) for f in ('PNG', 'JPEG')] + [image_mime(gif)] == \
        ['image/png', 'image/jpeg', 'image/gif']
    assert [image_mime(b) for b in (b'', b'RIFF', b'RIFF\0\0\0\0WEBX', image_bytes(4, 4, 'BMP'))] == [None] * 4
