"""The one exception type of the package: `Error`, with the gRPC code.

Every failure a caller can see is an `Error` (a bad argument, a token file that
cannot be read, the server's answer); `UnreachableError` is the subclass for a
server that could not be reached or did not answer in time (the CLI's exit 2).

    try:
        client.load_drafter("/srv/models/step-4000")
    except dflash_eval.UnreachableError:
        ...                      # retry later
    except dflash_eval.Error as e:
        print(e.code.name, e.message)   # e.g. INVALID_ARGUMENT, "tensor 'fc.weight' has shape ..."
"""

from typing import Optional

import grpc


class Error(Exception):
    """A failed call: `code` (a `grpc.StatusCode`) and the server's `message`."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


class UnreachableError(Error):
    """The server could not be reached (UNAVAILABLE) or did not answer in time
    (DEADLINE_EXCEEDED)."""

    def __init__(self, code: grpc.StatusCode, message: str, address: str) -> None:
        super().__init__(code, message)
        self.address = address


def from_rpc_error(error: grpc.RpcError, address: str, timeout: Optional[float]) -> Error:
    """The `Error` for a failed gRPC call to `address`, worded as the CLI words it."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = (error.details() if hasattr(error, "details") else None) or str(error)
    if code == grpc.StatusCode.UNAVAILABLE:
        return UnreachableError(code, f"cannot reach server at {address}: {details}", address)
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return UnreachableError(
            code, f"server at {address} did not answer within {timeout} s (timeout): {details}",
            address)
    return Error(code, details)


def invalid_argument(message: str) -> Error:
    """A bad argument, found before anything is sent."""
    return Error(grpc.StatusCode.INVALID_ARGUMENT, message)
