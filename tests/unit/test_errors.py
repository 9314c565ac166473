"""The error mapping, end to end through a real grpc.aio server on 127.0.0.1.

The handlers live under ``/mnemo.v1.Test/`` so the interceptor applies; one
lives elsewhere to show what an unmapped error looks like (``UNKNOWN``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import grpc
import pytest

from mnemo.v1.working_memory_pb2 import GetMemoryStateRequest as Named
from mnemo_server.domain.errors import (
    Aborted,
    AlreadyExists,
    FailedPrecondition,
    FieldViolation,
    InvalidArgument,
    MnemoError,
    NotFound,
    NotImplementedYet,
    OutOfRange,
    Unavailable,
)
from mnemo_server.rpc.errors import INTERNAL_MESSAGE, ErrorMappingInterceptor, status_code_of
from tests.support.rpc_errors import ErrorDetails, error_details

SECRET = "password=hunter2 in a driver error"


async def _unary_invalid(request: bytes, context: Any) -> bytes:
    raise InvalidArgument(
        "two problems",
        reason="INVALID_FIELD",
        violations=(FieldViolation("a", "bad a"), FieldViolation("b.c", "bad c")),
        metadata={"fields": "a,b.c"},
    )


async def _unary_crash(request: bytes, context: Any) -> bytes:
    raise ValueError(SECRET)


async def _stream_then_fail(request: bytes, context: Any) -> AsyncIterator[bytes]:
    yield b"first"
    raise NotFound(
        "gone mid-stream", reason="NOT_FOUND", metadata={"name": "users/u1/conversations/c1"}
    )


async def _stream_crash_later(request: bytes, context: Any) -> AsyncIterator[bytes]:
    yield b"first"
    yield b"second"
    raise KeyError(SECRET)


async def _client_stream_abort(requests: AsyncIterator[bytes], context: Any) -> bytes:
    async for _ in requests:
        pass
    raise Aborted("stale", reason="ETAG_MISMATCH", metadata={"name": "n"})


async def _bidi_fail(requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
    async for request in requests:
        yield request
    raise Unavailable("store down", reason="UNAVAILABLE")


async def _echo(request: Named, context: Any) -> Named:
    return request


async def _count_requests(requests: AsyncIterator[Named], context: Any) -> bytes:
    count = 0
    async for _ in requests:
        count += 1
    return str(count).encode()


def _handlers() -> list[grpc.GenericRpcHandler[Any, Any]]:
    mnemo = grpc.method_handlers_generic_handler(
        "mnemo.v1.Test",
        {
            "Invalid": grpc.unary_unary_rpc_method_handler(_unary_invalid),
            "Crash": grpc.unary_unary_rpc_method_handler(_unary_crash),
            "StreamFail": grpc.unary_stream_rpc_method_handler(_stream_then_fail),
            "StreamCrash": grpc.unary_stream_rpc_method_handler(_stream_crash_later),
            "ClientStream": grpc.stream_unary_rpc_method_handler(_client_stream_abort),
            "Bidi": grpc.stream_stream_rpc_method_handler(_bidi_fail),
            # Requests with a string field 1 (`name`).
            "Echo": grpc.unary_unary_rpc_method_handler(
                _echo,
                request_deserializer=Named.FromString,
                response_serializer=Named.SerializeToString,
            ),
            "CountRequests": grpc.stream_unary_rpc_method_handler(
                _count_requests, request_deserializer=Named.FromString
            ),
        },
    )
    other = grpc.method_handlers_generic_handler(
        "other.v1.Test", {"Crash": grpc.unary_unary_rpc_method_handler(_unary_crash)}
    )
    return [mnemo, other]


Scenario = Callable[[grpc.aio.Channel], Coroutine[Any, Any, None]]


def _run(scenario: Scenario) -> None:
    async def main() -> None:
        server = grpc.aio.server(interceptors=[ErrorMappingInterceptor()])
        server.add_generic_rpc_handlers(_handlers())
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                await asyncio.wait_for(scenario(channel), timeout=20)
        finally:
            await server.stop(None)

    asyncio.run(main())


async def _failure(call: Any) -> ErrorDetails:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return error_details(caught.value)


def test_invalid_argument_carries_error_info_and_every_violation() -> None:
    async def scenario(channel: grpc.aio.Channel) -> None:
        details = await _failure(channel.unary_unary("/mnemo.v1.Test/Invalid", None, None)(b""))
        assert details.code is grpc.StatusCode.INVALID_ARGUMENT
        assert (details.domain, details.reason) == ("mnemo.v1", "INVALID_FIELD")
        assert details.metadata == {"fields": "a,b.c"}
        assert details.violations == (("a", "bad a"), ("b.c", "bad c"))
        assert details.error_infos == 1
        assert details.message == "two problems"

    _run(scenario)


def test_unexpected_errors_are_internal_without_details() -> None:
    async def scenario(channel: grpc.aio.Channel) -> None:
        details = await _failure(channel.unary_unary("/mnemo.v1.Test/Crash", None, None)(b""))
        assert details.code is grpc.StatusCode.INTERNAL
        assert details.reason == "INTERNAL"
        assert details.message == INTERNAL_MESSAGE
        assert SECRET not in repr(details)

    _run(scenario)


def test_undecodable_requests_are_invalid_argument() -> None:
    # A string field (1) holding bad UTF-8, and bytes that are no message at all.
    bad_utf8, garbage = b"\x0a\x02\xff\xfe", b"\xff\xff\xff"

    async def scenario(channel: grpc.aio.Channel) -> None:
        for payload in (bad_utf8, garbage):
            unary = channel.unary_unary("/mnemo.v1.Test/Echo", None, None)
            details = await _failure(unary(payload))
            assert (details.code, details.reason) == (
                grpc.StatusCode.INVALID_ARGUMENT,
                "INVALID_FIELD",
            )
            assert details.fields == ("request",)
        good = await channel.unary_unary("/mnemo.v1.Test/Echo", None, None)(b"\x0a\x01a")
        assert good == b"\x0a\x01a"

        async def requests() -> AsyncIterator[bytes]:
            yield b"\x0a\x01a"
            yield bad_utf8

        call = channel.stream_unary("/mnemo.v1.Test/CountRequests", None, None)(requests())
        details = await _failure(call)
        assert details.fields == ("request",)

    _run(scenario)


def test_unintercepted_services_are_left_alone() -> None:
    # What every handler would answer without the mapping: UNKNOWN.
    async def scenario(channel: grpc.aio.Channel) -> None:
        details = await _failure(channel.unary_unary("/other.v1.Test/Crash", None, None)(b""))
        assert details.code is grpc.StatusCode.UNKNOWN

    _run(scenario)


def test_errors_raised_mid_stream_are_mapped() -> None:
    async def scenario(channel: grpc.aio.Channel) -> None:
        for method, code, reason in (
            ("StreamFail", grpc.StatusCode.NOT_FOUND, "NOT_FOUND"),
            ("StreamCrash", grpc.StatusCode.INTERNAL, "INTERNAL"),
        ):
            call = channel.unary_stream(f"/mnemo.v1.Test/{method}", None, None)(b"")
            received = []
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                async for message in call:
                    received.append(message)
            assert received and received[0] == b"first"
            details = error_details(caught.value)
            assert (details.code, details.reason) == (code, reason)
            assert SECRET not in details.message

    _run(scenario)


def test_client_and_bidi_streaming_errors_are_mapped() -> None:
    async def scenario(channel: grpc.aio.Channel) -> None:
        async def requests() -> AsyncIterator[bytes]:
            for item in (b"1", b"2"):
                yield item

        details = await _failure(
            channel.stream_unary("/mnemo.v1.Test/ClientStream", None, None)(requests())
        )
        assert (details.code, details.reason) == (grpc.StatusCode.ABORTED, "ETAG_MISMATCH")
        call = channel.stream_stream("/mnemo.v1.Test/Bidi", None, None)(requests())
        echoed = []
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            async for message in call:
                echoed.append(message)
        assert echoed == [b"1", b"2"]
        assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
        assert error_details(caught.value).reason == "UNAVAILABLE"

    _run(scenario)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (InvalidArgument("x", "INVALID_FIELD"), grpc.StatusCode.INVALID_ARGUMENT),
        (NotFound("x", "NOT_FOUND"), grpc.StatusCode.NOT_FOUND),
        (AlreadyExists("x", "ALREADY_EXISTS"), grpc.StatusCode.ALREADY_EXISTS),
        (Aborted("x", "CONCURRENT_MODIFICATION"), grpc.StatusCode.ABORTED),
        (FailedPrecondition("x", "REQUEST_ID_REUSED"), grpc.StatusCode.FAILED_PRECONDITION),
        (OutOfRange("x", "CURSOR_EXPIRED"), grpc.StatusCode.OUT_OF_RANGE),
        (Unavailable("x", "UNAVAILABLE"), grpc.StatusCode.UNAVAILABLE),
        (NotImplementedYet("x", "NOT_IMPLEMENTED"), grpc.StatusCode.UNIMPLEMENTED),
        (MnemoError("x", "INTERNAL"), grpc.StatusCode.INTERNAL),
    ],
)
def test_every_domain_error_has_a_canonical_code(error: MnemoError, code: grpc.StatusCode) -> None:
    assert status_code_of(error) is code
