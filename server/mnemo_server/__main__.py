"""``python -m mnemo_server serve|migrate|version``: the same as the ``mnemo`` command."""

import sys

from mnemo_server.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
