#!/usr/bin/env python3
"""Keeps include/kiln/torch_names.h, the names namespace torch declares from kiln, complete.

namespace torch is a namespace of its own (a program may reopen it, and torch::nn), so it names
each of kiln's top-level names with a using-declaration: a using-directive would make kiln::nn and
torch::nn both visible after `using namespace torch;`, and `nn::Linear` ambiguous. This lists
kiln's names from clang's AST of <kiln/torch.h> and checks (or, with --write, rewrites) the list.
Exit status 77 when clang++ is not installed (ctest counts it as skipped).
"""
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIST = os.path.join(ROOT, "include", "kiln", "torch_names.h")
# torch.h names the elementwise ops from their table, not from LIST.
TABLE = os.path.join(ROOT, "frontend", "elementwise_ops.def")
# Namespaces torch.h declares under torch itself; internals kept out of torch.
SKIP = {"detail"}

HEADER = """// kiln's top-level names, declared in namespace torch (and at) by <kiln/torch.h>: one
// KILN_TORCH_NAME(name) each, and KILN_TORCH_NAMESPACE(name) for each of its namespaces.
// Generated and checked by scripts/torch_names.py (ctest Build.TorchNamespaceNamesEveryKilnName):
// after adding a public name to namespace kiln, run `python3 scripts/torch_names.py --write`.
// No include guard: <kiln/torch.h> includes it twice, for torch and for at.
"""


def kiln_names():
    clang = shutil.which("clang++")
    if not clang:
        print("clang++ not found: skipped")
        sys.exit(77)
    with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
        f.write('#define KILN_TORCH_NAMES_UNCHECKED\n#include <kiln/torch.h>\n')
        src = f.name
    try:
        out = subprocess.run([clang, "-std=c++17", "-fsyntax-only", "-Xclang", "-ast-dump=json", "-I",
                              os.path.join(ROOT, "include"), "-I", ROOT, src],
                             capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(src)
    names = set()
    for decl in json.loads(out).get("inner", []):
        if decl.get("kind") != "NamespaceDecl" or decl.get("name") != "kiln":
            continue
        for m in decl.get("inner", []):
            name = m.get("name")
            if not name or m.get("isImplicit"):
                continue
            name = name.split("::")[-1]  # using-declarations: the name itself
            if name in SKIP or name.startswith("__"):
                continue
            names.add(("KILN_TORCH_NAMESPACE" if m.get("kind") == "NamespaceDecl" else "KILN_TORCH_NAME", name))
    return sorted(names)


def listed():
    if not os.path.exists(LIST):
        return []
    out = []
    for line in open(LIST).read().splitlines():
        if line.startswith("KILN_TORCH_"):
            macro, name = line[:-1].split("(")
            out.append((macro, name))
    return out


def table_names():
    return {("KILN_TORCH_NAME", n) for n in re.findall(r"^KILN_(?:UNARY|BINARY)(?:_OP)?\((\w+)", open(TABLE).read(), re.M)}


def main():
    names = sorted(set(kiln_names()) - table_names())
    if "--write" in sys.argv:
        with open(LIST, "w") as f:
            f.write(HEADER + "".join(f"{macro}({n})\n" for macro, n in names))
        print(f"wrote {len(names)} names to {LIST}")
        return 0
    missing = sorted(set(names) - set(listed()))
    if missing:
        print("namespace torch lacks these kiln names (run python3 scripts/torch_names.py --write):")
        print("  " + " ".join(n for _, n in missing))
        return 1
    print(f"namespace torch names all {len(names)} of kiln's names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
