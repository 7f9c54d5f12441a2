"""Files that are not UTF-8 (issue: a CSV saved by Excel in Windows-1252 gave one "not valid
UTF-8" problem per line). Import reads UTF-8 only (a UTF-8 byte-order mark is fine); a file
with any byte sequence that is not UTF-8 is refused as a whole, once, naming the first bad
line and byte and how to re-save the file. It is never decoded by guessing: the same bytes are
different letters in Windows-1252, Latin-9, Windows-1250 or Mac Roman, so a guess would
import wrong text without anyone noticing (docs/data-and-formats.md). Pure Python."""

from __future__ import annotations

# Bytes kept before the bad one to show where it is ("after 'Un caf'").
CONTEXT_BYTES = 40


def legacy_text(head: bytes) -> bool:
    """Whether ``head`` reads as text in Windows-1252 (every byte a defined, printable
    character or a tab/newline): a file in a single-byte legacy encoding, not binary data."""
    try:
        text = head.decode("cp1252")
    except UnicodeDecodeError:
        return False
    return not any(ord(ch) < 32 and ch not in "\t\n\r\f" for ch in text)


def not_utf8_message(path: str, lineno: int, raw: bytes, exc: UnicodeDecodeError, bad_lines: int) -> str:
    """The one message for a file that is not UTF-8: where the first bad byte is, what it
    would be in Windows-1252, how many lines have such bytes, and how to fix the file."""
    byte = raw[exc.start]
    before = raw[max(0, exc.start - CONTEXT_BYTES) : exc.start].decode("utf-8", errors="replace").lstrip("\ufeff")
    where = f" after {before.lstrip()!r}" if before.strip() else ""
    try:
        char = bytes([byte]).decode("cp1252")
    except UnicodeDecodeError:
        char = ""
    guess = (
        f"; in Windows-1252 / Latin-1 that byte is {char!r}, so the file was probably saved in that encoding"
        if char.isprintable() and char
        else ""
    )
    others = f" ({bad_lines} lines have such bytes)" if bad_lines > 1 else ""
    return (
        f"{path}:{lineno}: this file is not UTF-8: byte 0x{byte:02X} at byte {exc.start + 1} of the line{where} "
        f'is not valid UTF-8{guess}{others}. Save the file as UTF-8 (Excel: Save As, "CSV UTF-8"; '
        "LibreOffice: character set Unicode (UTF-8); or iconv -f WINDOWS-1252 -t UTF-8 FILE > NEW_FILE) "
        "and import it again; nothing was imported"
    )
