"""user_data."""
