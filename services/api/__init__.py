"""The HTTP API: one router module per area, assembled by :func:`services.api.app.create_app`."""
