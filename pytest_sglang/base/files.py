"""The one way pytest-sglang reads an input file and the one way it writes an output file.

Inputs (captures, baselines, benchmark baselines, bench_serving results, launch files,
simulator profiles) may come from a pull request, so :func:`read_text` trusts nothing about
them: it reads regular files only (a FIFO, a device, a directory or a socket is refused before
a byte is read, so nothing hangs and nothing streams forever), enforces a size cap both from
``fstat`` and while reading (a file that grows), and turns every failure into one line naming
the file. :func:`check_nesting` refuses JSON nested deeper than the readers can take, without
recursing itself.

Outputs go through :func:`write_text`: the text goes to a temporary file created exclusively
(``O_CREAT|O_EXCL|O_NOFOLLOW``, a random name) in the target's own folder, is fsynced and then
renamed over the target, so the write is whole or absent and a planted symbolic link can
redirect nothing. A symbolic link or any non-regular file where the target is expected is
refused in one line. The target's folder is opened one name at a time (``openat`` with
``O_NOFOLLOW``, see :func:`_open_folder` for the links it follows) and the file is written in
the folder so opened. :func:`append_text` adds to a file without truncating it and without
following a link. :func:`locked` takes an exclusive lock on a lock file opened without
truncation and without following a link. :func:`check_writable` and :func:`check_distinct`
refuse, before anything is written, a path the writer would refuse and two outputs at one path.

Every error is a :class:`FileError` (a :class:`~pytest_sglang.base.errors.SpecError`): one line,
exit 2 from the command line, a usage error in a pytest run.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_sglang.base.errors import SpecError

__all__ = [
    "FileError",
    "MissingFileError",
    "FileExistsRefused",
    "read_text",
    "read_bytes",
    "read_stream",
    "check_regular",
    "append_text",
    "check_nesting",
    "write_text",
    "check_writable",
    "check_distinct",
    "locked",
    "kind_of",
    "MiB",
]

MiB = 1024 * 1024
_CHUNK = MiB
# How deep JSON may nest before it is refused; the readers (and what processes their result)
# recurse once per level, far below Python's recursion limit at this depth.
DEFAULT_MAX_DEPTH = 100

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOCTTY = getattr(os, "O_NOCTTY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class FileError(SpecError):
    """A file that cannot be read or written as asked; the message names it, on one line."""


class MissingFileError(FileError):
    """The file to read does not exist (callers often say what to do instead)."""


class FileExistsRefused(FileError):
    """The file to write exists and the caller asked not to overwrite it."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


def kind_of(mode: int) -> str:
    """What a non-regular file is, for a message: ``a directory``, ``a character device``..."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO, a named pipe"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "not a file"


def _size(n: int) -> str:
    if n >= MiB:
        return f"{n / MiB:.1f} MiB".replace(".0 MiB", " MiB")
    if n >= 1024:
        return f"{n / 1024:.1f} KiB".replace(".0 KiB", " KiB")
    return f"{n} bytes"


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


# ---- reading -------------------------------------------------------------------------------------


def read_text(path: str | os.PathLike[str], *, cap_bytes: int, what: str, errors: str = "strict", follow: bool = True) -> str:
    """The text of the regular file ``path``, at most ``cap_bytes`` long, decoded as UTF-8.

    ``what`` names the file in messages (``"replay:/dev/zero"``, ``"baseline b/KEY.json"``).
    Refused, each in one :class:`FileError` line: a missing file (:class:`MissingFileError`),
    anything but a regular file (``"replay:/dev/zero is not a regular file (a character
    device)"``: checked before opening, and again on the open descriptor, which is opened with
    ``O_NONBLOCK`` so a FIFO swapped in cannot block), a file larger than ``cap_bytes`` (from
    ``fstat`` before reading, and while reading, for a file that grows), and text that is not
    UTF-8 (with ``errors="strict"``; ``"replace"`` keeps going with U+FFFD). ``follow=False``
    refuses a symbolic link instead of reading through it."""
    data = read_bytes(path, cap_bytes=cap_bytes, what=what, follow=follow)
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FileError(f"{what} is not UTF-8 text (line {line}: byte 0x{data[exc.start]:02x})") from None


def check_regular(path: str | os.PathLike[str], *, what: str, cap_bytes: int | None = None, follow: bool = True) -> os.stat_result:
    """Refuse, in one :class:`FileError` line, a ``path`` that another library is about to open
    (an SSH key, a known_hosts file): missing (:class:`MissingFileError`), not a regular file
    (a FIFO would block its reader, ``/dev/zero`` would feed it forever), or larger than
    ``cap_bytes``. Returns its ``stat``. A link to a regular file is a regular file here,
    unless ``follow`` is False (then the link itself is refused). ``-`` is refused as standard
    input that is not read here (the commands that read standard input take it before this)."""
    if os.fspath(path) == "-":
        raise FileError(f"{what}: standard input ('-') is not read here")
    try:
        st = os.stat(os.fspath(path), follow_symlinks=follow)
    except FileNotFoundError:
        raise MissingFileError(f"{what} does not exist") from None
    except OSError as exc:
        raise FileError(f"{what} cannot be read ({_reason(exc)})") from None
    if not stat.S_ISREG(st.st_mode):
        raise FileError(f"{what} is not a regular file ({kind_of(st.st_mode)})")
    if cap_bytes is not None and st.st_size > cap_bytes:
        raise FileError(f"{what} is {_size(st.st_size)}, over the {_size(cap_bytes)} this file may be: is it the right file?")
    return st


def read_bytes(path: str | os.PathLike[str], *, cap_bytes: int, what: str, follow: bool = True) -> bytes:
    """The bytes of the regular file ``path``, at most ``cap_bytes`` of them: :func:`read_text`
    without the decoding, refusing the same things in the same lines. With ``follow=False`` a
    symbolic link is refused, not read through (a file only pytest-sglang writes)."""
    p = os.fspath(path)
    check_regular(p, what=what, follow=follow)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | _O_NOCTTY | _O_CLOEXEC | (0 if follow else _O_NOFOLLOW))
    except FileNotFoundError:
        raise MissingFileError(f"{what} does not exist") from None
    except OSError as exc:
        raise FileError(f"{what} cannot be read ({_reason(exc)})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileError(f"{what} is not a regular file ({kind_of(st.st_mode)})")
        if st.st_size > cap_bytes:
            raise FileError(f"{what} is {_size(st.st_size)}, over the {_size(cap_bytes)} this file may be: is it the right file?")
        data = bytearray()
        while True:
            chunk = os.read(fd, min(_CHUNK, cap_bytes + 1 - len(data)))
            if not chunk:
                break
            data += chunk
            if len(data) > cap_bytes:
                raise FileError(f"{what} grew past the {_size(cap_bytes)} this file may be while it was read")
    except OSError as exc:
        raise FileError(f"{what} cannot be read ({_reason(exc)})") from None
    finally:
        os.close(fd)
    return bytes(data)


def read_stream(stream: Any, *, cap_chars: int, what: str) -> str:
    """At most ``cap_chars`` characters of a text stream (standard input), refusing more in one
    :class:`FileError` line: a pipe fed from ``/dev/zero`` ends with an error, not with all
    memory taken. The stream itself may still wait for its writer, as any reader of it does."""
    text = str(stream.read(cap_chars + 1))
    if len(text) > cap_chars:
        raise FileError(f"{what} holds more than the {_size(cap_chars)} it may be")
    return text


def nesting_too_deep(text: str, limit: int = DEFAULT_MAX_DEPTH) -> int | None:
    """The line on which JSON ``text`` first nests deeper than ``limit`` arrays/objects, or
    None. A linear scan without recursion that skips strings (escaped quotes included);
    text that is not JSON gives whatever its brackets give."""
    if text.count("[") + text.count("{") <= limit:
        return None
    depth = 0
    pos = 0
    find = _SPECIAL.search
    while True:
        m = find(text, pos)
        if m is None:
            return None
        i = m.start()
        ch = text[i]
        if ch == '"':
            end = _string_end(text, i + 1)
            if end < 0:
                return None  # an unterminated string: the JSON parser says so
            pos = end
            continue
        if ch in "[{":
            depth += 1
            if depth > limit:
                return text.count("\n", 0, i) + 1
        elif depth:
            depth -= 1
        pos = i + 1


_SPECIAL = re.compile(r'["\[\]{}]')


def _string_end(text: str, start: int) -> int:
    """The index after the quote closing the string that starts at ``start`` (after its opening
    quote), or -1. Linear: each quote is looked at once, each backslash run counted once."""
    pos = start
    while True:
        q = text.find('"', pos)
        if q < 0:
            return -1
        b = q
        while b > start and text[b - 1] == "\\":
            b -= 1
        if (q - b) % 2 == 0:
            return q + 1
        pos = q + 1


def check_nesting(text: str, *, what: str, limit: int = DEFAULT_MAX_DEPTH) -> None:
    """Refuse (one :class:`FileError` line) JSON nested deeper than ``limit``, before parsing it."""
    line = nesting_too_deep(text, limit)
    if line is not None:
        raise FileError(f"{what} nests more than {limit} arrays/objects deep (line {line}): not a file pytest-sglang writes; is it the right file?")


# ---- writing -------------------------------------------------------------------------------------


def _tmp_name(name: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", name)[:80]
    return f".{stem}.{secrets.token_hex(8)}.tmp"


def _refuse_unless_regular(path: Path, st: os.stat_result, what: str) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise FileError(f"{path} is a symbolic link: refusing to write the {what} through it (remove the link; pytest-sglang writes no file through one)")
    if not stat.S_ISREG(st.st_mode):
        raise FileError(f"{path} is not a regular file ({kind_of(st.st_mode)}): refusing to write the {what} there")


_DIR_FLAGS = os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC


def _walk_plan(folder: Path) -> tuple[str, tuple[str, ...], bool]:
    """Where opening ``folder`` starts, the names to open from there, and whether those names
    lie inside the working directory (where no link is followed)."""
    if not folder.is_absolute():
        return ".", folder.parts, True
    here = Path(os.getcwd())
    if folder.parts[: len(here.parts)] == here.parts:
        return str(here), folder.parts[len(here.parts) :], True
    return folder.anchor, folder.parts[1:], False


def _open_folder(folder: Path, what: str, target: Path, *, create: bool = True) -> int:
    """A descriptor of ``folder``, opened one name at a time relative to the one before
    (``openat``), each missing folder made on the way (``mkdirat``); a file where a folder is
    expected is refused.

    Which symbolic links are followed: none inside the working directory (every name of a
    relative path, and of an absolute path below the working directory as the kernel names
    it); there a checkout, an unpacked artifact or an earlier job may have planted one, and
    ``--html linkdir/p.html`` would write into whatever it points at. Outside it (an absolute
    path elsewhere, ``~/reports``) a link is followed when it belongs to you or to root (your
    own ``~/reports -> /mnt/reports``, the system's ``/tmp -> /private/tmp``); one that belongs
    to another user, planted in a shared folder, is refused."""
    start, names, inside = _walk_plan(folder)
    try:
        fd = os.open(start, _DIR_FLAGS)
    except OSError as exc:
        raise FileError(f"cannot write the {what} {target}: cannot open {start} ({_reason(exc)})") from None
    walked = Path(start) if start != "." else Path()
    try:
        for name in names:
            walked = walked / name
            fd = _open_child(fd, name, walked, inside, what, target, create)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_child(fd: int, name: str, walked: Path, inside: bool, what: str, target: Path, create: bool) -> int:
    """The folder ``name`` in the folder ``fd`` (closed on success), as :func:`_open_folder` says."""
    flags = _DIR_FLAGS | _O_NOFOLLOW
    if name != "..":
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            if not create:
                raise MissingFileError(f"cannot write the {what} {target}: its folder {walked} does not exist") from None
            try:
                os.mkdir(name, 0o777, dir_fd=fd)
            except FileExistsError:
                pass  # made meanwhile: checked as found below
            except OSError as exc:
                raise FileError(f"cannot write the {what} {target}: cannot create its folder {walked} ({_reason(exc)})") from None
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError as exc:
            raise FileError(f"cannot write the {what} {target}: cannot open its folder {walked} ({_reason(exc)})") from None
        if stat.S_ISLNK(st.st_mode):
            if inside:
                raise FileError(
                    f"cannot write the {what} {target}: its folder {walked} is a symbolic link, and pytest-sglang follows none in a "
                    "relative path or below the working directory (give the folder it points to)"
                )
            if st.st_uid not in (0, os.geteuid()):
                raise FileError(f"cannot write the {what} {target}: its folder {walked} is a symbolic link that belongs to another user (uid {st.st_uid}), not followed")
            flags = _DIR_FLAGS  # yours or root's: followed
        elif not stat.S_ISDIR(st.st_mode):
            raise FileError(f"cannot write the {what} {target}: {walked} is not a directory ({kind_of(st.st_mode)})")
    try:
        child = os.open(name, flags, dir_fd=fd)
    except OSError as exc:
        # ELOOP/ENOTDIR: a link or a file swapped in since the check above, refused
        raise FileError(f"cannot write the {what} {target}: cannot open its folder {walked} ({_reason(exc)})") from None
    os.close(fd)
    return child


def write_text(path: str | os.PathLike[str], text: str, *, what: str, overwrite: bool = True) -> Path:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all; returns the path.

    The folder is created if missing. A temporary file with a random name is created in that
    folder with ``O_CREAT|O_EXCL|O_NOFOLLOW`` (mode 0o644 less the umask, or the replaced
    file's own mode), written, fsynced, and renamed over ``path`` (``os.replace``); so a
    symbolic link planted at any name cannot redirect the write. A symbolic link or non-regular
    file at ``path`` is refused. With ``overwrite=False`` an existing file is kept and
    :class:`FileExistsRefused` raised (the final step is then a hard link, which fails rather
    than replace a file that appeared meanwhile). ``what`` names the file in messages."""
    target = Path(path)
    if not target.name or target.name in (".", ".."):
        raise FileError(f"cannot write the {what} {target}: give a file name")
    name = target.name
    dfd = _open_folder(target.parent, what, target)
    tmp: str | None = None
    try:
        mode: int | None = None
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            pass
        else:
            _refuse_unless_regular(target, st, what)
            if not overwrite:
                raise FileExistsRefused(f"{target} exists", target)
            mode = stat.S_IMODE(st.st_mode)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC
        for _ in range(16):
            candidate = _tmp_name(name)
            try:
                fd = os.open(candidate, flags, 0o644, dir_fd=dfd)
            except FileExistsError:
                continue
            tmp = candidate
            break
        else:  # pragma: no cover - 16 collisions of 64 random bits
            raise FileError(f"cannot write the {what} {target}: no free temporary name in {target.parent}")
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(text.encode("utf-8"))
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        if overwrite:
            try:  # a link or a directory swapped in since the check is refused, not followed
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                pass
            else:
                _refuse_unless_regular(target, st, what)
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            tmp = None
        else:
            try:
                os.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
            except FileExistsError:
                raise FileExistsRefused(f"{target} exists", target) from None
        with contextlib.suppress(OSError):
            os.fsync(dfd)  # the rename itself reaches the disk
    except FileError:
        raise
    except OSError as exc:
        raise FileError(f"cannot write the {what} {target} ({_reason(exc)})") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
        os.close(dfd)
    return target


def check_writable(path: str | os.PathLike[str], *, what: str) -> None:
    """Refuse now, in the line :func:`write_text` would give, a ``path`` it would refuse:
    no file name, a folder that is a file or a link :func:`_open_folder` does not follow, a
    symbolic link or a non-regular file (a FIFO, a directory) at the name. Writes and creates
    nothing: a folder that does not exist yet is made by the write."""
    target = Path(path)
    if not target.name or target.name in (".", ".."):
        raise FileError(f"cannot write the {what} {target}: give a file name")
    try:
        dfd = _open_folder(target.parent, what, target, create=False)
    except MissingFileError:
        return
    try:
        st = os.stat(target.name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise FileError(f"cannot write the {what} {target} ({_reason(exc)})") from None
    finally:
        os.close(dfd)
    _refuse_unless_regular(target, st, what)


def _identity(path: str | os.PathLike[str]) -> tuple[Any, ...]:
    try:
        st = os.stat(path)  # one file under two names (a link, a hard link, another spelling)
    except OSError:
        return ("path", os.path.normcase(os.path.realpath(path)))
    return ("file", st.st_dev, st.st_ino)


def check_distinct(named: list[tuple[str, str | os.PathLike[str]]]) -> None:
    """Refuse, in one :class:`FileError` line, two of ``named`` (each ``(how it was given,
    path)``, e.g. ``("--html report.out", path)``) that are one file: the second write would
    replace the first, and both would say they were written."""
    seen: dict[tuple[Any, ...], str] = {}
    for label, path in named:
        key = _identity(path)
        if key in seen:
            raise FileError(f"{seen[key]} and {label} name the same file: give each its own path")
        seen[key] = label


def append_text(path: str | os.PathLike[str], text: str, *, what: str) -> Path:
    """Add ``text`` (UTF-8) at the end of ``path``, created if missing, never truncated: for a
    log several processes add lines to. Opened ``O_WRONLY|O_APPEND|O_CREAT|O_NOFOLLOW|
    O_NONBLOCK`` (a planted symbolic link is refused, not followed; a FIFO does not block) and
    checked to be a regular file on the open descriptor before a byte is written; with
    ``O_APPEND`` each write lands at the end, whoever else appends. Returns the path."""
    target = Path(path)
    dfd = _open_folder(target.parent, what, target)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _O_NOFOLLOW | os.O_NONBLOCK | _O_NOCTTY | _O_CLOEXEC
    try:
        fd = os.open(target.name, flags, 0o644, dir_fd=dfd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
            with contextlib.suppress(OSError):
                _refuse_unless_regular(target, os.stat(target.name, dir_fd=dfd, follow_symlinks=False), what)
        raise FileError(f"cannot write the {what} {target} ({_reason(exc)})") from None
    finally:
        os.close(dfd)
    try:
        _refuse_unless_regular(target, os.fstat(fd), what)
        view = memoryview(text.encode("utf-8"))
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise FileError(f"cannot write the {what} {target} ({_reason(exc)})") from None
    finally:
        os.close(fd)
    return target


@contextlib.contextmanager
def locked(path: str | os.PathLike[str], *, what: str = "lock file") -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` across processes. The file is made if missing and
    never truncated (``O_RDWR|O_CREAT|O_NOFOLLOW``); a symbolic link or a non-regular file
    there is refused in one line."""
    lock = Path(path)
    dfd = _open_folder(lock.parent, what, lock)
    try:
        fd = os.open(lock.name, os.O_RDWR | os.O_CREAT | _O_NOFOLLOW | os.O_NONBLOCK | _O_NOCTTY | _O_CLOEXEC, 0o644, dir_fd=dfd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
            with contextlib.suppress(OSError):
                _refuse_unless_regular(lock, os.stat(lock.name, dir_fd=dfd, follow_symlinks=False), what)
        raise FileError(f"cannot open the {what} {lock} ({_reason(exc)})") from None
    finally:
        os.close(dfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileError(f"{lock} is not a regular file ({kind_of(st.st_mode)}): refusing to use it as the {what}")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            raise FileError(f"cannot lock the {what} {lock} ({_reason(exc)})") from None
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
