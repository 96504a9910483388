"""A name in the words a person reads, quoted as JSON: JSON.stringify's quoting (double quotes;
quotes, backslashes, controls and lone surrogates escaped), so every host, Python or JS, says
the same (tests/vectors/host-words.json). Developer errors and logs may keep repr."""

import json
import re


def quoted(name):
    text = json.dumps(name, ensure_ascii=False, default=repr)
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)
