"""The rules, one family per package."""
