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
arrays: a Python walk of every dict cost more than the arrays' bytes. A vector env sends values
of one shape step after step, so both directions also keep what they worked out for a header
(:func:`functools.lru_cache`): a value whose layout (its keys, non-array items, and arrays'
dtypes and shapes) was packed before reuses that header, and a header read twice before
reuses its plan of where each array lies. Each gives the same bytes and values as the full path.
"""

from __future__ import annotations

import functools
import json
import math
import re
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import ProtocolError
from ._json import invalid, utf8
from .codes import ErrorCode

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "BINARY_MAGIC",
    "BINARY_SUBPROTOCOL",
    "from_json",
    "is_packed",
    "keeps",
    "pack",
    "packable",
    "to_json",
    "unpack",
]

#: The WebSocket subprotocol a client offers to receive (and send) these packed messages, on any
#: session; v2: every array of a message packed (a v1 peer falls back to JSON).
BINARY_SUBPROTOCOL = "openenv-gym.binary.v2"
BINARY_MAGIC = b"OGB2"
_HEADER_LENGTH = struct.Struct("<I")
_ALIGN = 8
_ARRAY = "$array"


def is_packed(message: str | bytes | bytearray | memoryview) -> bool:
    """Whether ``message`` is the binary form of :func:`pack`."""
    return not isinstance(message, str) and bytes(message[:4]) == BINARY_MAGIC


def pack(value: Any, *, reuse_headers: bool = True) -> bytes:
    """``value`` (dicts, lists, JSON scalars, numpy arrays and scalars) as one message.

    Args:
        value: what to pack.
        reuse_headers: look the value's layout up among those packed before (see the module's
            docstring). ``False`` for values whose bulk is Python scalars (a batch session's
            lists of rewards), which json's own walk encodes faster than a layout is found.
    """
    if not reuse_headers:
        return _pack_walking(value)
    arrays: list[Any] = []
    layout = _layout(value, arrays)
    if layout is not None:
        header, paddings = _header_of(layout)
        buffers = [_raw_bytes(array) + b"\0" * padding for array, padding in zip(arrays, paddings)]
        return b"".join((BINARY_MAGIC, _HEADER_LENGTH.pack(len(header)), header, *buffers))
    return _pack_walking(value)


def keeps(value: Any) -> bool:
    """Whether :func:`unpack` of :func:`pack` gives ``value`` back as it is, types too: dicts with
    string keys, lists, ``None``, ``bool``, ``int``, ``float``, ``str``, and numpy arrays and
    scalars of any dtype but object; not tuples (they come back as lists), nor ``numpy.float64``
    scalars (json writes them as the floats they subclass)."""
    import numpy as np

    kind = type(value)
    if kind is dict:
        return all(type(key) is str and keeps(item) for key, item in value.items())
    if kind is list:
        return all(keeps(item) for item in value)
    if value is None or kind in (bool, int, float, str):
        return True
    if kind is np.ndarray or (isinstance(value, np.generic) and kind is not np.float64):
        return not value.dtype.hasobject
    return False


def packable(value: Any, fallback: Callable[[Any], Any]) -> Any:
    """``value`` with each part that :func:`pack` would not give back as it is (see :func:`keeps`)
    replaced by ``fallback(part)`` (a JSON form), walking dicts and lists."""
    kind = type(value)
    if kind is dict:
        return (
            {key: packable(item, fallback) for key, item in value.items()}
            if all(type(key) is str for key in value)
            else fallback(value)
        )
    if kind is list:
        return [packable(item, fallback) for item in value]
    return value if keeps(value) else fallback(value)


def _raw_bytes(array: Any) -> bytes:
    import numpy as np

    return np.ascontiguousarray(array).tobytes()


def _layout(value: Any, arrays: list[Any]) -> Any:
    """A hashable picture of ``value`` with its arrays as ``(dtype, shape, scalar)``, collected in
    ``arrays`` in the order json writes them; ``None`` for a value the full path must take."""
    import numpy as np

    kind = type(value)
    if kind is dict:
        items = []
        for key, item in value.items():
            inner = _layout(item, arrays)
            if inner is None or type(key) is not str:
                return None
            items.append((key, inner))
        return ("d", tuple(items))
    if kind is list:
        entries = []
        for item in value:
            inner = _layout(item, arrays)
            if inner is None:
                return None
            entries.append(inner)
        return ("l", tuple(entries))
    if kind is np.ndarray or isinstance(value, np.generic):
        array = np.asarray(value)
        if array.dtype.hasobject:
            return None  # object arrays carry items: the full path
        arrays.append(array)
        return ("a", array.dtype.str, array.shape, isinstance(value, np.generic))
    if kind is float:  # by repr: 0.0 == -0.0 and nan != nan, but their headers differ
        return ("f", repr(value))
    if value is None or kind in (str, int, bool):
        return ("v", kind.__name__, value)
    return None


@functools.lru_cache(maxsize=64)
def _header_of(layout: Any) -> tuple[bytes, list[int]]:
    """The header of a value laid out as ``layout``, and the padding after each array."""
    offset, paddings = 0, []

    def rebuild(node: Any) -> Any:
        nonlocal offset
        tag = node[0]
        if tag == "d":
            return {key: rebuild(inner) for key, inner in node[1]}
        if tag == "l":
            return [rebuild(inner) for inner in node[1]]
        if tag == "v":
            return node[2]
        if tag == "f":
            return float(node[1])
        _, dtype, shape, scalar = node
        import numpy as np

        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        described: dict[str, Any] = {"dtype": dtype, "shape": list(shape)}
        if scalar:
            described["scalar"] = True
        described["offset"] = offset
        paddings.append(-nbytes % _ALIGN)
        offset += nbytes + paddings[-1]
        return {_ARRAY: described}

    value = rebuild(layout)
    return utf8(_encoder(lambda array: {})(value)), paddings


def _pack_walking(value: Any) -> bytes:
    """:func:`pack` by json's own walk, for any value."""
    buffers: list[bytes] = []
    size = 0

    def raw(array: np.ndarray) -> dict[str, Any]:
        nonlocal size
        data = array.tobytes()
        offset, padding = size, -len(data) % _ALIGN
        buffers.append(data + b"\0" * padding if padding else data)
        size += len(data) + padding
        return {"offset": offset}

    header = utf8(_encoder(raw)(value))
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
    plan = _plan_for(header) if length <= _PLANNED_HEADER_BYTES else None
    if plan is not None:
        build, slots, size = plan
        if size != len(body):
            raise invalid(f"malformed binary message: {len(body)} bytes of arrays where the header describes {size}")
        return build([_view(body, *slot) for slot in slots])
    value = _loads(header, raw)
    if end != len(body):
        raise invalid(f"malformed binary message: {len(body)} bytes of arrays where the header describes {end}")
    return value


# Headers longer than this are read the full way each time (a plan is kept only for small ones).
_PLANNED_HEADER_BYTES = 4096


def _view(body: memoryview, dtype: Any, shape: tuple[int, ...], offset: int, count: int, scalar: bool) -> Any:
    import numpy as np

    array = np.frombuffer(body, dtype=dtype, count=count, offset=offset)
    if len(shape) != 1:
        array = array.reshape(shape)
    return array[()] if scalar else array


# Headers read once (a plan is made the second time a header comes: one-off headers, such as a
# batch session's with its rewards inline, would cost a plan each and never use it), and plans.
_seen_headers: dict[str, None] = {}
_MAX_SEEN = 256


def _plan_for(header: str) -> tuple[Callable[[list[Any]], Any], list[tuple[Any, ...]], int] | None:
    if header in _seen_headers:
        return _plan_of(header)
    if len(_seen_headers) >= _MAX_SEEN:
        _seen_headers.clear()
    _seen_headers[header] = None
    return None


@functools.lru_cache(maxsize=64)
def _plan_of(header: str) -> tuple[Callable[[list[Any]], Any], list[tuple[Any, ...]], int] | None:
    """How to rebuild the value of ``header`` from its arrays: a builder, each array's
    ``(dtype, shape, offset, count, scalar)``, and the bytes of arrays the body must hold;
    ``None`` for a header the full path must read (bad, or holding object arrays)."""
    try:
        tree = json.loads(header)
    except (ValueError, RecursionError):
        return None
    slots: list[tuple[Any, ...]] = []
    end = 0

    def compile_node(node: Any) -> Callable[[list[Any]], Any] | None:
        nonlocal end
        if isinstance(node, list):
            parts = []
            for item in node:
                part = compile_node(item)
                if part is None:
                    return None
                parts.append(part)
            return lambda arrays: [part(arrays) for part in parts]
        if not isinstance(node, dict):
            return lambda arrays: node
        if len(node) == 1 and _ARRAY in node:
            described = node[_ARRAY]
            try:
                dtype = _dtype(described["dtype"])
                shape = tuple(described["shape"])
                offset = described["offset"]
            except (KeyError, TypeError, ValueError):
                return None
            if dtype.hasobject or not all(type(n) is int and n >= 0 for n in shape):
                return None
            if type(offset) is not int or offset < 0:
                return None
            count = math.prod(shape)
            nbytes = count * dtype.itemsize
            end = max(end, offset + nbytes + -nbytes % _ALIGN)
            index = len(slots)
            slots.append((dtype, shape, offset, count, bool(described.get("scalar"))))
            return lambda arrays: arrays[index]
        entries = []
        for key, item in node.items():
            part = compile_node(item)
            if part is None:
                return None
            entries.append((key, part))
        return lambda arrays: {key: part(arrays) for key, part in entries}

    build = compile_node(tree)
    return None if build is None else (build, slots, end)


def to_json(value: Any) -> str:
    """``value`` as JSON text, every array's items inline."""
    return _encoder(lambda array: {"data": array.tolist()})(value)


def from_json(text: str) -> Any:
    """The value :func:`to_json` encoded.

    Raises:
        ProtocolError: INVALID_JSON, or VALIDATION_ERROR for a malformed ``$array``.
    """
    import numpy as np

    wide_bytes = 0

    def inline(dtype: np.dtype, shape: tuple[int, ...], described: dict[str, Any]) -> np.ndarray:
        nonlocal wide_bytes
        if dtype.kind in "SV":  # to_json cannot write bytes items: what the JSON form reads, it writes
            raise ValueError(f"arrays of {dtype.str} travel packed only")
        if dtype.itemsize <= _NARROW_ITEM_BYTES:  # numpy's allocation is bounded by the text's items
            return np.asarray(described["data"], dtype=dtype).reshape(shape)
        # A wide dtype ("<U100000000") costs its itemsize per item of the text: count the items
        # (as objects) and bound the total before numpy allocates them.
        items = np.asarray(described["data"], dtype=object)
        if items.shape != shape:
            raise ValueError(f"data of shape {items.shape} for an array of shape {shape}")
        wide_bytes += items.size * dtype.itemsize
        if wide_bytes > max(_MAX_WIDE_BYTES, len(text)):
            raise ValueError(
                f"arrays of wide dtypes ({dtype.str}) would take {wide_bytes} bytes for {len(text)} of JSON"
            )
        return items.astype(dtype)

    return _loads(text, inline, ErrorCode.INVALID_JSON)


# Items up to this size (every number, bool and short string) allocate no more than the JSON
# text they come from; wider ones are counted against _MAX_WIDE_BYTES per message.
_NARROW_ITEM_BYTES = 16
_MAX_WIDE_BYTES = 2**26
# A dtype as pack writes it (``dtype.str``: "<f4", "|b1", "<U3", "<M8[ns]") or names it
# ("float32"): never numpy's comma or tuple forms, whose parser evaluates Python literals.
_DTYPE_STR = re.compile(r"[<>|=]?(?!a\d*\Z)[A-Za-z][A-Za-z0-9]*(\[[A-Za-z0-9]+\])?")  # "a8": deprecated "S8"


def _dtype(described: Any) -> np.dtype:
    """The dtype a header names; ``ValueError`` for anything but a plain dtype string."""
    import numpy as np

    if not isinstance(described, str) or not _DTYPE_STR.fullmatch(described):
        raise ValueError(f"bad dtype {described!r}")
    return np.dtype(described)


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
    except (KeyError, TypeError, OverflowError, RecursionError) as exc:  # OverflowError: -1 as uint8 data
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
        dtype = _dtype(described["dtype"])
        if dtype.hasobject:
            raise ValueError("object dtypes travel as items, never as raw bytes")
        array = arrays(dtype, shape, described)
    return array[()] if described.get("scalar") else array
