"""DocumentService: servicer, request rules, conversions."""
