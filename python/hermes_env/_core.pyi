"""Type stubs for hermes_env._core (the compiled Rust extension)."""

# ---------------------------------------------------------------------------------------------
# trajectory section (owned by the trajectory engineer; rust/hermes_py/src/trajectory.rs)
# ---------------------------------------------------------------------------------------------
from collections.abc import Callable as _Callable  # noqa: E402
from collections.abc import Sequence as _Sequence  # noqa: E402
from typing import Any as _Any  # noqa: E402

import numpy as _np  # noqa: E402
import numpy.typing as _npt  # noqa: E402

MASK: int
PROMPT_LOGPROB: float

class TrajectoryDivergence(ValueError):
    index: int
    window: dict[str, _Any]

class TrajectoryDivergenceWarning(UserWarning): ...

class Trajectory:
    def __init__(self, vocab_size: int | None = None) -> None: ...
    def add_prompt(self, ids: _Sequence[int]) -> None: ...
    def add_completion(
        self, ids: _Sequence[int], logprobs: _Sequence[float], finish_reason: str | None = None
    ) -> None: ...
    def common_prefix(self, ids: _Sequence[int]) -> int: ...
    def divergence(
        self, ids: _Sequence[int], decode: _Callable[[list[int]], str] | None = None
    ) -> dict[str, _Any] | None: ...
    def extend(
        self,
        next_prompt_ids: _Sequence[int],
        policy: str = "raise",
        new_turn: _Sequence[int] | None = None,
        decode: _Callable[[list[int]], str] | None = None,
    ) -> dict[str, _Any]: ...
    def fork(self) -> Trajectory: ...
    def __copy__(self) -> Trajectory: ...
    def __deepcopy__(self, memo: _Any) -> Trajectory: ...
    def __len__(self) -> int: ...
    @property
    def tokens(self) -> list[int]: ...
    @property
    def masks(self) -> list[int]: ...
    @property
    def logprobs(self) -> list[float]: ...
    @property
    def vocab_size(self) -> int | None: ...
    @property
    def num_trained(self) -> int: ...
    @property
    def last_finish_reason(self) -> str | None: ...
    @property
    def segments(self) -> list[tuple[str, int, int, str | None]]: ...
    def to_numpy(self) -> dict[str, _npt.NDArray[_np.int64] | _npt.NDArray[_np.float64]]: ...
    def to_scored_item(
        self,
        score: float,
        *,
        messages: _Any = None,
        advantages: _Any = None,
        ref_logprobs: _Any = None,
        group_overrides: _Any = None,
        overrides: _Any = None,
        images: _Any = None,
    ) -> dict[str, _Any]: ...

def assistant_token_mask(
    offsets: _Sequence[tuple[int, int]], spans: _Sequence[tuple[int, int]], ids: _Sequence[int]
) -> list[int]: ...

# ---------------------------------------------------------------------------------------------
# end of trajectory section
# ---------------------------------------------------------------------------------------------
