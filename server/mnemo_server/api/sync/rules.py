"""SyncService request rules: the static table (``api.validation.check_fields``)."""

from __future__ import annotations

from mnemo.v1 import sync_pb2 as pb
from mnemo_server.api.validation import FieldRule, Rules, non_negative

RULES: Rules = {
    pb.ListChangesRequest: (FieldRule("after_cursor", non_negative()),),
    pb.WatchChangesRequest: (FieldRule("after_cursor", non_negative()),),
}
