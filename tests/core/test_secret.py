import pickle

import pytest

from recordsync.core.secret import Secret, redact

KEY = "sk_live_0123456789abcdef"


def test_secret_never_prints_itself() -> None:
    s = Secret(KEY)
    for text in (str(s), repr(s), f"{s}", f"{s!r}", format(s, ">5"), str([s]), str({"k": s})):
        assert KEY not in text
    assert s.reveal() == KEY


def test_secret_equality_and_pickling() -> None:
    assert Secret(KEY) == Secret(KEY)
    assert Secret(KEY) != Secret(KEY + "x")
    with pytest.raises(TypeError):
        pickle.dumps(Secret(KEY))


def test_redact_replaces_every_occurrence() -> None:
    text = f"x-api-key: {KEY} and again {KEY}"
    assert KEY not in redact(text, Secret(KEY), None)
    assert redact("nothing here", Secret(KEY)) == "nothing here"
