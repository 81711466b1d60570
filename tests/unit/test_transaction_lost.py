"""A transaction the emulator forgot (restarted between the read and the commit) or production
expired is begun again by ``transactions.run`` (issue 40 row 9); any other invalid argument is
not retried."""

from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc

from functions import store, transactions


class _Db:
    def transaction(self, max_attempts: int) -> Any:
        return object()


def test_a_lost_transaction_is_begun_again_and_another_invalid_argument_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(store, "db", lambda: _Db())
    monkeypatch.setattr(transactions.firestore, "transactional", lambda body: body)
    failures = [gexc.InvalidArgument("Transaction is invalid or closed.")]
    calls: list[int] = []

    def body(transaction: Any) -> str:
        calls.append(1)
        if failures:
            raise failures.pop()
        return "done"

    assert transactions.run(body) == "done"
    assert len(calls) == 2
    calls.clear()
    failures.append(gexc.InvalidArgument("Document too large"))
    with pytest.raises(gexc.InvalidArgument):
        transactions.run(body)
    assert len(calls) == 1
    assert transactions.is_lost(gexc.InvalidArgument("The referenced transaction has expired"))
