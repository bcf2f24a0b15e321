"""fastText document classifiers (``classify``): the PanGu-α spam filter and the GPT-3 App. A
quality scorer."""
