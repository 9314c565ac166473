"""The memory console's files, served by the web port under ``/console/``.

The console (``clients/typescript/console``, bundled by ``make console`` into
``web/console_assets``) is a static page that calls the web port itself over
gRPC-Web, so its calls are same-origin and need no ``--web-cors-origins``.
``GET``/``HEAD`` of ``/console`` (and of the port's root) redirect to
``/console/``, which is the page; ``/favicon.ico`` has no content (204);
its script and style sheet are ``/console/console.js`` and
``/console/console.css``. Anything else under ``/console/`` is 404. Every
answer forbids framing (``Content-Security-Policy: frame-ancestors 'none'`` and
``X-Frame-Options: DENY``) and inline script: the page needs nothing but its
own origin.
"""

from __future__ import annotations

from importlib import resources

from mnemo_server.web.metadata import Headers
from mnemo_server.web.protocol import Send, send_body, start_response

PREFIX = "/console"
ASSETS_PACKAGE = "mnemo_server.web"
ASSETS_DIR = "console_assets"
_FILES = {
    "/console/": ("index.html", b"text/html; charset=utf-8"),
    "/console/console.js": ("console.js", b"text/javascript; charset=utf-8"),
    "/console/console.css": ("console.css", b"text/css; charset=utf-8"),
}
SECURITY_HEADERS: Headers = [
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data: blob:; object-src 'none'; "
        b"base-uri 'none'; frame-ancestors 'none'",
    ),
    # For browsers that predate CSP frame-ancestors.
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-cache"),
]


ROOT = "/"
FAVICON = "/favicon.ico"


def is_console_path(path: str) -> bool:
    """Whether ``path`` is the console's (``/console`` or below it), or one a
    browser asks for first: the port's root (which leads to the console)
    and ``/favicon.ico`` (answered with no content, so that no page load
    logs an error)."""
    return path in (ROOT, FAVICON, PREFIX) or path.startswith(PREFIX + "/")


class ConsoleFiles:
    """The console's files, read from the package once and kept in memory."""

    def __init__(self) -> None:
        folder = resources.files(ASSETS_PACKAGE).joinpath(ASSETS_DIR)
        self._files: dict[str, tuple[bytes, bytes]] = {}
        for path, (name, content_type) in _FILES.items():
            entry = folder.joinpath(name)
            if entry.is_file():
                self._files[path] = (entry.read_bytes(), content_type)

    async def serve(self, method: str, path: str, send: Send) -> None:
        """Answer a ``GET`` or ``HEAD`` of ``path`` (a console path)."""
        if path in (ROOT, PREFIX):
            await start_response(send, 308, [(b"location", b"/console/"), *SECURITY_HEADERS])
            await send_body(send, b"", more=False)
            return
        if path == FAVICON:
            await start_response(send, 204, list(SECURITY_HEADERS))
            await send_body(send, b"", more=False)
            return
        found = self._files.get(path)
        if found is None:
            await start_response(
                send, 404, [(b"content-type", b"text/plain; charset=utf-8"), *SECURITY_HEADERS]
            )
            await send_body(send, b"not found" if method == "GET" else b"", more=False)
            return
        body, content_type = found
        headers: Headers = [
            (b"content-type", content_type),
            (b"content-length", str(len(body)).encode()),
            *SECURITY_HEADERS,
        ]
        await start_response(send, 200, headers)
        await send_body(send, body if method == "GET" else b"", more=False)
