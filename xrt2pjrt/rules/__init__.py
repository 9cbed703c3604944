"""Python rules and the libcst engine that runs them (rules/python.py)."""
