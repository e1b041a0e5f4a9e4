"""A learner's token, compared: the right one lets in, any other (a prefix, one character off, a
longer one, none) does not, and every comparison takes the same time whatever the candidate
shares with the token (hmac.compare_digest), so a token cannot be guessed character by
character from how fast a refusal comes."""

from __future__ import annotations

import hmac

import pytest

from torchcourse.serve.access import token_matches

TOKEN = "tok-0123456789abcdefghijkl"


class TestTokenMatches:
    @pytest.mark.parametrize("candidate, expected", [
        (TOKEN, True),
        (TOKEN[:-1], False),
        (TOKEN + "x", False),
        (TOKEN[:-1] + "X", False),
        ("", False),
        (None, False),
        ("令牌" + TOKEN, False),
    ])
    def test_only_the_whole_token_matches(self, candidate, expected):
        assert token_matches(candidate, TOKEN) is expected

    def test_every_comparison_is_constant_time(self, monkeypatch):
        calls = []
        real = hmac.compare_digest

        def recording(a, b):
            calls.append((a, b))
            return real(a, b)

        monkeypatch.setattr(hmac, "compare_digest", recording)
        assert token_matches(TOKEN, TOKEN) and not token_matches(TOKEN[:5], TOKEN)
        assert len(calls) == 2, "a token was compared some other way than hmac.compare_digest"
