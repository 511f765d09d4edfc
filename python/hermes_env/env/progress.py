"""The process-mode progress bar: groups done of total, mean reward so far, groups dropped."""

from __future__ import annotations

import sys

from tqdm import tqdm


class GroupProgress:
    """A tqdm bar on stderr (stdout stays free for the summary table)."""

    def __init__(self, total: int, desc: str, *, enabled: bool = True) -> None:
        self.bar = tqdm(
            total=total, desc=desc, unit="group", file=sys.stderr, disable=not enabled, dynamic_ncols=True, leave=True
        )
        self.mean_reward: float | None = None
        self.bar.set_postfix_str("mean reward -")

    def _postfix(self, mean_reward: float | None, dropped: int) -> None:
        reward = "-" if mean_reward is None else f"{mean_reward:.3f}"
        text = f"mean reward {reward}"
        if dropped:
            text += f", dropped {dropped}"
        self.bar.set_postfix_str(text, refresh=False)

    def advance(self, mean_reward: float, dropped: int = 0) -> None:
        """One more group written."""
        self.mean_reward = mean_reward
        self._postfix(mean_reward, dropped)
        self.bar.update(1)

    def dropped(self, dropped: int) -> None:
        """A group was dropped (not counted as done)."""
        self._postfix(self.mean_reward, dropped)
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()
