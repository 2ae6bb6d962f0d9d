"""A small MCP server on the official Python SDK (`mcp` on PyPI), for
`cargo xtask conformance`: our client against a server we did not write.

    python python_server.py stdio
    python python_server.py streamable-http --port 8123   # binds 127.0.0.1 only

It uses `MCPServer` (called `FastMCP` before mcp 2.0). Every tool is safe:
no files, no network, no environment.
"""

import argparse

import anyio
from pydantic import BaseModel

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

SAFE = ToolAnnotations(readOnlyHint=True, openWorldHint=False)

server = MCPServer("xtask-python-server", version="1.0.0")


@server.tool(annotations=SAFE)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool(annotations=SAFE)
def add(a: int, b: int) -> int:
    """Add two integers (structured output: {"result": a + b})."""
    return a + b


class Weather(BaseModel):
    """Structured weather."""

    city: str
    temperature: float
    conditions: str


@server.tool(annotations=SAFE)
def weather(city: str = "Paris") -> Weather:
    """A made-up weather report, as structured content."""
    return Weather(city=city, temperature=21.5, conditions="sunny")


@server.tool(annotations=SAFE)
async def countdown(steps: int = 3, ctx: Context | None = None) -> str:
    """Count down, reporting progress at each step."""
    for i in range(steps):
        if ctx is not None:
            await ctx.report_progress(i + 1, steps, f"step {i + 1} of {steps}")
        await anyio.sleep(0.05)
    return f"counted {steps} steps"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "streamable-http"])
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
