"""Paths checked before any work: each refusal is one line naming the path and why.

A device given for a file is the dangerous case: ``/dev/zero`` or ``/dev/full`` read as
a log never ends (zeros until memory runs out), and written, fails only once the work is
done. A directory, a read-only file system or a missing permission would likewise fail
late, with a traceback, after the calls were paid for or the report computed.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from hce.errors import PathError


def input_file(path: str | os.PathLike, what: str = "file") -> Path:
    """``path`` as a :class:`~pathlib.Path` when it is a regular file; else :class:`PathError`.

    Examples
    --------
    >>> input_file("/dev/zero", "log")
    Traceback (most recent call last):
    ...
    hce.errors.PathError: log /dev/zero is a character device, not a file: give the path of a file
    """
    path = Path(path)
    if not path.exists():
        raise PathError(f"{what} {path}: no such file")
    _regular(path, what)
    return path


def output_file(path: str | os.PathLike, what: str = "file") -> Path:
    """``path`` when a file can be written there (an existing regular file, or a new one); else :class:`PathError`.

    Refused: a directory, a device or a pipe, a path whose parent is a file, and a place
    that is read-only or not writable by this user. Nothing is created.

    Examples
    --------
    >>> output_file("/dev/full", "log")
    Traceback (most recent call last):
    ...
    hce.errors.PathError: log /dev/full is a character device, not a file: give the path of a file
    """
    path = Path(path)
    if path.exists():
        _regular(path, what)
        _writable(path, path, what)
        return path
    _writable(path, _existing_parent(path, what), what)
    return path


def output_folder(path: str | os.PathLike, what: str = "folder") -> Path:
    """``path`` when a folder can be written there (an existing folder, or a new one); else :class:`PathError`.

    Examples
    --------
    >>> output_folder("/dev/null", "--out")
    Traceback (most recent call last):
    ...
    hce.errors.PathError: --out /dev/null is a character device, not a folder: give the path of a folder
    """
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise PathError(f"{what} {path} is {_kind(path)}, not a folder: give the path of a folder")
        _writable(path, path, what)
        return path
    _writable(path, _existing_parent(path, what), what)
    return path


def cause(error: OSError) -> str:
    """An OSError in words, without its traceback.

    Examples
    --------
    >>> import errno
    >>> cause(OSError(errno.ENOSPC, "No space left on device"))
    'No space left on device (ENOSPC)'
    """
    code = errno.errorcode.get(error.errno or 0)
    return f"{error.strerror or error}" + (f" ({code})" if code else "")


def _regular(path: Path, what: str) -> None:
    if not path.is_file():
        raise PathError(f"{what} {path} is {_kind(path)}, not a file: give the path of a file")


def _kind(path: Path) -> str:
    mode = path.stat().st_mode
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISREG, "a file")):  # fmt: skip
        if test(mode):
            return name
    return "not a regular file"


def _existing_parent(path: Path, what: str) -> Path:
    """The nearest folder above ``path`` that exists (where it, and any folders missing, would be made)."""
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise PathError(f"{what} {path}: {parent} is {_kind(parent)}, not a folder")
    return parent


def _writable(path: Path, target: Path, what: str) -> None:
    """Refuse when ``target`` (the path, or the folder it would be made in) cannot be written."""
    if os.access(target, os.W_OK):  # access() also fails with EROFS on a read-only file system, even for root
        return
    try:
        read_only = bool(os.statvfs(target).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    why = f"{target} is on a read-only file system" if read_only else f"no permission to write in {target}"
    if target == path:
        why = "it is on a read-only file system" if read_only else "no permission to write it"
    raise PathError(f"{what} {path} cannot be written: {why}")
