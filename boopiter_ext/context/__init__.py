"""What the model sees: the notebook's cells, images and files turned into the one message format (layer 1).

Modules (imports only from here, `errors` and `settings`):

- build.py: cells to ordered, clipped, budgeted messages and the ledger
- images.py: images for vision models: outputs, Markdown attachments and links, scaling, the image budget
- messages.py: the one message format (lisette's `mk_msg` conventions)
- paths.py: where a tool or an image link may read: inside the notebook's folder, no hidden files
- nbfile.py: finding the notebook file and reading its saved cells
"""
