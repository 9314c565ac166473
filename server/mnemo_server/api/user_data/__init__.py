"""The user's data rights of GovernanceService: export, import (a stream of records) and
erasure (handlers, record rules, conversions)."""
