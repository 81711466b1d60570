"""``python -m console.screenshot URL OUT.png [--wait S]``: how docs/console-live.png is made
(against a running ``make up`` with the demo template loaded)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from console.browser import headless_chromium


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m console.screenshot", description=__doc__)
    parser.add_argument("url")
    parser.add_argument("out", type=Path)
    parser.add_argument("--wait", type=float, default=3.0, help="seconds to let the page update")
    parser.add_argument("--height", type=int, default=900)
    args = parser.parse_args(argv)
    driver = headless_chromium(height=args.height)
    try:
        driver.get(args.url)
        time.sleep(args.wait)
        driver.save_screenshot(str(args.out))
    finally:
        driver.quit()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
