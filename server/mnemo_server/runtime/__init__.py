"""Runtime helpers below the domain: bounded waits at shutdown
(``bounded_waits``) and periodic background loops (``periodic``). They
import no other layer of Mnemo (``lint-imports``: the ``layers`` and
``runtime`` contracts); the domain, the store and the app use them."""
