"""Images for vision models: from cell outputs and Markdown, fitted to a size limit and a per-prompt budget.

Jupyter keeps images as base64 outputs (`image/png` from matplotlib, `IPython.display.Image`, a PIL
image's repr). Markdown cells show them as attachments (`![](attachment:plot.png)`) or links to files
(`![](figures/plot.png)`). `ImagePicker` decides, image by image, what the model gets: the image itself,
scaled so its longest side is at most `max_side`, for vision models and within the `max_images`
budget, else a short placeholder in the text. Every decision is recorded for the context ledger.

    pick = ImagePicker(vision=True, max_images=8, max_side=1024)
    text, imgs = pick('In [3]', 'image/png', b64)     # '[image: image/png, 1024×576]', [ContextImage(...)]

Pillow is imported on first use, and opens PNG, JPEG, GIF and WebP only (never EPS, which it would
hand to Ghostscript), up to `MAX_PIXELS`. Remote images are never fetched (a URL could carry the
context out), and image files are read only inside the notebook's folder, as the file tools are
(`paths.confine`).
"""

__all__ = ['ContextImage', 'ImagePicker', 'fit_image', 'image_mime', 'image_tokens', 'markdown_images', 'IMAGE_MIMES',
           'MAX_PIXELS']

import base64, io, math, warnings
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

IMAGE_MIMES = ('image/png', 'image/jpeg', 'image/gif', 'image/webp')   # image outputs the context reads
_FILE_MIMES = {'.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif', '.webp': 'image/webp'}
_OPENABLE = ('PNG', 'JPEG', 'GIF', 'WEBP')   # JPEG opens MPO too; never EPS (Pillow runs Ghostscript for it), TIFF, BMP, ...
_SENDABLE = {'PNG': 'image/png', 'JPEG': 'image/jpeg', 'MPO': 'image/jpeg'}   # sent as they are when they fit
_MAGIC = {b'\x89PNG': 'image/png', b'\xff\xd8\xff': 'image/jpeg', b'GIF8': 'image/gif'}
MAX_FILE_BYTES = 20_000_000   # an image larger than this is not one anyone meant to send
MAX_PIXELS = 40_000_000       # decoding more takes seconds and gigabytes: a 31 KB PNG can claim 14000×14000
_cache, _CACHE_SIZE = OrderedDict(), 32
_md = None   # the CommonMark parser, made on first use


@dataclass(frozen=True)
class ContextImage:
    "One image as the model gets it."
    mime: str         # 'image/png' or 'image/jpeg'
    data: str         # Base64
    width: int
    height: int
    original: tuple   # (width, height) before fitting

    @property
    def size(self)->str: return f'{self.width}×{self.height}'
    @property
    def resized(self)->bool: return (self.width, self.height) != tuple(self.original)


def image_mime(
    data:bytes,  # A file's bytes (its first 12 are enough)
)->str|None:     # 'image/png', 'image/jpeg', 'image/gif' or 'image/webp'; None for anything else
    "The image type `data` starts with: a RIFF file only when it says WEBP (a WAV or AVI file is RIFF too)."
    if data[:4] == b'RIFF': return 'image/webp' if data[8:12] == b'WEBP' else None
    return next((m for sig,m in _MAGIC.items() if data.startswith(sig)), None)


def image_tokens(width:int, height:int)->int:
    "A rough token cost: one token per 32×32 patch (a 1024×768 image is 768), as vision encoders roughly count."
    return max(1, math.ceil(width / 32) * math.ceil(height / 32))


def _key(source, max_side):
    "A cache key that never holds the image: a file by its stat, data by its hash (which Python keeps on the object)."
    if isinstance(source, Path):
        st = source.stat()
        return str(source), st.st_mtime_ns, st.st_size, max_side
    return hash(source), len(source), source[:64], source[-64:], max_side


def _to_8bit(im):
    "16-bit and float greyscale stretched to 8 bits (a plain convert clips nearly everything to white)."
    im = im if im.mode in ('I', 'F') else im.convert('I')
    lo, hi = im.getextrema()
    return im.point(lambda v: (v - lo) * (255 / ((hi - lo) or 1))).convert('L')


def _fit(source, max_side):
    from PIL import Image, ImageOps, WebPImagePlugin   # noqa: F401 (Pillow registers WebP only when it is imported)
    raw = source.read_bytes() if isinstance(source, Path) else source if isinstance(source, bytes) \
          else base64.b64decode(source)   # which skips the line breaks some writers put in base64
    if len(raw) > MAX_FILE_BYTES: raise ValueError(f'larger than {MAX_FILE_BYTES // 1_000_000} MB')
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', Image.DecompressionBombWarning)   # MAX_PIXELS below is the limit that counts
        try: im = Image.open(io.BytesIO(raw), formats=_OPENABLE)
        except Image.DecompressionBombError: raise ValueError('too large to decode (hundreds of megapixels)') from None
        fmt, original = im.format, im.size
        jpeg = fmt in ('JPEG', 'MPO')
        if original[0] * original[1] > MAX_PIXELS * (64 if jpeg else 1):   # a JPEG is decoded at down to 1/8 scale
            raise ValueError(f'too large to decode ({original[0]}×{original[1]} pixels)')
        if max(original) <= max_side and fmt in _SENDABLE and im.mode in ('RGB', 'RGBA', 'L', 'LA', 'P'):
            im.load()   # a truncated file fails here, not in the model server
            data = ''.join(source.split()) if isinstance(source, str) else base64.b64encode(raw).decode()
            return _SENDABLE[fmt], data, *original, original
        if jpeg: im.draft('RGB', (max_side, max_side))   # decode at a reduced scale: much faster
        im.seek(0)   # an animation's first frame
        im = ImageOps.exif_transpose(im)   # a phone photo's rotation, which re-encoding would drop
        if im.mode.startswith('I') or im.mode == 'F': im = _to_8bit(im)
        im = im.convert('RGBA' if im.mode in ('P', 'LA', 'RGBA', 'PA') or 'transparency' in im.info else 'RGB')
        if im.mode == 'RGBA' and im.getextrema()[3][0] == 255: im = im.convert('RGB')   # matplotlib's opaque RGBA
        im.thumbnail((max_side, max_side), Image.LANCZOS)   # keeps the aspect ratio
        out, jpeg = io.BytesIO(), jpeg and im.mode == 'RGB'
        im.save(out, 'JPEG' if jpeg else 'PNG', **dict(quality=90) if jpeg else {})
    return 'image/jpeg' if jpeg else 'image/png', base64.b64encode(out.getvalue()).decode(), *im.size, original


def fit_image(
    source:str|bytes|Path,  # Base64 image data (PNG, JPEG, GIF or WebP) as Jupyter stores it, the bytes, or a file
    max_side:int=1024,  # Longest side in pixels; larger images are scaled down, keeping their shape
)->ContextImage:
    "The image as a vision model gets it: PNG or JPEG, scaled to fit `max_side`; ValueError if it cannot be sent."
    max_side = max(16, int(max_side))
    try:
        key = _key(source, max_side)
        if key in _cache: _cache.move_to_end(key)   # a notebook's figures are fitted again for every prompt below them
        else:
            _cache[key] = _fit(source, max_side)
            if len(_cache) > _CACHE_SIZE: _cache.popitem(last=False)
        return ContextImage(*_cache[key])
    except ValueError as e:
        if str(e).startswith(('larger than', 'too large')): raise
        raise ValueError(f'not a readable image ({e.__class__.__name__})') from None
    except Exception as e:   # Pillow raises OSError, SyntaxError, DecompressionBombError, ... for bad data
        raise ValueError(f'not a readable image ({e.__class__.__name__})') from None


def _attachment(attachments, name):
    from urllib.parse import unquote
    attachments = attachments or {}
    bundle = attachments.get(name) or attachments.get(unquote(name))   # the parser percent-encodes link targets
    if not isinstance(bundle, dict): return None, 'no such attachment'
    mime = next((m for m in IMAGE_MIMES if isinstance(bundle.get(m), str)), None)
    return ((mime, bundle[mime]), '') if mime else (None, 'not an image')


def _data_url(src):
    head, _, data = src.partition(',')
    mime = head[5:].split(';')[0].lower()
    if mime not in IMAGE_MIMES or ';base64' not in head: return None, 'not a base64 image'
    return (mime, data), ''


def _local_file(src, root):
    from urllib.parse import unquote
    from .paths import confine
    if root is None: return None, "the notebook's folder is unknown"
    p = confine(root, unquote(src.split('#')[0].split('?')[0]))
    if isinstance(p, str): return None, p.removeprefix('error: ')
    mime = _FILE_MIMES.get(p.suffix.lower())
    if mime is None or not p.is_file(): return None, 'not an image file'
    if p.stat().st_size > MAX_FILE_BYTES: return None, f'larger than {MAX_FILE_BYTES // 1_000_000} MB'
    return (mime, p), ''   # read when fitted, and only when the file changed


def markdown_images(
    source:str,            # Markdown text
    attachments:dict=None, # The cell's attachments (`{name: {mime: base64}}`), as nbformat stores them
    root=None,             # The notebook's folder: image links are read only from inside it
)->list:                   # (name, (mime, base64 str or Path) or None, why not) for each image, in order
    "The images a Markdown text shows: attachments, `data:` URLs and files under `root`; remote ones are never fetched."
    global _md
    if '![' not in source: return []   # CommonMark has no image without one: most notes and prompts stop here
    if _md is None:
        from markdown_it import MarkdownIt
        _md = MarkdownIt('commonmark')
    found = []
    def walk(tokens):
        for t in tokens:
            if t.type == 'image': found.append(t.attrGet('src') or '')
            walk(t.children or [])
    walk(_md.parse(source))
    out = []
    for src in found:
        src = src.strip()
        if src.startswith('attachment:'): img, why = _attachment(attachments, src[len('attachment:'):])
        elif src.startswith('data:'): img, why = _data_url(src)
        elif '://' in src or src.startswith('//'): img, why = None, 'remote images are never fetched'
        else:
            try: img, why = _local_file(src, root)
            except OSError as e: img, why = None, f'unreadable ({e.__class__.__name__})'
        out.append(('data: URL' if src.startswith('data:') else src, img, why))
    return out


class ImagePicker:
    """Decides, image by image, what the model gets: the fitted image, or a placeholder saying why not.

    Called newest image first, it keeps the newest `max_images`; `records` lists every decision for the ledger."""
    def __init__(self,
                 vision:bool=False,    # Whether the model takes images
                 max_images:int=8,     # Most images sent with one prompt
                 max_side:int=1024):   # Longest side in pixels
        self.vision, self.max_images, self.max_side, self.sent, self.records = vision, max_images, max_side, 0, []

    def __call__(self,
                 where:str,       # Which cell it belongs to, for the ledger: 'In [3]', 'Markdown note', 'prompt'
                 mime:str,        # Its mime type
                 data:str|bytes|Path,  # Base64 data, the image's bytes, or an image file
                 name:str=None):  # A Markdown image's link (None for an output)
        "(text to put in its place, [ContextImage] or [])."
        what = name or f'{mime} output'
        if not self.vision: return self._skip(where, what, 'the model takes no images', f'[{what} omitted]')
        if self.sent >= self.max_images:
            budget = f'{self.max_images} image{"s" * (self.max_images != 1)}'
            return self._skip(where, what, f'over the budget of {budget} (`max_images`)',
                              f'[{what} omitted: too many images]')
        try: img = fit_image(data, self.max_side)
        except ValueError as e: return self._skip(where, what, str(e), f'[{what}: {e}]')
        self.sent += 1
        self.records.append(dict(where=where, what=what, status='sent', size=img.size,
                                 original='×'.join(map(str, img.original)) if img.resized else None))
        return f'[image: {name + ", " if name else ""}{img.mime}, {img.size}]', [img]

    def skip(self, where:str, what:str, why:str):
        "Record an image that could not even be read (a Markdown link outside the folder, a missing attachment)."
        self.records.append(dict(where=where, what=what, status='not sent', why=why))

    def _skip(self, where, what, why, text):
        self.skip(where, what, why)
        return text, []
