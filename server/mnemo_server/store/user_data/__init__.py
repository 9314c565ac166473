"""A user's data as a whole: export (``export``), import (``load``), erasure (``erase``), and
``SqlUserData`` (``store``)."""
