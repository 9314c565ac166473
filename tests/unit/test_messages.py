"""SDK-native message validation and the plain-text projection."""

from __future__ import annotations

import json
import re

import pytest

from mnemo_server.api.validation import Validator
from mnemo_server.domain.errors import InvalidArgument
from mnemo_server.domain.messages import MessageProblem, parse_message


def test_string_content_is_kept_verbatim() -> None:
    raw = '{"role":"user",  "content":"Remember my plan: ship v1 \\u00e9t\\u00e9 ☀", "n": 1.0}'
    message = parse_message(raw)
    assert message.message_json == raw
    assert message.role == "user"
    assert message.text == "Remember my plan: ship v1 été ☀"


def test_parts_projection() -> None:
    message = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me check."},
            {
                "type": "tool-call",
                "toolCallId": "c1",
                "toolName": "weather",
                "input": {"city": "Paris"},
            },
            {"type": "image", "image": "https://example.com/cat.png", "mediaType": "image/png"},
            {"type": "file", "filename": "plan.pdf", "data": "data:application/pdf;base64,AAAA"},
            {"type": "file", "url": "https://example.com/spec.md"},
            {"type": "reasoning", "text": "hidden"},
        ],
        "metadata": {"model": "m1"},
    }
    parsed = parse_message(json.dumps(message))
    assert parsed.text.split("\n") == [
        "Let me check.",
        'weather({"city": "Paris"})',
        "https://example.com/cat.png",
        "plan.pdf",
        "https://example.com/spec.md",
    ]


def test_tool_result_and_top_level_tool_calls() -> None:
    result = {
        "role": "tool",
        "content": [
            {
                "type": "tool-result",
                "toolCallId": "c1",
                "toolName": "weather",
                "output": {"temp": 21},
            },
            {"type": "tool-result", "toolCallId": "c2", "result": "sunny"},
            {
                "type": "tool-result",
                "toolCallId": "c3",
                "content": [{"type": "text", "text": "nested"}],
            },
        ],
    }
    assert parse_message(json.dumps(result)).text.split("\n") == ['{"temp": 21}', "sunny", "nested"]
    calls = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "x", "function": {"name": "lookup", "arguments": '{"q":1}'}}],
    }
    assert parse_message(json.dumps(calls)).text == 'lookup({"q":1})'


def test_projection_drops_nul_and_lone_surrogates() -> None:
    parsed = parse_message('{"role":"user","content":"a\\u0000b\\ud800c"}')
    assert parsed.text == "ab?c"


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("", "required"),
        ("not json", "not valid JSON"),
        ('{"role":"user","content":"x"', "not valid JSON"),
        ('{"role":"user","content":NaN}', "not valid JSON"),
        ('["role","user"]', "JSON object"),
        ('{"content":"x"}', "role"),
        ('{"role":"robot","content":"x"}', "role"),
        ('{"role":"user"}', "content"),
        ('{"role":"user","content":42}', "content"),
        ('{"role":"user","content":[42]}', "content[0]"),
        ('{"role":"user","content":[{"text":"x"}]}', "content[0]"),
        ('{"role":"user","content":[{"type":""}]}', "content[0]"),
        ('{"role":"user","content":[{"type":"text"}]}', "content[0]"),
        ('{"role":"user","content":"x","metadata":[1]}', "metadata"),
        ("[" * 100_000 + "]" * 100_000, "not valid JSON"),
    ],
)
def test_invalid_messages(raw: str, problem: str) -> None:
    with pytest.raises(MessageProblem, match=re.escape(problem)):
        parse_message(raw)
    v = Validator()  # the API layer names the field
    assert v.message(raw, "messages[3].message_json", max_bytes=10**7) is None
    with pytest.raises(InvalidArgument) as caught:
        v.raise_if_invalid()
    error = caught.value
    assert error.reason == "INVALID_MESSAGE"
    assert error.metadata == {"field": "messages[3].message_json"}
    assert [v.field for v in error.violations] == ["messages[3].message_json"]
    assert problem in error.message


def test_unknown_part_types_are_accepted() -> None:
    parsed = parse_message('{"role":"assistant","content":[{"type":"future-thing","x":1}]}')
    assert parsed.text == ""
