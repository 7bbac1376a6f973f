"""Output writers: each reads one Report and writes one format."""
