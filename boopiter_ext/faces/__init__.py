"""Thin layers over the core: magics, the comm, widgets, displays and the command lines (layer 6).

The only package that may import IPython, ipywidgets, ipykernel, comm or traitlets. Modules:

- magics.py: `BoopMagics`: `%%prompt`, `%boop`, traitlets options, the binding's display, warm-up
- channel.py: the comm the JupyterLab / Notebook 7 extension talks through: hello, state, picks, the binding
- streaming.py: when a prompt cell ends before its reply, a later prompt queued behind it, Interrupt while idle
- toolbar.py: the brain menu's widgets, where the extension is absent
- code_actions.py: Run and Copy-to-cell buttons under a reply's python blocks, where the extension is absent
- capture.py: recording executed cells from IPython events, display hooks and a stdout tee
- view.py: the live reply display in Jupyter, plain text in a terminal
- api.py: `ask`, `ask_all`, `stream`, `prompt_llm`, `stream_llm_reply`, `get_tool_list`: asking from code, a batch's progress
- run.py: `boopiter-run`
- deaddrop_cli.py: `boopiter-deaddrop`
"""
