"""Copy the article passages the error-correction notes quote into tests/data/seed_passages.json.

The two source articles are not shipped; the tests check every quoted claim against these verbatim
lines. Each line keeps its article (title, file) and the section heading it sits under, so the report
can cite "title, section" instead of a file id.

    python3 scripts/extract_seed_passages.py SEEDS_DIR > tests/data/seed_passages.json

SEEDS_DIR holds the articles as UTF-8 text files named as in ARTICLES below. A claim fragment that
is not found verbatim in its article stops the script with an error: the file can only be made from
claims that the articles really contain.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reportgen.report.notes import ARTICLES, claim_fragments  # noqa: E402

# A heading: a Chinese ordinal section ("二、推理阶段显存"), a Markdown heading, the corrections list
# ("⚠️ …"), a numbered sub-heading without sentence punctuation ("2. KV Cache 显存"), or a short line
# without any punctuation (the PPO article's section titles, "ZeRO策略", "Python 演示").
_HEADING = re.compile(r"^([一二三四五六七八九十]+、.+|#{1,4} .+|⚠️.+|\d+\. [^，。：；,:;=]{1,30}"
                      r"|[^，。：；,.:;=$|()（）`\-]{2,16})$")


def sections(text: str) -> list[tuple[str, str]]:
    """(section heading, line) for every non-empty line of an article."""
    out, heading = [], ""
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if _HEADING.match(line):
            heading = line.lstrip("# ")
        out.append((heading, line))
    return out


def main(seeds_dir: Path) -> dict:
    result = {"about": "Verbatim lines of the source articles that reportgen's error-correction notes quote, "
                       "with the section each stands in. Made by scripts/extract_seed_passages.py from the "
                       "articles themselves; do not edit by hand.",
              "articles": {}}
    texts = {a: sections((seeds_dir / meta["file"]).read_text(encoding="utf-8")) for a, meta in ARTICLES.items()}
    passages: dict[str, list[dict]] = {a: [] for a in ARTICLES}
    for quote in claim_fragments():
        hits = [(h, line) for h, line in texts[quote.article] if quote.text in line]
        if not hits:
            sys.exit(f"error: {ARTICLES[quote.article]['file']}: claim not found verbatim: {quote.text!r}")
        if len(hits) > 1:
            sys.exit(f"error: {ARTICLES[quote.article]['file']}: claim found on {len(hits)} lines, quote more of "
                     f"one: {quote.text!r}")
        heading, line = hits[0]
        if heading != quote.section:
            sys.exit(f"error: {ARTICLES[quote.article]['file']}: {quote.text!r} stands in section {heading!r}, "
                     f"not {quote.section!r} as the notes say")
        if {"section": heading, "text": line} not in passages[quote.article]:
            passages[quote.article].append({"section": heading, "text": line})
    result["articles"] = {a: {"file": meta["file"], "title_zh": meta["title_zh"], "title_en": meta["title_en"],
                              "passages": passages[a]} for a, meta in ARTICLES.items()}
    return result


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    json.dump(main(Path(sys.argv[1])), sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")
