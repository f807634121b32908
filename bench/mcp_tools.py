"""MCP tool sources: what listing and calling a server's tools costs, against the official SDK's own client.

    python bench/mcp_tools.py [runs]

Against the test server (tests/mcp_servers.py, the SDK's `MCPServer` over stdio), medians over `runs` runs (default
5) of 200 calls each, both clients talking to their own process of the same server:

1. Listing the tools once the server has started: what every prompt pays (`server_tools`, the functions kept while the
   server lives), and a fresh `tools/list` round trip of boopiter's client against the SDK's `ClientSession.list_tools`.
   Target: under 50 ms, and the round trip <= 1.3x the SDK's.
2. A call's overhead: `add(2, 3)` through the plain Python function (signature binding, the client, the result read
   back as a value) against `ClientSession.call_tool('add', ...)` awaited in its event loop. Target: <= 1.3x.
"""

import asyncio, statistics, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]
from boopiter_ext.settings import McpSpec   # noqa: E402
from boopiter_ext.tools.mcp import McpServer, server_tools   # noqa: E402

SERVER = ROOT/'tests'/'mcp_servers.py'
N = 200


def ours(runs):
    server = McpServer(McpSpec('bench', command=('python', str(SERVER))))
    add = {f.__name__: f for f in server_tools(server)}['add']
    cached, listed, called = [], [], []
    for _ in range(runs):
        t = time.perf_counter()
        for _ in range(N): server_tools(server)
        cached.append((time.perf_counter() - t) / N)
        t = time.perf_counter()
        for _ in range(N): server._client.list_tools(10)
        listed.append((time.perf_counter() - t) / N)
        t = time.perf_counter()
        for i in range(N): assert add(i, 1) == i + 1
        called.append((time.perf_counter() - t) / N)
    server.close()
    return cached, listed, called


async def sdk(runs):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    listed, called = [], []
    async with stdio_client(StdioServerParameters(command=sys.executable, args=[str(SERVER)])) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            await s.list_tools()
            for _ in range(runs):
                t = time.perf_counter()
                for _ in range(N): await s.list_tools()
                listed.append((time.perf_counter() - t) / N)
                t = time.perf_counter()
                for i in range(N):
                    res = await s.call_tool('add', {'a': i, 'b': 1})
                    assert res.structured_content == {'result': i + 1}
                called.append((time.perf_counter() - t) / N)
    return listed, called


def main(runs=5):
    cached, listed, called = ours(runs)
    sdk_listed, sdk_called = asyncio.run(sdk(runs))
    med = statistics.median
    print(f'listing once started, per prompt (kept functions): {med(cached) * 1e6:.1f} µs (target < 50 ms)')
    print(f'tools/list round trip: boopiter {med(listed) * 1e3:.2f} ms, SDK {med(sdk_listed) * 1e3:.2f} ms: '
          f'{med(listed) / med(sdk_listed):.2f}x (target <= 1.3x)')
    print(f'a call, add(i, 1): boopiter {med(called) * 1e3:.2f} ms, SDK {med(sdk_called) * 1e3:.2f} ms: '
          f'{med(called) / med(sdk_called):.2f}x (target <= 1.3x)')


if __name__ == '__main__': main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
