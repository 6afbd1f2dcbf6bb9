"""The real SGLang 0.5.23 server on a CPU-only machine: install, tiny models, launch, stop.

What it takes and why: docs/development.md ("The real-SGLang tier"). The environment lives
outside the project (``$PYTEST_SGLANG_REAL_VENV``, default ``~/.cache/pytest-sglang/sglang-0.5.23``)
and is reused while its recipe is unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import progress  # the tier's progress lines (this folder is on sys.path wherever harness is imported)

HERE = Path(__file__).resolve().parent
SGLANG_VERSION = "0.5.23"
CACHE = Path(os.environ.get("PYTEST_SGLANG_REAL_CACHE", Path.home() / ".cache" / "pytest-sglang"))
VENV = Path(os.environ.get("PYTEST_SGLANG_REAL_VENV", CACHE / f"sglang-{SGLANG_VERSION}"))
MODELS = CACHE / "models"
# What every real server must satisfy through the plugin's fixtures (a pytester suite).
FIXTURE_SUITE = """
def test_fixtures(sglang, server_args, effective, model_info):
    assert sglang.version == "0.5.23"
    assert server_args.device == "cpu"
    assert effective.max_running_requests > 0
    assert model_info.architectures
"""
# The key the api-key case launches with; the tests prove it never reaches the plugin's output.
API_KEY = "sk-real-LAUNCHKEY-7781"

PINS = ["torch==2.13.0", "torchvision==0.28.0"]
RUNTIME = [
    "numpy", "orjson", "psutil", "pybase64", "requests", "packaging", "pillow", "starlette",
    "typing_extensions", "msgspec", "pydantic", "pyzmq", "tqdm", "ipython", "aiohttp",
    "triton==3.9.0", "transformers==5.19.0", "dill", "apache-tvm-ffi==0.1.11", "sentencepiece",
    "compressed-tensors==0.18.0", "gguf", "uvicorn", "uvloop", "fastapi", "python-multipart",
    "openai==2.8.0", "partial_json_parser", "setproctitle", "einops", "jsonschema",
    "xgrammar==0.2.7", "soundfile==0.13.1", "prometheus-client", "tokenizers", "safetensors",
    # sglang.bench_serving imports it at start-up, whatever the dataset.
    "datasets",
]
RECIPE = hashlib.sha256(
    json.dumps([SGLANG_VERSION, PINS, RUNTIME, (HERE / "cpu_hooks.py").read_text(), (HERE / "sgl_kernel_standin.py").read_text()]).encode()
).hexdigest()[:16]


class HarnessError(RuntimeError):
    pass


def _run(cmd: list[str], **kw) -> None:  # type: ignore[no-untyped-def]
    result = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise HarnessError(f"{' '.join(cmd[:6])} ... failed ({result.returncode}):\n{tail}")


def python() -> Path:
    return VENV / "bin" / "python"


def ensure_environment(log=progress.say) -> Path:  # type: ignore[no-untyped-def]
    """The harness's Python with SGLang installed; installed on first use (about a minute),
    each step announced through ``log`` (nothing is said when it is installed already)."""
    marker = VENV / ".pytest-sglang-recipe"
    if marker.exists() and marker.read_text() == RECIPE and python().exists():
        return python()
    started = time.monotonic()
    where = f"installing SGLang {SGLANG_VERSION} for CPU into {progress.shown(VENV)} (once, 2.6 GB)"

    def step(n: int, what: str) -> None:
        log(f"{where}: step {n}/4 {what}")

    shutil.rmtree(VENV, ignore_errors=True)
    VENV.parent.mkdir(parents=True, exist_ok=True)
    step(1, "virtual environment")
    _run([sys.executable, "-m", "venv", str(VENV)])
    pip = [str(python()), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    constraints = VENV / "constraints.txt"
    constraints.write_text("\n".join(PINS) + "\n")
    # torch first: this machine kind has a local CPU build of 2.13.0, which pip takes; a plain
    # 'pip install sglang' would pull the whole CUDA stack instead.
    step(2, f"{PINS[0]} (CPU build)")
    _run(pip + [PINS[0]])
    step(3, f"sglang=={SGLANG_VERSION} and {PINS[1]}, without their dependencies")
    _run(pip + ["--no-deps", f"sglang=={SGLANG_VERSION}", PINS[1]])
    step(4, f"{len(RUNTIME)} runtime dependencies (triton, transformers, xgrammar, ...)")
    _run(pip + ["-c", str(constraints)] + RUNTIME)
    site = Path(subprocess.check_output([str(python()), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True).strip())
    shutil.copy(HERE / "cpu_hooks.py", site / "_pytest_sglang_cpu_hooks.py")
    (site / "_pytest_sglang_cpu_hooks.pth").write_text("import _pytest_sglang_cpu_hooks\n")
    standin = site / "sgl_kernel"
    shutil.rmtree(standin, ignore_errors=True)
    standin.mkdir()
    shutil.copy(HERE / "sgl_kernel_standin.py", standin / "__init__.py")
    marker.write_text(RECIPE)
    log(f"installed SGLang {SGLANG_VERSION} for CPU in {time.monotonic() - started:.0f} s")
    return python()


MODEL_SCRIPT = r'''
import json, sys
from pathlib import Path
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers, decoders
from transformers import PreTrainedTokenizerFast

kind, out = sys.argv[1], Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
torch.manual_seed(0)
text = ["the quick brown fox jumps over the lazy dog %d times, said the server" % i for i in range(400)]
tok = Tokenizer(models.BPE(unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
tok.train_from_iterator(text, trainers.BpeTrainer(vocab_size=512, special_tokens=["<unk>", "<s>", "</s>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
fast.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
fast.save_pretrained(out)
vocab = len(fast)
common = dict(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=2048, bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id,
              torch_dtype="bfloat16", tie_word_embeddings=False)
if kind == "llama":
    from transformers import LlamaConfig as C, LlamaForCausalLM as M
    config = C(**common)
else:
    from transformers import Qwen3MoeConfig as C, Qwen3MoeForCausalLM as M
    config = C(**common, head_dim=16, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=64, decoder_sparse_step=1, norm_topk_prob=True)
model = M(config).to(torch.bfloat16)
model.save_pretrained(out, safe_serialization=True)
print(json.dumps({"model": str(out), "architectures": config.architectures}))
'''


def ensure_model(kind: str) -> Path:
    """A tiny Hugging Face format model made here (no hub is reachable): 'llama' or 'qwen3moe'."""
    path = MODELS / f"tiny-{kind}"
    if (path / "config.json").exists() and (path / "tokenizer.json").exists():
        return path
    shutil.rmtree(path, ignore_errors=True)
    python = ensure_environment()
    progress.say(f"making the tiny {kind} model in {progress.shown(path)} (once)")
    _run([str(python), "-c", MODEL_SCRIPT, kind, str(path)])
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class RealServer:
    """One launched SGLang server; ``stop()`` ends it by its process id."""

    name: str
    url: str
    argv: list[str]
    log_path: Path
    process: subprocess.Popen[bytes] = field(repr=False)
    api_key: str | None = None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def tail(self, lines: int = 25) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def stop(self, timeout: float = 20.0) -> None:
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            # The launcher did not take its scheduler and detokenizer down: end the group.
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout)
        try:  # children that outlived their parent
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def launch(name: str, model: Path, *, tp: int = 1, api_key: str | None = None, extra: list[str] | None = None, log_dir: Path) -> RealServer:
    """Start ``python -m sglang.launch_server`` on a free loopback port; returns at once.
    The caller waits for readiness (through the plugin's own readiness logic)."""
    port = free_port()
    argv = [
        "--model-path", str(model), "--device", "cpu", "--host", "127.0.0.1", "--port", str(port),
        # Without these caps SGLang reserves ~16 GB of host memory for its KV cache.
        "--max-total-tokens", "8192", "--mem-fraction-static", "0.05",
        "--enable-metrics",
    ]
    if tp > 1:
        argv += ["--tp", str(tp)]
    if api_key:
        argv += ["--api-key", api_key]
    argv += extra or []
    env = dict(os.environ)
    env["SGLANG_USE_CPU_ENGINE"] = "1"
    if tp > 1:
        env["SGLANG_CPU_OMP_THREADS_BIND"] = "|".join(str(i % max(os.cpu_count() or 1, 1)) for i in range(tp))
    env.pop("SGLANG_API_KEY", None)
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(ensure_environment()), "-m", "sglang.launch_server", *argv],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group, so stop() can end the children too
        )
    return RealServer(name=name, url=f"http://127.0.0.1:{port}", argv=argv, log_path=log_path, process=process, api_key=api_key)


def wait_ready(server: RealServer, seconds: float = 150.0) -> None:
    """Readiness through the plugin's own logic; a server that died or never became ready says
    so with its log tail.

    SGLang 0.5.23 answers ``/health`` by generating one token and waits up to 20 s
    (``SGLANG_HEALTH_CHECK_TIMEOUT``) for the scheduler before it answers 503, so each probe
    waits longer than that: a sick server then says 503 instead of timing out silently."""
    from pytest_sglang.base.errors import NotReadyError
    from pytest_sglang.collect.http import HttpClient

    client = HttpClient(server.url, timeout=25, name=server.name)
    deadline = time.monotonic() + seconds
    try:
        while True:
            if server.process.poll() is not None:
                raise HarnessError(f"{server.name} exited with {server.process.returncode} while starting:\n{server.tail()}")
            try:
                client.wait_ready(min(25.0, max(deadline - time.monotonic(), 0.1)))
                return
            except NotReadyError as exc:
                if time.monotonic() > deadline:
                    raise HarnessError(f"{exc}\n{server.name}'s log ends:\n{server.tail()}") from None
    finally:
        client.close()
