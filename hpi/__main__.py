"""``python -m hpi``: the same as the ``hpi`` console script."""

import sys

from hpi.app import main

if __name__ == "__main__":
    sys.exit(main())
