"""``python -m hetero_constructs.local TEMPLATE ...``: one local execution."""

import sys

from hetero_constructs.local.cli import main

sys.exit(main())
