# fake-llm-turns.sh — sourced by the VM tests that play the model with corral-fake-llm: one model
# turn as Anthropic's SSE events, printed as one JSON object of its script's "replies".
#   tool_turn ID NAME INPUT-JSON   a tool call
#   text_turn TEXT                 text that ends the task
tool_turn() { # ID NAME INPUT-JSON
	python3 - "$@" <<'PY'
import json, sys
tid, name, inp = sys.argv[1], sys.argv[2], sys.argv[3]
ev = lambda t, d: {"event": t, "data": dict(d, type=t)}
print(json.dumps({"events": [
    ev("message_start", {"message": {"id": "m-" + tid, "model": "fake", "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    ev("content_block_start", {"index": 0, "content_block": {"type": "tool_use", "id": tid, "name": name, "input": {}}}),
    ev("content_block_delta", {"index": 0, "delta": {"type": "input_json_delta", "partial_json": inp}}),
    ev("content_block_stop", {"index": 0}),
    ev("message_delta", {"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}}),
    ev("message_stop", {})]}))
PY
}
text_turn() { # TEXT
	python3 - "$1" <<'PY'
import json, sys
ev = lambda t, d: {"event": t, "data": dict(d, type=t)}
print(json.dumps({"events": [
    ev("message_start", {"message": {"id": "m-end", "model": "fake", "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    ev("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
    ev("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": sys.argv[1]}}),
    ev("content_block_stop", {"index": 0}),
    ev("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
    ev("message_stop", {})]}))
PY
}
