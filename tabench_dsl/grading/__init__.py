"""Grading a compiled battery: answers in, records out; never the battery language.

Its modules and how they fit: docs/architecture.md.
"""
