"""Regular expressions for the Markdown constructs several stages must step around.

Code is opaque everywhere: a separator, a term to hide, an image or a formula inside a code
span or a fenced block is text, not syntax. One definition here keeps the stages in agreement.
"""

from __future__ import annotations

import re

FENCE_LINE_RE = re.compile(r"^\s{0,3}(```|~~~)")  # a line that opens or closes a fenced block
NAV_RE = re.compile(r"^\s*(\[[^\]]*\]\([^)]*\)\s*\|?\s*)+$")  # "[返回模块](…) | [返回总览](…)"
CODE_SPAN_RE = re.compile(r"(`+)(.+?)\1")
# A whole fenced block (multi-line) or a code span, for masking code out of a text.
CODE_RE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[ \t]*$|(`+).+?\2", re.S | re.M)


def mask_code(text: str) -> str:
    """text with every character inside code replaced by a space (newlines kept, offsets kept)."""
    return CODE_RE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
