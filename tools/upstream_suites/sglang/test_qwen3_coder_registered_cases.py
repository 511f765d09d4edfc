"""Not SGLang's: runs SGLang's registered Qwen3-Coder cases (``test_cases.py``) through its own
streaming harness, with a fresh ``Qwen3CoderDetector`` per case, streamed (seeded) and whole."""

import random

import pytest
from sglang.srt.function_call import qwen3_coder_detector
from test.registered.function_call.test_qwen3_coder_detector.test_cases import test_case_registry
from test.registered.function_call.test_qwen3_coder_detector.test_fixtures import get_test_tools
from test.registered.function_call.test_qwen3_coder_detector.test_framework import StreamingTestRunner


@pytest.mark.parametrize("name", sorted(test_case_registry.get_all()))
def test_registered_case(name: str) -> None:
    random.seed(0)
    runner = StreamingTestRunner(qwen3_coder_detector.Qwen3CoderDetector(), tools=get_test_tools())
    result = test_case_registry.get_all()[name](runner)
    assert result.success, result.error_message
    assert result.streaming_match, result.streaming_errors
    assert result.non_streaming_match, result.non_streaming_errors
