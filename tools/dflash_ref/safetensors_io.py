"""safetensors read and write, written from the format spec so that the
reference needs no package beyond torch (1.13 works)."""

import json
import struct

import torch

ST_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16,
    "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32,
    "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8, "BOOL": torch.bool,
}
ST_NAMES = {v: k for k, v in ST_DTYPES.items()}


def read_safetensors_header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n).decode("utf-8"))
    return n, header


def read_safetensors(path, names=None):
    """Returns {name: tensor} (all tensors, or only `names`)."""
    n, header = read_safetensors_header(path)
    out = {}
    with open(path, "rb") as f:
        for name, info in header.items():
            if name == "__metadata__" or (names is not None and name not in names):
                continue
            begin, end = info["data_offsets"]
            f.seek(8 + n + begin)
            buf = bytearray(f.read(end - begin))
            dtype = ST_DTYPES[info["dtype"]]
            if len(buf) == 0:
                t = torch.zeros(0, dtype=dtype)
            else:
                t = torch.frombuffer(buf, dtype=dtype)
            out[name] = t.reshape(info["shape"]).clone()
    return out


def write_safetensors(path, tensors, metadata=None):
    """tensors: {name: tensor}, written contiguously in dict order."""
    header = {}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        raw = t.view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": ST_NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)  # keep the data 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)
    return 8 + len(text) + offset
