"""The pipeline that answers a prompt: settings, binding, context, model, reuse, the stream, the tool loop (layer 5).

Plain Python that knows nothing of IPython, widgets or the frontend. Modules (imports only from here and the layers
below):

- assistant.py: `Assistant`: the notebook's settings and binding, and the pipeline that answers a prompt
- binding.py: the notebook's binding: its mime bundle, what a notebook may set, reading it back
- consent.py: auto-run and the tools that act or reach out: what a notebook or project proposes, what you allowed
- replay.py: request digests, saved replies reused, the disk cache, cassettes
- readiness.py: the model made ready while the kernel is idle: the embedded model warmed on the notebook so far
- background.py: replies that stream on after their prompt cells ended, one at a time and in order
- progress.py: what a prompt to the embedded model waits for: its start, how far llama.cpp has read the prompt
- refs.py: references in a prompt: $`name` (a variable's value, summarised) and &`name` (a function as a tool)
- asking.py: asking from code: one question, a stream, a batch, through the same pipeline; structured answers retried
- structured.py: a schema (JSON Schema, dataclass, TypedDict, pydantic) as what a route constrains, the reply as its value
- batch.py: many items: templates, lanes at each server's limit, order kept, failures in place, interrupts, progress
- fixing.py: from an error to a question about it (`%boop fix`): the cell that failed, and the prompt
- agent.py: agent mode: the model's blocks run as cells on the user's clicks, their outputs back to it, until it answers
- menu.py: what the brain menu shows, as data: who answers and why, the picks, the models, the options
- completion.py: ghost-text completion: the fill-in-the-middle context, its answer made fit to show, the newest request
  winning and a prompt in flight winning over it
- inline.py: the assistant's side of ghost text and "Edit this cell": which model, what it may read (nothing hidden),
  where it may send it, when it waits
- rewrite.py: edit this cell: what the model reads to write a cell anew, and the new cell taken out of its answer
"""
