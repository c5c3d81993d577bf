"""The ``attncert`` command-line interface (see :mod:`attncert.cli.main`)."""
