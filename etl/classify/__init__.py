"""Classify: fastText scores per document after the quality stage. ``stage`` (the spam and quality
models, shipped and loaded once per Python worker) and ``classifier_train`` (their training)."""
