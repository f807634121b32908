"""Model ids, routes and clients: who answers a prompt, and how the reply streams back (layer 2).

Modules (imports only from here and the layers below: `context`, `errors`, `settings`):

- routes.py: model ids and the route each takes (`@NAME/MODEL`: a model on a named endpoint); which model the settings pick
- catalog.py: every model in reach, from every source and endpoint, listed concurrently; the last good list kept
- stream.py: events to a reply: answer vs reasoning, counts, throttled updates, the length bound, the stall deadline
- ollama.py: the direct Ollama client (`requests`, NDJSON): chat, listing, memory hygiene
- openai_client.py: the direct client for OpenAI-compatible servers (`requests`, SSE)
- litellm_client.py: cloud model ids, through litellm
- local.py: the embedded SmolLM2 server (xllamacpp, child process)
- router.py: `Router`: the client for each route and each named endpoint, a key per endpoint, the default model
- deaddrop.py: the dead-drop file protocol (prompts answered by another process), its route and Python API
"""
