"""One message format for every route, following lisette's `mk_msg` conventions.

    mk_msg('Why is this slow?')                     # {'role': 'user', 'content': 'Why is this slow?'}
    mk_msg(['What is odd here?', png_bytes])        # content parts: text, then an image as a data URL

The context builder produces these; `ollama.py` converts them to Ollama's `images` field and the
litellm route passes them through unchanged.
"""

__all__ = ['mk_msg', 'image_part', 'msg_text', 'msg_images']

import base64
from functools import lru_cache
from .images import image_mime


def image_part(
    b64:str,                 # Base64-encoded image, as Jupyter stores `image/png` outputs
    mime:str='image/png',    # Its mime type
)->dict:
    "A lisette-style image content part."
    return {'type': 'image_url', 'image_url': _data_url(b64, mime)}


@lru_cache(maxsize=16)   # the same image gets the same URL object, whose hash Python keeps: a later prompt's digest is cheap
def _data_url(b64, mime): return f'data:{mime};base64,{b64.strip()}'


def _part(o):
    if isinstance(o, str): return {'type': 'text', 'text': o}
    if isinstance(o, bytes):
        if (mime := image_mime(o)) is None: raise ValueError(f'not a supported image: {o[:12]!r}')
        return image_part(base64.b64encode(o).decode(), mime)
    return o


def mk_msg(
    content,       # str, or a list of str / image bytes / content-part dicts
    role='user',   # 'system', 'user' or 'assistant'
)->dict:
    "A chat message: plain text stays a string, mixed content becomes a list of parts."
    if isinstance(content, list) and not any(isinstance(o, (bytes, dict)) for o in content): content = '\n\n'.join(content)
    return {'role': role, 'content': [_part(o) for o in content] if isinstance(content, list) else content}


def msg_text(msg:dict)->str:
    "All the text of `msg`, parts joined by blank lines."
    c = msg['content']
    return c if isinstance(c, str) else '\n\n'.join(p['text'] for p in c if p.get('type') == 'text')


def msg_images(msg:dict)->list:
    "Base64 payloads of the images in `msg`, in order."
    c = msg['content']
    if isinstance(c, str): return []
    urls = [p['image_url'] for p in c if p.get('type') == 'image_url']
    return [(u['url'] if isinstance(u, dict) else u).partition(';base64,')[2] for u in urls]
