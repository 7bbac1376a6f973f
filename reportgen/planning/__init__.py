"""Searches over the model: goals, the ranking of configurations, the plan of one requirement and the fleet of a period's jobs."""
