"""The model of a scenario: units, the expression language, inputs, lookup tables, model specs and catalogues, every term, and the estimator that evaluates them (one row, or NumPy columns)."""
