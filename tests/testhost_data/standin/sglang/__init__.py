"""Stand-in for the `sglang` package on the test host: just enough for `python3 -m sglang.launch_server`."""

__version__ = "0.5.12"
