"""Run inside an SGLang environment, never imported by pytest_sglang: what SGLang's own argparse
makes of a command, the network refused, and an exception as one line. The post-init runner
beside it (``postinit.py``) and the real tier's scripts (``tests/real_sglang/sglang_offline.py``)
import it by path, so it needs only the standard library and SGLang."""

from __future__ import annotations

import argparse
import logging

logging.disable(logging.WARNING)


def tolerate_known_transformers_configs() -> None:
    """An older SGLang read from its wheel (flag_table_live.py) registers model configs that
    the environment's newer transformers already has; registering again must not fail."""
    from transformers.models.auto import configuration_auto

    register = configuration_auto._LazyConfigMapping.register

    def again(self, key, value, exist_ok=False):  # noqa: ANN001
        return register(self, key, value, exist_ok=True)

    configuration_auto._LazyConfigMapping.register = again


class _ArgparseError(Exception):
    pass


# The class's own name is in every stored refusal ("_ArgparseError: unrecognized arguments: ...").
ArgparseError = _ArgparseError


class Parsed(Exception):
    def __init__(self, namespace: argparse.Namespace) -> None:
        self.namespace = namespace


def parsed(argv: list[str]) -> dict:
    """What SGLang's own argparse makes of argv, merged with a --config file as the release's
    own ``prepare_server_args`` merges it (the merger differs between releases): it runs up to
    its ``parse_args`` and stops there, before any resolution."""
    from sglang.srt import server_args

    parse_args, error = argparse.ArgumentParser.parse_args, argparse.ArgumentParser.error

    def stop_after_parsing(self, args=None, namespace=None):  # noqa: ANN001
        raise Parsed(parse_args(self, args, namespace))

    def raise_instead_of_exit(self, message):  # noqa: ANN001
        raise ArgparseError(message)

    argparse.ArgumentParser.parse_args = stop_after_parsing  # type: ignore[method-assign]
    argparse.ArgumentParser.error = raise_instead_of_exit  # type: ignore[method-assign]
    try:
        server_args.prepare_server_args(list(argv))
    except Parsed as parsed:
        return vars(parsed.namespace)
    finally:
        argparse.ArgumentParser.parse_args = parse_args  # type: ignore[method-assign]
        argparse.ArgumentParser.error = error  # type: ignore[method-assign]
    raise RuntimeError("prepare_server_args never parsed its arguments")


def refuse_the_network() -> None:
    """Only loopback: any other connection (a model hub, a config URL) fails at once, so no
    answer ever depends on the network."""
    import socket

    def loopback(host) -> bool:  # noqa: ANN001
        host = str(host)
        return host in ("localhost", "::1", "") or host.startswith("127.") or host.startswith("/")

    connect, connect_ex, getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo

    def checked(address) -> None:  # noqa: ANN001
        host = address[0] if isinstance(address, tuple) else address
        if not loopback(host):
            raise OSError(f"network access refused ({host})")

    def guarded_connect(self, address):  # noqa: ANN001
        checked(address)
        return connect(self, address)

    def guarded_connect_ex(self, address):  # noqa: ANN001
        checked(address)
        return connect_ex(self, address)

    def guarded_getaddrinfo(host, *args, **kwargs):  # noqa: ANN001
        checked((host,))
        return getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = guarded_getaddrinfo  # type: ignore[assignment]


def one_line(exc: BaseException) -> str:
    lines = [line for line in f"{type(exc).__name__}: {exc}".strip().splitlines() if line.strip()]
    return lines[0][:400]
