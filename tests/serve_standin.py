"""A stand-in for a model server a sweep starts from ``--serve`` (vLLM, SGLang): a real OpenAI-compatible
HTTP server process, run as ``python tests/serve_standin.py --port {port} ...``.

Its "weights" are a reference policy: a checkpoint folder's ``variant.txt`` names one (``oracle``, ``oracle-
quit-early``, ``noop``...; default ``oracle``), which answers as it does in ``topoeval run``, so the
checkpoints of a test give a known, non-trivial curve. It answers ``GET /v1/models`` (the served names) and
``POST /v1/chat/completions`` (the policy's reply to the task found by its user prompt, among the test tasks
of the protocol's topologies), and writes its pid to ``--pid-dir`` so that a test can see it gone.

Served names: ``--name`` for ``--path`` (a server per checkpoint, like vLLM's ``--served-model-name``), or
each ``name=path`` of ``--lora-modules`` (one server for all, like vLLM's ``--enable-lora --lora-modules``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def variant_of(path: str) -> str:
    f = Path(path) / "variant.txt"
    return f.read_text().strip() if f.is_file() else "oracle"


def task_index(protocol: str, n: int) -> dict:
    from topoeval.protocol.discovery import SuiteRegistry
    from topoeval.protocol.loader import load_protocol
    from topoeval.protocol.topology import resolve

    registry = SuiteRegistry([])
    proto = load_protocol(protocol, registry)
    index = {}
    for spec in proto.topologies():
        topo = resolve(spec, registry)
        for task in topo.tasks("test", proto.tasks.test.seed, n):
            index[task.prompt] = (topo.suite, task)
    return index


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--path")
    ap.add_argument("--name", default="served")
    ap.add_argument("--lora-modules", nargs="*", default=[])
    ap.add_argument("--protocol", default="wiki_to_travel")
    ap.add_argument("--tasks", type=int, default=12)
    ap.add_argument("--pid-dir")
    ap.add_argument("--delay", type=float, default=0.0, help="seconds before each chat reply (a slow server)")
    ap.add_argument("--fail", action="store_true", help="exit at once with an error (a server that cannot start)")
    ap.add_argument("--api-key", help="refuse (401) every chat request without 'Authorization: Bearer KEY'")
    args = ap.parse_args()
    if args.fail:
        print("stand-in: refusing to start (--fail)", flush=True)
        sys.exit(3)
    served = dict(m.split("=", 1) for m in args.lora_modules) if args.lora_modules else {args.name: args.path or ""}
    variants = {name: variant_of(path) for name, path in served.items()}
    from topoeval.core.policy import EpisodeContext, SamplingParams
    from topoeval.policies.registry import make_policy

    index = task_index(args.protocol, args.tasks)
    if args.pid_dir:
        Path(args.pid_dir).mkdir(parents=True, exist_ok=True)
        (Path(args.pid_dir) / f"{os.getpid()}.pid").write_text(json.dumps({"pid": os.getpid(), "port": args.port}))

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def _send(self, status: int, body: dict) -> None:
            out = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def do_GET(self):
            if self.path.rstrip("/") == "/v1/models":
                return self._send(200, {"object": "list", "data": [{"id": n, "object": "model"} for n in served]})
            self._send(404, {"error": {"message": "not found"}})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if args.api_key and self.headers.get("Authorization") != f"Bearer {args.api_key}":
                return self._send(401, {"error": {"message": "Invalid API Key", "code": 401}})
            if body.get("model") not in variants:
                return self._send(404, {"error": {"message": f"The model `{body.get('model')}` does not exist.",
                                                  "code": 404}})
            time.sleep(args.delay)
            messages = body["messages"]
            prompt = next((m["content"] for m in messages if m["role"] == "user"), "")
            if prompt not in index:  # a preflight or any other request: a plain answer
                msg = {"role": "assistant", "content": "ok"}
            else:
                suite, task = index[prompt]
                policy = make_policy(variants[body["model"]])  # the reference policy, as topoeval runs it
                ctx = EpisodeContext(task=task, suite=suite, sample=0, shots=0)
                msg = asyncio.run(policy.act(messages, body.get("tools") or [], SamplingParams(), ctx)).openai()
            self._send(200, {"id": "chatcmpl-standin", "object": "chat.completion", "created": int(time.time()),
                             "model": body["model"],
                             "choices": [{"index": 0, "message": msg,
                                          "finish_reason": "tool_calls" if msg.get("tool_calls") else "stop"}],
                             "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"stand-in serving {', '.join(f'{k}={v}' for k, v in variants.items())} on {args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
