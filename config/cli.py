"""The command line's own checks, before Django starts (``manage.py``).

Python decodes each command-line argument with ``surrogateescape``: a byte that is not UTF-8
(a name typed in Latin-1, a file name from an old archive) becomes a lone surrogate in the
string. Such a string cannot be stored (PostgreSQL and SQLite refuse it), looked up, printed or
recorded in a job's params, so every command that met one in an option ended in a
``UnicodeEncodeError`` traceback. :func:`argv_problem` names the first such argument; ``manage.py``
refuses the command with it, before anything runs. (A NUL byte cannot reach ``argv`` at all.)
"""

from __future__ import annotations

from collections.abc import Sequence


def _shown(arg: str) -> str:
    """``arg`` as its bytes read, the bytes that are not UTF-8 as ``\\xff``."""
    return arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def argv_problem(argv: Sequence[str]) -> str | None:
    """A sentence naming the first argument of ``argv[1:]`` that is not valid UTF-8, or ``None``."""
    for i, arg in enumerate(argv[1:], start=1):
        if arg.isascii():
            continue
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            before = argv[i - 1] if i > 1 and argv[i - 1].startswith("-") and "=" not in argv[i - 1] else ""
            where = f" (the value of {before})" if before else ""
            return (
                f"the argument '{_shown(arg)}'{where} holds bytes that are not UTF-8 text; "
                "nothing was done. Give names, options and file names as UTF-8 (rename the file if "
                "its name is not)."
            )
    return None
