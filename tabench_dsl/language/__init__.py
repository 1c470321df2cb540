"""The battery language: spec files -> nodes -> a validated `Battery` -> exact prompts.

Its modules and how they fit: docs/architecture.md.
"""
