"""GovernanceService request rules: the static table
(``api.validation.check_fields``). Names, consent states and event types
are checked by ``api.governance.requests``; an import's records by
``api.user_data.records``."""

from __future__ import annotations

from mnemo.v1 import governance_pb2 as pb
from mnemo_server.api.validation import FieldRule, Rules, identifier

RULES: Rules = {
    pb.SetConsentRequest: (FieldRule("consent.policy_version", identifier()),),
}
