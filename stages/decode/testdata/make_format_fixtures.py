#!/usr/bin/python3
"""make_format_fixtures.py: WebP, TIFF, GIF, BMP and PPM/PGM/PBM test files, made by PIL,
with PIL's own decode of each as the reference.

    /usr/bin/python3 make_format_fixtures.py OUT_DIR [--fuzz_seeds]

Writes OUT_DIR/NAME (the image file), OUT_DIR/NAME.rgb (PIL's
Image.open(NAME).convert('RGB').tobytes(), for good files) and OUT_DIR/manifest.tsv, one
line per file: `NAME<TAB>EXPECT<TAB>WIDTH<TAB>HEIGHT`, where EXPECT is `exact` (the decoder
must give PIL's pixels), `hibyte16` (a 16-bit gray file: the reference is the high byte,
where PIL's convert('RGB') would clip to white), `spec` (the reference is the image the
file encodes, where PIL decodes it wrongly: an RLE delta) or the reason a bad file must be refused
with (`truncated`, `corrupt`, `too_many_pixels`, `unsupported`). Files PIL cannot write
(top-down and 16-bit BMPs, tiled TIFFs, plain-text Netpbm, header bombs) are built here
byte by byte; the good ones are still decoded by PIL for the reference.

--fuzz_seeds writes only the image files, each behind the fuzz body's 8-byte header
(tests/fuzz/fuzz_body.h), for run_fuzz.sh's seed corpus.
"""
import io
import os
import struct
import sys

from PIL import Image

WIDTH, HEIGHT = 203, 157  # Odd sizes: partial blocks, odd chroma, unaligned rows.


def picture(mode, w=WIDTH, h=HEIGHT):
    """A deterministic picture with edges, gradients and noise, in `mode`."""
    im = Image.new("RGB", (w, h))
    px = im.load()
    seed = 12345
    for y in range(h):
        for x in range(w):
            seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF
            noise = (seed >> 16) & 31
            px[x, y] = ((x * 255 // max(1, w - 1)) ^ noise,
                        (y * 255 // max(1, h - 1)) ^ (noise << 1 & 255),
                        ((x + y) * 3 + (128 if (x // 16 + y // 16) % 2 else 0)) & 255)
    if mode == "RGBA":
        alpha = Image.new("L", (w, h))
        alpha.putdata([64 + (x * 191 // max(1, w - 1)) for y in range(h) for x in range(w)])
        im.putalpha(alpha)
        return im
    if mode == "P":
        return im.quantize(colors=200)
    return im.convert(mode)


def gray16(w=WIDTH, h=HEIGHT):
    """A 16-bit gray picture whose low bytes differ from its high bytes."""
    im = Image.new("I;16", (w, h))
    im.putdata([(x * 65535 // (w - 1)) ^ (y * 37) for y in range(h) for x in range(w)])
    return im


def reference_rgb(im):
    """What the decoder must give: PIL's convert('RGB'), except 16-bit gray, whose high
    byte we keep where convert('RGB') clips everything above 255 to white."""
    if not im.mode.startswith("I;16"):
        return im.convert("RGB").tobytes()
    high = bytes(v >> 8 for v in im.getdata())
    return bytes(v for g in high for v in (g, g, g))


def encoded(im, fmt, **kw):
    out = io.BytesIO()
    im.save(out, fmt, **kw)
    return out.getvalue()


def bmp_bytes(w, h, bits, rows_top_down, masks=None, top_down=False, compression=0):
    """A BMP with a 40-byte info header (+ BI_BITFIELDS masks) from rows of raw pixels."""
    stride = (w * bits + 31) // 32 * 4
    data = b"".join(r.ljust(stride, b"\0") for r in
                    (rows_top_down if top_down else list(reversed(rows_top_down))))
    extra = b"".join(struct.pack("<I", m) for m in masks) if masks else b""
    offset = 14 + 40 + len(extra)
    info = struct.pack("<IiiHHIIiiII", 40, w, -h if top_down else h, 1, bits, compression,
                       len(data), 2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", offset + len(data), 0, 0, offset) + info + extra + data


def lzw_literals(indices, min_code=8):
    """GIF image data coding each index as a literal after a clear code (no table)."""
    clear, end = 1 << min_code, (1 << min_code) + 1
    codes = [c for i in indices for c in (clear, i)] + [end]
    bits, n, out = 0, 0, bytearray()
    for c in codes:
        bits |= c << n
        n += min_code + 1
        while n >= 8:
            out.append(bits & 255)
            bits >>= 8
            n -= 8
    if n:
        out.append(bits & 255)
    blocks = b"".join(bytes([len(out[i:i + 255])]) + bytes(out[i:i + 255])
                      for i in range(0, len(out), 255))
    return bytes([min_code]) + blocks + b"\0"


def gif_bytes(screen, frame, indices, colors, transparent=None):
    """A one-frame GIF: `screen` (w, h), `frame` (left, top, w, h), a global table."""
    bits = max(1, (len(colors) - 1).bit_length())
    table = b"".join(bytes(c) for c in colors).ljust(3 << bits, b"\0")
    out = b"GIF89a" + struct.pack("<HHBBB", screen[0], screen[1], 0x80 | (bits - 1), 0, 0)
    out += table
    if transparent is not None:
        out += b"!\xF9\x04\x01\0\0" + bytes([transparent]) + b"\0"
    out += b"," + struct.pack("<HHHHB", *frame, 0) + lzw_literals(indices) + b";"
    return out


def bmp_palette_bytes(indices, colors):
    """An 8-bit, one-row BMP whose palette has only len(colors) entries."""
    palette = b"".join(bytes([b, g, r, 0]) for r, g, b in colors)
    data = bytes(indices).ljust((len(indices) + 3) // 4 * 4, b"\0")
    offset = 14 + 40 + len(palette)
    info = struct.pack("<IiiHHIIiiII", 40, len(indices), 1, 1, 8, 0, len(data), 0, 0,
                       len(colors), 0)
    return (b"BM" + struct.pack("<IHHI", offset + len(data), 0, 0, offset) + info + palette +
            data)


def rle_bmp(im, rle4, delta=False):
    """A bottom-up RLE8 (or RLE4) BMP of palette image `im`, with encoded runs, absolute
    runs, end-of-line and end-of-bitmap codes (PIL writes no RLE). No delta code: PIL 9.4
    reads two bytes past a delta's own two (a bug), so no file with one decodes alike;
    with `delta`, the bottom row's first 5 pixels are skipped by one (index 0, per the
    format), for a file whose reference is the intended image, not PIL's."""
    w, h = im.size
    idx = im.tobytes()
    rows = [idx[y * w:(y + 1) * w] for y in reversed(range(h))]  # File order: bottom up.
    out = bytearray()
    for r, row in enumerate(rows):
        i = 0
        if delta and r == 0:
            out += bytes([0, 2, 5, 0])
            i = 5
        while i < w:
            j = i
            while j < w and row[j] == row[i] and j - i < 254:
                j += 1
            chunk = 4 if rle4 else 3
            if j - i >= 2 or w - i < chunk:
                n = j - i if j - i >= 2 else 1
                out += bytes([n, row[i] * 17 if rle4 else row[i]])
                i += n
                continue
            k = i + chunk  # An absolute run (RLE4: of even length, as PIL reads n / 2 bytes).
            while k + (2 if rle4 else 1) <= w and k - i < 254 and row[k] != row[k - 1]:
                k += 2 if rle4 else 1
            lit = row[i:k]
            data = bytes(lit[t] << 4 | lit[t + 1] for t in range(0, len(lit), 2)) if rle4 else lit
            out += bytes([0, len(lit)]) + data + (b"\0" if len(data) % 2 else b"")
            i = k
        out += b"\0\0"
    out += b"\0\1"
    colors = im.getpalette()[:3 * (16 if rle4 else 256)]
    colors += [0] * (3 * (16 if rle4 else 256) - len(colors))
    palette = b"".join(bytes([colors[3 * c + 2], colors[3 * c + 1], colors[3 * c], 0])
                       for c in range(len(colors) // 3))
    offset = 14 + 40 + len(palette)
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 4 if rle4 else 8, 2 if rle4 else 1,
                       len(out), 0, 0, 0, 0)
    return b"BM" + struct.pack("<IHHI", offset + len(out), 0, 0, offset) + info + palette + out


def with_zero_corner(pal):
    """`pal` with its bottom row's first 5 pixels set to index 0 (rle_bmp's delta)."""
    im = pal.copy()
    for x in range(5):
        im.putpixel((x, im.height - 1), 0)
    return im


def tiled_tiff(im, tile=32):
    """An uncompressed, tiled, little-endian RGB TIFF (PIL writes only strips)."""
    w, h = im.size
    raw = im.tobytes()
    across, down = (w + tile - 1) // tile, (h + tile - 1) // tile
    tiles = []
    for ty in range(down):
        for tx in range(across):
            rows = []
            for r in range(tile):
                y = ty * tile + r
                row = raw[(y * w + tx * tile) * 3:(y * w + min(w, tx * tile + tile)) * 3] if y < h else b""
                rows.append(row.ljust(tile * 3, b"\0"))
            tiles.append(b"".join(rows))
    entries = 12
    ifd_size = 2 + entries * 12 + 4
    bps_at = 8 + ifd_size
    offsets_at = bps_at + 6
    counts_at = offsets_at + 4 * len(tiles)
    data_at = counts_at + 4 * len(tiles)
    offsets, pos = [], data_at
    for t in tiles:
        offsets.append(pos)
        pos += len(t)

    def entry(tag, typ, count, value):
        return struct.pack("<HHI", tag, typ, count) + struct.pack("<I", value)

    ifd = struct.pack("<H", entries) + b"".join([
        entry(256, 4, 1, w), entry(257, 4, 1, h), entry(258, 3, 3, bps_at),
        entry(259, 3, 1, 1), entry(262, 3, 1, 2), entry(277, 3, 1, 3),
        entry(284, 3, 1, 1), entry(322, 3, 1, tile), entry(323, 3, 1, tile),
        entry(324, 4, len(tiles), offsets_at), entry(325, 4, len(tiles), counts_at),
        entry(339, 3, 1, 1),
    ]) + struct.pack("<I", 0)
    return (b"II*\0" + struct.pack("<I", 8) + ifd + struct.pack("<HHH", 8, 8, 8) +
            b"".join(struct.pack("<I", o) for o in offsets) +
            b"".join(struct.pack("<I", len(t)) for t in tiles) + b"".join(tiles))


def tiff_header_bomb(w, h):
    """A gray TIFF whose header declares w x h pixels and holds one strip of 16 bytes."""
    entries = 8
    data_at = 8 + 2 + entries * 12 + 4

    def entry(tag, typ, count, value):
        return struct.pack("<HHII", tag, typ, count, value)

    ifd = struct.pack("<H", entries) + b"".join([
        entry(256, 4, 1, w), entry(257, 4, 1, h), entry(258, 3, 1, 8), entry(259, 3, 1, 1),
        entry(262, 3, 1, 1), entry(273, 4, 1, data_at), entry(278, 4, 1, h),
        entry(279, 4, 1, 16)]) + struct.pack("<I", 0)
    return b"II*\0" + struct.pack("<I", 8) + ifd + b"\0" * 16


def vp8l_bomb(lossless_webp):
    """A lossless WebP whose VP8L header is patched to declare 16384 x 16384 pixels."""
    b = bytearray(lossless_webp)
    at = b.index(b"VP8L") + 8  # Chunk payload: 0x2f, then 14 + 14 bits of size - 1.
    bits = int.from_bytes(b[at + 1:at + 5], "little")
    bits = (bits & ~((1 << 28) - 1)) | 16383 | (16383 << 14)
    b[at + 1:at + 5] = bits.to_bytes(4, "little")
    return bytes(b)


def good_files():
    rgb, gray, rgba, pal = picture("RGB"), picture("L"), picture("RGBA"), picture("P")
    small = picture("RGB", 37, 23)
    files = {
        "lossy.webp": encoded(rgb, "WEBP", quality=80),
        "lossless.webp": encoded(rgb, "WEBP", lossless=True),
        "alpha_lossless.webp": encoded(rgba, "WEBP", lossless=True, exact=True),
        "alpha_lossy.webp": encoded(rgba, "WEBP", quality=90, exact=True),
        "raw.tif": encoded(rgb, "TIFF"),
        "lzw.tiff": encoded(rgb, "TIFF", compression="tiff_lzw"),
        "deflate.tif": encoded(rgb, "TIFF", compression="tiff_adobe_deflate"),
        "packbits_gray.tif": encoded(gray, "TIFF", compression="packbits"),
        "jpeg.tif": encoded(rgb, "TIFF", compression="jpeg"),
        "bilevel.tif": encoded(gray.point(lambda v: 255 if v > 100 else 0).convert("1"),
                               "TIFF", compression="group4"),
        "palette.tif": encoded(pal, "TIFF"),
        "rgba.tif": encoded(rgba, "TIFF", compression="tiff_lzw"),
        "gray16.tif": encoded(gray16(), "TIFF"),
        "cmyk.tif": encoded(rgb.convert("CMYK"), "TIFF", compression="tiff_lzw"),
        "tiled.tif": tiled_tiff(rgb),
        "interlaced.gif": encoded(pal, "GIF"),
        "progressive_off.gif": encoded(pal, "GIF", interlace=False),
        "transparent.gif": encoded(pal, "GIF", transparency=3),
        "gray.gif": encoded(gray, "GIF"),
        # Indices past the colour table (PIL: gray levels), a frame inside the screen
        # (index 0 around it, or the transparent index), a frame past it (canvas grows).
        "index_past_table.gif": gif_bytes((4, 1), (0, 0, 4, 1), [0, 1, 5, 200],
                                          [(255, 0, 0), (0, 255, 0)]),
        "frame_inside.gif": gif_bytes((6, 4), (1, 1, 3, 2), [1, 2, 3, 3, 2, 1],
                                      [(9, 8, 7), (255, 0, 0), (0, 255, 0), (0, 0, 255)]),
        "frame_inside_transparent.gif": gif_bytes(
            (6, 4), (1, 1, 3, 2), [1, 2, 3, 3, 2, 1],
            [(9, 8, 7), (255, 0, 0), (0, 255, 0), (0, 0, 255)], transparent=2),
        "frame_past_screen.gif": gif_bytes((2, 2), (1, 1, 3, 2), [1, 2, 3, 3, 2, 1],
                                           [(9, 8, 7), (255, 0, 0), (0, 255, 0), (0, 0, 255)]),
        "rgb24.bmp": encoded(rgb, "BMP"),
        "palette8.bmp": encoded(pal, "BMP"),
        "gray8.bmp": encoded(gray, "BMP"),
        "bilevel1.bmp": encoded(gray.convert("1"), "BMP"),
        "rgba32.bmp": encoded(rgba, "BMP"),
        "top_down.bmp": bmp_bytes(small.width, small.height, 24, [
            bytes(v for px in [small.getpixel((x, y))[::-1] for x in range(small.width)]
                  for v in px) for y in range(small.height)], top_down=True),
        "rle8.bmp": rle_bmp(pal, rle4=False),
        "rle4.bmp": rle_bmp(picture("RGB").quantize(colors=16), rle4=True),
        "index_past_palette.bmp": bmp_palette_bytes([0, 1, 5, 200],
                                                    [(255, 0, 0), (0, 255, 0)]),
        "rgb565.bmp": bmp_bytes(small.width, small.height, 16, [
            b"".join(struct.pack("<H", (r >> 3) << 11 | (g >> 2) << 5 | b >> 3)
                     for r, g, b in (small.getpixel((x, y)) for x in range(small.width)))
            for y in range(small.height)], masks=(0xF800, 0x07E0, 0x001F), compression=3),
        "rgb.ppm": encoded(rgb, "PPM"),
        "gray.pgm": encoded(gray, "PPM"),
        "bilevel.pbm": encoded(gray.convert("1"), "PPM"),
        "UPPER.PPM": encoded(small, "PPM"),
        "maxval1000.ppm": b"P6\n# a comment\n37 23\n1000\n" + b"".join(
            struct.pack(">H", v * 1000 // 255) for v in small.tobytes()),
        "maxval15.pgm": b"P5 37 23 15\n" + bytes(v >> 4 for v in small.convert("L").tobytes()),
        "plain.ppm": ("P3\n37 23\n255\n" + "\n".join(
            " ".join(str(v) for v in small.tobytes()[i:i + 37 * 3])
            for i in range(0, 37 * 23 * 3, 37 * 3)) + "\n").encode(),
        "plain.pgm": ("P2 37 23 7\n" + " ".join(
            str(v * 7 // 255) for v in small.convert("L").tobytes()) + "\n").encode(),
    }
    return files


def bad_files(good):
    half = lambda name: good[name][:len(good[name]) // 2]
    anim = io.BytesIO()
    picture("RGB", 16, 16).save(anim, "WEBP", save_all=True, duration=50,
                                append_images=[picture("L", 16, 16).convert("RGB")])
    gif_no_image = good["progressive_off.gif"][:13 + 3 * 256] + b";"
    bad_gif_record = bytearray(good["progressive_off.gif"])
    bad_gif_record[13 + 3 * 256] = 0x99  # Where the image descriptor (",") starts.
    bad_webp = bytearray(good["lossless.webp"])
    bad_webp[bad_webp.index(b"VP8L") + 8] = 0  # The VP8L signature byte.
    return {
        "half.webp": ("truncated", half("lossy.webp")),
        "half_lossless.webp": ("truncated", half("lossless.webp")),
        "half.tif": ("truncated", half("raw.tif")),
        "half_lzw.tif": ("truncated", half("lzw.tiff")),
        "half.gif": ("truncated", half("interlaced.gif")),
        "half.bmp": ("truncated", half("rgb24.bmp")),
        "half.ppm": ("truncated", half("rgb.ppm")),
        "half_plain.ppm": ("truncated", half("plain.ppm")),
        "bomb.webp": ("too_many_pixels", vp8l_bomb(good["lossless.webp"])),
        "bomb.tif": ("too_many_pixels", tiff_header_bomb(30000, 30000)),
        "bomb.gif": ("too_many_pixels", b"GIF89a\xff\xff\xff\xff\x00\x00\x00" +
                     b",\0\0\0\0\x01\0\x01\0\0\x02\x02\x44\x01\0;"),
        "bomb.bmp": ("too_many_pixels", bmp_bytes(1, 1, 24, [b"\0\0\0"])[:18] +
                     struct.pack("<ii", 20000, 20000) + bmp_bytes(1, 1, 24, [b"\0\0\0"])[26:]),
        "bomb.ppm": ("too_many_pixels", b"P6\n20000 20000\n255\n" + b"\0" * 64),
        "animated.webp": ("unsupported", anim.getvalue()),
        "float.tif": ("unsupported", encoded(picture("L").convert("F"), "TIFF")),
        "half_rle8.bmp": ("truncated", half("rle8.bmp")),
        "rle_24bit.bmp": ("unsupported", bmp_bytes(2, 2, 24, [b"\0" * 6] * 2, compression=1)),
        "bad_signature.webp": ("corrupt", bytes(bad_webp)),
        "no_image.gif": ("corrupt", gif_no_image),
        "bad_record.gif": ("corrupt", bytes(bad_gif_record)),
        "bits7.bmp": ("corrupt", bmp_bytes(2, 2, 24, [b"\0" * 6] * 2)[:28] + b"\x07\0" +
                      bmp_bytes(2, 2, 24, [b"\0" * 6] * 2)[30:]),
        "maxval0.pgm": ("corrupt", b"P5 4 4 0\n" + b"\0" * 16),
        "too_large_sample.pgm": ("corrupt", b"P2 2 1 7\n3 9\n"),
    }


def main():
    out, fuzz = sys.argv[1], "--fuzz_seeds" in sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    good = good_files()
    lines = []
    for name, data in good.items():
        im = Image.open(io.BytesIO(data))
        expect = "hibyte16" if im.mode.startswith("I;16") else "exact"
        if not fuzz:
            with open(os.path.join(out, name + ".rgb"), "wb") as f:
                f.write(reference_rgb(im))
        lines.append((name, expect, im.size[0], im.size[1], data))
    intended = with_zero_corner(picture("P"))
    if not fuzz:
        with open(os.path.join(out, "rle8_delta.bmp.rgb"), "wb") as f:
            f.write(intended.convert("RGB").tobytes())
    lines.append(("rle8_delta.bmp", "spec", WIDTH, HEIGHT, rle_bmp(intended, False, delta=True)))
    for name, (reason, data) in bad_files(good).items():
        lines.append((name, reason, 0, 0, data))
    with open(os.path.join(out, "manifest.tsv"), "w") as manifest:
        for name, expect, w, h, data in lines:
            with open(os.path.join(out, name), "wb") as f:
                f.write(b"\0" * 8 + data if fuzz else data)
            manifest.write(f"{name}\t{expect}\t{w}\t{h}\n")


if __name__ == "__main__":
    main()
