"""The pytest front end: options, fixtures, markers and the checks of each capability, thin over the library below."""
