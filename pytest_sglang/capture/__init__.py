"""Capture what was collected from a host, and replay it offline (``replay:FILE``)."""
