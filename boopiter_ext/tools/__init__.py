"""Tools the model calls by writing Python, and the guards between its reply and anything that runs (layer 4).

Modules (imports only from here and the layers below):

- registry.py: tool sources and selection, `add_tool`, `side_effect`, `ToolContext`, signatures, the tools system prompt
- files.py: the `files` source: list, read and search files under the notebook's folder (read-only, bounded)
- kernel.py: the `kernel` source: the user's variables and the cells that ran (read-only); what a tool is
- notebook.py: the `notebook` source: list, read and search cells; add and edit them through the extension
- web.py: the optional `web` source: `fetch_url` (one GET, public addresses only, pinned to the address checked, bounded)
- pdf.py: the optional `pdf` source: `read_pdf` (pypdf in a capped child process)
- nbfiles.py: the optional `nbfiles` source: read, search and edit other notebooks on disk, cell by cell (atomic writes)
- machine.py: the optional `machine` source: `gpu_free` (GPU or machine memory free, what Ollama holds; read-only)
- ci.py: the optional `ci` source: `check_ci` (a GitHub repository's Actions runs; one GET, the token never shown)
- mcp.py: MCP servers as tool sources: each server's tools as plain Python functions, for the kernel's life
- mcp_client.py: a small synchronous MCP client (stdio and streamable HTTP), every wait bounded
- readable.py: what `fetch_url` and `read_pdf` show: HTML as readable text, a long text a window at a time
- blocks.py: the python blocks of a reply, found as CommonMark reads them
- guards.py: what may run unattended: the AST rule, argument, intent and consent checks
- screening.py: tool output screened for orders to the model, and flagged output quarantined
- lenient.py: lenient recovery: calls written as JSON (tags, fences, native `tool_calls`) as the same Python
- loop.py: the guarded tool loop of auto mode and its stop reasons
- scorecard.py: the bench: task sets, the runner through the tool loop, the scorecard table, chart and JSON
"""
