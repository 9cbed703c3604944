"""what only a person can migrate: reported, with a TODO line."""
