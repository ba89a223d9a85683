"""Array parameters packed in PostgreSQL's binary array format by kwx, for the hot statements.

psycopg adapts a Python list element by element in Python (its list dumpers look at every value to
choose a type); for the append's facts that cost ≈ 45 µs per 100-event batch, for the read models'
documents ≈ 7 % of the projector's CPU, for its lookups' keys (a batch's accounts, tables, tenants)
≈ 0.2 ms per array of 80 (docs/projections.md §6). The elements here are bytes — stored facts,
msgspec's JSON, UTF-8 keys — so the array is a header and each element's length and bytes:

    dimensions 1, has NULLs, element type OID, length, lower bound 1, then per element its length
    (-1: NULL) and its bytes

A value of :class:`ByteaArray` or :class:`TextArray` is sent as it is, in binary (``%b``), as a
``bytea[]`` or ``text[]``; the dumpers are registered on psycopg's global adapters when this module
is imported.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import postgres
from psycopg.adapt import Dumper
from psycopg.pq import Format

_HEADER = struct.Struct(">iiiii")  # dimensions, has NULLs, element type, length, lower bound
_LENGTH = struct.Struct(">i")
_NULL = _LENGTH.pack(-1)
_BYTEA = postgres.types["bytea"]
_TEXT = postgres.types["text"]


class ByteaArray(bytes):
    """A ``bytea[]`` parameter already in the binary array format (:func:`bytea_array`)."""


class TextArray(bytes):
    """A ``text[]`` parameter already in the binary array format (:func:`text_array`)."""


class _ByteaArrayDumper(Dumper):
    format = Format.BINARY
    oid = _BYTEA.array_oid

    def dump(self, obj: Any) -> bytes:
        return bytes(obj)


class _TextArrayDumper(_ByteaArrayDumper):
    oid = _TEXT.array_oid


psycopg.adapters.register_dumper(ByteaArray, _ByteaArrayDumper)
psycopg.adapters.register_dumper(TextArray, _TextArrayDumper)


def _pack(element_oid: int, items: Sequence[bytes | None]) -> bytes:
    pack = _LENGTH.pack
    nulls = any(b is None for b in items)
    head = _HEADER.pack(1, int(nulls), element_oid, len(items), 1)
    if not nulls:
        return head + b"".join(pack(len(b)) + b for b in items)  # type: ignore[arg-type]
    return head + b"".join(_NULL if b is None else pack(len(b)) + b for b in items)


def bytea_array(items: Sequence[bytes | None]) -> ByteaArray:
    """``items`` (None: NULL) as a one-dimensional ``bytea[]``."""
    return ByteaArray(_pack(_BYTEA.oid, items))


def text_array(items: Sequence[bytes | None]) -> TextArray:
    """``items`` — each UTF-8 text (msgspec's JSON is), None: NULL — as a one-dimensional ``text[]``."""
    return TextArray(_pack(_TEXT.oid, items))


def texts(items: Sequence[str]) -> TextArray:
    """Python strings as a one-dimensional ``text[]`` (no NULLs): the keys a statement looks up."""
    return text_array([i.encode() for i in items])
