"""Secrets that are not secret: the placeholders of examples and manifests.

``deploy/kubernetes/mnemo.yaml`` ships its Secret with
``replace-with-48-random-bytes-base64`` as the HS256 secret; a server that
accepted it (35 bytes, long enough) would verify tokens signed by anyone who
read the manifest. ``is_placeholder`` recognises that value and values shaped
like one: text that, lowercased and without punctuation, starts with one of
``PLACEHOLDER_STARTS`` (at least 7 letters, so a random secret starts that
way about once in 3e10), is a placeholder word repeated (``secret``,
``secretsecret``...), or is a template marker left unfilled (``<...>``,
``${...}``, ``$(...)``, ``{{...}}``). Binary secrets (anything but printable
ASCII) are never taken for placeholders.
"""

from __future__ import annotations

import re

DOCUMENTED_PLACEHOLDERS = ("replace-with-48-random-bytes-base64",)
"""The placeholder secrets of this repository's deploy files."""
PLACEHOLDER_STARTS = (
    "replacewith",
    "replaceme",
    "replacethis",
    "changeme",
    "changethis",
    "example",
    "placeholder",
    "yoursecret",
    "insertyour",
    "putyour",
    "mysecret",
)
PLACEHOLDER_WORDS = ("secret", "password", "changeme", "placeholder", "example", "test")
_TEMPLATE = re.compile(r"<.*>|\$\{.*\}|\$\(.*\)|\{\{.*\}\}", re.DOTALL)
_PRINTABLE = re.compile(rb"[\x20-\x7e\t\r\n]*")


def is_placeholder(secret: bytes) -> bool:
    """Whether ``secret`` is a documented placeholder or shaped like one."""
    if not _PRINTABLE.fullmatch(secret):
        return False
    text = secret.decode("ascii").strip()
    if text in DOCUMENTED_PLACEHOLDERS or _TEMPLATE.fullmatch(text):
        return True
    letters = "".join(char for char in text.lower() if char.isalnum())
    if letters.startswith(PLACEHOLDER_STARTS):
        return True
    return any(
        letters and len(letters) % len(word) == 0 and letters == word * (len(letters) // len(word))
        for word in PLACEHOLDER_WORDS
    )
