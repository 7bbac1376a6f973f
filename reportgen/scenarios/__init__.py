"""Preset files into scenarios: the bounded preset loader and sweep blocks (scenarios as columns)."""
