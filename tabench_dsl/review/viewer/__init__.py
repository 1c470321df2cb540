"""The results viewer: a local web app over one results file (`tabench view`).

Its modules and how they fit: docs/architecture.md.
"""

from __future__ import annotations
