"""`python -m deploy.run run app.py [streamlit options]`: Streamlit's own command line, in this process,
with the app's heavy imports started in the background first (deploy/preload.py).

The arguments are those of `python -m streamlit`. `make run`, `make serve` (deploy/serve.py) and the
benchmarks start the app this way; plain `streamlit run app.py` still works, without the preload.
`ATTENTION_VIZ_WARM_EXPORTS=0` keeps kaleido's Chromium (~250 MB PSS) from starting before a first export.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> None:
    # Streamlit's command line and server first, on this thread: the preload then never imports a module
    # at the same time as the server's own start.
    from streamlit.web import cli

    from deploy import preload

    preload.start(exports=os.environ.get("ATTENTION_VIZ_WARM_EXPORTS", "1") != "0")
    sys.argv = ["streamlit", *(sys.argv[1:] if argv is None else argv)]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main()
