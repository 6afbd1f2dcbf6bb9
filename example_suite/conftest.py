# The example suite needs nothing of its own: pytest-sglang provides the fixtures
# (sglang, server_args, effective, model_info) and the requires_* markers.
