"""On-policy distillation: a teacher's top-k logprobs at every token the student was trained on."""

from hermes_env._renamed import old_names
from hermes_env.distill.teacher import (
    FILLER_LOGPROB,
    FILLER_TOKEN_ID,
    DistillArrays,
    TeacherClient,
    TeacherContext,
    check_distill_arrays,
    filler_row,
)

__all__ = [
    "FILLER_LOGPROB",
    "FILLER_TOKEN_ID",
    "DistillArrays",
    "TeacherClient",
    "TeacherContext",
    "check_distill_arrays",
    "filler_row",
]


# Exceptions live in hermes_env.errors; the names this package once re-exported still work for a release
# (hermes_env._renamed.OLD_NAMES), each with a warning once.
__getattr__ = old_names(__name__)
