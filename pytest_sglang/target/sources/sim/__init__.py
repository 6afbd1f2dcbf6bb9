"""Simulated SGLang deployments: an SGLang-compatible HTTP server driven by declarative profiles."""

from pytest_sglang.target.sources.sim.profile import Profile, bundled_profiles, load_profile

__all__ = ["Profile", "bundled_profiles", "load_profile"]
