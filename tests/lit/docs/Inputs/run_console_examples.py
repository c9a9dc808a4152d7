#!/usr/bin/env python3
"""Runs the shell examples of a Markdown page and checks their output.

  run_console_examples.py PAGE.md WORKDIR GRAFT

In WORKDIR it first writes every ```graft block whose first line is
"# file: NAME" to NAME. Then, in page order, it runs each "$ COMMAND" line
of the ```console blocks (with a leading "graft", or one after environment
assignments, replaced by GRAFT) and
compares stdout and stderr, together, with the lines shown after it:

- times ("4.2 ms", "850 ns", "1.3 s") and rates ("3.1 GFLOP/s") match any
  time or rate, since they differ from run to run;
- a line "..." matches any number of lines;
- a command whose shown output has a line "graft: error: ..." must exit 1,
  every other command 0.
Exits 1 with a diff-like report on the first mismatch.
"""

import difflib
import os
import re
import subprocess
import sys

TIME = re.compile(r"\b\d+(\.\d+)? (ns|us|ms|s)\b")
RATE = re.compile(r"\b\d+(\.\d+)? GFLOP/s\b")


def normalize(line):
    return RATE.sub("<rate>", TIME.sub("<time>", line.rstrip()))


def matches(expected, actual):
    """Whether the actual lines fit the expected ones ("..." skips lines)."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[i:])
                   for i in range(len(actual) + 1))
    return (bool(actual) and normalize(expected[0]) == normalize(actual[0])
            and matches(expected[1:], actual[1:]))


def report(command, status, want, expected, actual):
    """Says how an example failed, on stdout (for FileCheck) and, with a diff
    that leads to the first differing line, on stderr (for whoever reads the
    test log, which may keep only its tail)."""
    text = "\n".join([
        f"example: $ {command}",
        f"exit status {status}, expected {want}",
        "expected output:\n  " + "\n  ".join(expected),
        "actual output:\n  " + "\n  ".join(actual)])
    print(text)
    diff = difflib.unified_diff([normalize(l) for l in expected],
                                [normalize(l) for l in actual],
                                "shown on the page", "printed", n=1, lineterm="")
    print(f"example: $ {command}: exit status {status} (expected {want}); "
          "differences, times and rates aside:\n" + "\n".join(diff),
          file=sys.stderr)


def parse(page):
    """The files to write and the (command, expected lines) to run."""
    files, examples = {}, []
    block, lines = None, []
    for line in open(page, encoding="utf-8").read().splitlines():
        if block is None:
            if line.startswith("```"):
                block, lines = line[3:].strip(), []
            continue
        if line.startswith("```"):
            if block == "graft" and lines and lines[0].startswith("# file: "):
                files[lines[0][len("# file: "):].strip()] = "\n".join(lines) + "\n"
            elif block == "console":
                for l in lines:
                    if l.startswith("$ "):
                        examples.append((l[2:], []))
                    elif examples:
                        examples[-1][1].append(l)
            block = None
            continue
        lines.append(line)
    return files, examples


def main():
    page, workdir, graft = sys.argv[1:4]
    files, examples = parse(page)
    if not examples:
        sys.exit(f"{page}: no console examples")
    os.makedirs(workdir, exist_ok=True)
    for name, text in files.items():
        with open(os.path.join(workdir, name), "w", encoding="utf-8") as f:
            f.write(text)
    for command, expected in examples:
        # "graft ..." or "VAR=value graft ...": the graft under test.
        shell = re.sub(r"^((?:\w+=\S*\s+)*)graft\b",
                       lambda m: m.group(1) + graft, command)
        result = subprocess.run(shell, shell=True, cwd=workdir, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        want = 1 if any(l.startswith("graft: error:") for l in expected) else 0
        actual = result.stdout.splitlines()
        if result.returncode != want or not matches(expected, actual):
            report(command, result.returncode, want, expected, actual)
            sys.exit(1)
        print(f"ok: $ {command}")


if __name__ == "__main__":
    main()
