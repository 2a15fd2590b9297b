"""Values holding numpy arrays, as one binary message or as JSON (pure, no I/O).

A vector env's results are arrays (observations, rewards, flags) and a dict of arrays (its
infos, with Gymnasium's ``_key`` masks). Both forms here keep every array's dtype and shape,
so what arrives equals what was sent, bit for bit:

* :func:`pack` / :func:`unpack`: the binary form. The 4 bytes :data:`BINARY_MAGIC`, a
  little-endian ``uint32`` header length, a JSON header, then the arrays' raw bytes (C order),
  each starting at a multiple of 8. In the header every array is
  ``{"$array": {"dtype": "<f4", "shape": [64, 4], "offset": 0}}``, its offset counted from the
  end of the header. Unpacked arrays are read-only views of the message (no copy).
* :func:`to_json` / :func:`from_json`: the JSON form, each array's items as a list
  (``{"$array": {"dtype": ..., "shape": ..., "data": [...]}}``); floats survive since JSON writes
  them with ``repr``.

Object arrays (Gymnasium's ``final_obs``, or text in infos) carry their items encoded one by one
(``"items"``). Numpy scalars travel as 0-d arrays and come back as numpy scalars (``float64``
ones, being Python floats, as floats); tuples come back as lists. ``"$array"`` is reserved as
the sole key of an object. ``json`` itself walks the value both ways, calling back only for
arrays: a Python walk of every dict cost more than the arrays' bytes.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import ProtocolError
from ._json import invalid
from .codes import ErrorCode

if TYPE_CHECKING:
    import numpy as np

__all__ = ["BINARY_MAGIC", "from_json", "is_packed", "pack", "to_json", "unpack"]

BINARY_MAGIC = b"OGB2"
_HEADER_LENGTH = struct.Struct("<I")
_ALIGN = 8
_ARRAY = "$array"


def is_packed(message: str | bytes | bytearray | memoryview) -> bool:
    """Whether ``message`` is the binary form of :func:`pack`."""
    return not isinstance(message, str) and bytes(message[:4]) == BINARY_MAGIC


def pack(value: Any) -> bytes:
    """``value`` (dicts, lists, JSON scalars, numpy arrays and scalars) as one message."""
    buffers: list[bytes] = []
    size = 0

    def raw(array: np.ndarray) -> dict[str, Any]:
        nonlocal size
        data = array.tobytes()
        offset, padding = size, -len(data) % _ALIGN
        buffers.append(data + b"\0" * padding if padding else data)
        size += len(data) + padding
        return {"offset": offset}

    header = _encoder(raw)(value).encode()
    return b"".join((BINARY_MAGIC, _HEADER_LENGTH.pack(len(header)), header, *buffers))


def unpack(message: bytes | bytearray | memoryview) -> Any:
    """The value :func:`pack` packed.

    Raises:
        ProtocolError: VALIDATION_ERROR for a message that is not a well-formed packed value.
    """
    import numpy as np

    message = memoryview(message)
    if bytes(message[:4]) != BINARY_MAGIC:
        raise invalid("not a packed binary message")
    try:
        (length,) = _HEADER_LENGTH.unpack_from(message, len(BINARY_MAGIC))
    except struct.error as exc:
        raise invalid(f"malformed binary message: bad header: {exc}") from exc
    start = len(BINARY_MAGIC) + _HEADER_LENGTH.size
    body = message[start + length :]
    end = 0  # where the last array's padded bytes end: the body must stop exactly there

    def raw(dtype: np.dtype, shape: tuple[int, ...], described: dict[str, Any]) -> np.ndarray:
        nonlocal end
        offset = described["offset"]
        if not isinstance(offset, int) or offset < 0:
            raise ValueError(f"bad offset {offset!r}")
        count = math.prod(shape)
        nbytes = count * dtype.itemsize
        if offset + nbytes > len(body):
            raise ValueError("an array runs past the end of the message")
        end = max(end, offset + nbytes + -nbytes % _ALIGN)
        array = np.frombuffer(body, dtype=dtype, count=count, offset=offset)
        return array if len(shape) == 1 else array.reshape(shape)

    try:
        header = bytes(message[start : start + length]).decode()
    except UnicodeDecodeError as exc:
        raise invalid(f"malformed binary message: bad header: {exc}") from exc
    value = _loads(header, raw)
    if end != len(body):
        raise invalid(f"malformed binary message: {len(body)} bytes of arrays where the header describes {end}")
    return value


def to_json(value: Any) -> str:
    """``value`` as JSON text, every array's items inline."""
    return _encoder(lambda array: {"data": array.tolist()})(value)


def from_json(text: str) -> Any:
    """The value :func:`to_json` encoded.

    Raises:
        ProtocolError: INVALID_JSON, or VALIDATION_ERROR for a malformed ``$array``.
    """
    import numpy as np

    def inline(dtype: np.dtype, shape: tuple[int, ...], described: dict[str, Any]) -> np.ndarray:
        return np.asarray(described["data"], dtype=dtype).reshape(shape)

    return _loads(text, inline, ErrorCode.INVALID_JSON)


# Encoding and decoding: json's own C code walks the value, calling back only for arrays ------


def _encoder(raw: Callable[[np.ndarray], dict[str, Any]]) -> Callable[[Any], str]:
    import numpy as np

    def default(value: Any) -> Any:
        if not isinstance(value, (np.ndarray, np.generic)):
            raise TypeError(f"{type(value).__name__} cannot travel in a packed value")
        array = np.asarray(value)
        described: dict[str, Any] = {"dtype": array.dtype.str, "shape": list(array.shape)}
        if array.ndim == 0 and isinstance(value, np.generic):
            described["scalar"] = True
        if array.dtype.hasobject:
            described.update(dtype="object", items=array.ravel().tolist())  # json encodes each item
        else:
            described.update(raw(np.ascontiguousarray(array)))
        return {_ARRAY: described}

    return json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=default).encode


def _loads(text: str, arrays: Any, json_code: ErrorCode = ErrorCode.VALIDATION_ERROR) -> Any:
    def hook(value: dict[str, Any]) -> Any:
        if len(value) != 1 or _ARRAY not in value:
            return value
        return _array(value[_ARRAY], arrays)

    try:
        return json.loads(text, object_hook=hook)
    except ValueError as exc:  # json's own errors are ValueErrors too
        if isinstance(exc, json.JSONDecodeError) and json_code is ErrorCode.INVALID_JSON:
            raise ProtocolError(json_code.value, f"Invalid JSON: {exc}") from exc
        raise invalid(f"malformed binary message: {exc}") from exc
    except (KeyError, TypeError, RecursionError) as exc:
        raise invalid(f"malformed binary message: {type(exc).__name__}: {exc}") from exc


def _array(described: dict[str, Any], arrays: Any) -> Any:
    import numpy as np

    shape = tuple(int(n) for n in described["shape"])
    if any(n < 0 for n in shape):
        raise ValueError(f"negative dimension in shape {shape}")
    if described["dtype"] == "object":
        items = described["items"]
        if not isinstance(items, list) or len(items) != math.prod(shape):
            raise ValueError(f"object array items do not fill shape {shape}")
        array = np.empty(len(items), dtype=object)
        for index, item in enumerate(items):  # one by one: numpy would stack equal-shaped items
            array[index] = item
        array = array.reshape(shape)
    else:
        dtype = np.dtype(described["dtype"])
        if dtype.hasobject:
            raise ValueError("object dtypes travel as items, never as raw bytes")
        array = arrays(dtype, shape, described)
    return array[()] if described.get("scalar") else array
