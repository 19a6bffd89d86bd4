#!/usr/bin/env python3
# A scripted MCP server (stdio) for tests/integration/test-mcp-client.c: it misbehaves on
# purpose. Usage: fake-server.py MODE, where MODE is
#   good      initialize, two pages of tools, call "hello"; "change" adds a tool and sends
#             notifications/tools/list_changed; "ask" sends the client a sampling request and a
#             ping and reports what came back
#   crash     answers initialize, then exits with status 3 after writing to stderr
#   garbage   answers initialize, then prints a line that is not JSON
#   slow      answers initialize and tools/list, never answers tools/call
#   huge      answers initialize, then writes a line longer than 4 MiB
#   oldver    answers initialize with an unknown protocol version
#   deaf      closes its stdin, then answers initialize and exits a second later: the client's
#             next write meets a pipe nobody reads (EPIPE, and SIGPIPE unless ignored)
import json
import os
import sys
import time

mode = sys.argv[1]
tools = [{"name": "hello", "inputSchema": {"type": "object"}},
         {"name": "change", "inputSchema": {"type": "object"}},
         {"name": "ask", "inputSchema": {"type": "object"}},
         {"name": "bad name/with.dots", "description": "x", "inputSchema": {"type": "object"}}]
answers = {}


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def reply(mid, result):
    send({"jsonrpc": "2.0", "id": mid, "result": result})


def on_call(mid, params):
    name = params.get("name")
    if mode == "slow":
        return
    if name == "hello":
        reply(mid, {"content": [{"type": "text", "text": "hello " + params["arguments"].get("who", "")},
                                {"type": "image", "data": "AAAA", "mimeType": "image/png"}]})
    elif name == "change":
        tools.append({"name": "added", "inputSchema": {"type": "object"}})
        reply(mid, {"content": [], "isError": False})
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    elif name == "ask":
        send({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {}})
        send({"jsonrpc": "2.0", "id": "s2", "method": "ping"})
        answers["ask"] = mid
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "no such tool"}})


def on_reply(msg):
    answers.setdefault("got", []).append(msg)
    if len(answers["got"]) == 2:
        reply(answers["ask"], {"content": [{"type": "text", "text": json.dumps(answers["got"])}]})


def main():
    for line in sys.stdin:
        msg = json.loads(line)
        method, mid = msg.get("method"), msg.get("id")
        if method is None:
            on_reply(msg)
        elif method == "initialize":
            if mode == "deaf":
                os.close(0)
            version = "1999-01-01" if mode == "oldver" else msg["params"]["protocolVersion"]
            reply(mid, {"protocolVersion": version, "capabilities": {"tools": {"listChanged": True}},
                        "serverInfo": {"name": "fake\x1b[31m", "version": "1"}})
            if mode == "deaf":
                time.sleep(1)
                sys.exit(3)
            if mode == "crash":
                sys.stderr.write("fake server: something went badly wrong\n")
                sys.exit(3)
            if mode == "garbage":
                print("this is not JSON", flush=True)
            if mode == "huge":
                sys.stdout.write("x" * (5 * 1024 * 1024))
                sys.stdout.flush()
        elif method == "tools/list":
            cursor = (msg.get("params") or {}).get("cursor")
            if cursor is None:
                reply(mid, {"tools": tools[:2], "nextCursor": "page2"})
            else:
                reply(mid, {"tools": tools[2:]})
        elif method == "tools/call":
            on_call(mid, msg["params"])
        elif mid is not None:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "nope"}})


main()
