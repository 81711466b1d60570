"""The turn-based chat order as pure functions (DL's isTurnBased rules)."""

from __future__ import annotations

from functions.chat.turn_order import Seat, TurnState, advance, fresh, reconcile
from functions.rooms import Room
from shared.prompts.shuffle import shuffle_with_seed

ROOM = Room("e", "c", "s")


def seat(public_id, kind="participant", **kw):
    return Seat(public_id, kind, f"priv-{public_id}", True, **kw)


PEOPLE = [seat("m2", "mediator"), seat("m1", "mediator"), seat("a"), seat("b"), seat("c")]


def test_fresh_order_puts_shuffled_mediators_first_then_the_cycle_zero_shuffle():
    state = fresh(ROOM, PEOPLE)
    mediators = shuffle_with_seed(["m2", "m1"], "c-s-mediators")
    assert state.order == (*mediators, *shuffle_with_seed(["a", "b", "c"], "c-s-0"))
    assert state.holder == state.order[0] and state.cycle == 0


def test_advance_skips_ineligible_agents_and_reports_the_exhausted_ones():
    seats = [seat("m", "mediator"), seat("a"), seat("b", eligible=False, exhausted=True), seat("c")]
    state = TurnState(("m", "a", "b", "c"), "a", 0)
    after, passed = advance(ROOM, state, seats, "a")
    assert after.holder == "c" and [s.public_id for s in passed] == ["b"]


def test_past_the_end_a_new_cycle_starts_with_the_mediators_and_reshuffles():
    seats = [seat("m", "mediator"), seat("a"), seat("b"), seat("c")]
    state = TurnState(("m", "a", "b", "c"), "c", 0)
    after, _ = advance(ROOM, state, seats, "c")
    assert after.cycle == 1 and after.holder == "m"
    assert after.order == ("m", *shuffle_with_seed(["a", "b", "c"], "c-s-1"))


def test_without_mediators_the_order_is_kept_across_cycles():
    seats = [seat("a"), seat("b")]
    after, _ = advance(ROOM, TurnState(("b", "a"), "a", 3), seats, "a")
    assert after == TurnState(("b", "a"), "b", 4)


def test_nobody_eligible_leaves_no_holder():
    seats = [seat("a", eligible=False), seat("b", eligible=False)]
    after, _ = advance(ROOM, TurnState(("a", "b"), "a", 0), seats, "a")
    assert after.holder is None


def test_a_mediator_takes_no_turn_that_no_participant_could_answer():
    """Every participant's responses used up: the mediator is passed over too (its message
    would cost a model call nobody can answer), and the participants are still reported."""
    spent = {"eligible": False, "exhausted": True}
    seats = [seat("m", "mediator"), seat("a", **spent), seat("b", **spent)]
    after, passed = advance(ROOM, TurnState(("m", "a", "b"), "b", 0), seats, "b")
    assert after.holder is None
    assert {s.public_id for s in passed} == {"a", "b"}
    human = seat("h")  # a human may always answer: the mediator speaks
    after, _ = advance(ROOM, TurnState(("m", "a", "b", "h"), "h", 0), [*seats, human], "h")
    assert after.holder == "m"


def test_reconcile_drops_who_left_and_passes_their_turn_on():
    seats = [seat("m", "mediator"), seat("a"), seat("c"), seat("d")]
    state = reconcile(TurnState(("m", "a", "b", "c"), "b", 0), seats)
    assert state.order == ("m", "a", "c", "d")  # b left, d arrived at the end
    assert state.holder == "c"


def test_a_new_mediator_joins_after_the_mediators():
    seats = [seat("m", "mediator"), seat("n", "mediator"), seat("a")]
    state = reconcile(TurnState(("m", "a"), "a", 0), seats)
    assert state.order == ("m", "n", "a") and state.holder == "a"
