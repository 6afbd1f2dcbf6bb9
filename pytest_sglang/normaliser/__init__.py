"""Facts to one typed model: the requested and effective configuration of a deployment, with where each value came from."""
