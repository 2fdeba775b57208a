"""`python -m deploy.run run app.py [streamlit options]`: Streamlit's own command line, in this process,
with the app's heavy imports started in the background first (deploy/preload.py), Streamlit's config
files not polled (`no_config_polling`), and its event loop woken once per batch of a rerun's messages rather
than once per message, and ten times less often when idle (deploy/wakeups.py).

The arguments are those of `python -m streamlit`. `make run`, `make serve` (deploy/serve.py) and the
benchmarks start the app this way; plain `streamlit run app.py` still works, without the preload.
`ATTENTION_VIZ_WARM_EXPORTS=0` keeps kaleido's Chromium (~250 MB PSS) from starting before a first export.
"""

from __future__ import annotations

import os
import sys


def no_config_polling() -> bool:
    """Streamlit polls its config files five times a second for changes (two files, one thread), even with
    `fileWatcherType = "none"`: 0.005 s of CPU every second of an idle server, 7 % of a class run's server
    CPU. A served app does not change its config under its users: the launcher leaves them unwatched
    (restart to read a new config). True if Streamlit still has the function this turns off."""
    from streamlit.web import bootstrap

    if not hasattr(bootstrap, "_install_config_watchers"):
        return False
    bootstrap._install_config_watchers = lambda flag_options: None
    return True


def main(argv: list[str] | None = None) -> None:
    # Streamlit's command line and server first, on this thread: the preload then never imports a module
    # at the same time as the server's own start.
    from streamlit.web import cli

    from deploy import preload, wakeups

    no_config_polling()
    wakeups.batch_script_events()
    wakeups.direct_flush_request()
    wakeups.quiet_server_tick()
    preload.start(exports=os.environ.get("ATTENTION_VIZ_WARM_EXPORTS", "1") != "0")
    sys.argv = ["streamlit", *(sys.argv[1:] if argv is None else argv)]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main()
