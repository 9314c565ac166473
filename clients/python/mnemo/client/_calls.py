"""Call descriptions: what to send, to which RPC, and how to read the answer.

The request builders (``_working_memory``, ``_conversations``, ``_history``) are pure
functions returning these; ``MnemoClient`` and ``AsyncMnemoClient`` only
execute them, so both clients share every request and response rule.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, NamedTuple, ParamSpec, TypeVar

from google.protobuf.message import Message

Req = TypeVar("Req", bound=Message)
R = TypeVar("R")
T = TypeVar("T")
P = ParamSpec("P")
C = TypeVar("C")
S = TypeVar("S")
Out = TypeVar("Out")


class Page(NamedTuple, Generic[T]):
    """One page of a list call; ``next_page_token`` is empty on the last page."""

    items: list[T]
    next_page_token: str


@dataclass(frozen=True, slots=True)
class Rpc:
    """One RPC of a generated stub class, e.g. ``(WorkingMemoryServiceStub, "GetMemoryState")``."""

    stub: type[Any]
    method: str


@dataclass(frozen=True, slots=True)
class UnaryCall(Generic[Req, R]):
    """A unary call: ``parse(rpc(request))``. ``timeout`` ``None`` means the client default."""

    rpc: Rpc
    request: Req
    parse: Callable[[Any], R]
    timeout: float | None = None

    def payload(self) -> Req:
        """What the stub's callable is called with."""
        return self.request


@dataclass(frozen=True, slots=True)
class ClientStreamCall(Generic[Req, R]):
    """A client-streaming call: ``parse(rpc(iter(requests)))``; the requests are
    sent as the iterable yields them. Executed like a ``UnaryCall``."""

    rpc: Rpc
    requests: Iterable[Req]
    parse: Callable[[Any], R]
    timeout: float | None = None

    def payload(self) -> Iterator[Req]:
        """What the stub's callable is called with."""
        return iter(self.requests)


@dataclass(frozen=True, slots=True)
class PagedCall(Generic[T]):
    """A list call followed over every page: ``page(token)`` is the call for one page."""

    page: Callable[[str], UnaryCall[Any, Page[T]]]


@dataclass(frozen=True, slots=True)
class StreamCall(Generic[Req, T]):
    """A server-streaming call; ``items`` flattens each streamed response."""

    rpc: Rpc
    request: Req
    items: Callable[[Any], Iterable[T]]
    timeout: float | None = None


#: The attribute naming the builder of a method made by ``client_method``.
BUILT_FROM = "__mnemo_built_from__"


def as_method(method: Callable[..., Any], build: Callable[..., Any]) -> None:
    """Give a method generated from ``build`` the builder's name, docs and signature.

    The owning class sets ``__qualname__`` and ``__module__``
    (``ClientBase.__init_subclass__``), recognising the method by ``BUILT_FROM``.
    """
    functools.update_wrapper(method, build, assigned=("__name__", "__doc__"), updated=())
    del method.__wrapped__  # type: ignore[attr-defined]
    setattr(method, BUILT_FROM, build)
    signature = inspect.signature(build)
    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    method.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[self_parameter, *signature.parameters.values()],
        return_annotation=inspect.Signature.empty,
    )


def client_method(
    build: Callable[P, C], run: Callable[[S, C], Out]
) -> Callable[Concatenate[S, P], Out]:
    """A client method that builds a call with ``build`` and executes it with ``run``.

    ``MnemoClient`` and ``AsyncMnemoClient`` declare every method this way, so
    they share the builders' signatures and docs and differ only in ``run``.
    """

    def method(self: S, /, *args: P.args, **kwargs: P.kwargs) -> Out:
        return run(self, build(*args, **kwargs))

    as_method(method, build)
    return method
