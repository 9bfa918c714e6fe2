"""An OpenAI-compatible chat server that answers after a fixed latency (benchmark reference).

Episode script: a request whose last message is the user's gets a ``lookup`` tool call; a request
that carries a tool result gets the final answer. Nagle is off (TCP_NODELAY) and the listen
backlog is 1024, so the server is not the bottleneck. Binds 127.0.0.1 only.

    python bench/latency_server.py --port 8765 --latency 0.05
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket

from aiohttp import web


def _reply(message: dict) -> dict:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "bench",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}}


def make_app(latency: float) -> web.Application:
    async def chat(request: web.Request) -> web.Response:
        body = json.loads(await request.read())
        last = body["messages"][-1]
        await asyncio.sleep(latency)
        if last["role"] == "tool" or "<tool_response" in str(last.get("content")):
            answer = last["content"]
            return web.json_response(_reply({"role": "assistant", "content": answer}))
        key = last["content"].split()[-1].rstrip("?")
        call = {"id": "c0", "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"key": key})}}
        return web.json_response(_reply({"role": "assistant", "content": None, "tool_calls": [call]}))

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    return app


async def serve(port: int, latency: float) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", port))
    runner = web.AppRunner(make_app(latency), access_log=None)
    await runner.setup()
    site = web.SockSite(runner, sock, backlog=1024)
    await site.start()
    await asyncio.Event().wait()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--latency", type=float, default=0.05)
    args = ap.parse_args()
    asyncio.run(serve(args.port, args.latency))
