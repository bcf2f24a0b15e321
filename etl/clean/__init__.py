"""Clean: what is removed or redacted by rule. ``stage`` (the PanGu-α rules and sensitive words,
``filters.pangu.pipeline`` over Arrow batches) and ``pii`` (personal data)."""
