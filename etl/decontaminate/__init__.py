"""Decontaminate: overlap with benchmark evaluation sets, after dedup. ``stage`` (the eval sets'
n-gram index on the driver, each document matched on the executors, hits counted or dropped)."""
