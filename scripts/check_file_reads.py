#!/usr/bin/env python3
"""Fails when the app's code opens a file for reading without the input-file policy.

Every file a user can hand the app (a model, a workspace, a settings file, an image, anything a
dialog returns) is read through one door, core/formats/input_file.h: stat first, regular files
only, opened with O_NONBLOCK, size capped. A reader that opens a path directly (QFile, an
ifstream, fopen, open(2), mmap, QImage(path), QImageReader(path), QSettings(path), ...) can
block the GUI forever on a FIFO, fill memory from /dev/zero, or silently pass over a folder.

This check lists every place under core/, app/, ui/ and gpu/ that opens a file for reading and
fails on each that is not the door itself and not in ALLOWED below: reads that legitimately
bypass the door, each with the reason. An ALLOWED entry that no longer matches anything fails
too, so the list stays the list of what is really there. Writes are not this check's subject
(they go through the atomic writers): open(2) with O_WRONLY or O_CREAT, QFile opened WriteOnly,
fopen with a "w"/"a" mode and ofstream are passed over.

Usage: check_file_reads.py [SOURCE_ROOT]     (default: the folder above this script)
       check_file_reads.py --self-test       (shows the check catches what it should)
"""
import os
import re
import sys
import tempfile

FOLDERS = ["core", "app", "ui", "gpu"]
EXTENSIONS = (".cpp", ".h", ".hpp", ".cc")

# (file, a piece of the flagged line, why it may bypass the door). Keep each reason honest.
ALLOWED = [
    ("core/formats/input_file.cpp", "::open(path.c_str(), O_RDONLY | O_NONBLOCK",
     "the door itself: InputFile opens after the stat, non-blocking, and checks the descriptor"),
    ("core/formats/mapped_file.h", "::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file.fd()",
     "maps the descriptor of an InputFile (stat-checked weights, opened by the door)"),
    ("core/formats/output_folder.cpp", "::open(p.c_str(), O_RDONLY | O_DIRECTORY",
     "opens a folder this app just wrote, to fsync it; reads no data"),
    ("ui/main_window/default_input.cpp", 'QFile f(":/atlas/samples/sample.txt")',
     "the app's own sample text, a Qt resource compiled into the binary (not a user's file)"),
    ("gpu/vk_api.cpp", 'dlopen("libvulkan.so.1"',
     "the system's Vulkan loader, by soname from the library path, not a user's file"),
    ("gpu/vk_api.cpp", 'dlopen("libvulkan.so"',
     "the same loader's development name, when the versioned one is missing"),
]

HINT = ("read it through core/formats/input_file.h (read_input_file, InputFile, MappedFile), "
        "or, if it may bypass the door, add an ALLOWED entry in scripts/check_file_reads.py "
        "saying why")


def blank(text):
    """(code, no_comments): comments blanked in both, string and char literal contents blanked
    in `code` only; lengths and newlines kept, so offsets agree with the original."""
    code, kept = list(text), list(text)
    i, n = 0, len(text)

    def wipe(a, b, both):
        for k in range(a, b):
            if text[k] != "\n":
                code[k] = " "
                if both:
                    kept[k] = " "

    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j, True)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            wipe(i, j, True)
            i = j
        elif text[i] == '"' and i > 0 and text[i - 1] == "R" and "(" in text[i:i + 20]:
            delim = text[i + 1:text.index("(", i)]
            j = text.find(")" + delim + '"', i)
            j = n if j < 0 else j + len(delim) + 2
            wipe(i + 1, j - 1, False)
            i = j
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            wipe(i + 1, min(j, n), False)
            i = j + 1
        else:
            i += 1
    return "".join(code), "".join(kept)


def call_args(code, open_at):
    """The top-level arguments of the call whose "(" or "{" is at `open_at` (stripped), and
    the offset after its closing bracket."""
    depth, i, start, args = 0, open_at, open_at + 1, []
    while i < len(code):
        c = code[i]
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
            if depth == 0:
                args.append(code[start:i].strip())
                return [a for a in args if a], i + 1
        elif c == "," and depth == 1:
            args.append(code[start:i].strip())
            start = i + 1
        elif c == ";" and depth <= 1:
            break
        i += 1
    return [a for a in args if a], i


def statement(text, at, limit=400):
    """From `at` to the end of the statement (";") or `limit` characters."""
    end = text.find(";", at)
    return text[at:end if 0 <= end < at + limit else at + limit]


POSIX_OPEN = re.compile(r"(?:(?<![\w:])::\s*|(?<![\w.>:]))\b(open|open64|openat|creat)\s*\(")
STDIO_OPEN = re.compile(r"\b(fopen|fopen64|freopen|fdopen)\s*\(")
STREAM = re.compile(r"\b(?:std::)?(?:basic_)?(ifstream|fstream)\b")
QFILE = re.compile(r"\bQFile\b(?!::)\s*(?:\w+\s*)?[({]|\bnew\s+QFile\b|\bsetFileName\s*\(")
MMAP = re.compile(r"\bmmap(?:64)?\s*\(")
QT_IMAGE = re.compile(r"\b(QImage|QPixmap|QIcon|QBitmap|QMovie|QSvgRenderer|QPicture|QImageReader)"
                      r"\b(?!::)\s*(?:\w+\s*)?([({])")
QT_STATIC_READ = re.compile(r"\bQImageReader::(imageFormat|supportedImageFormats)\s*(\()")
LOAD = re.compile(r"\.\s*load\s*(\()")
QSETTINGS = re.compile(r"\bQSettings\b(?!::)\s*(?:\w+\s*)?([({])")
PARAMETER = re.compile(r"^(?:const\s+)?[\w:<>]+(?:\s*[&*]+\s*|\s+)\w+$")
OTHER = re.compile(r"\b(dlopen|mimeTypeForFile|addApplicationFont|copy_file)\s*\(")


def findings_in(code, kept):
    """(offset, rule) of each read that opens a file in one source text."""
    out = []

    def line_start(at):
        return code.rfind("\n", 0, at) + 1

    for m in POSIX_OPEN.finditer(code):
        flags = statement(kept, m.end())
        if not re.search(r"\bO_[A-Z]+", flags):
            continue  # a method named open, not open(2): open(2) always names its flags here
        if re.search(r"\bO_(WRONLY|CREAT)\b", flags):
            continue  # a write
        out.append((m.start(1), "open(2)"))
    for m in STDIO_OPEN.finditer(code):
        mode = re.findall(r'"([^"]*)"', statement(kept, m.end()))
        if mode and not re.search(r"[r+]", mode[-1]):
            continue  # "w" / "a": a write
        out.append((m.start(1), m.group(1)))
    for m in STREAM.finditer(code):
        if code[line_start(m.start()):m.start()].lstrip().startswith("#"):
            continue  # #include <fstream>
        out.append((m.start(1), "std::" + m.group(1)))
    for m in QFILE.finditer(code):
        window = kept[m.start():m.start() + 400]
        if "WriteOnly" in window and "ReadOnly" not in window and "ReadWrite" not in window:
            continue  # a write
        out.append((m.start(), "QFile"))
    for m in MMAP.finditer(code):
        if "MAP_ANONYMOUS" in statement(kept, m.end()):
            continue  # memory, not a file
        out.append((m.start(), "mmap"))
    for m in QT_IMAGE.finditer(code):
        args, _ = call_args(code, m.start(2))
        raw_args, _ = call_args(kept, m.start(2))
        if not args or args[0].startswith("&"):
            continue  # empty, or a device already open (a QBuffer of bytes read through the door)
        if all(PARAMETER.match(a) for a in args):
            continue  # a function returning one, declared with typed parameters
        by_path = (m.group(1) in ("QImageReader", "QSvgRenderer", "QMovie", "QPicture") or
                   len(args) == 1 or (len(raw_args) == 2 and raw_args[1].startswith('"')))
        if by_path:
            out.append((m.start(), m.group(1) + "(path)"))
    for m in QT_STATIC_READ.finditer(code):
        args, _ = call_args(code, m.start(2))
        if args and not args[0].startswith("&"):
            out.append((m.start(), "QImageReader::" + m.group(1) + "(path)"))
    for m in LOAD.finditer(code):
        args, _ = call_args(code, m.start(1))
        if args and not args[0].startswith("std::memory_order"):
            out.append((m.start(), ".load(path)"))  # QImage/QPixmap/QTranslator::load
    for m in QSETTINGS.finditer(code):
        args, _ = call_args(code, m.start(1))
        if args:
            out.append((m.start(), "QSettings(file)"))
    for m in OTHER.finditer(code):
        out.append((m.start(1), m.group(1)))
    return sorted(set(out))


def scan(root, allowed):
    """(problems, stale allow-list entries)."""
    problems, used = [], set()
    for folder in FOLDERS:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if not name.endswith(EXTENSIONS):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                text = open(path, encoding="utf-8", errors="replace").read()
                code, kept = blank(text)
                lines = text.split("\n")
                for at, rule in findings_in(code, kept):
                    number = text.count("\n", 0, at) + 1
                    # The flagged statement (it may continue on the next lines).
                    source = " ".join(l.strip() for l in lines[number - 1:number + 2])
                    hit = [k for k, (f, piece, _) in enumerate(allowed)
                           if f == rel and piece in source]
                    if hit:
                        used.update(hit)
                    else:
                        problems.append("%s:%d: %s: %s" % (rel, number, rule, lines[number - 1].strip()))
    stale = ["%s: '%s'" % (f, piece) for k, (f, piece, _) in enumerate(allowed) if k not in used]
    return problems, stale


def report(problems, stale):
    for p in problems:
        print(p)
    if problems:
        print("check_file_reads: %d read(s) bypass the input-file policy; %s" % (len(problems), HINT))
    for s in stale:
        print("check_file_reads: ALLOWED entry matches nothing (remove it): " + s)
    return 1 if problems or stale else 0


def self_test():
    bypasses = [
        'QFile f(path);\nf.open(QIODevice::ReadOnly);',
        'auto* f = new QFile(path);',
        'std::ifstream in(path);',
        'std::fstream io(path, std::ios::in);',
        'FILE* f = fopen(path.c_str(), "rb");',
        'int fd = ::open(path.c_str(), O_RDONLY);',
        'int fd = open(path.c_str(),\n             O_RDONLY | O_CLOEXEC);',
        'void* p = mmap(nullptr, n, PROT_READ, MAP_PRIVATE, fd, 0);',
        'const QImage image(path);',
        'QPixmap pm(dir.filePath(name), "PNG");',
        'QImageReader reader(path);',
        'image.load(path);',
        'QSettings imported(path, QSettings::IniFormat);',
        'const QByteArray f = QImageReader::imageFormat(path);',
        'void* h = dlopen(user_plugin.c_str(), RTLD_NOW);',
    ]
    passing = [
        '#include <fstream>',
        'std::ofstream out(path);',
        'const std::string bytes = read_input_file(path, InputKind::Text);',
        'QImage img(w, h, QImage::Format_RGB32);',
        'QImage dst(int(a * 2), int(b), QImage::Format_ARGB32);',
        'QImage empty;\nQImage blank = QImage();',
        'QImage toQImage(const RgbImage& r) {\n  return {};\n}',
        'QImageReader reader(&buffer, format);',
        'const QByteArray f = QImageReader::imageFormat(&buffer);',
        'if (g_forced.load(std::memory_order_relaxed)) return;\nint t = g_threads.load();',
        'fd_ = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);',
        'void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);',
        'FILE* out = fopen(path.c_str(), "wb");',
        'QSettings s;\nQSettings().value("k");',
        '// a comment: QFile f(path); std::ifstream in(p); fopen(p, "r");',
        'throw AtlasError(path + ": cannot open(2) it, QFile(path) failed");',
        'bool open(Json&& container) { return push(container); }\nreturn open(Json::array());',
        'GgufFile f = GgufFile::open(path);',
        'buffer.open(QIODevice::ReadOnly);',
        'QFile out(path);\nout.open(QIODevice::WriteOnly);',
    ]
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "ui"))
        sample = os.path.join(root, "ui", "sample.cpp")
        for text in bypasses:
            open(sample, "w").write(text + "\n")
            problems, _ = scan(root, [])
            if len(problems) != 1:
                print("check_file_reads self-test: %d findings (expected 1) in: %s\n%s"
                      % (len(problems), text, "\n".join(problems)))
                return 1
        for text in passing:
            open(sample, "w").write(text + "\n")
            problems, _ = scan(root, [])
            if problems:
                print("check_file_reads self-test: a legitimate line was flagged: %s\n%s"
                      % (text, "\n".join(problems)))
                return 1
        # An ALLOWED entry silences its line only, and an entry matching nothing is stale.
        open(sample, "w").write('QFile f(":/atlas/x.txt");\nstd::ifstream in(path);\n')
        allowed = [("ui/sample.cpp", 'QFile f(":/atlas/x.txt")', "a resource"),
                   ("ui/gone.cpp", "fopen(", "a file since removed")]
        problems, stale = scan(root, allowed)
        if len(problems) != 1 or "ifstream" not in problems[0] or stale != ["ui/gone.cpp: 'fopen('"]:
            print("check_file_reads self-test: allow-list mishandled: %s %s" % (problems, stale))
            return 1
    print("check_file_reads self-test: %d bypasses caught, %d legitimate lines passed, "
          "the allow-list silences only its line and reports a stale entry"
          % (len(bypasses), len(passing)))
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    problems, stale = scan(root, ALLOWED)
    code = report(problems, stale)
    if code == 0:
        print("check_file_reads: every file read goes through the input-file policy "
              "(%d allowed exceptions, each with its reason)" % len(ALLOWED))
    return code


if __name__ == "__main__":
    sys.exit(main())
