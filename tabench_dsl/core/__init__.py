"""The bottom layer: the data every other layer shares, and helpers that import no other layer.

Its modules and how they fit: docs/architecture.md.
"""
