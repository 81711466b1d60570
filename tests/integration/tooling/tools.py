"""Tools of the tool tests' workflow (a Diskurs project's tool file, loaded by path): each run
appends a line to the file ``TOOLING_LOG`` names, so a test counts runs across processes."""

import os
import time


def _ran(line: str) -> None:
    with open(os.environ["TOOLING_LOG"], "a") as log:
        log.write(line + "\n")


def lookup(city: str) -> str:
    """
    The weather in a city.

    :param city: The city's name.
    :return: The weather there.
    """
    _ran(f"lookup {city}")
    return f"sunny in {city}"


def explode(reason: str) -> str:
    """
    A tool that always fails.

    :param reason: Why it should fail.
    """
    _ran("explode")
    raise RuntimeError(f"exploded: {reason}")


def stall(city: str) -> str:
    """
    A tool that takes long (its process is killed while it runs).

    :param city: The city's name.
    """
    _ran("stall")
    time.sleep(float(os.environ.get("TOOLING_STALL_S", "600")))
    return f"late for {city}"


def stock(ticker: str) -> float:
    """
    A stock's price (the planner's tests).

    :param ticker: The stock's ticker.
    :return: Its price.
    """
    _ran(f"stock {ticker}")
    return 12.5


def report(weather: str, price: float) -> str:
    """
    A report of the weather and a price, from two other calls' results (the planner's tests).

    :param weather: The weather.
    :param price: The price.
    :return: The report.
    """
    _ran(f"report {weather} {price}")
    if not isinstance(price, float):
        raise TypeError(f"price must be a number, not {price!r}")
    return f"{weather}; ACME at {price}"
