"""The job's secret: what lets a process into the job's store.

Given by the user (``XRT2PJRT_JOB_SECRET``, or a file only its owner may read named by
``XRT2PJRT_JOB_SECRET_FILE``), made fresh (:func:`new_secret`), or derived for the
processes of one parent on one host (:func:`derived_for_children_of`), which then agree on
it with nothing handed down. Which of these a job uses is ``job.secret``'s choice.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat

from xrt2pjrt.shim import settings
from xrt2pjrt.shim.store.protocol import StoreError

MIN_SECRET_CHARS = 16


def job_secret(env=None) -> bytes | None:
    """The secret from ``XRT2PJRT_JOB_SECRET`` or the file ``XRT2PJRT_JOB_SECRET_FILE``
    names (which only its owner may read); None when neither is set."""
    text = settings.JOB_SECRET.text(env)
    where = settings.JOB_SECRET.name
    path = settings.JOB_SECRET_FILE.text(env)
    if not text and path:
        where = f"{settings.JOB_SECRET_FILE.name}={path}"
        text = _read_private_file(path).strip()
    if not text:
        return None
    if len(text) < MIN_SECRET_CHARS:
        raise StoreError(
            f"{where}: the job secret has {len(text)} characters; use at least "
            f"{MIN_SECRET_CHARS} random ones (python -c 'import secrets; print(secrets.token_hex(16))')"
        )
    return text.encode()


def _read_private_file(path: str) -> str:
    where = f"{settings.JOB_SECRET_FILE.name}={path}"
    try:
        info = os.stat(path)
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise StoreError(
                f"{where}: the file is mode {stat.S_IMODE(info.st_mode):04o}; "
                "others could read the job secret: chmod 600 it"
            )
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as error:
        raise StoreError(f"{where}: cannot read the job secret: {error.strerror}") from None


def new_secret() -> str:
    return secrets.token_hex(32)


def derived_for_children_of(parent: int) -> bytes:
    """For the processes of one parent on one host: HMAC(this user's key, the parent's
    identity). Another user cannot compute it (the key file is theirs alone) and another
    job of this user has another parent (a process id and its start time)."""
    started = ""
    try:
        with open(f"/proc/{parent}/stat", encoding="ascii") as handle:
            started = handle.read().rsplit(")", 1)[1].split()[19]  # field 22: start time
    except (OSError, IndexError):
        pass
    return hmac.new(_user_key(), f"{parent}:{started}".encode(), hashlib.sha256).hexdigest().encode()


def _user_key() -> bytes:
    base = os.environ.get("XDG_RUNTIME_DIR") or os.path.join(os.path.expanduser("~"), ".cache")
    # A folder of its own: ~/.cache/xrt2pjrt is also the results cache's, which `migrate` may have
    # made first, readable by others (nothing in it is secret).
    directory = os.path.join(base, "xrt2pjrt", "job-key")
    os.makedirs(directory, mode=0o700, exist_ok=True)
    info = os.stat(directory)
    if info.st_uid != os.getuid() or info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise StoreError(
            f"{directory} must belong to you and be private (chmod 700): it holds the key "
            f"that protects your jobs' stores; or set {settings.JOB_SECRET.name}"
        )
    path = os.path.join(directory, "key")
    if not os.path.exists(path):
        # Written whole under another name, then linked: a concurrent reader never sees half a key.
        draft = f"{path}.{os.getpid()}.{secrets.token_hex(4)}"
        with open(os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as handle:
            handle.write(secrets.token_hex(32))
        try:
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(draft)
    with open(path, encoding="ascii") as handle:
        return handle.read().strip().encode()
