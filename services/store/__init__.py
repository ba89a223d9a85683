"""The event store on PostgreSQL: events, table heads, API keys."""
