"""``python -m hetero_constructs.cli`` runs ``hetero-train``."""

import sys

from hetero_constructs.cli import main

sys.exit(main())
