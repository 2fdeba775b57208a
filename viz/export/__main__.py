"""``python -m viz.export …``: the command line lives in ``viz/cli.py``."""

from viz.cli import main

raise SystemExit(main())
