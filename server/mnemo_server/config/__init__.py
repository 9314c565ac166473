"""Server settings: one frozen ``Settings``, from flags, ``MNEMO_*`` environment or defaults.

Every setting has a command-line flag and an environment variable (``--data-dir``
and ``MNEMO_DATA_DIR``). A flag wins over the environment, the environment over
the default. By concern:

- ``config.settings``: ``Settings``, the resolved values, and ``ConfigError``;
- ``config.values``: the parsers of one flag or environment value;
- ``config.options``: ``OPTIONS``, the single table both the CLI
  (``add_arguments``) and the resolver (``resolve``) read;
- ``config.security``: the combinations refused at start (``check_security``)
  and the loopback test they rest on.

The names below are the package's interface; import them from here.
"""

from mnemo_server.config.options import OPTIONS, Option, add_arguments, resolve
from mnemo_server.config.security import (
    check_security,
    exposes_every_user,
    is_loopback,
    listen_host,
)
from mnemo_server.config.settings import (
    AUTH_MODES,
    LOG_FORMATS,
    LOG_LEVELS,
    MIB,
    TRACING_MODES,
    ConfigError,
    Settings,
)

__all__ = [
    "AUTH_MODES",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "MIB",
    "OPTIONS",
    "TRACING_MODES",
    "ConfigError",
    "Option",
    "Settings",
    "add_arguments",
    "check_security",
    "exposes_every_user",
    "is_loopback",
    "listen_host",
    "resolve",
]
