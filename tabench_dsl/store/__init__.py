"""The results store: the one writer and reader of results files and of the index kept beside
them (docs/architecture.md, "The results store")."""
