"""The REST API's key scheme is Deliberate Lab's: the same key id, the same salted hash, the same
``Authorization`` parsing (functions/src/dl_api/dl_api_key.utils.ts)."""

from __future__ import annotations

import pytest

from functions import api_keys


def test_key_id_and_hash_are_deliberate_labs() -> None:
    # Node's crypto, as Deliberate Lab calls it: scryptSync(key, salt, 64), sha256(key)[:8]
    assert api_keys.key_id("dlb_live_abc") == "84efb1b9"
    digest = api_keys._hash("dlb_live_abc", "0123456789abcdef").hex()
    assert digest.startswith("97d722d8ed2220b73ca5a80e0a5b311c") and len(digest) == 128


@pytest.mark.parametrize(
    ("header", "key"),
    [
        ("Bearer dlb_live_x", "dlb_live_x"),
        ("bearer   dlb_live_x  ", "dlb_live_x"),
        ("Bearer\tdlb_live_x", "dlb_live_x"),
        ("Bearer ", None),
        ("Token dlb_live_x", None),
        ("dlb_live_x", None),
        ("", None),
        (None, None),
    ],
)
def test_the_bearer_token_is_read_as_deliberate_lab_reads_it(header: str | None, key: str | None):
    assert api_keys.bearer_token(header) == key
