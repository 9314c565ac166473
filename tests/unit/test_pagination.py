"""Page sizes and opaque page tokens bound to their listing, parent and filters."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest

from mnemo_server.api import pagination
from mnemo_server.api.validation import Validator
from mnemo_server.domain.errors import InvalidArgument


def test_page_size_defaults_and_caps() -> None:
    sizes = pagination.PageSizes(default=50, maximum=500)
    assert pagination.page_size(0, sizes) == 50
    assert pagination.page_size(7, sizes) == 7
    assert pagination.page_size(500, sizes) == 500
    assert pagination.page_size(501, sizes) == 500
    assert pagination.page_size(2**31 - 1, sizes) == 500


def test_negative_page_size_is_invalid_field() -> None:
    with pytest.raises(InvalidArgument) as caught:
        pagination.page_size(-1, pagination.MESSAGES, field="batch_size")
    assert caught.value.reason == "INVALID_FIELD"
    assert [v.field for v in caught.value.violations] == ["batch_size"]


KEYSETS = [
    (41,),
    ("conv-1", 3, None, True, 1.5),
    (datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=UTC), "c9"),
]


@pytest.mark.parametrize("keyset", KEYSETS)
def test_token_round_trip(keyset: tuple[object, ...]) -> None:
    token = pagination.encode_page_token("ListX", ("users/u1",), keyset)
    assert token and "=" not in token
    assert pagination.decode_page_token(token, "ListX", ("users/u1",)) == keyset


def test_no_next_page_is_an_empty_token_and_empty_token_is_first_page() -> None:
    assert pagination.encode_page_token("ListX", ("users/u1",), None) == ""
    assert pagination.decode_page_token("", "ListX", ("users/u1",)) is None


def _invalid(token: str, kind: str = "ListX", binding: tuple[str, ...] = ("users/u1",)) -> None:
    with pytest.raises(InvalidArgument) as caught:
        pagination.decode_page_token(token, kind, binding)
    assert caught.value.reason == "INVALID_PAGE_TOKEN"
    assert [v.field for v in caught.value.violations] == ["page_token"]


def test_token_is_bound_to_parent_kind_and_filters() -> None:
    token = pagination.encode_page_token("ListX", ("users/u1", "f=a"), (1,))
    _invalid(token, binding=("users/u2", "f=a"))
    _invalid(token, binding=("users/u1", "f=b"))
    _invalid(token, binding=("users/u1",))
    _invalid(token, kind="ListY", binding=("users/u1", "f=a"))
    # The binding's parts cannot be shifted between each other.
    shifted = pagination.encode_page_token("ListX", ("users/u1f", "=a"), (1,))
    _invalid(shifted, binding=("users/u1", "f=a"))


@pytest.mark.parametrize(
    "token", ["garbage", "!!!!", "a", base64.urlsafe_b64encode(b'{"v":1,"k":[1]}').decode()]
)
def test_foreign_tokens_are_rejected(token: str) -> None:
    _invalid(token)


def test_tampered_token_is_rejected() -> None:
    token = pagination.encode_page_token("ListX", ("users/u1",), (5,))
    raw = bytearray(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    raw[raw.index(b"5")] = ord("6")
    _invalid(base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("="))
    _invalid(token[:-2])


# Tokens issued before the one Listing (issue 38) by the servicers' own code:
# they must still decode to the same keyset.
ISSUED = [
    (
        "ListMemories",
        ("users/u1", "x"),
        "eyJ2IjoxLCJrIjpbMTcxMjM0NTY3ODkwMTIzNCwibS0xIl19sTGxJCdDzCwJCaB6sUJz-A",
        (1712345678901234, "m-1"),
        (int, str),
    ),
    (
        "ListUserErasures",
        ("tenants/t",),
        "eyJ2IjoxLCJrIjpbNSw3XX0DfFz5DuRcR0VeOiMxRLhE",
        (5, 7),
        (int, int),
    ),
]


class _Request:
    def __init__(self, page_token: str, page_size: int = 0) -> None:
        self.page_token = page_token
        self.page_size = page_size


@pytest.mark.parametrize(("kind", "binding", "token", "keyset", "shape"), ISSUED)
def test_a_listing_reads_the_tokens_issued_before_it(
    kind: str,
    binding: tuple[str, ...],
    token: str,
    keyset: tuple[object, ...],
    shape: tuple[type, ...],
) -> None:
    listing = pagination.Listing(kind, keyset=shape)
    v = Validator()
    paging = listing.page(v, _Request(token), binding)
    v.raise_if_invalid()
    assert (paging.limit, paging.after) == (50, keyset)
    assert paging.next_token(keyset) == token


def test_a_listing_refuses_a_keyset_of_another_shape() -> None:
    token = pagination.encode_page_token("ListX", ("users/u1",), ("a", 1))
    v = Validator()
    pagination.Listing("ListX", keyset=(int, str)).page(v, _Request(token), ("users/u1",))
    with pytest.raises(InvalidArgument) as caught:
        v.raise_if_invalid()
    assert caught.value.reason == "INVALID_PAGE_TOKEN"
