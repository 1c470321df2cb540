"""What a person reads and decides after a grading: totals, decisions, report, viewer.

Its modules and how they fit: docs/architecture.md.
"""
