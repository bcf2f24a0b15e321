"""Classify: scores per document. ``quality`` (label-free statistics and fluency, thresholds from
the reference profile), ``stage`` (fastText spam and quality models), and the training of their
models: ``classifier_train``, ``fluency_train``, ``reference_profile``."""
