"""Authentication, rate limiting and the call's identity, around every RPC.

For every method except the health and reflection services, before the
handler runs:

1. the bearer token (metadata ``authorization: Bearer <JWT>``) is verified
   under ``--auth jwt``: missing or not accepted -> ``UNAUTHENTICATED``;
2. the caller's rate limit is charged (when configured) ->
   ``RESOURCE_EXHAUSTED`` with a ``RetryInfo``;
3. the tenants of the users the request names are looked up
   (``auth.access``), for a stream of requests as each message arrives;
4. the ``CallScope`` is set for the handler: unary and streaming, including
   the iteration of a response stream.

Errors are answered through ``mnemo_server.rpc.errors`` (canonical code,
``ErrorInfo``). Install it outside ``ErrorMappingInterceptor`` so that it
runs first: ``grpc.aio.server(interceptors=[auth, error_mapping])``.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Iterable
from typing import Any

import grpc

from mnemo_server.auth import caller as calls
from mnemo_server.auth.access import users_to_look_up
from mnemo_server.auth.caller import Caller, CallScope
from mnemo_server.auth.jwt import TokenVerifier
from mnemo_server.auth.ratelimit import RateLimiter
from mnemo_server.domain.errors import ResourceExhausted, Unauthenticated
from mnemo_server.domain.observe import NO_OBSERVER, Observer
from mnemo_server.domain.ports import UserStore
from mnemo_server.rpc.call_log import note_user
from mnemo_server.rpc.errors import abort_with, map_exception
from mnemo_server.rpc.handlers import Behavior, Handler, WrappingInterceptor, rewrapped

Context = grpc.aio.ServicerContext[Any, Any]

EXEMPT_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.")
"""Methods anyone may call: load balancers and tools need them before any token."""

_BEARER = "bearer "


class Admission:
    """What is decided before a handler runs (steps 1-3 of the module docstring)."""

    def __init__(
        self,
        verifier: TokenVerifier | None,
        users: UserStore | None,
        limiter: RateLimiter | None,
        observer: Observer = NO_OBSERVER,
    ) -> None:
        if verifier is not None and users is None:
            raise ValueError("authenticated calls need a UserStore to check tenants")
        self._verifier = verifier
        self._users = users
        self._limiter = limiter
        self._observer = observer

    @property
    def active(self) -> bool:
        return self._verifier is not None or self._limiter is not None

    def authenticate(self, metadata: Iterable[tuple[str, Any]] | None) -> Caller | None:
        """The caller (``None`` under ``--auth none``). Raises ``Unauthenticated``."""
        if self._verifier is None:
            return None
        values = [v for k, v in metadata or () if k.lower() == "authorization"]
        if len(values) != 1 or not isinstance(values[0], str):
            raise Unauthenticated(
                "this server requires one bearer token: send the metadata "
                "'authorization: Bearer <JWT>'",
                metadata={"problem": "missing"},
                reason="UNAUTHENTICATED",
            )
        value = values[0].strip()
        if value[: len(_BEARER)].lower() != _BEARER:
            raise Unauthenticated(
                "the authorization metadata must be 'Bearer <JWT>'",
                metadata={"problem": "malformed"},
                reason="UNAUTHENTICATED",
            )
        return self._verifier.verify(value[len(_BEARER) :].strip())

    def charge(self, caller: Caller | None, context: Context) -> None:
        """Take one request from the caller's rate limit. Raises ``ResourceExhausted``."""
        if self._limiter is None:
            return
        key = f"user:{caller.user_id}" if caller is not None else f"peer:{_peer_host(context)}"
        try:
            self._limiter.acquire(key)
        except ResourceExhausted:
            self._observer.rate_limited()
            raise

    async def look_up(self, scope: CallScope, message: object) -> None:
        """Record the tenants of the users ``message`` names (``auth.access``)."""
        user_ids = users_to_look_up(scope, message)
        if not user_ids or self._users is None:
            return
        found = await self._users.tenants_of(user_ids)
        scope.tenants.update({user_id: found.get(user_id) for user_id in user_ids})

    async def admit(
        self, request: Any, context: Context, streaming: bool
    ) -> tuple[CallScope | None, Any]:
        """The call's scope and its request (a stream of requests is wrapped
        so that each message's users are looked up as it arrives)."""
        caller = self.authenticate(context.invocation_metadata())
        if caller is not None:
            note_user(caller.user_id)
        self.charge(caller, context)
        if caller is None:
            return None, request
        scope = CallScope(caller)
        if streaming:
            return scope, self._looking_up(scope, request)
        await self.look_up(scope, request)
        return scope, request

    async def _looking_up(
        self, scope: CallScope, requests: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for message in requests:
            await self.look_up(scope, message)
            yield message


def _peer_host(context: Context) -> str:
    """``ipv4:127.0.0.1:5000`` -> ``ipv4:127.0.0.1`` (one limit per address, not per connection)."""
    peer = context.peer() or "unknown"
    host, sep, port = peer.rpartition(":")
    return host if sep and port.isdigit() else peer


async def _admitted(
    admission: Admission, request: Any, context: Context, method: str, streaming: bool
) -> tuple[CallScope | None, Any]:
    """``admission.admit``, ending the call with the mapped status on a refusal."""
    try:
        return await admission.admit(request, context, streaming)
    except Exception as exc:
        await abort_with(context, map_exception(exc, method))
        raise  # abort_with has raised already; this only tells the type checker


def _unary_response(
    behavior: Behavior, admission: Admission, method: str, streaming: bool
) -> Behavior:
    async def wrapped(request: Any, context: Context) -> Any:
        scope, request = await _admitted(admission, request, context, method, streaming)
        with calls.calling_as(scope):
            return await behavior(request, context)

    return wrapped


def _stream_response(
    behavior: Behavior, admission: Admission, method: str, streaming: bool
) -> Behavior:
    if not inspect.isasyncgenfunction(behavior):
        # A coroutine that writes with context.write(): awaiting it covers every write.
        return _unary_response(behavior, admission, method, streaming)

    async def wrapped(request: Any, context: Context) -> AsyncIterator[Any]:
        scope, request = await _admitted(admission, request, context, method, streaming)
        token = calls.enter(scope)
        try:
            async for response in behavior(request, context):
                yield response
        finally:
            calls.leave(token)

    return wrapped


def admitting(handler: Handler, admission: Admission, method: str) -> Handler:
    """``handler`` with its behavior run through ``admission``."""

    def wrap(behavior: Behavior, request_streaming: bool, response_streaming: bool) -> Behavior:
        chosen = _stream_response if response_streaming else _unary_response
        return chosen(behavior, admission, method, request_streaming)

    return rewrapped(handler, wrap)


class AuthInterceptor(WrappingInterceptor):
    """Applies an ``Admission`` to every method but health and reflection."""

    def __init__(self, admission: Admission) -> None:
        self._admission = admission

    def applies(self, method: str) -> bool:
        return self._admission.active and not method.startswith(EXEMPT_PREFIXES)

    def wrap(self, handler: Handler, method: str) -> Handler:
        return admitting(handler, self._admission, method)
