"""What a real SGLang 0.5.23 server answers, as shapes (keys and kinds, not values), for
the simulator's fidelity tests.

    python tests/real_sglang/capture_shapes.py     # rewrites tests/data/real-0.5.23-shapes.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import requests

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import harness  # noqa: E402
from support import shape  # noqa: E402

DATA = HERE.parent / "data" / f"real-{harness.SGLANG_VERSION}-shapes.json"

# A random tiny model may emit its end-of-sequence token at any step, and the
# answer's shape then changes (matched_stop becomes a token id). Greedy decoding
# that ignores EOS makes every capture finish on length, as the simulator does.
GREEDY = {"temperature": 0, "ignore_eos": True}
GENERATE = {"text": "the quick brown fox", "sampling_params": {"max_new_tokens": 4, **GREEDY}}
COMPLETION = {"prompt": "the quick brown fox", "max_tokens": 4, **GREEDY}
CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, **GREEDY}


def frames(url: str, path: str, body: dict[str, Any]) -> list[Any]:
    with requests.post(url + path, json=body, stream=True, timeout=60) as response:
        lines = [line.decode() for line in response.iter_lines() if line]
    return [json.loads(line[6:]) if line != "data: [DONE]" else "[DONE]" for line in lines]


def metric_types(text: str) -> dict[str, str]:
    return {line.split()[2]: line.split()[3] for line in text.splitlines() if line.startswith("# TYPE")}


def capture(url: str) -> dict[str, Any]:
    """The shapes of every answer the simulator imitates, from the server at ``url``."""
    get = lambda path: requests.get(url + path, timeout=60)  # noqa: E731
    post = lambda path, body: requests.post(url + path, json=body, timeout=60)  # noqa: E731
    generate_stream = frames(url, "/generate", {**GENERATE, "stream": True})
    completion_stream = frames(url, "/v1/completions", {**COMPLETION, "stream": True})
    chat_stream = frames(url, "/v1/chat/completions", {**CHAT, "stream": True, "stream_options": {"include_usage": True}})
    bad = requests.post(url + "/generate", data=b"{bad", timeout=60)
    return {
        "model_info": shape(get("/model_info").json()),
        "v1_models": shape(get("/v1/models").json()),
        "v1_loads": shape(get("/v1/loads").json()),
        "generate": shape(post("/generate", GENERATE).json()),
        "generate_stream_first": shape(generate_stream[0]),
        "generate_stream_last": shape(generate_stream[-2]),
        "generate_stream_ends_with": generate_stream[-1],
        "completions": shape(post("/v1/completions", COMPLETION).json()),
        "completions_stream_first": shape(completion_stream[0]),
        "completions_stream_ends_with": completion_stream[-1],
        "chat": shape(post("/v1/chat/completions", CHAT).json()),
        "chat_stream_first": shape(chat_stream[0]),
        "chat_stream_last_choice": shape(chat_stream[-3]),
        "chat_stream_usage": shape(chat_stream[-2]),
        "chat_stream_ends_with": chat_stream[-1],
        "chat_unknown_model_status": post("/v1/chat/completions", {**CHAT, "model": "not-served"}).status_code,
        "malformed_json": {"status": bad.status_code, "shape": shape(bad.json())},
        "not_found": {"status": get("/no-such-path").status_code, "body": get("/no-such-path").json()},
        "metrics": metric_types(get("/metrics").text),
    }


def capture_from_a_real_server(log_dir: Path) -> dict[str, Any]:
    server = harness.launch("shapes", harness.ensure_model("llama"), log_dir=log_dir)
    try:
        harness.wait_ready(server)
        return capture(server.url)
    finally:
        server.stop()


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        shapes = capture_from_a_real_server(Path(tmp))
    DATA.write_text(json.dumps(shapes, indent=1, sort_keys=True) + "\n")
    print(f"wrote {DATA}")
