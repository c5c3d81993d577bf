"""``python -m attncert …`` is the ``attncert`` command."""

import sys

from attncert.cli.main import main

sys.exit(main())
