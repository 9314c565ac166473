"""The web port: gRPC-Web and the Connect protocol for browsers and React Native.

``--web-listen`` opens a second (HTTP/1.1) port served by a small ASGI app under
uvicorn. The app serves no RPC itself: it forwards every call, as opaque
request bytes, to the gRPC server of the same process over a private Unix
socket (``forward``), so the same servicers, interceptors (authentication,
rate limits, error mapping) and errors answer both ports. What comes back is
re-encoded for the caller's protocol:

- gRPC-Web (``grpc_web``): ``application/grpc-web[+proto|+json]`` and
  ``application/grpc-web-text[+proto]``; unary and server-streaming methods.
- Connect (``connect``): unary ``application/proto`` / ``application/json``,
  streaming ``application/connect+proto`` / ``application/connect+json``
  (server streaming).

Client- and bidirectional-streaming methods (``ImportUserData``, reflection)
answer ``UNIMPLEMENTED`` here: browsers cannot stream a request body.
CORS (``--web-cors-origins``) is in ``cors``; the uvicorn lifecycle in ``server``.
"""
