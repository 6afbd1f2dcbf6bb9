"""Raw facts from outside: HTTP endpoints, shells (local or SSH) and what they tell of a host, capture files, and a serving benchmark's measured requests."""
