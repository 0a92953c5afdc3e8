#!/usr/bin/env python3
"""Usage: python scripts/prefix_citations.py book/<slug>.ipynb ...

Give each chapter's citations a per-chapter key prefix (`{cite}`slug-key``) and its
bibliography `:keyprefix: slug-`, so a work cited in two chapters and on the References
page is no duplicate."""

import json, pathlib, re, sys

for path in map(pathlib.Path, sys.argv[1:]):
    slug = path.stem
    nb = json.load(open(path))
    changed = False
    for c in nb["cells"]:
        if c["cell_type"] != "markdown":
            continue
        src = "".join(c["source"])

        def cite(m):
            keys = [k.strip() for k in m.group(2).split(",")]
            keys = [k if k.startswith(slug + "-") else f"{slug}-{k}" for k in keys]
            return m.group(1) + "`" + ",".join(keys) + "`"

        new = re.sub(r"(\{cite(?::[a-z]+)?\})`([^`]+)`", cite, src)

        def bib(m):
            opts = [
                o
                for o in m.group(1).splitlines()
                if o.strip() and not o.startswith(":keyprefix:")
            ]
            return (
                "```{bibliography}\n"
                + "\n".join(opts + [f":keyprefix: {slug}-"])
                + "\n```"
            )

        new = re.sub(r"```\{bibliography\}[^\n]*\n((?::[^\n]*\n)*)```", bib, new)
        if new != src:
            c["source"] = new.splitlines(keepends=True)
            changed = True
    if changed:
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
        print("prefixed citations in", path)
