"""reportgen: GPU memory capacity planning for large-language-model work."""

__version__ = "0.1.0"
