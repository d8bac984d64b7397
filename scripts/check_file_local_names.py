#!/usr/bin/env python3
"""Fails when two source files of one build target declare the same file-local name.

The unity build (cmake/unity_build.cmake) compiles a target's files eight to a translation
unit, where all anonymous namespaces are one: a repeated name is a compile error once the two
files share a batch, or, worse, a call in the later file finds the earlier file's helper
instead of the shared one it meant. Batches shift as files are added, so the rule is checked
here for every pair, not only for the pairs that happen to share a batch today.

The parsers of user files (cmake/fuzz_parser_sources.cmake) are a target of their own
(atlas_core_parsers: the sanitizer build instruments them for the fuzzers), checked as one.

Scanned: top-level declarations (column 0, the style's indentation) inside `namespace {`
blocks, and `static` functions at namespace scope. Using-declarations (`using a::b;`) name an
entity declared elsewhere and are not counted.

Usage: check_file_local_names.py [SOURCE_ROOT]     (default: the folder above this script)
       check_file_local_names.py --self-test       (shows the check catches what it should)
"""
import collections
import glob
import os
import re
import sys
import tempfile

# The folders whose .cpp files are one target each (a folder's subfolders belong to it).
TARGETS = ["core", "gpu", "ui", "app/cli", "tests/core", "tests/backend_ops", "tests/ui",
           "tests/app", "tests/gpu"]

DECLARATION = re.compile(
    r"^(?:\[\[\w+\]\] )?(?:static |inline |constexpr |const |extern )*"
    r"(?:[\w:<>,]+[ &*]+)+(\w+)\s*(?:\(|=|\[|\{|;)")
TYPE = re.compile(r"^(?:struct|class|union|enum class|enum struct|enum) (\w+)")
ALIAS = re.compile(r"^using (\w+)\s*=")
STATIC_FUNCTION = re.compile(r"^static (?:[\w:<>,]+[ &*]+)+(\w+)\s*\(", re.M)


def anonymous_namespace_bodies(text):
    """The lines of each `namespace {` block (brace-matched, comments and strings skipped)."""
    bodies = []
    for start in re.finditer(r"^namespace \{\s*$", text, re.M):
        depth, i, n = 1, start.end(), len(text)
        while i < n and depth:
            c = text[i]
            if text.startswith("//", i):
                i = text.find("\n", i)
                i = n if i < 0 else i
                continue
            if text.startswith("/*", i):
                i = text.find("*/", i) + 2
                continue
            if c == '"' or c == "'":
                if text.startswith('R"', i - 1):  # raw string: R"delim( ... )delim"
                    delim = text[i + 1:text.index("(", i)]
                    i = text.index(")" + delim + '"', i) + len(delim) + 2
                    continue
                j = i + 1
                while j < n and text[j] != c:
                    j += 2 if text[j] == "\\" else 1
                i = j + 1
                continue
            depth += c == "{"
            depth -= c == "}"
            i += 1
        bodies.append(text[start.end():i])
    return bodies


def file_local_names(path):
    text = open(path, encoding="utf-8").read()
    names = set()
    for body in anonymous_namespace_bodies(text):
        for line in body.split("\n"):
            if not line or line[0] in " \t#/}" or line.startswith("using namespace"):
                continue
            for pattern in (TYPE, ALIAS, DECLARATION):
                m = pattern.match(line)
                if m:
                    names.add(m.group(1))
                    break
    names.update(m.group(1) for m in STATIC_FUNCTION.finditer(text))
    names.discard("operator")
    return names


def parser_sources(root):
    """The files cmake/fuzz_parser_sources.cmake keeps out of the batches."""
    listing = os.path.join(root, "cmake", "fuzz_parser_sources.cmake")
    if not os.path.exists(listing):
        return set()
    text = open(listing, encoding="utf-8").read()
    found = set()
    # Listed paths, and globs (the variants' config files, core/variants/*/*_config.cpp).
    for p in re.findall(r"\$\{PROJECT_SOURCE_DIR\}/(\S+\.cpp)", text):
        matches = glob.glob(os.path.join(root, p)) if "*" in p else [os.path.join(root, p)]
        found.update(os.path.normpath(os.path.relpath(m, root)) for m in matches)
    return found


def target_sources(root):
    """{target: [source paths relative to root]}: a folder per target, the parsers apart."""
    parsers = parser_sources(root)
    targets = {"core parsers": sorted(parsers)}
    for target in TARGETS:
        files = []
        for folder, _, names in os.walk(os.path.join(root, target)):
            for f in sorted(names):
                path = os.path.normpath(os.path.relpath(os.path.join(folder, f), root))
                if f.endswith(".cpp") and path not in parsers:
                    files.append(path)
        targets[target] = files
    return targets


def repeats(root):
    found = []
    for target, files in target_sources(root).items():
        where = collections.defaultdict(list)
        for path in files:
            for name in file_local_names(os.path.join(root, path)):
                where[name].append(path)
        found += [(target, name, paths) for name, paths in sorted(where.items()) if len(paths) > 1]
    return found


def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "tests/app"))
        write = lambda name, text: open(os.path.join(root, "tests/app", name), "w").write(text)
        write("a.cpp", 'namespace {\n\nstruct Npy {\n  int x;\n};\nconst char* kUsage = "{";\n'
                       'int read(int v) {\n  return v;\n}\n\n}  // namespace\n'
                       "static int count(int) { return 0; }\n")
        write("b.cpp", "namespace {\n\nusing Npy = int;\nconstexpr int kUsage = 1;\n"
                       "double read(double v) { return v; }\nusing std::string;\n\n}  // namespace\n"
                       "static void count() {}\n")
        got = {name for _, name, _ in repeats(root)}
        want = {"Npy", "kUsage", "read", "count"}
        if got != want:
            print("check_file_local_names self-test: found %s, expected %s" % (sorted(got), sorted(want)))
            return 1
    print("check_file_local_names self-test: the repeats were found")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    found = repeats(root)
    for target, name, files in found:
        print("%s: file-local name `%s` in %s" % (target, name, ", ".join(files)))
    if found:
        print("Share the helper (a header of the folder) or name each for what it does "
              "(docs/ARCHITECTURE.md, unity build).")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
