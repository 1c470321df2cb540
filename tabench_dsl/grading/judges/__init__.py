"""Judge backends behind one base class, each registering itself by kind in `registry`.

Its modules and how they fit: docs/architecture.md.
"""
