#!/usr/bin/env python3
"""Checks a PNG screenshot is not blank, with the standard library only (no Pillow).

Decodes 8-bit RGB/RGBA non-interlaced PNGs (what Qt writes), then requires: a plausible
size, many distinct colours, and a good share of pixels that are neither the most common
colour (the window background) nor near-white/near-black (the heatmap's colours).
"""
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"FAIL: {path} is not a PNG")
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise SystemExit(f"FAIL: unsupported PNG (depth {depth}, colour type {ctype})")
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def main():
    path = sys.argv[1]
    width, height, bpp, rows = read_png(path)
    counts = {}
    coloured = 0
    total = 0
    for y in range(0, height, 2):
        row = rows[y]
        for x in range(0, width, 2):
            r, g, b = row[x * bpp], row[x * bpp + 1], row[x * bpp + 2]
            counts[(r, g, b)] = counts.get((r, g, b), 0) + 1
            total += 1
            if max(r, g, b) - min(r, g, b) > 40:  # saturated: heatmap colours, not UI greys
                coloured += 1
    share = coloured / total
    print(f"{path}: {width}x{height}, {len(counts)} colours, {share:.1%} saturated pixels")
    if width < 400 or height < 300:
        raise SystemExit("FAIL: screenshot too small")
    if len(counts) < 50:
        raise SystemExit("FAIL: screenshot looks blank (fewer than 50 colours)")
    if share < 0.05:
        raise SystemExit("FAIL: no heatmap visible (under 5% saturated pixels)")
    print("PASS")


if __name__ == "__main__":
    main()
