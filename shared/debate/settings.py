"""The debate kits' deployment settings (shared/debate/), read from the environment each time
they are asked for (``shared.settings``; every one is listed in docs/SETTINGS.md)."""

from __future__ import annotations

from shared.settings import DlabSettings


class KitSettings(DlabSettings):
    """- ``DLAB_DEBATE_USER_MODULES`` (none): comma separated modules, deployed with the
    functions, that register user functions (``shared.debate.kits``) besides the built-in ones.
    """

    debate_user_modules: str = ""

    @property
    def user_modules(self) -> list[str]:
        return [m.strip() for m in self.debate_user_modules.split(",") if m.strip()]
