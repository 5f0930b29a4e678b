"""The domain, pure: memories and their file format, settings, errors, merge rules, ranking, similarity, contradictions, secrets."""
