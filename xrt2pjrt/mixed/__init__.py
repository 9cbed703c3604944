"""Files that hold code of several kinds: notebooks, Markdown and reST documents, and notebooks
exported to .py with IPython's magics.

Their Python goes to the Python rewriter (python/rewriter.py), their shell commands and
scripts to the text rewriters (text/): this package, a floor above both, cuts a file into
its pieces of each kind, hands each piece to the rewriter of its kind, and puts the results
back where they came from. Neither python/ nor text/ imports anything of the other.
"""
