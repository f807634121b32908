"""Rendering and safety: a model's reply made safe to show, and the mime bundle that shows it (layer 3).

Modules (imports only from here and the layers below):

- sanitize.py: model Markdown made safe: rebuilt from its tokens, escaped and vetted, checked by nh3; incremental while streaming
- reply.py: a reply's mime bundle: the frontend's data, Markdown, plain text, metadata; tool rounds
"""
