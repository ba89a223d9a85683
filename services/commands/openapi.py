"""kwx openapi: print the service's OpenAPI document (no database needed)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def document() -> str:
    import json

    from services.api.app import create_app

    return json.dumps(create_app().openapi(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def run(args: argparse.Namespace) -> int:
    print(document(), end="")
    return 0
