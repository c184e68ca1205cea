"""``python -m acti_store`` runs the ``acti-store`` command line."""

import sys

from .cli import main

sys.exit(main())
