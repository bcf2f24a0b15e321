"""Quality: the label-free judgement of a document, after the PanGu-α rules and personal data, before
the classifiers. ``stage`` (every statistic of ``filters.quality.screen`` and the fluency model, thresholds
from the reference profile), ``crawl_repeat`` (crawl-level template repetition, one aggregation over
the whole input), and what the stage reads: ``fluency_train`` (the reference profile: fluency model,
percentiles, template keys) and ``reference_profile`` (the reference's signal percentiles)."""
