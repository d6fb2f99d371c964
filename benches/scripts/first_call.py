"""Time from starting `origin mcp` to the answer of its first tool call, through the MCP
Python SDK's stdio client (BENCHMARKS.md: alternating two builds on stores they each wrote).
Usage: first_call.py <origin binary> <home> <agents home> <tool> <json arguments>
Prints seconds; fails if the call answers with a tool error."""
import asyncio, json, os, sys, time
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    binary, home, agents, tool, args = sys.argv[1:6]
    env = dict(os.environ, ORIGIN_HOME=home, ORIGIN_WATCH_INTERVAL_MS="0", HOME=agents)
    params = StdioServerParameters(command=binary, args=["mcp", "--agents-home", agents], env=env)
    t0 = time.perf_counter()
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                res = await s.call_tool(tool, json.loads(args))
                t1 = time.perf_counter()
                if getattr(res, "is_error", None) or getattr(res, "isError", None):
                    raise SystemExit(f"tool error: {res}")
    print(f"{t1 - t0:.3f}")

asyncio.run(main())
