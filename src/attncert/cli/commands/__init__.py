"""One module per CLI sub-command.

Each module defines ``register(subparsers)`` which adds its sub-parser and
sets ``func`` (a callable ``(args) -> int`` returning the exit code).
:mod:`attncert.cli.main` discovers the modules in this package.
"""
