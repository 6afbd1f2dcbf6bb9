"""parse_startup_line and parse_capacity_line against every real artefact we have."""

from __future__ import annotations

import json

import pytest
from support import corpus_files, corpus_text

from pytest_sglang import ParseError, parse_capacity_line, parse_startup_line
from pytest_sglang.parse.lines import RawValue

SERVER_ARGS_FILES = corpus_files("server_args")
LOG_FILES = corpus_files("logs")


def _startup_line(text: str) -> str:
    return next(line for line in text.splitlines() if "server_args=" in line)


@pytest.mark.parametrize("path", SERVER_ARGS_FILES, ids=lambda p: p.name)
def test_every_corpus_startup_line_parses_completely(path):
    line = parse_startup_line(corpus_text(path))
    assert line.complete, line.problem
    assert line.era == "dataclass"
    assert line.raw_fields == {}
    assert len(line.fields) > 200
    assert isinstance(line.fields["tp_size"], int)
    assert line.fields["model_path"] == line.fields["tokenizer_path"] or line.fields["tokenizer_path"]
    assert line.timestamp is not None


@pytest.mark.parametrize("path", SERVER_ARGS_FILES, ids=lambda p: p.name)
def test_every_cut_of_a_corpus_line_keeps_only_correct_fields(path):
    text = corpus_text(path)
    full = parse_startup_line(text).fields
    start = text.index("server_args=") + len("server_args=ServerArgs(")
    seen_counts = []
    for cut in range(start, len(text.rstrip()) - 2, 97):
        partial = parse_startup_line(text[:cut])
        assert not partial.complete
        assert partial.problem and "character" in partial.problem
        for name, value in partial.fields.items():
            assert full[name] == value, f"cut at {cut}: {name}"
        if partial.broke_after is not None:
            assert partial.broke_after in partial.fields
        seen_counts.append(len(partial.fields))
    assert seen_counts == sorted(seen_counts)
    assert seen_counts[-1] >= len(full) - 12


@pytest.mark.parametrize("path", LOG_FILES, ids=lambda p: p.name)
def test_every_corpus_log_yields_its_startup_and_capacity_lines_or_a_clear_error(path):
    text = corpus_text(path)
    if "server_args=" in text:
        line = parse_startup_line(text)
        assert line.complete, line.problem
        assert "tp_size" in line.fields
    else:
        with pytest.raises(ParseError, match="no 'server_args="):
            parse_startup_line(text)
    if "max_total_num_tokens=" in text and "chunked_prefill_size=" in text:
        capacity = parse_capacity_line(text)
        assert capacity["max_running_requests"] > 0
        assert capacity["max_total_num_tokens"] > 0
        assert isinstance(capacity["context_len"], int)


def test_ansi_coloured_log_with_wrapper_lines_parses():
    text = corpus_text(next(p for p in LOG_FILES if p.name == "03.txt"))
    assert "\x1b[" in text
    line = parse_startup_line(text)
    assert line.complete and line.fields["speculative_algorithm"] == "DFLASH"
    assert line.fields["max_running_requests"] == 48


def test_json_embedded_line_is_unescaped():
    text = corpus_text(next(p for p in SERVER_ARGS_FILES if p.name == "06.txt"))
    assert text.lstrip().startswith('"')
    line = parse_startup_line(text)
    assert line.complete
    assert line.fields["max_running_requests"] == 1
    assert line.fields["context_length"] == 262144


def test_real_0523_dict_line_matches_the_servers_own_server_info(real_log, real_server_info):
    line = parse_startup_line(_startup_line(real_log))
    assert line.complete and line.era == "dict"
    assert len(line.fields) == 546
    runtime_only = {k for k in real_server_info if k not in line.fields}
    assert {"version", "internal_states", "status", "launch_command"} <= runtime_only
    differing = {k for k, v in line.fields.items() if k in real_server_info and real_server_info[k] != v}
    # JSON turns tuples into lists and the watermark secrets are redacted in /server_info only.
    assert differing <= {"watermark_key", "watermark_key_b", "watermark_config"}


def test_nested_dataclass_reprs_become_dicts_like_the_json_endpoint():
    text = corpus_text(next(p for p in SERVER_ARGS_FILES if p.name == "04.txt"))
    config = parse_startup_line(text).fields["cuda_graph_config"]
    assert config["prefill"]["backend"] == "breakable"
    assert config["decode"]["max_bs"] == 8
    line = parse_startup_line(
        "[2026-05-20 10:11:12] server_args=ServerArgs(lora_paths=[LoRARef(lora_id='a1', lora_name='sql', "
        "lora_path='/l/sql', pinned=False)], lora_target_modules={'v_proj', 'q_proj'}, empty=set(), "
        "neg=-1, big=inf, j='{\"a\": 1}')"
    )
    assert line.complete
    assert line.fields["lora_paths"] == [{"lora_id": "a1", "lora_name": "sql", "lora_path": "/l/sql", "pinned": False}]
    assert line.fields["lora_target_modules"] == ["q_proj", "v_proj"]
    assert line.fields["empty"] == []
    assert line.fields["neg"] == -1 and line.fields["big"] == float("inf")
    assert json.loads(line.fields["j"]) == {"a": 1}


@pytest.mark.parametrize(
    "prefix",
    [
        "[2026-05-20 10:11:12] ",
        "[2026-05-20 10:11:12.345 TP0] ",
        "May 20 10:11:12 gpu1 python[4242]: [2026-05-20 10:11:12] ",
        "sglang-1  | [2026-05-20 10:11:12] ",
        "[2026-05-20 10:11:12] INFO engine.py:177: ",
        "\x1b[32m[2026-05-20 10:11:12]\x1b[0m ",
        "Loading: 100%|█████| 4/4\r[2026-05-20 10:11:12] ",
    ],
)
def test_any_prefix_is_tolerated(prefix):
    line = parse_startup_line(prefix + "server_args=ServerArgs(model_path='m', tp_size=4, mem_fraction_static=0.812)\r\n")
    assert line.complete
    assert line.fields == {"model_path": "m", "tp_size": 4, "mem_fraction_static": 0.812}
    assert line.timestamp and line.timestamp.startswith("2026-05-20 10:11:12")


def test_a_non_literal_value_is_kept_as_text_for_that_field_alone():
    line = parse_startup_line(
        "server_args=ServerArgs(a=1, custom_sigquit_handler=<function handler at 0x7f3a>, b='x', "
        "c=__import__('os').system('touch /tmp/pwned'))"
    )
    assert line.complete
    assert line.fields["a"] == 1 and line.fields["b"] == "x"
    assert isinstance(line.fields["custom_sigquit_handler"], RawValue)
    assert line.raw_fields["custom_sigquit_handler"] == "<function handler at 0x7f3a>"
    # Code is never run: a call that is not a plain record is text.
    assert line.raw_fields["c"] == "__import__('os').system('touch /tmp/pwned')"


def test_a_line_cut_inside_a_string_reports_where():
    line = parse_startup_line("server_args=ServerArgs(model_path='Qwen/Qwen3.5', tp_size=4, served_model_name='qwen3")
    assert not line.complete
    assert line.fields == {"model_path": "Qwen/Qwen3.5", "tp_size": 4}
    assert line.broke_after == "tp_size"
    assert "served_model_name" in line.problem


def test_a_number_at_the_very_end_is_not_trusted():
    # "0.8" may be the start of "0.85": a value that runs to the end of the text is dropped.
    line = parse_startup_line("server_args={'tp_size': 2, 'mem_fraction_static': 0.8")
    assert line.fields == {"tp_size": 2}
    assert line.broke_after == "tp_size"


def test_text_without_a_startup_line_is_one_clear_error():
    with pytest.raises(ParseError) as info:
        parse_startup_line("[2026-05-20] KV Cache is allocated. #tokens: 100")
    assert "\n" not in str(info.value)


def test_capacity_line_of_the_real_server(real_log):
    capacity = parse_capacity_line(real_log)
    assert capacity.values == {
        "max_total_num_tokens": 8192,
        "chunked_prefill_size": 4096,
        "max_prefill_tokens": 16384,
        "max_running_requests": 2048,
        "context_len": 2048,
        "available_cpu_mem": 21.75,
    }



def test_adjustments_are_sglangs_own_messages_not_python_warnings(real_log):
    from pytest_sglang.parse.logs import SGLangLogs

    adjustments = SGLangLogs(source="the real 0.5.23 log", lines=real_log.splitlines()).adjustments
    # The real CPU log has UserWarnings that match the words ("is not supported") and the
    # endpoint-deprecation notes of HTTP handlers: none is an adjustment of the configuration.
    assert not [a for a in adjustments if "Warning:" in a or "Endpoint '" in a], adjustments
    lines = [
        "[2026-01-01 10:00:00] WARNING server_args.py:1200: Disable piecewise CUDA graph because the model is multimodal",
        "/x/site-packages/sglang/kernels/ops/attention/fla/utils.py:223: UserWarning: Triton is not supported on current platform",
        "/x/site-packages/fastapi/routing.py:10: FastAPIDeprecationWarning: on_event is deprecated",
    ]
    assert SGLangLogs(source="lines", lines=lines).adjustments == [lines[0]]


@pytest.mark.parametrize("path", corpus_files("logs"), ids=lambda p: p.stem)
def test_corpus_adjustments_carry_no_python_warning(path):
    from pytest_sglang.parse.logs import SGLangLogs

    adjustments = SGLangLogs(source=path.name, lines=corpus_text(path).splitlines()).adjustments
    assert not [a for a in adjustments if "Warning: " in a]
