"""Identity and security: who calls (JWT), what they may name, how often they may call.

``caller`` holds the authenticated caller of the current call, ``access`` the
one authorization rule (applied where resource names are parsed,
``api.names``), ``jwt`` verifies tokens, ``ratelimit`` bounds each user's
request rate, ``interceptor`` ties them to every RPC and ``tls`` builds the
server's TLS credentials; ``files`` reads the key and certificate files.
"""
