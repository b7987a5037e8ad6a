"""The `kernelgen` command (and `python -m kernelgen`): Ctrl-C while its modules load exits 130 with
one line, as it does once the command runs (kernelgen/cli.py), never with a traceback.

>>> from kernelgen.__main__ import main
>>> callable(main)
True
"""
from .interrupt import exit_interrupted


def main() -> None:
    try:
        from .cli import main as command
    except KeyboardInterrupt:
        exit_interrupted(ignore_more=True)
    command()


if __name__ == "__main__":
    main()
