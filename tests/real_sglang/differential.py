"""The differential test: ``parse_launch_command`` against every SGLang release's own parser.

Hypothesis writes launch commands from each release's OWN flag table
(``pytest_sglang/model/knowledge/flags/sglang-cli-VERSION.json``): random flags in every spelling
(aliases, unambiguous and ambiguous prefixes, deprecated spellings, ``--no-`` forms), every
value form (``--flag value``, ``--flag=value``, choices, size suffixes, negative numbers, values
with spaces or a leading ``-``, JSON, ``None``, empty strings, lists; for a flag with one of
SGLang's own argparse actions, the values that action treats apart: ``--lora-paths`` plain names,
``name=path``, JSON objects with and without ``lora_name``/``lora_path``, invalid JSON, padded
spaces), ``sglang serve`` with a positional model and ``--model-type``, ``--config`` YAML files (and ``--config=FILE``, two
``--config``, a trailing ``--config``, a file that is not YAML), ``--``, a missing model, and
pasted shell text around the command (backticks, ``; echo done``, ``&& tail -f log``,
``| tee log``, redirections, a trailing ``&``, ``# comment``, environment prefixes, ``\\``
continuations).

The argv a shell would pass is what bash itself passes (``shell_argv``: the entry point is a
shell function that records its arguments). Each release's real entry point parses it
(``sglang_offline.py entry``: ``prepare_server_args``, or ``sglang serve`` through the release's
own ``sglang.cli.main``), and ``parse_launch_command(text, sglang_version=RELEASE,
config_loader=...)`` must agree by four rules:

(a) every field the parser reports requested has the value the release parsed;
(b) every field the release set to a value other than its default is requested;
(c) a command the release refuses has a parser problem naming the same flag or word;
(d) a command the release accepts has no parser problem saying SGLang would refuse it.

    python tests/real_sglang/differential.py                 # 100 random commands per release, report
    python tests/real_sglang/differential.py --examples 300 0.5.23 0.5.12
    python tests/real_sglang/differential.py --store         # rewrite tests/data/sglang-launch-differential.json
    python tests/real_sglang/differential.py --store 0.5.24  # store (again) that release's commands alone
    python tests/real_sglang/differential.py --check-stored  # the stored set, against the fast tier's rules

The fast tier (``tests/test_launch_differential.py``) checks the stored set; the real tier
(``test_differential.py``) regenerates a random sample and checks the stored answers.
"""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterable

from packaging.version import Version

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DATA = ROOT / "tests" / "data" / "sglang-launch-differential.json"
TABLES = ROOT / "pytest_sglang" / "model" / "knowledge" / "flags"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

# The stored set: this many commands per release, drawn with a fixed seed (derandomize).
STORED_PER_RELEASE = 20
BASE_ARGV = ["--model-path", "base-model"]  # what each release's defaults are read from
BASE = "__defaults__"
TMP = "{tmp}"  # in an argv word: the directory the case's files are written to


# ---- the release's own flag table --------------------------------------------------------------


def versions() -> list[str]:
    names = (p.name[len("sglang-cli-") : -len(".json")] for p in TABLES.glob("sglang-cli-*.json"))
    return sorted(names, key=Version)


def executed_versions() -> list[str]:
    """The releases the real tier runs: their stored answers asked again and a fresh sample of
    commands through their own parser, post-init and pool sizing. By default the final releases
    from 0.5.5 (0.5.5-0.5.23); ``SGLANG_REAL_RELEASES=all``, every release
    with a flag table (post releases and 0.5.0rc2-0.5.4 too, about 15 minutes more). The add
    command ran each release's differentials when it added it, and every run of the tier checks
    every flag table, model table, post-init walk and source anchor against its wheel."""
    every = versions()
    if os.environ.get("SGLANG_REAL_RELEASES", "") == "all":
        return every
    return [v for v in every if re.fullmatch(r"\d+\.\d+\.\d+", v) and Version(v) >= Version("0.5.5")]


def table(version: str) -> dict:
    return json.loads((TABLES / f"sglang-cli-{version}.json").read_text())


class Flags:
    """Every long spelling of a table, with the action it belongs to."""

    def __init__(self, data: dict) -> None:
        self.version = data["sglang_version"]
        self.actions: dict[str, tuple[str, dict]] = {}  # flag -> (dest, entry)
        for dest, entry in data["fields"].items():
            for flag in entry["flags"]:
                self.actions[flag] = (dest, entry)
            for alias in entry.get("aliases", ()):
                for flag in alias["flags"]:
                    self.actions[flag] = (dest, alias)
        self.flags = sorted(self.actions)
        # Flags a command draws at random; the model, --config and --help have their own rules.
        self.drawable = [f for f in self.flags if self.actions[f][0] not in ("model_path", "config", "help", "version")]
        self.model_flags = [f for f in self.flags if self.actions[f][0] == "model_path"]
        # Flags whose action is SGLang's own class (the entry's "action"), not argparse's.
        self.custom = [f for f in self.drawable if self.actions[f][1].get("action")]
        self.has_config = "--config" in self.actions

    def matches(self, prefix: str) -> list[str]:
        if prefix in self.actions:
            return [prefix]
        return [f for f in self.flags if f.startswith(prefix)]


# ---- what a shell passes ------------------------------------------------------------------------

_SHELL = r"""
record() { [ -s "$REC" ] || printf '%s\0' "$@" > "$REC"; }
python() { record "$@"; }
python3() { record "$@"; }
sglang() { record "$@"; }
env() { while [ $# -gt 0 ] && [ "${1#*=}" != "$1" ]; do shift; done; "$@"; }
nohup() { "$@"; }
echo() { :; }
tail() { :; }
tee() { cat >/dev/null; }
"""


def shell_argv(text: str) -> list[str] | None:
    """The words bash passes to the entry point (``python``/``python3``/``sglang``) when it runs
    ``text``: quotes, continuations, redirections, pipes and comments handled by bash itself.
    ``None`` when bash never runs the entry point."""
    with tempfile.TemporaryDirectory(prefix="sglang-shell-") as tmp:
        rec = Path(tmp) / "argv"
        rec.write_bytes(b"")
        script = _SHELL + text + "\nwait\n"
        subprocess.run(
            ["bash", "--noprofile", "--norc", "-c", script],
            cwd=tmp, env={"REC": str(rec), "PATH": "/usr/bin:/bin"}, capture_output=True, timeout=20,
        )  # fmt: skip
        raw = rec.read_bytes()
    if not raw:
        return None
    return [w.decode() for w in raw.split(b"\0")[:-1]]


def entry_and_argv(words: list[str]) -> tuple[str, list[str]] | None:
    """("launch_server" | "serve", the arguments after the entry point) of a recorded argv."""
    if words[:2] == ["-m", "sglang.launch_server"]:
        return "launch_server", words[2:]
    if words[:1] == ["serve"]:
        return "serve", words[1:]
    return None


# ---- Hypothesis: commands from a release's table -------------------------------------------------

# Values by converter; the ordinary ones are listed twice, so most commands get past argparse.
INTS = ["1", "2", "4", "8", "32", "4096", "0", "-3"] * 2 + ["128k", "1Mi", "25.6k", "1.5Mi", "2G", "1Ki", "1e3", "x8"]
FLOATS = ["0.5", "0.85", "1", "1e-3", "-3", "2.0"] * 2 + ["-.5", "half"]
JSONS = ['{"a": 1}', "[1, 2, 4]", "{}", "[]", '{"decode": {"max_bs": 8}}', '{"rope_scaling": {"factor": 2.0}}'] * 2 + ["not json", '"text"', "None"]
STRINGS = ["auto", "model-x", "/tmp/x", "0", "true", "x=y"] * 2 + ["a b", "-x y", "None", "", "-.5", "-x"]
NULLABLE = ["None", "", "auto", "x"]
# LoRAPathAction: each value stripped; "{...}" parsed as JSON, which must hold lora_name and lora_path.
LORAS = {
    "name": ["adapter-a", "org/lora-b", "/loras/c"],
    "padded": [" adapter-a ", "  /loras/c", "\tb\t"],
    "name=path": ["a=/loras/a", " b=org/lora-b "],
    "json": ['{"lora_name": "x", "lora_path": "/p"}', ' {"lora_name": "y", "lora_path": "org/y", "pinned": true} '],
    "json-missing-key": ['{"lora_name": "x"}', '{"lora_path": "/p"}', "{}"],
    "bad-json": ["{not json}", "{'lora_name': 'x', 'lora_path': '/p'}", '{"lora_name": "x",}'],
    "not-an-object": ["[1, 2]", "{", "x}", '"quoted"'],
    "blank": ["", "  "],
}
SECRET = "sk-gen-SECRET-1"
MODELS = ["Qwen/Qwen3-8B", "/models/llama", "meta-llama/Llama-3.1-8B-Instruct"]


def _strategies():  # type: ignore[no-untyped-def]
    from hypothesis import strategies as st

    return st


def value_words(draw, entry: dict, flag: str, tags: set[str] | None = None) -> list[str]:  # type: ignore[no-untyped-def]
    """Values for one occurrence of a flag (none for a switch)."""
    from pytest_sglang.parse.redact import is_secret_flag

    st = _strategies()
    tags = set() if tags is None else tags
    kind, nargs, converter = entry["kind"], entry.get("nargs"), entry.get("type")
    if kind in ("store_true", "store_false", "boolean_optional", "ignored") or (kind == "store_const" and not entry.get("takes_value")):
        return []

    def one() -> str:
        if is_secret_flag(flag):
            return SECRET
        if entry.get("action") == "LoRAPathAction":
            form = draw(st.sampled_from(sorted(LORAS)))
            tags.add(f"lora:{form}")
            return draw(st.sampled_from(LORAS[form]))
        if entry.get("choices") and draw(st.integers(0, 5)) != 5:
            return draw(st.sampled_from(entry["choices"]))
        if converter in ("int", "human_readable_int"):
            return draw(st.sampled_from(INTS))
        if converter == "float":
            return draw(st.sampled_from(FLOATS))
        if converter in ("loads", "json_list_type", "parse_cuda_graph_config_arg"):
            return draw(st.sampled_from(JSONS))
        if converter == "nullable_str":
            return draw(st.sampled_from(NULLABLE))
        return draw(st.sampled_from(STRINGS + (["not-a-choice"] if entry.get("choices") else [])))

    if nargs in ("+", "*"):
        return [one() for _ in range(draw(st.integers(0 if nargs == "*" else 1, 3)))]
    if nargs == "?":
        return [one()] if draw(st.booleans()) else []
    if isinstance(nargs, int):
        return [one() for _ in range(nargs)]
    return [one()]


def spelled(draw, flags: Flags, flag: str, tags: set[str]) -> str:  # type: ignore[no-untyped-def]
    """The flag as written: itself, or a prefix (unambiguous or not)."""
    st = _strategies()
    if draw(st.integers(0, 5)) == 5 and len(flag) > 5:
        # Mostly a prefix argparse completes (from the shortest unique one), sometimes any cut.
        unique = next((n for n in range(4, len(flag)) if flags.matches(flag[:n]) == [flag]), len(flag))
        low = unique if unique < len(flag) and draw(st.integers(0, 2)) else 4
        cut = draw(st.integers(low, len(flag) - 1))
        prefix = flag[:cut]
        found = flags.matches(prefix)
        tags.add("prefix" if len(found) == 1 else "ambiguous-prefix")
        return prefix
    return flag


def flag_words(draw, flags: Flags, tags: set[str]) -> list[str]:  # type: ignore[no-untyped-def]
    st = _strategies()
    # A flag with one of SGLang's own actions is drawn more often than its share of the table.
    if flags.custom and draw(st.integers(0, 5)) == 5:
        flag = draw(st.sampled_from(flags.custom))
    else:
        flag = draw(st.sampled_from(flags.drawable))
    dest, entry = flags.actions[flag]
    if entry.get("action"):
        tags.add(f"action:{entry['action']}")
    if entry.get("deprecated"):
        tags.add("deprecated")
    if flag.startswith("--no-"):
        tags.add("no-form")
    if flag != entry["flags"][0] or entry.get("deprecated"):
        tags.add("alias")
    written = spelled(draw, flags, flag, tags)
    values = value_words(draw, entry, flag, tags)
    tags.add(f"type:{entry.get('type')}" if values else f"kind:{entry['kind']}")
    if len(values) == 1 and draw(st.integers(0, 2)) == 2:
        tags.add("equals")
        return [f"{written}={values[0]}"]
    if not values and entry["kind"] != "store" and draw(st.integers(0, 30)) == 30:
        tags.add("switch-with-value")
        return [f"{written}=1"]
    return [written, *values]


def config_file(draw, flags: Flags, tags: set[str]) -> str:  # type: ignore[no-untyped-def]
    """A --config YAML: keys with hyphens or underscores, booleans, lists, mappings, deprecated
    and unknown keys."""
    import yaml

    st = _strategies()
    config: dict[str, Any] = {}
    for _ in range(draw(st.integers(0, 4))):
        flag = draw(st.sampled_from(flags.drawable))
        dest, entry = flags.actions[flag]
        key = flag[2:] if draw(st.booleans()) else flag[2:].replace("-", "_")
        if entry.get("deprecated"):
            tags.add("config-deprecated-key")
        kind, converter = entry["kind"], entry.get("type")
        if kind in ("store_true", "store_false", "boolean_optional", "ignored", "store_const"):
            value: Any = draw(st.booleans())
        elif entry.get("choices"):
            value = draw(st.sampled_from(entry["choices"]))
        elif entry.get("action") == "LoRAPathAction":
            value = draw(st.lists(st.sampled_from([w for form in ("name", "padded", "json", "json-missing-key") for w in LORAS[form]]), max_size=2))
        elif entry.get("nargs") in ("+", "*"):
            value = draw(st.lists(st.sampled_from([1, 2, 4, "a"]), min_size=0, max_size=3))
        elif converter in ("int", "human_readable_int"):
            value = draw(st.sampled_from([2, 1024, -1, "128k", True]))
        elif converter == "float":
            value = draw(st.sampled_from([0.5, 1, -0.5]))
        elif converter in ("loads", "json_list_type", "parse_cuda_graph_config_arg"):
            value = draw(st.sampled_from([{"a": 1}, [1, 2], {"decode": {"max_bs": 8}}]))
        else:
            value = draw(st.sampled_from(["auto", "x y", "None", False, 3]))
        config[key] = value
        tags.add("config-" + type(value).__name__)
    if draw(st.integers(0, 5)) == 5:
        config["no-such-option"] = 1
        tags.add("config-unknown-key")
    return yaml.safe_dump(config, sort_keys=False) if config else ""


DECOR_AFTER = ["; echo done", "&& tail -f server.log", "| tee server.log"]
ENV_PREFIXES = ["CUDA_VISIBLE_DEVICES=0,1", "SGLANG_USE_CPU_ENGINE=1", "HF_TOKEN=hf_gen_SECRET_2", "env NCCL_DEBUG=INFO"]


def launch_cases(version: str):  # type: ignore[no-untyped-def]
    """A Hypothesis strategy: one launch case for ``version``, from its own table."""
    st = _strategies()
    flags = Flags(table(version))

    @st.composite
    def case(draw):  # type: ignore[no-untyped-def]
        tags: set[str] = set()
        files: dict[str, str] = {}
        entry = draw(st.sampled_from(["launch_server", "launch_server", "serve"]))
        groups: list[list[str]] = []  # a flag with its values: nothing is inserted inside one
        model = draw(st.sampled_from(MODELS))
        how = draw(st.sampled_from(["flag"] * 5 + ["equals", "alias", "prefix", "missing"] + (["positional", "positional", "positional"] if entry == "serve" else [])))
        if how == "positional":
            tags.add("positional-model")
        elif how == "missing":
            tags.add("no-model")
        elif how == "equals":
            groups.append([f"--model-path={model}"])
        elif how == "alias":
            groups.append([draw(st.sampled_from(flags.model_flags)), model])
            tags.add("model-alias")
        elif how == "prefix":
            groups.append(["--model-p", model])
            tags.add("prefix")
        else:
            groups.append(["--model-path", model])
        for _ in range(draw(st.integers(0, 4))):
            groups.insert(draw(st.integers(0, len(groups))), flag_words(draw, flags, tags))
        if flags.has_config and draw(st.integers(0, 3)) == 3:
            text = config_file(draw, flags, tags)
            form = draw(st.sampled_from(["space", "space", "space", "equals", "two", "trailing", "not-yaml"]))
            tags.add(f"config-{form}")
            name = "config.txt" if form == "not-yaml" else "config.yaml"
            files[name] = text
            if form == "equals":
                config = [f"--config={{tmp}}/{name}"]
            elif form == "trailing":
                config = []
            else:
                config = ["--config", f"{{tmp}}/{name}"]
            if form == "two":
                files["second.yaml"] = "tp-size: 2\n"
                config += ["--config", "{tmp}/second.yaml"]
            if config:
                groups.insert(draw(st.integers(0, len(groups))), config)
            if form == "trailing":
                groups.append(["--config"])
        if entry == "serve" and draw(st.integers(0, 3)) == 3:
            tags.add("model-type")
            backend = draw(st.sampled_from(["llm", "llm", "auto", "nonsense"]))
            selector = [f"--model-type={backend}"] if draw(st.booleans()) else ["--model-type", backend]
            groups.insert(draw(st.integers(0, len(groups))), selector)
        if draw(st.integers(0, 13)) == 13:
            tags.add("double-dash")
            groups.insert(draw(st.integers(0, len(groups))), ["--"])
        if how == "positional":
            groups.insert(0, [model])
        words = [w for group in groups for w in group]
        head = {"launch_server": draw(st.sampled_from(["python -m sglang.launch_server", "python3 -m sglang.launch_server"])), "serve": "sglang serve"}[entry]
        quoted = [shlex.quote(w) for w in words]
        if draw(st.integers(0, 3)) == 3 and quoted:
            tags.add("line-continuations")
            cut = draw(st.integers(0, len(quoted) - 1))
            quoted[cut] = quoted[cut] + " \\\n   "
        text = head + (" " + " ".join(quoted) if quoted else "")
        for prefix in draw(st.lists(st.sampled_from(ENV_PREFIXES), max_size=2, unique=True)):
            tags.add("env-prefix")
            text = prefix + " " + text
        if draw(st.integers(0, 4)) == 4:
            tags.add("redirect")
            text += " > server.log 2>&1"
        if draw(st.integers(0, 3)) == 3:
            tags.add("shell-after")
            text += " " + draw(st.sampled_from(DECOR_AFTER))
        if draw(st.integers(0, 5)) == 5:
            tags.add("background")
            text += " &"
        if draw(st.integers(0, 6)) == 6:
            tags.add("backticks")
            text = f"`{text}`"
        if draw(st.integers(0, 5)) == 5:
            tags.add("comment")
            text += "  # started by hand"
        return {"entry": entry, "text": text, "files": files, "tags": sorted(tags)}

    return case()


def generate(version: str, count: int, *, derandomize: bool, seed: int | None = None) -> list[dict]:
    """``count`` distinct cases for a release; the same ones every time when ``derandomize``."""
    from hypothesis import HealthCheck, Phase, given, settings

    found: dict[str, dict] = {}

    drawn: list[dict] = []

    @settings(
        max_examples=count * 6, derandomize=derandomize, database=None, phases=[Phase.generate], deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(launch_cases(version))
    def collect(case: dict) -> None:
        drawn.append(case)

    if seed is not None and not derandomize:
        from hypothesis import seed as fixed

        collect = fixed(seed)(collect)
    collect()
    for case in drawn:  # distinct commands, spread over the whole run (its first ones are small)
        found.setdefault(case["text"], case)
    distinct = list(found.values())
    random.Random(len(distinct)).shuffle(distinct)  # Hypothesis's first examples are alike
    # First a case for every kind of command drawn (its tags), then evenly spread ones.
    chosen, seen = [], set()
    for case in distinct:
        if len(chosen) < count and set(case["tags"]) - seen:
            chosen.append(case)
            seen |= set(case["tags"])
    rest = [case for case in distinct if case not in chosen]
    step = max(len(rest) / max(count - len(chosen), 1), 1.0)
    chosen += [rest[int(i * step)] for i in range(min(count - len(chosen), len(rest)))]
    out = []
    for i, case in enumerate(chosen):
        words = shell_argv(case["text"])
        split = entry_and_argv(words) if words is not None else None
        if split is None:
            continue  # bash never ran the entry point: nothing to compare
        entry, argv = split
        out.append({"name": f"{version}-{i:03d}", **case, "entry": entry, "argv": argv})
    return out


# ---- the real answers --------------------------------------------------------------------------


def real_answers(version: str, python: Path, cases: list[dict]) -> tuple[dict, dict]:
    """(the release's defaults, its answer for each case: {"parsed"} or {"error"}), redacted
    as the package redacts, from one import of the release."""
    import flag_table_live

    from pytest_sglang.parse.redact import redact_mapping

    requests = [{"name": BASE, "argv": BASE_ARGV, "entry": "launch_server", "files": {}}]
    requests += [{"name": c["name"], "argv": c["argv"], "entry": c["entry"], "files": c["files"]} for c in cases]
    answers = flag_table_live.ask_entries(version, python, requests)[1]
    answers = {name: redact_mapping(answer) for name, answer in answers.items()}
    return answers.pop(BASE)["parsed"], answers


def stored_answer(answer: dict, defaults: dict) -> dict:
    if "error" in answer:
        return {"error": answer["error"]}
    return {"changes": {k: v for k, v in answer["parsed"].items() if defaults.get(k, object()) != v}}


# ---- the comparison ----------------------------------------------------------------------------

# What a parser problem says when it claims SGLang would not start with the command.
REFUSAL = re.compile(r"refuse|is ambiguous|is not a flag|needs a value|is not one of|is not a valid|takes no value|stray word|unsupported", re.I)
NOT_COMPARED = {"config"}  # --config=FILE leaves its path in argparse's namespace; the parser names it in config_file


def named_in_error(error: str) -> list[str]:
    """The flags or words SGLang's refusal names (any one of them must be in a parser problem)."""
    message = error.split(": ", 1)[1] if ": " in error else error
    lowered = message.lower()
    if error.startswith("JSONDecodeError: ") or error.startswith("AssertionError: ") and "looks like a JSON str" in message:
        # LoRAPathAction's own refusals (no release's parser raises these otherwise): they name
        # the value, not the flag.
        return ["--lora-paths"]
    if "config file" in lowered or "after --config" in lowered:
        return ["--config"]
    quoted = re.search(r"Unsupported config option '([^']+)'", message)
    if quoted:
        key = quoted.group(1)
        return [key, key.replace("_", "-")]
    backend = re.search(r"Unknown serve backend '([^']*)'", message)
    if backend:
        return [backend.group(1), "--model-type"]
    argument = re.match(r"argument ((?:--?[\w-]+/?)+): ", message)
    if argument:  # "argument --tensor-parallel-size/--tp-size: invalid int value": any spelling
        return [f for f in argument.group(1).split("/") if f]
    after = message.split(": ", 1)[1] if message.startswith(("unrecognized arguments", "ambiguous option", "the following arguments")) else message
    flag = next((w.strip(":,'\"/").split("=")[0] for w in re.split(r"[\s/]+", after) if w.startswith("--")), None)
    if flag:
        return [flag]
    if message.startswith("unrecognized arguments: "):
        return [message.split(": ", 1)[1].split(" ")[0]]
    words = re.findall(r"'([^']+)'", message)
    return words[:1] or message.split()[:1]


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=repr))


def parse(case: dict, version: str) -> Any:
    """``parse_launch_command`` of the case's text, its --config files read by placeholder."""
    import yaml

    from pytest_sglang.parse.launch import parse_launch_command

    def loader(path: str) -> Any:
        name = path[len(TMP) + 1 :] if path.startswith(TMP + "/") else path
        if name not in case["files"]:
            raise FileNotFoundError(path)
        return yaml.safe_load(case["files"][name])

    return parse_launch_command(case["text"], sglang_version=version, config_loader=loader)


def compare(case: dict, version: str, answer: dict, defaults: dict) -> list[tuple[str, str]]:
    """Disagreements of the parser with the release's answer: (class, detail) pairs, by rules
    a-d; an exception inside the parser is class "crash"."""
    try:
        launch = parse(case, version)
    except Exception as exc:  # noqa: BLE001 - the parser must never raise on a command
        return [(f"crash: parse_launch_command raised {type(exc).__name__}", f"{type(exc).__name__}: {exc}")]
    problems = list(launch.problems)
    out: list[tuple[str, str]] = []
    if "error" in answer:
        names = named_in_error(answer["error"])
        # The flag as the command spelled it (a prefix argparse completed) names it too.
        spellings = {w.split("=")[0] for w in case["argv"] if w.startswith("--") and len(w.split("=")[0]) > 3}
        names += sorted(w for w in spellings if any(name.startswith(w) for name in names))
        if not any(name and name in problem for name in names for problem in problems):
            out.append((f"c: refused ({_shape(answer['error'])}), no problem names {names[0]!r}", f"SGLang: {answer['error']} | parser problems: {problems}"))
        return out
    parsed = answer["parsed"]
    requested = _jsonable(launch.requested)
    fields = table(version)["fields"]
    for name, value in requested.items():
        if name not in parsed:
            out.append(("a: requested a field the release does not have", f"{name}={value!r}"))
        elif parsed[name] != value:
            entry = fields.get(name, {})
            out.append((f"a: requested value differs (type {entry.get('type')}, kind {entry.get('kind')})", f"{name}: parser {value!r}, SGLang {parsed[name]!r}"))
    for name, value in parsed.items():
        if name in NOT_COMPARED or name in requested:
            continue
        if defaults.get(name, object()) != value:
            entry = fields.get(name, {})
            out.append((f"b: set by SGLang, not requested (type {entry.get('type')}, kind {entry.get('kind')})", f"{name}={value!r}"))
    claims = [p for p in problems if REFUSAL.search(p)]
    if claims:
        out.append((f"d: accepted by SGLang, parser says it would refuse ({_shape(claims[0])})", f"problems: {claims}"))
    return out


def _shape(message: str) -> str:
    """A message with its particulars taken out, to group disagreements."""
    text = re.sub(r"--[\w-]+", "--FLAG", message)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'V'", text)
    text = re.sub(r"\{[^}]*\}", "FILE", text)
    text = re.sub(r"\b\d+(\.\d+)*\b", "N", text)
    text = re.sub(r"\(could be [^)]*\)", "(could be ...)", text)
    return text[:90]


# ---- the run and its report ---------------------------------------------------------------------


def run(releases: Iterable[str], cases_of: Callable[[str], list[dict]], python: Path, *, log: Callable[[str], None] = print) -> dict:
    """Every release's cases through its real parser and through parse_launch_command."""
    report: dict[str, Any] = {"generated": {}, "accepted": {}, "classes": defaultdict(list)}
    for version in releases:
        started = time.monotonic()
        cases = cases_of(version)
        defaults, answers = real_answers(version, python, cases)
        report["generated"][version] = len(cases)
        report["accepted"][version] = sum("parsed" in answers[c["name"]] for c in cases)
        for case in cases:
            for cls, detail in compare(case, version, answers[case["name"]], defaults):
                report["classes"][cls].append({"release": version, "name": case["name"], "text": case["text"], "detail": detail})
        log(f"{version}: {len(cases)} commands, {report['accepted'][version]} accepted by SGLang, {time.monotonic() - started:.0f} s")
    return report


def render(report: dict) -> str:
    lines = [
        f"releases compared: {len(report['generated'])}; commands per release: "
        + ", ".join(f"{v} {n}" for v, n in sorted(report["generated"].items(), key=lambda vn: Version(vn[0]))),
        f"commands in all: {sum(report['generated'].values())}, accepted by their release: {sum(report['accepted'].values())}",
    ]
    classes = report["classes"]
    total = sum(len(v) for v in classes.values())
    lines.append(f"disagreements: {total} in {len(classes)} classes" + ("" if total else " (none)"))
    for cls, items in sorted(classes.items(), key=lambda kv: (kv[0][0], -len(kv[1]))):
        example = items[0]
        releases = sorted({i["release"] for i in items}, key=Version)
        shown = releases[0] + (f"..{releases[-1]}" if len(releases) > 1 else "")
        lines.append(f"\n[{len(items)}x, releases {shown}] {cls}")
        lines.append(f"    e.g. {example['release']} {example['name']}: {example['text']!r}")
        lines.append(f"    {example['detail'][:400]}")
    return "\n".join(lines)


def stored() -> dict:
    return json.loads(DATA.read_text())


def write_stored(python: Path, releases: list[str] | None = None) -> dict:
    """The fixed set: STORED_PER_RELEASE derandomized commands per release with the answers
    (``releases``: those alone; the others keep their stored cases)."""
    import hypothesis

    out: dict[str, Any] = {
        "about": (
            "Launch commands generated from each SGLang release's own flag table (Hypothesis, derandomized) and what that "
            "release's real entry point parsed of them: prepare_server_args, or sglang serve through its own cli main. "
            "'argv' is what bash passes to the entry point; {NAME} in a word is the path of files[NAME]; secrets are "
            "redacted. Written by tests/real_sglang/differential.py --store; checked by tests/test_launch_differential.py "
            "(rules a-d) and by the real tier (the answers are still the releases' own)."
        ),
        "hypothesis": hypothesis.__version__,
        "releases": {v: r for v, r in stored()["releases"].items() if v in versions()} if releases and DATA.exists() else {},
    }
    for version in releases or versions():
        cases = generate(version, STORED_PER_RELEASE, derandomize=True)
        defaults, answers = real_answers(version, python, cases)
        out["releases"][version] = {
            "defaults": defaults,
            "cases": [{**case, "answer": stored_answer(answers[case["name"]], defaults)} for case in cases],
        }
        print(f"{version}: {len(cases)} stored", file=sys.stderr)
    DATA.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return out


def answer_of(stored_case: dict, defaults: dict) -> dict:
    """A stored case's answer in the form compare() takes."""
    answer = stored_case["answer"]
    if "error" in answer:
        return answer
    return {"parsed": {**defaults, **answer["changes"]}}


def check_stored() -> dict:
    data = stored()
    report: dict[str, Any] = {"generated": {}, "accepted": {}, "classes": defaultdict(list)}
    for version, release in data["releases"].items():
        report["generated"][version] = len(release["cases"])
        report["accepted"][version] = sum("changes" in c["answer"] for c in release["cases"])
        for case in release["cases"]:
            for cls, detail in compare(case, version, answer_of(case, release["defaults"]), release["defaults"]):
                report["classes"][cls].append({"release": version, "name": case["name"], "text": case["text"], "detail": detail})
    return report


if __name__ == "__main__":
    import argparse

    import harness

    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("releases", nargs="*", help="releases to compare (default: every release with a flag table)")
    cli.add_argument("--examples", type=int, default=100, help="random commands per release (default 100)")
    cli.add_argument("--seed", type=int, default=None, help="a fixed seed for the random sample")
    cli.add_argument("--store", action="store_true", help="rewrite the stored fixed set")
    cli.add_argument("--check-stored", action="store_true", help="check the stored set against parse_launch_command")
    cli.add_argument("--json", type=Path, help="also write the full report as JSON")
    options = cli.parse_args()
    if options.check_stored:
        result = check_stored()
    else:
        python = harness.ensure_environment()
        if options.store:
            write_stored(python, options.releases or None)
            result = check_stored()
        else:
            chosen = options.releases or versions()
            result = run(chosen, lambda v: generate(v, options.examples, derandomize=False, seed=options.seed), python, log=lambda m: print(m, file=sys.stderr))
    print(render(result))
    if options.json:
        options.json.write_text(json.dumps({**result, "classes": dict(result["classes"])}, indent=1) + "\n")
    sys.exit(1 if result["classes"] else 0)
