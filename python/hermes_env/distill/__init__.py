"""On-policy distillation: a teacher's top-k logprobs at every token the student was trained on."""

from hermes_env.distill.teacher import (
    FILLER_LOGPROB,
    FILLER_TOKEN_ID,
    DistillArrays,
    TeacherClient,
    TeacherContext,
    TeacherError,
    check_distill_arrays,
    filler_row,
)

__all__ = [
    "FILLER_LOGPROB",
    "FILLER_TOKEN_ID",
    "DistillArrays",
    "TeacherClient",
    "TeacherContext",
    "TeacherError",
    "check_distill_arrays",
    "filler_row",
]
