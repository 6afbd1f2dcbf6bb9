"""Fleet drift: whether several hosts run the same effective configuration."""
