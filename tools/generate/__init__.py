"""Generators and checkers of checked-in files (models, rules, reference docs, the CI matrix)."""
