"""The error every command raises for bad input or usage."""

from __future__ import annotations

import click

__all__ = ["InputError"]


class InputError(click.ClickException):
    """Bad input or usage: a one-line message, never a traceback.

    click prints ``Error: <message>`` on one line and exits with status 2.
    """

    exit_code = 2
