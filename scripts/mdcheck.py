#!/usr/bin/env python3
"""The Markdown side of scripts/quickstart.sh (standard library only).

    mdcheck.py blocks README.md OUTDIR   write the marked code blocks of README.md
                                         into OUTDIR, and OUTDIR/run.sh, which runs them
    mdcheck.py links FILE.md...          check every relative link of the files

Marked blocks. An HTML comment on the line before a fenced code block (blank
lines may come between; GitHub shows neither) marks the block for the test:

    <!-- quickstart: repo -->          run the block with bash from the root of the
                                       fresh copy of the repository ($QS_REPO)
    <!-- quickstart: scratch [DIR] --> run the block from folder DIR of the scratch
                                       folder, empty folders outside the copy
                                       ($QS_SCRATCH/DIR, created; no DIR: $QS_SCRATCH)
    <!-- quickstart: file [DIR/]NAME --> write the block into NAME there

run.sh runs the blocks verbatim in the order of the file, in one bash process
under `set -euo pipefail` (each block sourced), so a variable one block
exports is seen by the blocks after it, as in one terminal. Each block is
printed before it runs, with the line of the README it starts on; a failing
command stops the run, and its README line and text are printed. Since
`set -e` does not stop at a failure on the left of `&&` or `||`, a block
that runs may not use them: one command a line.

Links. Every link [text](target), ![alt](target), reference definition
[label]: target and HTML src="..."/href="..." outside code whose target is not
a URL (scheme:) must name a file or folder that exists, inside the
repository, and its #anchor must be a heading of that Markdown file (GitHub's
slugs: lower case, punctuation dropped, spaces to hyphens, -1, -2... for
repeats) or an id="..."/name="..." in it. A link to a file outside the
repository (../shared) is an error: readers of a clone do not have it.
"""

import os
import re
import sys

MARK = re.compile(r"^\s*<!--\s*quickstart:\s*(repo|scratch|file)\s*(\S*)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")


def fenced_blocks(lines):
    """Yields (start, end, info, body) of each fenced block: start is the
    index of the opening fence, end of the closing one."""
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3).strip()
        j = i + 1
        while j < len(lines):
            c = re.match(r"^\s*(`{3,}|~{3,})\s*$", lines[j])
            if c and c.group(1)[0] == fence[0] and len(c.group(1)) >= len(fence):
                break
            j += 1
        body = [l[len(indent):] if l.startswith(indent) else l.lstrip() for l in lines[i + 1:j]]
        yield i, j, info, body
        i = j + 1


def marked_blocks(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    starts = {s: (e, info, body) for s, e, info, body in fenced_blocks(lines)}
    out = []
    for k, line in enumerate(lines):
        m = MARK.match(line)
        if not m:
            continue
        kind, arg = m.group(1), m.group(2)
        ok = {"repo": not arg, "scratch": re.match(r"^[\w.-]*$", arg) and arg not in (".", ".."),
              "file": re.match(r"^([\w.-]+/)?[\w.-]+$", arg) and ".." not in arg.split("/")}[kind]
        if not ok:
            sys.exit("%s:%d: want <!-- quickstart: repo -->, <!-- quickstart: scratch [DIR] --> or "
                     "<!-- quickstart: file [DIR/]NAME -->" % (path, k + 1))
        j = k + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j not in starts:
            sys.exit("%s:%d: the quickstart mark is not followed by a fenced code block" % (path, k + 1))
        _, info, body = starts[j]
        if kind != "file":
            for n, l in enumerate(body):
                if re.search(r"&&|\|\|", l):
                    sys.exit("%s:%d: a block the test runs may not use && or || (set -e does not stop at "
                             "a failure on their left): write one command a line" % (path, j + 2 + n))
        out.append((kind, arg, info, "\n".join(body) + "\n", j + 2))
    return out


def q(s):
    return "'" + s.replace("'", "'\\''") + "'"


def write_blocks(readme, outdir):
    blocks = marked_blocks(readme)
    if not blocks:
        sys.exit("%s: no <!-- quickstart: ... --> marks" % readme)
    os.makedirs(outdir, exist_ok=True)
    name = os.path.basename(readme)
    run = [
        "# Written by scripts/mdcheck.py from %s: its marked blocks, in order." % name,
        "set -euo pipefail",
        ': "${QS_REPO:?}" "${QS_SCRATCH:?}"',
        "qs_show() { printf '\\n=== %s\\n' \"$1\"; sed 's/^/  | /' \"$2\"; }",
        "qs_start=0",
        "trap " + q('printf "\\nquickstart: %s:%d: this command failed (exit status %d): %s\\n" '
                    + q(name) + ' $((qs_start + LINENO - 1)) $? "$BASH_COMMAND" >&2') + " ERR",
    ]
    for n, (kind, arg, info, body, line) in enumerate(blocks, 1):
        f = os.path.join(outdir, "block%02d" % n)
        with open(f, "w", encoding="utf-8") as w:
            w.write(body)
        where = "%s:%d" % (name, line)
        if kind == "file":
            run.append("qs_show %s %s" % (q("%s: file %s in the scratch folder" % (where, arg)), q(f)))
            run.append("mkdir -p \"$QS_SCRATCH\"/%s" % q(os.path.dirname(arg) or "."))
            run.append("cp %s \"$QS_SCRATCH\"/%s" % (q(f), q(arg)))
            continue
        if kind == "repo":
            d, what = '"$QS_REPO"', "from the repository's root"
        else:
            d, what = '"$QS_SCRATCH"/' + q(arg or "."), "from the scratch folder %s" % (arg or ".")
            run.append("mkdir -p %s" % d)
        run.append("qs_show %s %s" % (q("%s: %s block, run %s" % (where, info or "code", what)), q(f)))
        run.append("cd %s" % d)
        run.append("qs_start=%d" % line)
        run.append("source %s" % q(f))
    run.append("printf '\\n%s\\n' " + q("quickstart: the %d marked blocks of %s ran" % (len(blocks), name)))
    with open(os.path.join(outdir, "run.sh"), "w", encoding="utf-8") as w:
        w.write("\n".join(run) + "\n")


# --- links -------------------------------------------------------------------

def slug(text):
    t = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links: their text
    t = re.sub(r"<[^>]+>", "", t)  # HTML tags
    t = t.replace("`", "").replace("*", "")
    t = t.strip().lower()
    t = re.sub(r"[^\w\- ]", "", t)
    return t.replace(" ", "-")


def strip_code(lines):
    """The lines with fenced blocks blanked and inline code removed."""
    out = list(lines)
    for s, e, _, _ in fenced_blocks(lines):
        for k in range(s, min(e + 1, len(out))):
            out[k] = ""
    return [re.sub(r"(`+)(?:(?!\1).)+?\1", "", l) for l in out]


anchors_cache = {}


def anchors(path):
    if path in anchors_cache:
        return anchors_cache[path]
    lines = open(path, encoding="utf-8").read().split("\n")
    seen, out = {}, set()
    text = strip_code(lines)
    for k, l in enumerate(lines):
        if not text[k] and l:  # inside a fenced block
            continue
        m = re.match(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", l)
        if m:
            s = slug(m.group(2))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else "%s-%d" % (s, n))
        for a in re.findall(r"""\b(?:id|name)=["']([^"']+)["']""", text[k]):
            out.add(a)
    anchors_cache[path] = out
    return out


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HTML = re.compile(r"""\b(?:src|href)=["']([^"']+)["']""")


def check_links(files, root):
    root = os.path.realpath(root)
    bad, n = [], 0
    for f in files:
        lines = open(f, encoding="utf-8").read().split("\n")
        for k, l in enumerate(strip_code(lines)):
            targets = LINK.findall(l) + HTML.findall(l)
            m = REFDEF.match(l)
            if m:
                targets.append(m.group(1))
            for t in targets:
                if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", t):  # https:, mailto:
                    continue
                n += 1
                where = "%s:%d: %s" % (f, k + 1, t)
                path, _, frag = t.partition("#")
                target = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
                real = os.path.realpath(target)
                if real != root and not real.startswith(root + os.sep):
                    bad.append(where + ": outside the repository")
                    continue
                if not os.path.exists(target):
                    bad.append(where + ": no such file")
                    continue
                if frag:
                    if os.path.isdir(target) or not target.endswith(".md"):
                        bad.append(where + ": an anchor into a file that is not Markdown")
                    elif frag not in anchors(target):
                        bad.append(where + ": no heading or id #%s in %s" % (frag, target))
    return n, bad


def main(argv):
    if len(argv) == 3 and argv[0] == "blocks":
        write_blocks(argv[1], argv[2])
        return 0
    if len(argv) >= 2 and argv[0] == "links":
        n, bad = check_links(argv[1:], os.getcwd())
        for b in bad:
            print("broken link: " + b, file=sys.stderr)
        print("links: %d relative links in %d Markdown files, %d broken" % (n, len(argv) - 1, len(bad)))
        return 1 if bad else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
