"""Collectors: each turns one kind of access (HTTP, a simulator, later a shell) into Facts."""
