"""A real MCP server for the tests, built on the official Python SDK (`mcp.server.mcpserver.MCPServer`).

    python tests/mcp_servers.py                 # over stdio
    python tests/mcp_servers.py --http 8123     # over streamable HTTP at http://127.0.0.1:8123/mcp

Its tools cover what boopiter's MCP sources must handle: a read-only tool, one that writes (a file, so a test can see
whether it ran), a structured result, an error, an image, an enum and bounds in the input schema, a slow tool, and one
that kills the server. `BOOP_MCP_LOG` names a file each start appends a line to (so a test counts processes).
"""

import os, sys, time
from typing import Annotated, Literal
from pydantic import BaseModel, Field
from mcp.server.mcpserver import MCPServer, Image
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

app = MCPServer('boop-test')
_READ = ToolAnnotations(readOnlyHint=True, openWorldHint=False)


@app.tool(annotations=_READ)
def add(a: int, b: int) -> int:
    "Add two whole numbers."
    return a + b


@app.tool(annotations=_READ)
def shout(text: Annotated[str, Field(description='What to say, loudly', max_length=50)],
          times: Annotated[int, Field(description='How often', ge=1, le=3)] = 1,
          style: Literal['plain', 'stars'] = 'plain') -> str:
    "Say `text` in capitals."
    s = ' '.join([text.upper()] * times)
    return f'*{s}*' if style == 'stars' else s


class Weather(BaseModel):
    city: str
    celsius: float
    sky: str


@app.tool(annotations=_READ)
def weather(city: str) -> Weather:
    "The weather in a city, as a record."
    return Weather(city=city, celsius=21.5, sky='clear')


@app.tool()
def remember(note: str) -> str:
    "Write a note to notes.txt in the server's folder."
    with open('notes.txt', 'a') as f: f.write(note + '\n')
    return f'noted: {note}'


@app.tool(annotations=_READ)
def fail(why: str) -> str:
    "Always fails, saying why."
    raise ToolError(f'failed on purpose: {why}')


@app.tool(annotations=_READ)
def dot() -> Image:
    "A red dot, 8x8 pixels, as a PNG."
    import io
    from PIL import Image as Pillow
    buf = io.BytesIO()
    Pillow.new('RGB', (8, 8), 'red').save(buf, 'PNG')
    return Image(data=buf.getvalue(), format='png')


@app.tool(annotations=_READ)
def slow(seconds: float) -> str:
    "Sleep, then answer."
    time.sleep(seconds)
    return f'slept {seconds}'


@app.tool(annotations=_READ)
def getenv(name: str) -> str:
    "The value of one of the server's environment variables."
    return os.environ.get(name, '(unset)')


@app.tool(annotations=_READ)
def crash() -> str:
    "Kill the server."
    os._exit(3)


if __name__ == '__main__':
    if log := os.environ.get('BOOP_MCP_LOG'):
        with open(log, 'a') as f: f.write(f'{os.getpid()}\n')
    if '--http' in sys.argv: app.run(transport='streamable-http', port=int(sys.argv[sys.argv.index('--http') + 1]))
    else: app.run()
