"""AgentStateService: app states (``domain.app_state``)."""
