"""Whatever types a server (or a damaged log) reports, normalising never fails: a value that does
not fit an effective field is passed over with a note, and the next source is used."""

from __future__ import annotations

import copy
import json

import pytest
from support import artefact, property_settings
from test_normalise import as_0512_era, facts_of

from pytest_sglang import normalise
from pytest_sglang.model.config import Effective
from pytest_sglang.model.numbers import checked_copy
from pytest_sglang.parse.redact import is_secret_key
from pytest_sglang.simulator import load_profile

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

REAL = json.loads(artefact("server_info.json"))
MODEL_INFO = json.loads(artefact("model_info.json"))
ERAS = {"0.5.23": REAL, "0.5.12": as_0512_era(REAL)}

odd_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.lists(st.integers(min_value=-3, max_value=600), max_size=4),
    st.dictionaries(st.sampled_from(["backend", "max_bs", "bs", "decode", "prefill", "x"]), st.one_of(st.none(), st.integers(), st.text(max_size=5)), max_size=3),
)


def _keys(era: str) -> list[str]:
    info = ERAS[era]
    return sorted(set(info) | set(info["internal_states"][0]))


@property_settings(suppress_health_check=[hypothesis.HealthCheck.too_slow])
@hypothesis.given(data=st.data(), era=st.sampled_from(sorted(ERAS)))
def test_any_reported_types_normalise_without_failing(data, era):
    info = copy.deepcopy(ERAS[era])
    changes = data.draw(st.dictionaries(st.sampled_from(_keys(era)), odd_values, min_size=1, max_size=6))
    in_state = data.draw(st.booleans())
    for key, value in changes.items():
        (info["internal_states"][0] if in_state else info)[key] = value
    snap = normalise(facts_of(info, MODEL_INFO))
    # Every effective value fits its declared type (the model would not exist otherwise) ...
    Effective.model_validate(snap.effective.model_dump())
    # ... and nothing reported was silently replaced in server_args: a number that is no figure
    # (NaN, an infinity, past 2^53) is refused by name, everything else kept as reported.
    if not in_state:
        # A secret's value is scrubbed wherever it appears, so a field that happens to hold the
        # same text as a drawn secret (watermark_key = '0000' beside another '0000') shows it redacted.
        secrets = [v for k, v in changes.items() if is_secret_key(k) and isinstance(v, str) and len(v.strip()) >= 4]
        for key, value in changes.items():
            if isinstance(value, str) and any(secret.strip() in value for secret in secrets):
                continue
            if key in snap.server_args.as_dict() and not is_secret_key(key):  # secrets are redacted
                kept = snap.server_args[key]
                kept = kept.model_dump(exclude_unset=True) if hasattr(kept, "model_dump") else kept  # a nested record, typed
                expected, faults = checked_copy({key: value}, "/server_info")
                assert kept == expected[key]
                assert set(faults) <= set(snap.refused) and all(f"{fault}: refused, not used" in snap.warnings for fault in faults)


@pytest.mark.parametrize(
    ("reported", "said"),
    [("many", "'many' is not a number"), (-1, "-1 is below 0"), (2.5, "2.5 is not a whole number"), (2**60, "1152921504606846976 is above 2^53")],
)
def test_a_figure_out_of_its_range_is_refused_by_name_and_the_next_source_used(reported, said):
    info = copy.deepcopy(REAL)
    info["internal_states"][0]["effective_max_running_requests_per_dp"] = reported
    loads = {"loads": [{"dp_rank": 0, "max_running_requests": 2048}]}
    snap = normalise(facts_of(info, MODEL_INFO, loads))
    e = snap.effective
    assert e.max_running_requests == 2048
    assert e.source_of("max_running_requests") == "/v1/loads loads[0].max_running_requests"
    fault = f"/server_info internal_states[0].effective_max_running_requests_per_dp = {said}"
    assert snap.refused == [fault] and f"{fault}: refused, not used" in snap.warnings
    assert e.provenance["max_running_requests"].note == f"{fault}: refused; per data-parallel worker"


def test_server_args_keep_what_was_reported_even_in_the_wrong_type():
    info = copy.deepcopy(REAL)
    info["tp_size"] = "four"
    snap = normalise(facts_of(info, MODEL_INFO))
    assert snap.server_args.tp_size == "four" and snap.server_args["tp_size"] == "four"
    assert snap.effective.tp_size is None or snap.effective.tp_size != "four"


PROFILE = load_profile("qwen35-122b-a10b-4xrtx6000-0.5.23")
LOADS = PROFILE.loads(running=3, waiting=1, used_tokens=1000, throughput=12.5)
PROFILE_MODEL_INFO = PROFILE.model_info()


@property_settings()
@hypothesis.given(
    model_changes=st.dictionaries(st.sampled_from(sorted(PROFILE_MODEL_INFO) + ["architectures"]), odd_values, max_size=4),
    load_changes=st.dictionaries(st.sampled_from(sorted(LOADS["loads"][0]) + ["accelerator"]), odd_values, max_size=4),
    top_changes=st.dictionaries(st.sampled_from(sorted(LOADS)), odd_values, max_size=2),
)
def test_any_model_info_and_loads_normalise_without_failing(model_changes, load_changes, top_changes):
    model_info = {**copy.deepcopy(PROFILE_MODEL_INFO), **model_changes}
    loads = copy.deepcopy(LOADS)
    loads["loads"][0].update(load_changes)
    loads.update(top_changes)
    snap = normalise(facts_of(PROFILE.server_info(), model_info, loads))
    Effective.model_validate(snap.effective.model_dump())


@pytest.mark.parametrize(
    "reported",
    [
        ["python", "-m", "sglang.launch_server", "--model-path", "m", "--tp", "2"],  # an argv list
        True,
        [1, 2],
        "",
    ],
    ids=["argv-list", "bool", "list-of-ints", "empty"],
)
def test_a_launch_command_in_an_odd_shape_is_read_when_it_can_be(reported):
    info = copy.deepcopy(REAL)
    info["launch_command"] = reported
    snap = normalise(facts_of(info, MODEL_INFO))
    if reported and isinstance(reported, list) and all(isinstance(w, str) for w in reported):
        assert snap.requested is not None and snap.requested["tp_size"] == 2
    else:
        assert snap.requested is None and snap.launch_command is None
