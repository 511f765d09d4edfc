"""Type stubs for hermes_env._core (the compiled Rust extension).

The exceptions it raises are classes of hermes_env.errors (HermesEnvError subclasses), imported
from there the first time one is raised.
"""

# ---------------------------------------------------------------------------------------------
# parsers section (rust/hermes_py/src/parsers.rs; public facade: hermes_env.parsers)
# ---------------------------------------------------------------------------------------------
from collections.abc import Iterable as _Iterable  # noqa: E402
from collections.abc import Mapping as _Mapping  # noqa: E402
from typing import Literal as _Literal  # noqa: E402
from typing import Self as _Self  # noqa: E402
from typing import final as _final  # noqa: E402

__all__ = [
    "__version__",
    "ToolCall",
    "ParseIssue",
    "ParseResult",
    "ContentDelta",
    "ToolCallStart",
    "ToolCallArgsDelta",
    "ToolCallEnd",
    "Parser",
    "ParseStream",
    "list_parsers",
    "get_parser",
    "guess_parser",
    "parser_info",
    "ParserInfo",
    "Detection",
    "MAX_ISSUES",
    "ISSUE_KINDS",
    "Trajectory",
    "assistant_token_mask",
    "TrajectoryDivergenceWarning",
    "MASK",
    "PROMPT_LOGPROB",
    "FINISH_REASONS",
    "ByteLevelBpe",
]

__version__: str

_IssueKind = _Literal[
    "malformed_json",
    "truncated",
    "unknown_tool",
    "bad_arguments",
    "unexpected_text",
    "missing_name",
    "missing_arguments",
    "malformed_markup",
    "invalid_unicode",
    "parser_mismatch",
]
ISSUE_KINDS: list[str]
MAX_ISSUES: int

@_final
class ToolCall:
    """One extracted call; ``arguments`` is JSON text (the raw text when the model's JSON was broken)."""

    __match_args__ = ("name", "arguments", "id")
    def __new__(cls, name: str, arguments: str = ..., id: str = ...) -> _Self: ...  # defaults: "{}", ""
    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def arguments(self) -> str: ...
    def to_openai(self) -> dict[str, _Any]: ...
    def __eq__(self, other: object, /) -> bool: ...  # name and arguments; ids are random

@_final
class ParseIssue:
    def __new__(cls, kind: _IssueKind, offset: int, char_offset: int, message: str) -> _Self: ...
    @property
    def kind(self) -> _IssueKind: ...
    @property
    def offset(self) -> int: ...  # UTF-8 byte offset into the whole output
    @property
    def char_offset(self) -> int: ...  # index into the Python str
    @property
    def message(self) -> str: ...
    def __eq__(self, other: object, /) -> bool: ...

@_final
class ParseResult:
    def __new__(
        cls,
        content: str | None = None,
        tool_calls: list[ToolCall] = ...,
        issues: list[ParseIssue] = ...,
        issues_omitted: int = 0,
    ) -> _Self: ...
    @property
    def content(self) -> str | None: ...
    @property
    def tool_calls(self) -> list[ToolCall]: ...
    @property
    def issues(self) -> list[ParseIssue]: ...  # the first MAX_ISSUES found
    @property
    def issues_omitted(self) -> int: ...  # issues found after those (counted, not stored)
    @property
    def tools_called(self) -> bool: ...
    def to_message(self) -> dict[str, _Any]: ...
    def __eq__(self, other: object, /) -> bool: ...  # content, names, arguments, issues; not ids

@_final
class ContentDelta:
    __match_args__ = ("text",)
    def __new__(cls, text: str) -> _Self: ...
    @property
    def text(self) -> str: ...
    def to_openai_delta(self) -> dict[str, _Any]: ...

@_final
class ToolCallStart:
    __match_args__ = ("index", "id", "name")
    def __new__(cls, index: int, id: str, name: str) -> _Self: ...
    @property
    def index(self) -> int: ...
    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    def to_openai_delta(self) -> dict[str, _Any]: ...

@_final
class ToolCallArgsDelta:
    __match_args__ = ("index", "text")
    def __new__(cls, index: int, text: str) -> _Self: ...
    @property
    def index(self) -> int: ...
    @property
    def text(self) -> str: ...
    def to_openai_delta(self) -> dict[str, _Any]: ...

@_final
class ToolCallEnd:
    __match_args__ = ("index",)
    def __new__(cls, index: int) -> _Self: ...
    @property
    def index(self) -> int: ...
    def to_openai_delta(self) -> dict[str, _Any]: ...

_Event = ContentDelta | ToolCallStart | ToolCallArgsDelta | ToolCallEnd

@_final
class ParseStream:
    def feed(self, delta: str) -> list[_Event]: ...
    def finish(self) -> list[_Event]: ...
    def result(self) -> ParseResult: ...
    @property
    def offset(self) -> int: ...
    @property
    def finished(self) -> bool: ...

@_final
class Parser:
    @property
    def name(self) -> str: ...
    def parse(self, text: str) -> ParseResult: ...
    def stream(self) -> ParseStream: ...
    def render(self, tool_calls: _Iterable[ToolCall | _Mapping[str, _Any]], content: str | None = None) -> str: ...

def list_parsers() -> list[str]: ...
def get_parser(
    name: str, tools: _Sequence[_Mapping[str, _Any]] | str | None = None, *, calls_after_prose: bool = True
) -> Parser: ...
def guess_parser(text: str) -> str | None: ...

_CallSyntax = _Literal["json_object", "name_then_json", "xml_parameters", "python_calls", "per_output"]

@_final
class Detection:
    """How ``detect_parser`` recognises a format: every string of one ``markers`` set is an added
    token or in the chat template, or every string of one ``template`` set is in the template;
    formats are tried by ascending ``rank``."""

    @property
    def rank(self) -> int: ...
    @property
    def looks_for(self) -> str: ...
    @property
    def markers(self) -> list[list[str]]: ...
    @property
    def template(self) -> list[list[str]]: ...

@_final
class ParserInfo:
    """What is known about the format a parser name reads, besides how to parse it."""

    @property
    def name(self) -> str: ...
    @property
    def format(self) -> str: ...  # the format's own name (an alias's target)
    @property
    def special_tokens(self) -> list[str]: ...  # single tokens in the model family's vocabulary
    @property
    def text_markup(self) -> list[str]: ...  # other markup it consumes; a trailing "=" opens a named tag
    @property
    def markup(self) -> list[str]: ...  # special_tokens + text_markup
    @property
    def call_syntax(self) -> _CallSyntax: ...
    @property
    def call_ids(self) -> bool: ...  # the format writes its own call ids
    @property
    def detection(self) -> Detection | None: ...

def parser_info(name: str) -> ParserInfo: ...

# ---------------------------------------------------------------------------------------------
# end of parsers section
# ---------------------------------------------------------------------------------------------

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
FINISH_REASONS: list[str]

# Errors raised here (TrajectoryError, TrajectoryDivergence) are classes of hermes_env.errors.

class TrajectoryDivergenceWarning(UserWarning): ...

@_final
class Trajectory:
    def __new__(cls, vocab_size: int | None = None) -> Trajectory: ...
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
    def fork(self, length: int | None = None) -> Trajectory: ...
    def ends_with(self, ids: _Sequence[int]) -> bool: ...
    def add_turn(
        self,
        prompt_ids: _Sequence[int],
        ids: _Sequence[int],
        logprobs: _Sequence[float],
        finish_reason: str | None = None,
    ) -> None: ...
    def __copy__(self) -> Trajectory: ...
    def __deepcopy__(self, memo: _Any) -> Trajectory: ...
    def __len__(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    __hash__: None  # type: ignore[assignment]
    def __getstate__(
        self,
    ) -> tuple[list[int], list[int], list[float], list[tuple[str, int, int, str | None]], int | None]: ...
    def __setstate__(
        self, state: tuple[list[int], list[int], list[float], list[tuple[str, int, int, str | None]], int | None]
    ) -> None: ...
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
    offsets: _Sequence[tuple[int, int]],
    spans: _Sequence[tuple[int, int]],
    ids: _Sequence[int],
    vocab_size: int | None = None,
) -> list[int]: ...

# ---------------------------------------------------------------------------------------------
# end of trajectory section
# ---------------------------------------------------------------------------------------------

# ---------------------------------------------------------------------------------------------
# bpe section (rust/hermes_py/src/bpe.rs; used by hermes_env.managed.tokenization)
# ---------------------------------------------------------------------------------------------
@_final
class ByteLevelBpe:
    def __new__(cls, tokenizer_json: str, ints: tuple[int, ...] | None = None) -> ByteLevelBpe: ...
    def encode(self, text: str) -> list[int] | None: ...
    def encode_unchecked(self, text: str) -> list[int] | None: ...
    def pre_tokenize(self, text: str) -> list[tuple[int, int]]: ...
    def unknown_chars(self, text: str) -> str: ...
    def set_char(self, c: str, ok: bool) -> None: ...
