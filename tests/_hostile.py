"""Words a shell would read as more than one word, shared by the launch and shell-rewrite tests.

Each ``touch`` names a file under ``canary``: a test asserts the folder stays empty, so a word
that ran as a command anywhere (this machine or a simulated worker) is caught.
"""

from __future__ import annotations

from pathlib import Path


def hostile_words(canary: Path) -> list[str]:
    c = str(canary)
    return [
        f"$(touch {c}/dollar-paren)",
        f"`touch {c}/backquote`",
        f"\"$(touch {c}/in-double)\"",
        f"'$(touch {c}/in-single)'",
        f"; touch {c}/semicolon",
        f"&& touch {c}/and",
        f"|| touch {c}/or",
        f"| touch {c}/pipe",
        f"& touch {c}/background",
        f"> {c}/redirect",
        f"< {c}/nothing",
        f"\ntouch {c}/newline",
        f"$'\\n'touch {c}/ansi",
        f"<(touch {c}/process-sub)",
        f"\\$(touch {c}/escaped)",
        f"x'; touch {c}/quote-break; '",
        f'x"; touch {c}/dquote-break; "',
        "$HOME",
        "${HOME}",
        "$((6*7))",
        "$0",
        "$@",
        "$$",
        "~",
        "~root/x",
        "*",
        "?",
        "[a-z]*",
        "{a,b}",
        "#not-a-comment",
        "!!",
        "it's",
        'say "hi"',
        "back\\slash\\",
        "tab\there",
        "two  spaces",
        "",
        "-",
        "--",
        "é ü 中",
        "\x01ctrl",
        "A=1",
        "%s%n",
    ]
