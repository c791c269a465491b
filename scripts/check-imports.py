#!/usr/bin/env python3
"""Every `import` in a target names one of its declared dependencies (a target of this package, or a
module of a product it lists) — the check `--explicit-target-dependency-import-check` is meant to do,
which this toolchain does not enforce for product dependencies. Run after `swift build` (it reads
the dependencies' manifests from .build/checkouts). Exit 1 with a list when an import is undeclared.

Usage: scripts/check-imports.py [PACKAGE_DIR]
"""
import json, os, re, subprocess, sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
SYSTEM = {"Foundation", "FoundationEssentials", "Dispatch", "Glibc", "Darwin", "Musl", "Synchronization",
          "Testing", "XCTest", "_Concurrency", "Swift", "os", "CoreFoundation", "FoundationNetworking", "FoundationXML"}


def dump(path):
    out = subprocess.run(["swift", "package", "--package-path", path, "dump-package"], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)


def product_modules():
    """product name -> set of module names, over every checked-out dependency."""
    products = {}
    checkouts = os.path.join(root, ".build", "checkouts")
    for name in sorted(os.listdir(checkouts)):
        try:
            manifest = dump(os.path.join(checkouts, name))
        except subprocess.CalledProcessError:
            continue
        for product in manifest.get("products", []):
            products.setdefault(product["name"], set()).update(product["targets"])
    return products


def main():
    manifest = dump(root)
    products = product_modules()
    problems = []
    for target in manifest["targets"]:
        name = target["name"]
        allowed = {name}
        for dependency in target["dependencies"]:
            if "byName" in dependency:
                allowed.add(dependency["byName"][0])
                allowed |= products.get(dependency["byName"][0], set())
            elif "target" in dependency:
                allowed.add(dependency["target"][0])
            elif "product" in dependency:
                allowed |= products.get(dependency["product"][0], {dependency["product"][0]})
        kind = "Tests" if target["type"] == "test" else "Sources"
        directory = os.path.join(root, target.get("path") or os.path.join(kind, name))
        for folder, _, files in os.walk(directory):
            for file in files:
                if not file.endswith(".swift"):
                    continue
                path = os.path.join(folder, file)
                for number, line in enumerate(open(path, encoding="utf-8"), 1):
                    stripped = line.strip()
                    if stripped and not re.match(r"^(//|#if|#else|#elseif|#endif|@|(public |internal |package )?import )", stripped):
                        break  # imports come first; later "import" lines are inside strings
                    match = re.match(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:public |internal |package |private |fileprivate )?import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?(\w+)", line)
                    if match and match.group(1) not in allowed and match.group(1) not in SYSTEM:
                        problems.append(f"{os.path.relpath(path, root)}:{number}: {name} imports {match.group(1)}, "
                                        "which it does not declare")
    for problem in problems:
        print(problem)
    print(f"imports: {len(problems)} undeclared" if problems else "imports: every import is declared")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
