"""The package's exceptions: a script's declared error, the same refused before any I/O,
a reply that is not what the header says, and a transaction the server ran piecemeal."""

from __future__ import annotations

import redis.exceptions


class ScriptError(Exception):
    """A script answered one of the error codes its header declares (``@error``).

    Nothing was written: every script checks its input before its first write. ``code``
    is the reply's first word (``BAD_TOKEN``), ``script`` the script's name
    (``identity_lock/release``), ``message`` the rest of the reply. The script's
    ``@error`` lines say what each code means.
    """

    def __init__(self, script: str, code: str, message: str) -> None:
        super().__init__(f"{script}: {code} {message}".rstrip())
        self.script = script
        self.code = code
        self.message = message


class InvalidInput(ScriptError, ValueError):
    """A key or argument the script's header refuses, caught before anything was sent.

    ``code`` is the one the script would answer for it (``BAD_ARGS`` for a count,
    ``BAD_<NAME>`` for an argument, ``BAD_KEYS`` for a key name), so one ``except
    ScriptError`` handles a bad call whichever side refuses it; ``what`` names the
    argument or key at fault.
    """

    def __init__(self, script: str, code: str, what: str, why: str) -> None:
        super().__init__(script, code, f"{what} {why}")
        self.what = what


class UnexpectedReply(redis.exceptions.RedisError):
    """A reply that is not of the type the script's ``@return`` line declares: the server
    runs another version of the script, or the data was written by something else."""


class RanOutsideTransaction(redis.exceptions.RedisError):
    """The server refused a transaction's ``MULTI`` (a user without the ``multi``
    permission) and then ran its commands one by one, outside any transaction: some or
    all of them may have been applied. Nothing was sent again."""

    def __init__(self, refused: Exception, commands: int) -> None:
        super().__init__(
            f"MULTI was refused ({refused}), so the {commands} commands of the transaction "
            "ran one by one, outside any transaction; grant the user +multi +exec"
        )
        self.refused = refused
        self.commands = commands


class NotGranted(TimeoutError):
    """What a ``with`` block asked for (`hold`, `QuorumLock.hold`) was not granted in time:
    held by others all along. Nothing is held."""
