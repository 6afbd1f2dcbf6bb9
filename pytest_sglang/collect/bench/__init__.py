"""A serving benchmark's raw measurements: the streaming client, the load generator that measures itself, the ``/metrics`` watch, and imported ``bench_serving`` results."""
