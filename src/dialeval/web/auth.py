"""Secrets, the annotator identity cookie (signed with itsdangerous) and the admin token."""

from __future__ import annotations

import hmac
import os
import secrets
import threading
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path

from itsdangerous import BadSignature, URLSafeTimedSerializer

from .. import clock
from .limits import valid_id

SECRET_ENV = "DIALEVAL_SECRET"
ADMIN_TOKEN_ENV = "DIALEVAL_ADMIN_TOKEN"
SECRET_FILE = ".secret"
ADMIN_TOKEN_FILE = ".admin-token"
IDENTITY_COOKIE = "dialeval_id"
ADMIN_COOKIE = "dialeval_admin"
COOKIE_MAX_AGE = 14 * 24 * 3600
# The same signed session value, carried by the page for browsers that store no cookie in a
# cross-site iframe: a header on fetch(), or ?sid= on links, form actions and redirects.
SESSION_HEADER = "X-Dialeval-Session"
SESSION_PARAM = "sid"
# Sent by app.js's fetch() from a page shown in a frame: a fetch() is not a navigation, so its
# Sec-Fetch-Dest ("empty") does not say what a form post's ("iframe") says.
FRAMED_HEADER = "X-Dialeval-Framed"


def _file_value(path: Path, nbytes: int = 32) -> str:
    """Read a secret file, creating it atomically (first process wins) with mode 0600."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        value = path.read_text(encoding="utf-8").strip()
        if value:
            return value
        # a concurrent creator has not written yet; fall through to a short wait-and-read
        import time

        for _ in range(50):
            time.sleep(0.02)
            value = path.read_text(encoding="utf-8").strip()
            if value:
                return value
        raise RuntimeError(f"{path} is empty; delete it and serve again") from None
    value = secrets.token_urlsafe(nbytes)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(value + "\n")
    return value


def _shared_value(folder: Path, filename: str, nbytes: int, store, study_id: int | None) -> str:
    """The value every host must agree on: kept in the study's database (the first process stores
    it; an existing folder file's value is adopted so running sessions stay valid). The folder file
    is then (re)written from the database as the operator's copy."""
    path = Path(folder) / filename
    if store is None or study_id is None:
        return _file_value(path, nbytes)

    def first() -> str:
        old = path.read_text(encoding="utf-8").strip() if path.exists() else ""
        return old or secrets.token_urlsafe(nbytes)

    value = store.study_secret(study_id, filename.lstrip("."), first)
    try:
        if not path.exists() or path.read_text(encoding="utf-8").strip() != value:
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(value + "\n")
            os.replace(tmp, path)
    except OSError:
        pass  # a read-only folder: the database holds the value anyway
    return value


def load_secret(folder: Path, store=None, study_id: int | None = None) -> str:
    """$DIALEVAL_SECRET, else the study's signing key in its database (shared by every worker and
    host; copied to the folder's .secret), else the folder's .secret alone when no store is given."""
    return os.environ.get(SECRET_ENV) or _shared_value(folder, SECRET_FILE, 32, store, study_id)


def load_admin_token(folder: Path, store=None, study_id: int | None = None) -> str:
    """$DIALEVAL_ADMIN_TOKEN, else the study's admin token in its database (copied to .admin-token)."""
    return os.environ.get(ADMIN_TOKEN_ENV) or _shared_value(folder, ADMIN_TOKEN_FILE, 18, store, study_id)


# Identity values verified, kept per process: every request of a signed-in annotator sends the same
# value and checking its signature (base64, HMAC, JSON) was about 2% of a serve worker's CPU under
# load (py-spy, PostgreSQL ACUTE). Bounded; the oldest goes first.
VERIFIED_KEPT = 4096


@dataclass(frozen=True)
class Identity:
    annotator_id: int
    nonce: str  # ties the CSRF token to this cookie


class CookieSigner:
    """Signs the identity and admin cookies of one study (salted by the study slug)."""

    def __init__(self, secret: str, slug: str):
        self.secret = secret
        self._id = URLSafeTimedSerializer(secret, salt=f"dialeval-identity:{slug}")
        self._admin = URLSafeTimedSerializer(secret, salt=f"dialeval-admin:{slug}")
        self._verified: dict[str, tuple[Identity, float]] = {}  # value -> (identity, signed at)
        self._verified_lock = threading.Lock()

    def identity_cookie(self, annotator_id: int, nonce: str | None = None) -> str:
        return self._id.dumps({"a": int(annotator_id), "n": nonce or secrets.token_urlsafe(16)})

    def read_identity(self, value: str | None) -> Identity | None:
        if not value:
            return None
        kept = self._verified.get(value)
        if kept is not None:  # verified before: only its age is checked again
            identity, signed_at = kept
            return identity if clock.timestamp() - signed_at <= COOKIE_MAX_AGE else None
        try:
            data, signed = self._id.loads(value, max_age=COOKIE_MAX_AGE, return_timestamp=True)
            if not valid_id(data["a"]):  # signed by us, so never; but a leaked key must not crash a page
                return None
            identity = Identity(data["a"], str(data["n"]))
        except (BadSignature, KeyError, TypeError, ValueError):
            return None
        with self._verified_lock:
            if len(self._verified) >= VERIFIED_KEPT:
                del self._verified[next(iter(self._verified))]
            self._verified[value] = (identity, signed.timestamp())
        return identity

    def admin_cookie(self) -> str:
        return self._admin.dumps({"admin": True, "n": secrets.token_urlsafe(16)})

    def read_admin(self, value: str | None) -> str | None:
        """The admin session's nonce, or None."""
        if not value:
            return None
        try:
            data = self._admin.loads(value, max_age=12 * 3600)
            return str(data["n"]) if data.get("admin") else None
        except (BadSignature, KeyError, TypeError, ValueError, AttributeError):
            return None

    def confirm_token(self, annotator_id: int) -> str:
        """A short-lived signed ticket to move an annotator's session to this browser (second_browser: confirm)."""
        return self._id.dumps({"move": int(annotator_id)})

    def read_confirm(self, value: str | None, max_age: int = 600) -> int | None:
        if not value:
            return None
        try:
            data = self._id.loads(value, max_age=max_age)
            return data["move"] if valid_id(data["move"]) else None
        except (BadSignature, KeyError, TypeError, ValueError):
            return None

    def completion_code(self, annotator_id: int) -> str:
        """A per-annotator code for plain study links (no platform code configured)."""
        return hmac.new(self.secret.encode(), f"done:{annotator_id}".encode(), sha256).hexdigest()[:10].upper()


def token_matches(given: str | None, expected: str) -> bool:
    return bool(given) and hmac.compare_digest(str(given).encode(), expected.encode())
