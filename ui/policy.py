"""What this server lets its users load besides the built-in models (operator settings, from the environment)."""

from __future__ import annotations

import os

from viz.content.settings import BUILTIN_MODELS


def custom_models_allowed() -> tuple[bool, bool]:
    """(hub ids, local folders) that the operator allows besides the built-in models.

    ATTENTION_VIZ_ALLOW_HUB (default 1) and ATTENTION_VIZ_ALLOW_LOCAL (default 0).
    """

    def flag(name: str, default: str) -> bool:
        return os.environ.get(name, default).strip().lower() in ("1", "true", "yes", "on")

    return flag("ATTENTION_VIZ_ALLOW_HUB", "1"), flag("ATTENTION_VIZ_ALLOW_LOCAL", "0")


def model_allowed(name: str) -> bool:
    if name in BUILTIN_MODELS:
        return True
    allow_hub, allow_local = custom_models_allowed()
    looks_local = name.startswith(("/", ".", "~"))
    return allow_local if looks_local else allow_hub
