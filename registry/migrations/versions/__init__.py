"""Registry schema revisions, oldest first: ``0001`` initial schema, ``0002`` round details and task index."""
