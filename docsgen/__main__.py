"""`python -m docsgen check|write|pictures|screenshots`: see the package docstring."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docsgen", description=__doc__)
    parser.add_argument(
        "action",
        choices=("check", "write", "pictures", "screenshots"),
        help="check: fail when a generated reference differs from the code; write: rewrite "
        "them; pictures: redraw docs/images/*.svg from committed runs; screenshots: the HTML "
        "report in headless Chromium",
    )
    args = parser.parse_args(argv)
    if args.action in ("check", "write"):
        return _references(write=args.action == "write")
    if args.action == "pictures":
        from docsgen.pictures import draw_all

        for path in draw_all():
            print(f"wrote {path}")
        return 0
    from docsgen.screenshots import take_all

    for path in take_all():
        print(f"wrote {path}")
    return 0


def _references(write: bool) -> int:
    from docsgen.references import references

    regions = references()
    if write:
        for region in regions:
            if region.write():
                print(f"rewrote {region.page} ({region.name})")
        return 0
    stale = [r for r in regions if not r.is_current()]
    for region in stale:
        where = f"{region.page}: the '{region.name}' reference"
        print(f"{where} differs from the code", file=sys.stderr)
    if stale:
        print("run `python -m docsgen write` and commit the pages", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
