"""The Python rewriter (rewriter.py) and what the Python rules are written against: their
base class (rule.py), the context of a visit (context.py), and the analyses they share."""
