"""Real images for tests, drawn with Pillow: solid colours, so each one is recognisable after resizing."""

import base64, io


def image_bytes(w:int, h:int, fmt:str='PNG', color=(200, 30, 30), mode='RGB')->bytes:
    from PIL import Image
    out = io.BytesIO()
    Image.new(mode, (w, h), color).save(out, fmt)
    return out.getvalue()


def png_b64(w:int, h:int, color=(200, 30, 30))->str: return base64.b64encode(image_bytes(w, h, color=color)).decode()


def decoded(b64:str):
    "The Pillow image a base64 payload holds: size, format and the colour at its centre."
    from PIL import Image
    im = Image.open(io.BytesIO(base64.b64decode(b64)))
    return im.size, im.format, im.convert('RGB').getpixel((im.width // 2, im.height // 2))
