"""The Report (everything a writer needs, computed once), its notes and validation, its view models, charts, message catalogues and the terminal's tables."""
