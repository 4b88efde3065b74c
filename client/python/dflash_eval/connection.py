"""Where the server is and how to talk to it: address, bearer token, TLS.

The defaults are the `dflash-eval` CLI's:

- server: the argument, else `$DFLASH_EVAL_SERVER`, else `127.0.0.1:50051`;
- token: the argument, else the first non-blank, non-`#` line of `token_file`,
  else `$DFLASH_EVAL_TOKEN` (the file wins over the environment, as
  `--token-file` does); none for a server without `--auth-token-file`;
- TLS: off unless given. `Tls(ca="ca.pem")` trusts that CA (`--tls-ca`);
  `cert`/`key` add a client certificate (mutual TLS); a plain path is taken
  as the CA; `True` uses the system's root certificates.
"""

import os
from dataclasses import dataclass
from typing import Optional, Union

import grpc

from .errors import Error, invalid_argument

DEFAULT_SERVER = "127.0.0.1:50051"

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Tls:
    """TLS settings: PEM files for the CA, and the client certificate and key."""

    ca: Optional[PathLike] = None  # None: the system's roots
    cert: Optional[PathLike] = None
    key: Optional[PathLike] = None


TlsArg = Union[None, bool, PathLike, Tls]


def resolve_server(server: Optional[str]) -> str:
    """The argument, else `$DFLASH_EVAL_SERVER`, else 127.0.0.1:50051."""
    return server or os.environ.get("DFLASH_EVAL_SERVER") or DEFAULT_SERVER


def _read(path: PathLike, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise Error(grpc.StatusCode.NOT_FOUND,
                    f"cannot read {what} file '{os.fspath(path)}': {e.strerror}") from None


def read_token_file(path: PathLike) -> str:
    """The first non-blank line of `path` that is not a `#` comment."""
    for line in _read(path, "token").decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            return line
    raise invalid_argument(f"token file '{os.fspath(path)}' holds no token")


def resolve_token(token: Optional[str], token_file: Optional[PathLike]) -> Optional[str]:
    """The bearer token to send, or None."""
    if token is not None and token_file is not None:
        raise invalid_argument("give token or token_file, not both")
    if token is not None:
        return token.strip() or None
    if token_file is not None:
        return read_token_file(token_file)
    return os.environ.get("DFLASH_EVAL_TOKEN", "").strip() or None


def make_channel(address: str, tls: TlsArg) -> grpc.Channel:
    """A plain-text channel, or a TLS one when `tls` is given."""
    if tls is None or tls is False:
        return grpc.insecure_channel(address)
    if tls is True:
        settings = Tls()
    elif isinstance(tls, Tls):
        settings = tls
    else:
        settings = Tls(ca=tls)
    if (settings.cert is None) != (settings.key is None):
        raise invalid_argument("Tls cert and key go together")
    credentials = grpc.ssl_channel_credentials(
        root_certificates=_read(settings.ca, "TLS CA") if settings.ca is not None else None,
        private_key=_read(settings.key, "TLS key") if settings.key is not None else None,
        certificate_chain=_read(settings.cert, "TLS cert") if settings.cert is not None else None)
    return grpc.secure_channel(address, credentials)
