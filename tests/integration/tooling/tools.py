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
