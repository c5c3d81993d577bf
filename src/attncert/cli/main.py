"""Entry point of the ``attncert`` command.

Conventions: ``--help`` on every command, ``--json`` for machine-readable output where
useful, and one table of exit statuses (README, "Trust and honest limits"): a verdict's
status from :mod:`attncert.verdicts` (0 CERTIFIED, 1 REFUTED, 3 UNDECIDED, 4
CERTIFIED-TRIVIAL, 5 OUTSIDE-THEOREM), 2 for bad input (one paragraph, never a
traceback), 130 when interrupted, 141 on a broken pipe.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
from typing import NoReturn

from attncert.errors import AttncertError

# one OpenBLAS thread per process unless the user says otherwise: attncert runs a large
# layer's heads in threads and sweeps in processes itself, and a second BLAS thread per
# product oversubscribes 2 cores (attncert.hard.threads); set before numpy is imported
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

EXIT_OK = 0
EXIT_NEGATIVE = 1
EXIT_BAD_INPUT = 2
EXIT_UNKNOWN = 3


class _UsageError(Exception):
    """A command line argparse could not accept (reported by :func:`main`, status 2)."""

    def __init__(self, prog: str, message: str):
        super().__init__(message)
        self.prog = prog
        self.message = message


class _Parser(argparse.ArgumentParser):
    """Usage errors (unknown option, a value out of range, …) become one line pointing to
    ``--help`` and exit status 2, like every other bad input; :func:`main` returns the
    status instead of raising ``SystemExit``."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(self.prog, message)


def build_parser() -> argparse.ArgumentParser:
    from attncert import __version__
    from attncert.cli import commands

    parser = _Parser(
        prog="attncert",
        description="Proof companion for the theory of what transformers can compute.",
    )
    parser.add_argument("--version", action="version", version=f"attncert {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except _UsageError as err:
        print(f"{err.prog}: error: {err.message} (see {err.prog} --help)", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        return int(args.func(args))
    except AttncertError as err:
        print(f"attncert {args.command}: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except MemoryError:  # a safety net: the documented limits (attncert.limits) come first
        print(
            f"attncert {args.command}: error: out of memory: the request is larger than this "
            "machine can hold (the size limits are documented in attncert.limits)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("attncert: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `attncert … | head`: stop quietly, like other tools
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
