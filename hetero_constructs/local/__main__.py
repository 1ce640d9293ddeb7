"""``python -m hetero_constructs.local TEMPLATE ...``: one local execution."""

import sys

from hetero_constructs.local.cloud import main

sys.exit(main())
