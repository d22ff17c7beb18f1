"""Writing a file all at once or not at all (`ember.save`, `ember export`).

The bytes go to a temporary file beside the target, are flushed to disk, and the
temporary is renamed over the target: a reader sees the old file or the new one, never
half of one, and a failed write leaves the old file as it was.

A process killed mid-write (SIGKILL, power loss) cannot remove its temporary, so
temporaries carry a recognisable name, `.<target>.<pid>.ember-tmp`, and the next write to
the same target removes those whose process is gone. A file is created with mode
`0o666 & ~umask` as `open()` would create it (an existing target keeps its mode).
"""

from __future__ import annotations

import contextlib
import glob
import os
from collections.abc import Iterator
from typing import BinaryIO

TEMP_SUFFIX = ".ember-tmp"


def temp_pattern(path: str) -> str:
    """The glob that matches temporaries of writes to `path`."""
    folder, base = os.path.split(os.path.abspath(path))
    return os.path.join(glob.escape(folder), f".{glob.escape(base)}.*{TEMP_SUFFIX}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists but is not ours: leave its file alone
    return True


def remove_stale_temps(path: str) -> list[str]:
    """Removes temporaries left beside `path` by writers that no longer run; returns
    their paths."""
    removed = []
    for tmp in glob.glob(temp_pattern(path)):
        pid_text = tmp[: -len(TEMP_SUFFIX)].rsplit(".", 2)[-2]
        if pid_text.isdigit() and (int(pid_text) == os.getpid()  # another thread's write
                                   or _pid_alive(int(pid_text))):
            continue
        with contextlib.suppress(OSError):
            os.unlink(tmp)
            removed.append(tmp)
    return removed


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """Opens a temporary file for binary writing; on leaving the block without an
    exception it becomes `path` (flushed, fsynced, renamed); on an exception it is removed
    and `path` is untouched."""
    path = os.fspath(path)
    folder, base = os.path.split(os.path.abspath(path))
    remove_stale_temps(path)
    tmp = os.path.join(folder, f".{base}.{os.getpid()}.{os.urandom(4).hex()}{TEMP_SUFFIX}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # umask applies
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)  # as open() keeps an old file's mode
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_folder(folder)


def _fsync_folder(folder: str) -> None:
    # the rename itself reaches the disk only when the folder is flushed
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
