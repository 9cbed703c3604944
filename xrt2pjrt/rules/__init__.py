"""The rules: one family per package, one rule per module.

How to add a rule, in this order:

1. Pick its family (a package here; ``registry.CHECKLIST`` orders them) and its id,
   ``FAMILY-NAME``. Its module is ``rules/FAMILY/FAMILY_NAME.py`` (the id with ``-`` and
   ``.`` as ``_``): discovery finds it there, and nowhere else is it listed.
2. Write the module: its docstring is the rule's why (its docs in ``xrt2pjrt rules ID`` and
   docs/RULES.md): why XRT-era code breaks or changes on the target, and what the fix keeps
   or why a person decides, more than the summary says. Then one class, subclassing
   ``python.rule.PythonRule`` for Python code or ``text.rule.TextRule`` for shell and the
   other text kinds (or a mechanism's base such as ``python.environment.EnvRule``). Give it
   ``id``, a ``summary`` of one line (at most 100 characters), ``fix`` (``safe``, ``unsafe``
   or ``none``), its trigger ``words`` if not the base's, its gate (``targets``,
   ``min_version``) if any, and ``examples``, their texts ``dedent`` blocks of the code they
   show: the docs, and the tests (tests/test_rule_examples.py holds the summary and why to
   this, and runs each example through the rewriter, then again to show that a second pass
   changes nothing). Then its behaviour: the hooks (PythonRule's ``call``, ``reference``,
   ``leave`` for the ``names``/``prefixes``/``nodes`` it lists; TextRule's ``command``,
   ``word``, ``heredoc`` and the kinds' own). Helpers only its family shares go in a
   ``_private.py`` module of the family (discovery skips names starting with ``_``);
   analyses of general use in ``python/`` or ``text/``.
3. Its tests beyond the examples go in ``tests/rules/FAMILY/test_FAMILY_NAME.py``, run
   through tests/python_migrate.py or tests/text_migrate.py; tests of an engine go in
   tests/python/ or tests/text/. The test folders are no packages: a test file's name
   must be unique under tests/.
4. Its message says what to do, in a few words (its TODO line is that message, cut to the
   project's line length: about 45 characters fit at 88); the why goes in ``detail``
   (``ctx.decide(message, detail=...)``, ``rec.decide(..., detail=...)``), the report's long
   text. After rewording one, or adding a rule (its items add TODO lines to the fixtures,
   which run every rule), ``python tools/refresh_todo_examples.py`` re-renders the TODO lines
   the examples and fixtures expect.
5. Run ``python -m xrt2pjrt.guide docs``: it regenerates docs/RULES.md, the families table
   of docs/MIGRATION.md and xrt2pjrt/rule_index.py (the ids, fixes, summaries, whys and trigger
   words the parent process reads without importing the rules); tests/test_guide.py fails
   until they match.
"""
