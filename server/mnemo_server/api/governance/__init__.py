"""GovernanceService: consent, the memory switch, analytics events (servicer, request rules,
conversions); the user's data rights are ``api.user_data``."""
