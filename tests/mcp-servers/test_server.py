#!/usr/bin/env python3
"""A small MCP stdio server for agentci's tests (Python standard library only).

As strict as the reference servers where the spec says MUST: newline-delimited
JSON-RPC 2.0 on stdout, logs on stderr only, requests before `initialize`
refused, unknown tools and bad arguments answered with -32602, unknown methods
with -32601 (https://modelcontextprotocol.io/specification/2025-11-25).

It can also misbehave on purpose, as real servers do:
  --page-size N           list tools N per page, following `nextCursor`
  --extra-tools N         offer N more trivial tools (tool0, tool1, ...)
  --list-changed          after answering the first tools/list, add tool `late`
                          and send notifications/tools/list_changed
  --exit-before-init      exit with code 3 before reading anything
  --stray-at-start        print a non-JSON line before answering initialize
  --slow-init SECONDS     sleep before answering initialize (a server that
                          downloads or builds something as it starts)
  --ignore-stdin-close    keep running after stdin closes (as a server with
                          background work does), until killed
  --background-child TAG  start a detached child (its own session) that sleeps,
                          with TAG in its command line, before serving
  --write-tool            offer tool write {path, text}, which writes a file and
                          says whether it could
  --resources             offer resources test://notes/1 and /2 and the template
                          test://notes/{id}; reading an unknown URI is error -32002
  --ask-during-add        during every `add` call, send roots/list,
                          sampling/createMessage and elicitation/create to the
                          client (as a server that wants context would) before
                          answering, whatever the client answers
Tools: add {a, b}; sleep {seconds}; crash (exits mid-call); stray (prints a
non-JSON line, then answers); fail (isError: true); image; structured;
ask {method, params?} (sends ping, roots/list, sampling/createMessage,
elicitation/create or any method to the client, with `params` or a minimal
valid one, and returns what it answered);
env {name} (returns an environment variable, or "<unset>").
"""

import json
import os
import subprocess
import sys
import time

ARGS = sys.argv[1:]


def flag(name):
    return name in ARGS


def option(name, default):
    if name in ARGS:
        return int(ARGS[ARGS.index(name) + 1])
    return default


def text_option(name):
    if name in ARGS:
        return ARGS[ARGS.index(name) + 1]
    return None


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def log(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def obj(**properties):
    return {"type": "object", "properties": properties, "additionalProperties": False}


TOOLS = [
    {"name": "add", "description": "Adds two numbers", "title": "Add",
     "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#",
                     **obj(a={"type": "number"}, b={"type": "number"}), "required": ["a", "b"]},
     "outputSchema": obj(sum={"type": "number"}),
     "annotations": {"readOnlyHint": True}, "execution": {"taskSupport": "forbidden"}},
    {"name": "sleep", "description": "Sleeps", "inputSchema": obj(seconds={"type": "number"})},
    {"name": "crash", "description": "Exits in the middle of the call", "inputSchema": obj()},
    {"name": "stray", "description": "Prints a line that is not JSON-RPC", "inputSchema": obj()},
    {"name": "fail", "description": "Answers with isError", "inputSchema": obj()},
    {"name": "image", "description": "Returns an image and a resource link", "inputSchema": obj()},
    {"name": "ask", "description": "Sends a request to the client",
     "inputSchema": {**obj(method={"type": "string"}, params={"type": "object"}),
                     "required": ["method"]}},
    {"name": "env", "description": "Reads an environment variable",
     "inputSchema": {**obj(name={"type": "string"}), "required": ["name"]}},
]
if flag("--write-tool"):
    TOOLS.append({"name": "write", "description": "Writes a file",
                  "inputSchema": {**obj(path={"type": "string"}, text={"type": "string"}),
                                  "required": ["path"]}})
TOOLS += [{"name": f"tool{i}", "description": f"Extra tool {i}", "inputSchema": obj()}
          for i in range(option("--extra-tools", 0))]

state = {"initialized": False, "lists": 0, "next_id": 1000}
pending = []


def read_message():
    if pending:
        return pending.pop(0)
    line = sys.stdin.readline()
    if not line:
        return None
    try:
        return json.loads(line)
    except json.JSONDecodeError:
        send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
        return {}


def ask_client(method, params):
    """Sends a request to the client and waits for its answer."""
    state["next_id"] += 1
    request_id = state["next_id"]
    send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    while True:
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)
        message = json.loads(line)
        if message.get("id") == request_id and "method" not in message:
            return message
        pending.append(message)


def ask_params(method):
    """Minimal valid params of a client request (2025-11-25 schema)."""
    if method == "sampling/createMessage":
        return {"messages": [{"role": "user",
                              "content": {"type": "text", "text": "Say hello"}}],
                "maxTokens": 10}
    if method == "elicitation/create":
        return {"message": "Which branch?",
                "requestedSchema": {"type": "object", "properties": {}}}
    return {}


def text(value, is_error=False):
    result = {"content": [{"type": "text", "text": value}]}
    if is_error:
        result["isError"] = True
    return result


def call_tool(params):
    name = params.get("name")
    args = params.get("arguments") or {}
    if name not in [t["name"] for t in TOOLS]:
        raise RpcError(-32602, f"Unknown tool: {name}")
    if name == "add":
        if not all(isinstance(args.get(k), (int, float)) for k in ("a", "b")):
            raise RpcError(-32602, "Invalid arguments for tool add: a and b must be numbers")
        if flag("--ask-during-add"):
            for method in ("roots/list", "sampling/createMessage", "elicitation/create"):
                ask_client(method, ask_params(method))
        total = args["a"] + args["b"]
        return {"content": [{"type": "text", "text": f"{total}"}], "structuredContent": {"sum": total}}
    if name == "sleep":
        time.sleep(float(args.get("seconds", 1)))
        return text("slept")
    if name == "crash":
        log("test server: crashing on purpose")
        os._exit(7)
    if name == "stray":
        print("this is not JSON-RPC", flush=True)
        return text("after the stray line")
    if name == "fail":
        return text("the tool failed on purpose", is_error=True)
    if name == "image":
        return {"content": [
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "file:///tmp/report.txt", "name": "report"}]}
    if name == "ask":
        method = args.get("method")
        params = args.get("params") or ask_params(method)
        return text(json.dumps(ask_client(method, params), sort_keys=True))
    if name == "env":
        return text(os.environ.get(args.get("name", ""), "<unset>"))
    if name == "write":
        try:
            with open(args["path"], "w") as f:
                f.write(args.get("text", ""))
            return text("written")
        except OSError as e:
            return text(f"cannot write: {e}", is_error=True)
    if name == "late" or name.startswith("tool"):
        return text(name)
    raise RpcError(-32602, f"Unknown tool: {name}")


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def list_tools(params):
    page = option("--page-size", 0)
    start = int((params or {}).get("cursor") or 0)
    if page <= 0:
        return {"tools": TOOLS}
    result = {"tools": TOOLS[start:start + page]}
    if start + page < len(TOOLS):
        result["nextCursor"] = str(start + page)
    return result


def resources(method, params):
    # https://modelcontextprotocol.io/specification/2025-11-25/server/resources
    if method == "resources/list":
        return {"resources": [{"uri": f"test://notes/{i}", "name": f"note {i}",
                               "mimeType": "text/plain"} for i in (1, 2)]}
    if method == "resources/templates/list":
        return {"resourceTemplates": [{"uriTemplate": "test://notes/{id}", "name": "note",
                                       "mimeType": "text/plain"}]}
    if method == "resources/read":
        uri = params.get("uri", "")
        if not uri.startswith("test://notes/"):
            raise RpcError(-32002, f"Resource not found: {uri}")
        return {"contents": [{"uri": uri, "mimeType": "text/plain",
                              "text": f"note {uri.rsplit('/', 1)[1]}"}]}
    raise RpcError(-32601, f"Method not found: {method}")


def handle(message):
    method = message.get("method")
    request_id = message.get("id")
    if method is None:
        return  # a response to nothing we asked, ignored
    if request_id is None:
        if method == "notifications/initialized":
            state["initialized"] = True
        return
    try:
        if method == "initialize":
            time.sleep(float(text_option("--slow-init") or 0))
            capabilities = {"tools": {"listChanged": True}}
            if flag("--resources"):
                capabilities["resources"] = {}
            result = {"protocolVersion": message["params"]["protocolVersion"],
                      "capabilities": capabilities,
                      "serverInfo": {"name": "agentci-test-server", "version": "1.0.0"}}
            if flag("--stray-at-start"):
                print("starting up...", flush=True)
        elif method == "ping":
            result = {}
        elif not state["initialized"]:
            raise RpcError(-32600, f"Server not initialized: `{method}` before initialize")
        elif method == "tools/list":
            result = list_tools(message.get("params"))
        elif method == "tools/call":
            result = call_tool(message.get("params") or {})
        elif method.startswith("resources/") and flag("--resources"):
            result = resources(method, message.get("params") or {})
        else:
            raise RpcError(-32601, f"Method not found: {method}")
        send({"jsonrpc": "2.0", "id": request_id, "result": result})
        if method == "tools/list" and flag("--list-changed") and state["lists"] == 0:
            state["lists"] += 1
            TOOLS.append({"name": "late", "description": "Added after the first listing",
                          "inputSchema": obj()})
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    except RpcError as e:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": e.code, "message": e.message}})


def main():
    if flag("--exit-before-init"):
        log("test server: refusing to start")
        sys.exit(3)
    tag = text_option("--background-child")
    if tag:
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", tag],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    log("test server: ready")
    while True:
        message = read_message()
        if message is None:
            if flag("--ignore-stdin-close"):
                log("test server: stdin closed, working on")
                while True:
                    time.sleep(60)
            log("test server: stdin closed, exiting")
            return
        if message:
            handle(message)


main()
