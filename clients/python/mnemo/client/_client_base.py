"""What ``MnemoClient`` and ``AsyncMnemoClient`` share: settings, channel options, stubs."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

import grpc

from mnemo.client._calls import BUILT_FROM, Rpc
from mnemo.client._channel_options import MAX_ATTEMPTS, ChannelOption, channel_options

ChannelT = TypeVar("ChannelT")

DEFAULT_TARGET = "127.0.0.1:50051"
DEFAULT_TIMEOUT = 10.0

Metadata = tuple[tuple[str, str], ...]


def parse_target(
    target: str, credentials: grpc.ChannelCredentials | None
) -> tuple[str, grpc.ChannelCredentials | None]:
    """The gRPC target and credentials of an address in any of the forms
    every Mnemo client and the CLI take: ``host:port`` (plaintext, unless
    ``credentials``), ``http://host:port`` (plaintext) or
    ``https://host:port`` (TLS with the system's roots, unless
    ``credentials``); a trailing ``/`` is ignored. Other gRPC targets
    (``dns:///host:port``, ``unix:path``) pass as they are. Raises
    ``ValueError`` for a URL with a path, or ``https://`` with no port."""
    scheme, separator, rest = target.partition("://")
    if not separator or scheme not in ("http", "https"):
        return target, credentials
    address = rest.rstrip("/")
    if not address or "/" in address:
        raise ValueError(f"{target!r}: give the server's address, as http://host:port")
    if scheme == "http":
        return address, credentials
    if ":" not in address.rpartition("]")[2]:
        address += ":443"
    return address, credentials if credentials is not None else grpc.ssl_channel_credentials()


class ClientBase(Generic[ChannelT]):
    """Settings and stubs of a client; subclasses open the channel and execute calls."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, value in vars(cls).items():
            if inspect.isfunction(value) and hasattr(value, BUILT_FROM):
                value.__qualname__ = f"{cls.__qualname__}.{name}"
                value.__module__ = cls.__module__

    def __init__(
        self,
        target: str = DEFAULT_TARGET,
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        credentials: grpc.ChannelCredentials | None = None,
        metadata: Mapping[str, str] | None = None,
        token: str | Callable[[], str] | None = None,
        options: Sequence[ChannelOption] = (),
        max_attempts: int = MAX_ATTEMPTS,
    ) -> None:
        """Open a channel to ``target``; nothing is sent until the first call.

        Args:
            target: the server address: ``host:port``, ``http://host:port``
                or ``https://host:port`` (TLS) — the forms every Mnemo
                client and the CLI take (``parse_target``).
            timeout: the default deadline of each call, in seconds; a call's
                own ``timeout=`` overrides it; ``None``: no deadline.
            credentials: TLS credentials (``grpc.ssl_channel_credentials()``);
                ``None``: a plaintext channel.
            metadata: sent with every call.
            token: sent with every call as ``authorization: Bearer <token>``;
                a callable is asked before each call, so it can refresh.
            options: extra gRPC channel options; one named like ours
                (``grpc.service_config``, ``grpc.enable_retries``) replaces ours.
            max_attempts: attempts per call (1 to 5) while the server answers
                ``UNAVAILABLE``, with exponential backoff; 1: no retries.
        """
        self.target = target
        self.timeout = timeout
        self._metadata: Metadata = tuple((metadata or {}).items())
        self._token = token
        address, credentials = parse_target(target, credentials)
        self._channel = self._open_channel(
            address, credentials, channel_options(max_attempts, options)
        )
        self._stubs: dict[type[Any], Any] = {}

    def _open_channel(
        self,
        target: str,
        credentials: grpc.ChannelCredentials | None,
        options: Sequence[ChannelOption],
    ) -> ChannelT:
        raise NotImplementedError

    def _multicallable(self, rpc: Rpc) -> Any:
        """The generated stub's callable for ``rpc`` on this client's channel."""
        stub = self._stubs.get(rpc.stub)
        if stub is None:
            stub = self._stubs[rpc.stub] = rpc.stub(self._channel)
        return getattr(stub, rpc.method)

    def _call_options(self, timeout: float | None) -> dict[str, Any]:
        """``timeout`` and ``metadata`` keyword arguments for one call."""
        metadata = self._metadata
        token = self._token() if callable(self._token) else self._token
        if token:
            metadata += (("authorization", f"Bearer {token}"),)
        return {
            "timeout": self.timeout if timeout is None else timeout,
            "metadata": metadata or None,
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.target!r})"
