"""The signed identity value (web/auth.py CookieSigner): a value verified once is answered from a
per-process copy at the next requests, with its age still checked; a changed, foreign or expired
value is refused and never kept; the copy is bounded. The HTTP flows that carry it (cookie, header,
?sid=) are tested in test_web_framework.py and the end-to-end tests."""

from __future__ import annotations

from dialeval import clock
from dialeval.web import auth
from dialeval.web.auth import COOKIE_MAX_AGE, CookieSigner


def counting_signer(monkeypatch) -> tuple[CookieSigner, list[str]]:
    signer = CookieSigner("s" * 32, "study")
    checked: list[str] = []
    loads = signer._id.loads

    def counted(value, *args, **kwargs):
        checked.append(value)
        return loads(value, *args, **kwargs)

    monkeypatch.setattr(signer._id, "loads", counted)
    return signer, checked


def test_a_verified_value_is_checked_once_then_only_its_age(monkeypatch):
    signer, checked = counting_signer(monkeypatch)
    value = signer.identity_cookie(7, "nonce-7")
    first = signer.read_identity(value)
    assert first is not None and (first.annotator_id, first.nonce) == (7, "nonce-7")
    assert signer.read_identity(value) == first and signer.read_identity(value) == first
    assert checked == [value]  # the signature was checked once
    # past its age the kept copy is refused too
    monkeypatch.setattr(clock, "_offset", clock.offset())  # put back after the test
    clock.advance(COOKIE_MAX_AGE + 60)
    assert signer.read_identity(value) is None


def test_changed_and_foreign_values_are_refused_and_not_kept(monkeypatch):
    signer, checked = counting_signer(monkeypatch)
    value = signer.identity_cookie(3)
    tampered = value[:-2] + ("AA" if not value.endswith("AA") else "BB")
    foreign = CookieSigner("t" * 32, "study").identity_cookie(3)
    other_study = CookieSigner("s" * 32, "another").identity_cookie(3)
    for bad in (tampered, foreign, other_study, "not-a-signed-value", ""):
        assert signer.read_identity(bad) is None
        assert signer.read_identity(bad) is None
    assert checked.count(tampered) == 2 and checked.count(foreign) == 2  # checked each time, never kept
    assert signer.read_identity(value) is not None


def test_the_kept_values_are_bounded(monkeypatch):
    monkeypatch.setattr(auth, "VERIFIED_KEPT", 2)
    signer, checked = counting_signer(monkeypatch)
    values = [signer.identity_cookie(n) for n in (1, 2, 3)]
    for value in values:
        assert signer.read_identity(value) is not None
    assert len(signer._verified) == 2 and values[0] not in signer._verified
    assert signer.read_identity(values[0]) is not None  # checked again, still valid
    assert checked.count(values[0]) == 2 and checked.count(values[2]) == 1
