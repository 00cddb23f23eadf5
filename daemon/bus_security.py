"""CURVE encryption and ZAP authentication for a bus that leaves the host (tcp://).

Roles: gamerigd binds the bus (the proxy's XSUB and XPUB, the control REP) and is the CURVE
*server*; every service connects and is a CURVE *client*.  CURVE alone encrypts but accepts any
client key; only a ZAP handler on the server's own context checks the client's key against the
allowed ones (``authorized_clients/``), so ``acquire_authenticator`` starts a
``zmq.auth.thread.ThreadAuthenticator`` on exactly that context.

Key files use zmq.auth's certificate format (``name.key`` public, ``name.key_secret`` both halves);
``generate_keys`` writes the layout ``gamerigctl keys`` makes:

    DIR/server.key  DIR/server.key_secret  DIR/client.key  DIR/client.key_secret
    DIR/authorized_clients/client.key      (the public keys the daemon accepts)

Tested (tests/integration/test_bus_security.py, real sockets on 127.0.0.1): an allowed client key
gets messages, an unknown client key gets nothing, a plain tcp bus is refused unless insecure.
"""

from __future__ import annotations

import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

import zmq
import zmq.auth
from zmq.auth.thread import ThreadAuthenticator

from .config_errors import ConfigError

AUTHORIZED_DIR = "authorized_clients"
#: Transports that stay on this host; anything else must be encrypted or explicitly insecure.
LOCAL_TRANSPORTS = ("ipc://", "inproc://")


class InsecureBus(ValueError):
    """A tcp:// (or other network) endpoint without CURVE keys and without ``insecure: true``."""


@dataclass(frozen=True)
class BusSecurity:
    """The CURVE keys of one host: the server's pair (or only its public key) and a client pair."""

    server_public: bytes
    server_secret: bytes | None  # None on a host that only connects (e.g. a remote camera host)
    client_public: bytes
    client_secret: bytes
    allowed_clients_dir: Path | None  # the public keys the server accepts; needed to bind

    @classmethod
    def load(
        cls, server_key: Path | str, client_keys_dir: Path | str | None = None, client_key: Path | str | None = None
    ) -> BusSecurity:
        """Read the key files; a missing or bad file is a ConfigError naming it.

        server_key: ``server.key_secret`` on the daemon's host, ``server.key`` (public only) elsewhere.
        client_keys_dir: the allowed clients' public keys (default: ``authorized_clients`` beside server_key).
        client_key: this host's client pair (default: ``client.key_secret`` beside server_key).
        """
        server_key = Path(server_key)
        server_public, server_secret = _load_certificate(server_key)
        client_path = Path(client_key) if client_key is not None else server_key.parent / "client.key_secret"
        client_public, client_secret = _load_certificate(client_path)
        if client_secret is None:
            raise ConfigError(client_path, None, "a client key needs its secret half (the .key_secret file)")
        allowed = Path(client_keys_dir) if client_keys_dir is not None else server_key.parent / AUTHORIZED_DIR
        if server_secret is not None and not allowed.is_dir():
            raise ConfigError(allowed, None, "the allowed client keys folder does not exist")
        return cls(server_public, server_secret, client_public, client_secret, allowed)

    def configure_server(self, socket: zmq.Socket) -> None:
        """Make a binding socket a CURVE server (call before bind)."""
        if self.server_secret is None:
            raise ValueError("this host has only the server's public key: it cannot bind the bus")
        socket.curve_secretkey = self.server_secret
        socket.curve_publickey = self.server_public
        socket.curve_server = True

    def configure_client(self, socket: zmq.Socket) -> None:
        """Make a connecting socket a CURVE client of the server (call before connect)."""
        socket.curve_secretkey = self.client_secret
        socket.curve_publickey = self.client_public
        socket.curve_serverkey = self.server_public


def check_transport(endpoint: str, security: BusSecurity | None, insecure: bool) -> None:
    """Refuse a network endpoint that would carry the bus unencrypted and unauthenticated."""
    if endpoint.startswith(LOCAL_TRANSPORTS) or security is not None or insecure:
        return
    raise InsecureBus(
        f"{endpoint}: a network endpoint needs CURVE keys (bus.curve, made by `gamerigctl keys`); "
        "set bus.insecure: true only on a network you trust"
    )


_authenticators: dict[int, tuple[zmq.Context, ThreadAuthenticator, int]] = {}
_authenticators_lock = threading.Lock()


def acquire_authenticator(context: zmq.Context, security: BusSecurity) -> None:
    """Start the ZAP handler on ``context`` (once per context; counted, see release_authenticator).

    Without it a CURVE server accepts every client key.  Every binding CURVE socket of this context
    (proxy, control server) acquires it; the last release stops it, before context.term().  The
    allowed keys are read when it starts: a key added later counts after gamerigd restarts.
    """
    if security.allowed_clients_dir is None:
        raise ValueError("binding a CURVE socket needs the allowed client keys folder")
    with _authenticators_lock:
        entry = _authenticators.get(id(context))
        if entry is None:
            auth = ThreadAuthenticator(context)
            auth.start()
            auth.configure_curve(domain="*", location=str(security.allowed_clients_dir))
            entry = (context, auth, 0)
        _authenticators[id(context)] = (entry[0], entry[1], entry[2] + 1)


def release_authenticator(context: zmq.Context) -> None:
    """Undo one acquire_authenticator; the last one stops the ZAP thread."""
    with _authenticators_lock:
        entry = _authenticators.get(id(context))
        if entry is None:
            return
        ctx, auth, users = entry
        if users > 1:
            _authenticators[id(context)] = (ctx, auth, users - 1)
            return
        del _authenticators[id(context)]
    auth.stop()


def generate_keys(directory: Path | str) -> dict[str, Path]:
    """Write a server and a client key pair and authorize the client; refuses to overwrite keys.

    Returns the written files by role: server, server_secret, client, client_secret, authorized_clients.
    """
    directory = Path(directory)
    existing = [p for p in (directory / "server.key_secret", directory / "client.key_secret") if p.exists()]
    if existing:
        raise FileExistsError(f"{existing[0]} exists; remove the old keys first (clients holding them stop working)")
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    authorized = directory / AUTHORIZED_DIR
    authorized.mkdir(exist_ok=True, mode=0o700)
    old_umask = os.umask(0o077)  # secret files readable by their owner only
    try:
        server_public, server_secret = zmq.auth.create_certificates(directory, "server")
        client_public, client_secret = zmq.auth.create_certificates(directory, "client")
    finally:
        os.umask(old_umask)
    shutil.copyfile(client_public, authorized / "client.key")
    return {
        "server": Path(server_public),
        "server_secret": Path(server_secret),
        "client": Path(client_public),
        "client_secret": Path(client_secret),
        "authorized_clients": authorized,
    }


def _load_certificate(path: Path) -> tuple[bytes, bytes | None]:
    """(public, secret or None) from a zmq.auth certificate file, with a ConfigError on trouble."""
    if not path.is_file():
        raise ConfigError(path, None, "key file not found (make keys with `gamerigctl keys`)")
    try:
        public, secret = zmq.auth.load_certificate(path)
    except (ValueError, OSError) as exc:
        raise ConfigError(path, None, f"not a CURVE key file: {exc}") from exc
    if public is None or len(public) != 40:
        raise ConfigError(path, None, "no valid public key in the file")
    return public, secret
